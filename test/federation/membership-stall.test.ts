// A membership exchange whose deadline passed while this process could not run (frozen by SIGSTOP,
// a paused VM, a blocked event loop) is not a refusal: the peer's answer was waiting unread. Found
// by the netns fault suite: a member SIGSTOPped while its exchange with another was in flight
// refused that member when it resumed, and the two stayed apart for the whole refusal back-off.
// A peer that stays silent is still refused for a timeout (hostile-peers.test.ts).
import { afterAll, describe, expect, it } from 'vitest'
import { lateSlackMs, stallAwareTimeout } from '../../src/federation/deadline.js'
import type { FederationNode } from '../../src/federation/node.js'
import { startNode, waitFor } from './fixtures.js'

/** Holds this process's event loop for `ms` (what SIGSTOP or a long pause does to it). */
function stall(ms: number): void {
  const until = Date.now() + ms
  while (Date.now() < until) {
    // blocked
  }
}

const aborted = (signal: AbortSignal): Promise<number> => new Promise((resolve) => {
  const started = Date.now()
  signal.addEventListener('abort', () => resolve(Date.now() - started), { once: true })
})

describe('a stall-aware deadline', () => {
  it('aborts with a TimeoutError after its length when this process ran throughout', async () => {
    const signal = stallAwareTimeout(300)
    const after = await aborted(signal)
    expect(after).toBeGreaterThanOrEqual(290)
    expect(after).toBeLessThan(300 + lateSlackMs(300) + 1_000)
    expect((signal.reason as DOMException).name).toBe('TimeoutError')
  })

  it('starts again when this process was stalled past it, and aborts once it has run for its length', async () => {
    const signal = stallAwareTimeout(300)
    const started = Date.now()
    const done = aborted(signal)
    stall(300 + lateSlackMs(300) + 400)
    // the timer fires late, right after the stall: not aborted then
    await new Promise((r) => setTimeout(r, 50))
    expect(signal.aborted).toBe(false)
    await done
    expect(Date.now() - started).toBeGreaterThanOrEqual(300 + lateSlackMs(300) + 400 + 290)
  })
})

describe('membership across a stall of this process mid-exchange', () => {
  const nodes: FederationNode[] = []
  afterAll(() => Promise.all(nodes.map((n) => n.stop())))

  it('neither side refuses the other: both are members once the process runs again', async () => {
    const timeoutMs = 1_000
    const a = await startNode({ init: { membershipTimeoutMs: timeoutMs, memberKeeper: false } })
    nodes.push(a)
    let stalled = false
    // a's own connect listener (which starts its exchange and its deadline) runs before this one
    a.p2p.addEventListener('peer:connect', () => {
      if (stalled) return
      stalled = true
      stall(timeoutMs + lateSlackMs(timeoutMs) + 1_000)
    })
    const b = await startNode({ bootstrap: [a.multiaddrs()[0]!], init: { membershipTimeoutMs: timeoutMs, memberKeeper: false } })
    nodes.push(b)
    await waitFor(() => stalled, 10_000)
    await waitFor(() => a.members().length === 1 && b.members().length === 1, 10_000)
    expect(a.members()[0]!.peerId).toBe(b.peerId)
    expect(b.members()[0]!.peerId).toBe(a.peerId)
    expect(a.isDenied(b.peerId)).toBe(false)
    expect(b.isDenied(a.peerId)).toBe(false)
  })
})
