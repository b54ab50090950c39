// The batched, delayed provider announcements of nodes that hold code (provider-announcer.ts).
import { afterEach, describe, expect, it } from 'vitest'
import { noopLogger } from '../../src/federation/logger.js'
import { ProviderAnnouncer } from '../../src/federation/provider-announcer.js'

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
const opened: ProviderAnnouncer[] = []

/** An announcer whose batches go to `provideMany` (each digest announced unless it returns a list). */
function batchAnnouncer(init: { delayMs: number; maxBatch?: number }, provideMany: (digests: string[]) => Promise<string[] | void>): ProviderAnnouncer {
  const a = new ProviderAnnouncer(init, { provideMany: async (digests) => ({ announced: (await provideMany(digests)) ?? digests }), logger: noopLogger })
  a.start()
  opened.push(a)
  return a
}

/** An announcer over a per-digest `provide` (every batch announced digest by digest). */
function announcer(delayMs: number, provide: (d: string) => Promise<void>): ProviderAnnouncer {
  return batchAnnouncer({ delayMs }, async (digests) => {
    for (const d of digests) await provide(d)
  })
}

afterEach(async () => {
  await Promise.all(opened.splice(0).map((a) => a.stop()))
})

describe('ProviderAnnouncer', () => {
  it('announces a digest once, not before its delay, one batch at a time', async () => {
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
    const a = new ProviderAnnouncer({ delayMs: 60_000, maxPending: 3 }, { provideMany: async (digests) => ({ announced: digests }), logger: noopLogger })
    a.start()
    opened.push(a)
    for (const d of ['1', '2', '3', '4', '5']) a.enqueue(d)
    expect(a.waiting).toBe(3)
  })

  it('every digest due is announced in one batch (at most maxBatch); one in flight at a time', async () => {
    const batches: string[][] = []
    let release: () => void = () => undefined
    const held = new Promise<void>((r) => { release = r })
    const a = batchAnnouncer({ delayMs: 20, maxBatch: 3 }, async (digests) => {
      batches.push(digests)
      if (batches.length === 1) await held
    })
    a.enqueue('a')
    try {
      for (let i = 0; i < 100 && batches.length < 1; i++) await sleep(10)
      expect(batches).toEqual([['a']])
      // due while the first batch is in flight: they wait for it, then go together
      for (const d of ['b', 'c', 'd', 'e']) a.enqueue(d)
      a.enqueue('a') // in flight: not queued again
      expect(a.waiting).toBe(4)
      expect(a.has('a')).toBe(true)
      await sleep(150)
      expect(batches).toHaveLength(1)
    } finally {
      release() // a failed assertion must not leave the batch held (stop() waits for it)
    }
    for (let i = 0; i < 100 && batches.length < 3; i++) await sleep(10)
    expect(batches.slice(1)).toEqual([['b', 'c', 'd'], ['e']])
    expect(a.count).toBe(5)
    expect(a.batches).toBe(3)
  })

  it('only the digests a batch says were announced are remembered as announced', async () => {
    const batches: string[][] = []
    const a = batchAnnouncer({ delayMs: 20 }, async (digests) => {
      batches.push(digests)
      return digests.filter((d) => d !== 'lost')
    })
    a.enqueue('kept')
    a.enqueue('lost')
    for (let i = 0; i < 100 && batches.flat().length < 2; i++) await sleep(10)
    await sleep(20)
    expect(batches.flat().sort()).toEqual(['kept', 'lost'])
    expect(a.count).toBe(1)
    expect(a.has('kept')).toBe(true)
    expect(a.has('lost')).toBe(false) // may be enqueued again
  })
})
