// Anti-entropy backs off while its rounds find equal catalogs (an idle federation's members need
// not exchange roots every couple of seconds), and is back at its base pace as soon as the catalog
// changes: a change whose gossip was lost still reaches the member by the next round at the base
// pace, not after the longest back-off. In-process members over real libp2p; B runs no
// anti-entropy of its own and defers its join rounds, so only A's rounds can carry the lost change.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CATALOG_TOPIC } from '../../src/federation/catalog-sync.js'
import { principal } from '../fixtures/engine.js'
import { loopbackPair, stopMembers, waitFor, withLostGossip, type LoopbackMember as Member } from './fixtures.js'

const BASE_MS = 50
const MAX_MS = 60_000
const fn = (name: string): Record<string, unknown> => ({ function_name: name, signature: '(a, b)', language: 'javascript', source_code: `function ${name}(a, b) { return a + b }` })
const digestOf = async (m: Member): Promise<string> => (await m.engine.replication.digest()).digest

describe('anti-entropy pace', () => {
  let a: Member, b: Member
  beforeAll(async () => {
    // B starts no round of its own after its start: no anti-entropy, and a round after a (re)join
    // waits out a minute's jitter (a reconnect on a loaded machine would otherwise carry the change)
    ;[a, b] = await loopbackPair(CATALOG_TOPIC, [{ syncIntervalMs: BASE_MS, syncIntervalMaxMs: MAX_MS }, { syncIntervalMs: 0, newcomerWindowMs: 0, joinSyncJitterMs: 60_000 }])
  }, 60_000)
  afterAll(() => stopMembers([a, b]))

  it('backs off while rounds find equal roots, and returns to its base pace when a change is made', async () => {
    const rounds = a.federation.catalog.rounds
    const from = { equal: rounds.equal, at: Date.now() }
    // 8 idle rounds: 50 ms apart at a fixed pace (0.4 s); doubling, the 8th comes ~12.75 s after the first
    await waitFor(() => rounds.equal >= from.equal + 8, 60_000, 20)
    const idleMs = Date.now() - from.at
    expect(idleMs).toBeGreaterThan(6_000)
    // A's next round is due ~12.8 s from now: A's gossip of its next change is lost on the way
    const dev = principal('acme')
    const dropped = await withLostGossip(a, CATALOG_TOPIC, () => a.engine.functions.create(dev, fn('lost_gossip')))
    expect(dropped).toBe(1)
    // the change brings A's anti-entropy back to 50 ms: B has it well before the backed-off round
    await waitFor(async () => (await digestOf(a)) === (await digestOf(b)), 5_000)
    // B applies the pushed change before it answers A's round, which A counts once the answer is
    // back: wait for that too (a fast node's digest can equal A's while A reads the answer)
    await waitFor(() => a.federation.catalog.rounds.compacted + a.federation.catalog.rounds.full > 0, 5_000, 10)
    expect(b.federation.catalog.received.sync).toBeGreaterThan(0)
    expect(b.federation.catalog.received.gossip).toBe(0)
  }, 90_000)
})
