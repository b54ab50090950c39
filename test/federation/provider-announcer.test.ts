// The batched, delayed provider announcements of nodes that fetched code (provider-announcer.ts).
import { afterEach, describe, expect, it } from 'vitest'
import { noopLogger } from '../../src/federation/logger.js'
import { ProviderAnnouncer } from '../../src/federation/provider-announcer.js'

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
const opened: ProviderAnnouncer[] = []

function announcer(delayMs: number, provide: (d: string) => Promise<void>): ProviderAnnouncer {
  const a = new ProviderAnnouncer({ delayMs }, { provide: (d) => provide(d), logger: noopLogger })
  a.start()
  opened.push(a)
  return a
}

afterEach(async () => {
  await Promise.all(opened.splice(0).map((a) => a.stop()))
})

describe('ProviderAnnouncer', () => {
  it('announces a fetched digest once, not before its delay, one at a time', async () => {
    const calls: Array<{ digest: string; at: number }> = []
    let inFlight = 0
    let maxInFlight = 0
    const started = Date.now()
    const a = announcer(300, async (digest) => {
      inFlight++
      maxInFlight = Math.max(maxInFlight, inFlight)
      calls.push({ digest, at: Date.now() - started })
      await sleep(20)
      inFlight--
    })
    for (const d of ['a', 'b', 'a', 'c', 'b']) a.enqueue(d)
    expect(a.waiting).toBe(3)
    await sleep(150)
    expect(calls).toEqual([]) // nothing within the delay
    for (let i = 0; i < 100 && calls.length < 3; i++) await sleep(20)
    expect(calls.map((c) => c.digest).sort()).toEqual(['a', 'b', 'c'])
    for (const c of calls) expect(c.at).toBeGreaterThanOrEqual(300)
    expect(maxInFlight).toBe(1)
    a.enqueue('a') // announced already: not again
    await sleep(700)
    expect(calls).toHaveLength(3)
    expect(a.count).toBe(3)
  })

  it('a failed announcement is not remembered as made; stop() drops what waits', async () => {
    let fail = true
    const calls: string[] = []
    const a = announcer(50, async (d) => {
      calls.push(d)
      if (fail) throw new Error('no DHT peers')
    })
    a.enqueue('x')
    for (let i = 0; i < 50 && calls.length < 1; i++) await sleep(20)
    expect(calls).toEqual(['x'])
    expect(a.count).toBe(0)
    fail = false
    a.enqueue('x')
    for (let i = 0; i < 50 && calls.length < 2; i++) await sleep(20)
    expect(a.count).toBe(1)
    a.enqueue('y')
    await a.stop()
    await sleep(200)
    expect(calls).toEqual(['x', 'x'])
  })

  it('bounded: past maxPending the oldest waiting digest is dropped', async () => {
    const a = new ProviderAnnouncer({ delayMs: 60_000, maxPending: 3 }, { provide: async () => undefined, logger: noopLogger })
    a.start()
    opened.push(a)
    for (const d of ['1', '2', '3', '4', '5']) a.enqueue(d)
    expect(a.waiting).toBe(3)
  })
})
