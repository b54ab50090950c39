// When a federated node is ready (issue 17): a node that starts with bootstrap peers may lack what
// was published while it was away, or everything if it is new. It is ready once a sync round pulled
// everything a member had, or after `readyTimeoutMs` when no member can be reached; the federation's
// first node (no bootstrap peers) has nothing to wait for. In-process members over real libp2p.
import { afterAll, describe, expect, it } from 'vitest'
import type { ReadyReason } from '../../src/federation/federation.js'
import { createTestEngine, principal } from '../fixtures/engine.js'
import { loopbackFederation, newIdentity, stopMembers, waitFor, type LoopbackMember as Member } from './fixtures.js'

const fn = (name: string): Record<string, unknown> => ({ function_name: name, signature: '(a, b)', language: 'javascript', source_code: `function ${name}(a, b) { return a + b }` })
const digestOf = async (m: Member): Promise<string> => (await m.engine.replication.digest()).digest

const members: Member[] = []
async function member(bootstrap: string[], init: Parameters<typeof loopbackFederation>[3] = {}, start = true): Promise<Member> {
  const { engine } = await createTestEngine()
  const federation = loopbackFederation(engine, await newIdentity(), bootstrap, init)
  const m = { engine, federation }
  members.push(m)
  if (start) await federation.start()
  return m
}
afterAll(() => stopMembers(members.reverse()))

describe('a federated node\'s readiness', () => {
  it('the federation\'s first node (no bootstrap peers) is ready at once', async () => {
    const a = await member([])
    expect(a.federation.ready).toBe(true)
    const reasons: ReadyReason[] = []
    a.federation.onReady((r) => reasons.push(r))
    expect(reasons).toEqual(['no_bootstrap'])
  })

  it('a node with a member to catch up with is ready once it pulled everything the member had, not after a round that left pages', async () => {
    // A is an older member: its round with B waits out its join jitter (a minute: not in this test),
    // so only B's own rounds bring it the catalog
    const a = await member([], { syncPage: { maxChanges: 4 }, newcomerWindowMs: 0, joinSyncJitterMs: 60_000 })
    const dev = principal('acme')
    for (let i = 0; i < 20; i++) await a.engine.functions.create(dev, fn(`ready_${i}`))
    const expected = await digestOf(a)
    // pages of 4 changes, 2 pages a round: the first round leaves 12 changes, the next (anti-entropy) more
    const b = await member([a.federation.node.multiaddrs()[0]!], { syncPage: { maxChanges: 4 }, maxSyncPagesPerRound: 2, syncIntervalMs: 200 }, false)
    const atReady: Array<{ reason: ReadyReason; digest: Promise<string>; applied: number }> = []
    b.federation.onReady((reason) => atReady.push({ reason, digest: digestOf(b), applied: b.federation.catalog.received.sync }))
    await b.federation.start()
    await waitFor(() => atReady.length === 1, 20_000)
    expect(atReady[0]!.reason).toBe('caught_up')
    expect(atReady[0]!.applied).toBe(20)
    expect(await atReady[0]!.digest).toBe(expected)
    // more than one round was needed, and readiness waited for the last
    expect(b.federation.catalog.rounds.compacted + b.federation.catalog.rounds.full).toBeGreaterThanOrEqual(2)
  })

  it('once caught up it waits until no member joined it for readySettleMs: the members dialling it are done', async () => {
    const a = await member([])
    const b = await member([a.federation.node.multiaddrs()[0]!], { readySettleMs: 1_500 }, false)
    let caughtUpAt = 0
    b.federation.catalog.onCaughtUp(() => {
      caughtUpAt = Date.now()
    })
    await b.federation.start()
    await waitFor(() => caughtUpAt > 0, 20_000, 10)
    // A joined it just before: not ready yet
    expect(b.federation.ready).toBe(false)
    // another member joins meanwhile: the wait starts again from its join
    const c = await member([b.federation.node.multiaddrs()[0]!])
    await waitFor(() => b.federation.node.members().some((m) => m.peerId === c.federation.nodeId), 20_000, 10)
    const joinedAt = Date.now()
    expect(b.federation.ready).toBe(false)
    await waitFor(() => b.federation.ready, 10_000, 10)
    expect(Date.now() - joinedAt).toBeGreaterThanOrEqual(1_400)
    expect(b.federation.node.members().length).toBe(2)
  })

  it('a node whose bootstrap peers cannot be reached is ready after readyTimeoutMs, serving its own catalog', async () => {
    // nothing listens on port 1: every dial is refused
    const address = `/ip4/127.0.0.1/tcp/1/p2p/${(await newIdentity()).peerId}`
    const started = Date.now()
    const b = await member([address], { readyTimeoutMs: 1_500 })
    const reasons: ReadyReason[] = []
    b.federation.onReady((r) => reasons.push(r))
    await new Promise((r) => setTimeout(r, Math.max(0, 700 - (Date.now() - started))))
    expect(b.federation.ready).toBe(false)
    await waitFor(() => b.federation.ready, 10_000)
    expect(reasons).toEqual(['timeout'])
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_400)
  })

  it('a stopped federation is not ready', async () => {
    const a = await member([])
    expect(a.federation.ready).toBe(true)
    await a.federation.stop()
    expect(a.federation.ready).toBe(false)
  })
})
