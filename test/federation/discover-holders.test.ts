// Discovery names the members that hold a function's code after its publisher left (issue 17). Up
// to k nodes the members that fetch code make no provider records (ANNOUNCE_PROVIDERS_ABOVE), so
// once the publisher left, neither the DHT nor the catalog named a holder: the 20-node churn runner
// saw 8 of 117 discovers answer no node while live members held the code (every one of them for a
// function whose publisher had left or was restarting). In-process members over real libp2p, with
// the default settings.
import { describe, expect, it, afterAll } from 'vitest'
import { CATALOG_TOPIC } from '../../src/federation/catalog-sync.js'
import { CODE_PROTOCOL } from '../../src/federation/code-provider.js'
import { createTestEngine, principal } from '../fixtures/engine.js'
import { loopbackFederation, loopbackPair, newIdentity, stopMembers, waitFor, type LoopbackMember as Member } from './fixtures.js'

const dev = principal('acme')
const fn = { function_name: 'kept', signature: '(a)', language: 'javascript', source_code: 'function kept(a) {\n  return a * 7\n}\n' }
const digestOf = async (m: Member): Promise<string> => (await m.engine.replication.digest()).digest

describe('discovery after the publisher left, in a federation of up to k nodes', () => {
  const members: Member[] = []
  afterAll(() => stopMembers(members))

  it('names the members that fetched the code (source "member"), and only those', async () => {
    const [a, b] = await loopbackPair(CATALOG_TOPIC)
    members.push(a, b)
    const join = async (): Promise<Member> => {
      const { engine } = await createTestEngine()
      const m: Member = { engine, federation: loopbackFederation(engine, await newIdentity(), [a.federation.node.multiaddrs()[0]!, b.federation.node.multiaddrs()[0]!]) }
      members.push(m)
      await m.federation.start()
      return m
    }
    const c = await join()
    const d = await join()
    await waitFor(() => [a, b, c, d].every((m) => m.federation.node.members().length === 3), 20_000)

    // A publishes; B resolves it (fetching the code: B holds it now); C and D hold the version only
    const created = await a.engine.functions.create(dev, fn)
    await waitFor(async () => {
      const digests = await Promise.all([a, b, c, d].map(digestOf))
      return new Set(digests).size === 1
    }, 10_000)
    expect((await b.engine.functions.resolve(dev, { short: created.rufid_short })).fn.source_code).toBe(fn.source_code)
    // while A is a member, discovery names it from the catalog (and asks nobody)
    expect((await c.federation.discover(dev, created.rufid_short)).nodes.map((n) => [n.node_id, n.source])).toContainEqual([a.federation.nodeId, 'catalog'])

    // A leaves for good (before its provider record, due 5–10 s after the publish)
    await a.federation.stop()
    await waitFor(() => [b, c, d].every((m) => m.federation.node.members().length === 2), 10_000)
    const found = await c.federation.discover(dev, created.rufid_short)
    expect(found.content_digest).toBe(created.fn.content_digest)
    expect(found.nodes).toEqual([{ node_id: b.federation.nodeId, endpoint: expect.any(String), source: 'member' }])

    // a probe carries no code, and a member that does not hold the code says so
    const probe = { tenant_id: 'acme', rufid_short: created.rufid_short, version: 1, content_digest: created.fn.content_digest, probe: true }
    expect(await c.federation.node.request(b.federation.nodeId, CODE_PROTOCOL, probe, 5_000)).toEqual({ holds: true })
    await expect(c.federation.node.request(d.federation.nodeId, CODE_PROTOCOL, probe, 5_000)).rejects.toThrow()
    // nor for another content under the same version
    await expect(c.federation.node.request(b.federation.nodeId, CODE_PROTOCOL, { ...probe, content_digest: '0'.repeat(64) }, 5_000)).rejects.toThrow()
  }, 60_000)
})
