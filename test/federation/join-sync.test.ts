// A newcomer catches up by itself, one round at a time; the members it joins do not all send it
// their catalog at once. In-process members over real libp2p: A and B have been members longer
// than their newcomer window, so the round each schedules with C waits out its join jitter
// (60 s here: not within the test); C is within its own window and syncs with each member as it
// joins, at most `maxConcurrentSyncs` (1 here) rounds at a time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CATALOG_TOPIC, SYNC_PROTOCOL, SYNC_SUMMARY_PROTOCOL } from '../../src/federation/catalog-sync.js'
import { createTestEngine, principal } from '../fixtures/engine.js'
import { loopbackFederation, loopbackPair, newIdentity, stopMembers, waitFor, type LoopbackMember as Member } from './fixtures.js'

const fn = (name: string): Record<string, unknown> => ({ function_name: name, signature: '(a, b)', language: 'javascript', source_code: `function ${name}(a, b) { return a + b }` })
const digestOf = async (m: Member): Promise<string> => (await m.engine.replication.digest()).digest
const roundsOf = (m: Member): number => {
  const r = m.federation.catalog.rounds
  return r.equal + r.compacted + r.full
}

describe('a member joining', () => {
  const old = { newcomerWindowMs: 0, joinSyncJitterMs: 60_000 }
  let a: Member, b: Member, c: Member | undefined
  beforeAll(async () => {
    ;[a, b] = await loopbackPair(CATALOG_TOPIC, [old, old])
    const dev = principal('acme')
    for (let i = 0; i < 6; i++) await (i % 2 ? b : a).engine.functions.create(dev, fn(`joined_${i}`))
    await waitFor(async () => (await digestOf(a)) === (await digestOf(b)), 10_000)
  }, 60_000)
  afterAll(() => stopMembers([c, a, b]))

  it('the newcomer pulls the catalog itself, one round at a time, while the older members wait out their jitter', async () => {
    const { engine } = await createTestEngine()
    const identity = await newIdentity()
    const federation = loopbackFederation(engine, identity, [a.federation.node.multiaddrs()[0]!, b.federation.node.multiaddrs()[0]!], { maxConcurrentSyncs: 1 })
    c = { engine, federation }
    // the sync requests a member makes: to whom, and (C's) how many rounds had one in flight at once
    const spy = (m: Member): { to: string[]; most: () => number } => {
      const node = m.federation.node
      const request = node.request.bind(node)
      const to: string[] = []
      const inFlight = new Set<string>()
      let most = 0
      node.request = async (peerId, protocol, body, timeoutMs) => {
        if (protocol !== SYNC_SUMMARY_PROTOCOL && protocol !== SYNC_PROTOCOL) return request(peerId, protocol, body, timeoutMs)
        to.push(peerId)
        inFlight.add(peerId)
        most = Math.max(most, inFlight.size)
        try {
          return await request(peerId, protocol, body, timeoutMs)
        } finally {
          inFlight.delete(peerId)
        }
      }
      return { to, most: () => most }
    }
    const [fromA, fromB, fromC] = [spy(a), spy(b), spy(c)]
    await federation.start()
    await waitFor(() => federation.node.members().length === 2, 20_000)
    // C's rounds with both members ran (its catalog is theirs) and never two at once
    await waitFor(() => fromC.to.includes(a.federation.nodeId) && fromC.to.includes(b.federation.nodeId) && roundsOf(c!) >= 2, 20_000)
    await waitFor(async () => (await digestOf(c!)) === (await digestOf(a)), 20_000)
    expect(c.federation.catalog.received.sync).toBeGreaterThanOrEqual(6)
    expect(fromC.most()).toBe(1)
    // A and B started no round with C: theirs waits out the jitter
    expect(fromA.to).not.toContain(identity.peerId)
    expect(fromB.to).not.toContain(identity.peerId)
    // a round A starts meanwhile replaces the one its join scheduled, and finds equal roots
    const equal = a.federation.catalog.rounds.equal
    expect(await a.federation.catalog.syncWith(c.federation.nodeId)).toBe('equal')
    expect(a.federation.catalog.rounds.equal).toBe(equal + 1)
  }, 90_000)
})
