// Code on demand from a holder this node is not connected to at the moment (issue 17: a function
// must run as long as one holder lives). After a partition heals, or while the member keeper dials a
// member again, the only live holder of some code can be a member this node verified before but has
// no connection to; asking the connected members only answered 2001. In-process members over real
// libp2p, without member keepers (nothing redials on its own while the test runs).
import { peerIdFromString } from '@libp2p/peer-id'
import { afterAll, describe, expect, it } from 'vitest'
import { CATALOG_TOPIC } from '../../src/federation/catalog-sync.js'
import { createTestEngine, principal } from '../fixtures/engine.js'
import { loopbackFederation, loopbackPair, newIdentity, stopMembers, waitFor, type LoopbackMember as Member } from './fixtures.js'

const dev = principal('acme')
const fn = { function_name: 'held', signature: '(a)', language: 'javascript', source_code: 'function held(a) {\n  return a * 6\n}\n' }
const digestOf = async (m: Member): Promise<string> => (await m.engine.replication.digest()).digest

describe('code on demand from a member this node is not connected to', () => {
  const members: Member[] = []
  afterAll(() => stopMembers(members))

  it('is dialled and asked when no connected member holds it', async () => {
    const quiet = { memberKeeper: false as const }
    const [a, b] = await loopbackPair(CATALOG_TOPIC, [quiet, quiet])
    members.push(a, b)
    const { engine } = await createTestEngine()
    const c: Member = { engine, federation: loopbackFederation(engine, await newIdentity(), [a.federation.node.multiaddrs()[0]!, b.federation.node.multiaddrs()[0]!], quiet) }
    members.push(c)
    await c.federation.start()
    await waitFor(() => c.federation.node.members().length === 2, 20_000)
    // A publishes; B resolves it (fetching the code: B holds it now); C has the version, without code
    const created = await a.engine.functions.create(dev, fn)
    await waitFor(async () => (await digestOf(b)) === (await digestOf(a)) && (await digestOf(c)) === (await digestOf(a)), 10_000)
    expect((await b.engine.functions.resolve(dev, { short: created.rufid_short })).fn.source_code).toBe(fn.source_code)
    // the publisher leaves for good before it announced anything, and C loses its connection to B
    await a.federation.stop()
    await c.federation.node.p2p.hangUp(peerIdFromString(b.federation.nodeId))
    await waitFor(() => c.federation.node.members().length === 0, 10_000)
    expect(c.federation.node.routingTable().verified).toContain(b.federation.nodeId)
    // C has no member connected, and still gets the code: B (verified before, in its routing table) is dialled
    expect((await c.engine.functions.resolve(dev, { short: created.rufid_short })).fn.source_code).toBe(fn.source_code)
    expect(c.federation.node.members().map((m) => m.peerId)).toContain(b.federation.nodeId)
  }, 60_000)
})
