import { describe, expect, it } from 'vitest'
import { SvcError } from '../../../src/core/errors.js'
import { FairScheduler, type Dispatch, type FairSchedulerInit } from '../../../src/engine/scheduling/fair-scheduler.js'

const base: FairSchedulerInit = { slots: 2, queueLimit: 256, queueLimitPerAccount: 64, maxLongRunningPerAccount: 0, longCallMs: 50 }

/** Runs the scheduler like a pool of `slots` workers whose calls all take `serviceMs` (virtual time). */
function serveAll<T>(s: FairScheduler<T>, slots: number, serviceMs: (d: Dispatch<T>) => number, limit = 1_000): Dispatch<T>[] {
  const order: Dispatch<T>[] = []
  const running: Array<{ d: Dispatch<T>; endsAt: number }> = []
  let now = 0
  for (let step = 0; step < limit; step++) {
    while (running.length < slots) {
      const d = s.next()
      if (d === undefined) break
      order.push(d)
      running.push({ d, endsAt: now + serviceMs(d) })
    }
    if (running.length === 0) break
    running.sort((x, y) => x.endsAt - y.endsAt)
    const done = running.shift()!
    now = done.endsAt
    s.finish(done.d, serviceMs(done.d))
  }
  return order
}

/** Teaches the scheduler that calls of `kind` take `ms`. */
function learn(s: FairScheduler<string>, account: string, kind: string, ms: number): void {
  s.enqueue(account, kind, 'warm-up')
  const d = s.next()!
  s.finish(d, ms)
}

describe('FairScheduler: order between tenants', () => {
  it('alternates between two tenants with equal calls, whatever order they arrived in', () => {
    const s = new FairScheduler<string>({ ...base, slots: 1 })
    learn(s, 'acme', 'f', 10)
    learn(s, 'globex', 'g', 10)
    for (let i = 0; i < 6; i++) s.enqueue('acme', 'f', `a${i}`)
    for (let i = 0; i < 6; i++) s.enqueue('globex', 'g', `b${i}`)
    const order = serveAll(s, 1, () => 10).map((d) => d.account)
    expect(order).toHaveLength(12)
    // no tenant is served twice in a row while the other waits
    for (let i = 1; i < order.length; i++) expect(order[i], `position ${i}: ${order.join(',')}`).not.toBe(order[i - 1])
  })

  it('shares by worker time, not by number of calls: a tenant whose calls are 10 times longer gets a tenth of the calls', () => {
    const s = new FairScheduler<string>({ ...base, slots: 1, longCallMs: 1_000 })
    learn(s, 'acme', 'slow', 100)
    learn(s, 'globex', 'fast', 10)
    for (let i = 0; i < 10; i++) s.enqueue('acme', 'slow', `a${i}`)
    for (let i = 0; i < 60; i++) s.enqueue('globex', 'fast', `b${i}`)
    const order = serveAll(s, 1, (d) => (d.kind === 'slow' ? 100 : 10))
    const first44 = order.slice(0, 44)
    const a = first44.filter((d) => d.account === 'acme').length
    const b = first44.filter((d) => d.account === 'globex').length
    // 4 slow calls (400 ms) against 40 fast ones (400 ms), within one call of each
    expect(a).toBeGreaterThanOrEqual(3)
    expect(a).toBeLessThanOrEqual(5)
    expect(b).toBeGreaterThanOrEqual(39)
  })

  it('weights: a tenant of weight 2 is served twice the worker time of one of weight 1', () => {
    const s = new FairScheduler<string>({ ...base, slots: 1, weights: { acme: 2 } })
    learn(s, 'acme', 'f', 10)
    learn(s, 'globex', 'g', 10)
    for (let i = 0; i < 30; i++) s.enqueue('acme', 'f', `a${i}`)
    for (let i = 0; i < 30; i++) s.enqueue('globex', 'g', `b${i}`)
    const first30 = serveAll(s, 1, () => 10).slice(0, 30)
    const a = first30.filter((d) => d.account === 'acme').length
    expect(a).toBeGreaterThanOrEqual(19)
    expect(a).toBeLessThanOrEqual(21)
  })

  it('banks no credit for idle time: a tenant that arrives after another was served alone for long does not get the node to itself', () => {
    const s = new FairScheduler<string>({ ...base, slots: 1, queueLimitPerAccount: 1_000 })
    learn(s, 'globex', 'g', 10)
    for (let i = 0; i < 100; i++) s.enqueue('acme', 'f', `a${i}`)
    // acme alone for 100 calls
    for (let i = 0; i < 100; i++) s.finish(s.next()!, 10)
    for (let i = 0; i < 10; i++) s.enqueue('acme', 'f', `a${100 + i}`)
    for (let i = 0; i < 10; i++) s.enqueue('globex', 'g', `b${i}`)
    const order = serveAll(s, 1, () => 10).slice(0, 10).map((d) => d.account)
    // globex's ten calls do not all go first: the two alternate
    expect(order.filter((a) => a === 'acme').length).toBeGreaterThanOrEqual(4)
  })

  it("keeps each tenant's own calls in arrival order", () => {
    const s = new FairScheduler<string>({ ...base, slots: 1 })
    for (let i = 0; i < 5; i++) s.enqueue('acme', 'f', `a${i}`)
    for (let i = 0; i < 5; i++) s.enqueue('globex', 'f', `b${i}`)
    const order = serveAll(s, 1, () => 1)
    expect(order.filter((d) => d.account === 'acme').map((d) => d.item)).toEqual(['a0', 'a1', 'a2', 'a3', 'a4'])
    expect(order.filter((d) => d.account === 'globex').map((d) => d.item)).toEqual(['b0', 'b1', 'b2', 'b3', 'b4'])
  })
})

describe('FairScheduler: long calls are capped, so a worker stays free for the others', () => {
  it('a tenant with long calls holds at most all workers but one (auto cap); another tenant takes the free one', () => {
    const s = new FairScheduler<string>({ ...base, slots: 3 })
    learn(s, 'acme', 'spin', 500)
    for (let i = 0; i < 10; i++) s.enqueue('acme', 'spin', `a${i}`)
    const held = [s.next(), s.next(), s.next()]
    expect(held.map((d) => d?.account)).toEqual(['acme', 'acme', undefined])
    expect(s.longRunningCap).toBe(2)
    s.enqueue('globex', 'add', 'b0')
    expect(s.next()?.item).toBe('b0')
  })

  it('counts a function not seen yet as long (a burst of new slow calls cannot take every worker)', () => {
    const s = new FairScheduler<string>({ ...base, slots: 2 })
    for (let i = 0; i < 5; i++) s.enqueue('acme', `new-${i}`, `a${i}`)
    expect(s.next()?.item).toBe('a0')
    expect(s.next()).toBeUndefined()
  })

  it('short calls may use every idle worker', () => {
    const s = new FairScheduler<string>({ ...base, slots: 2 })
    learn(s, 'acme', 'add', 0.2)
    for (let i = 0; i < 4; i++) s.enqueue('acme', 'add', `a${i}`)
    expect([s.next()?.item, s.next()?.item]).toEqual(['a0', 'a1'])
  })

  it('a function that was long once is long at once, and stays long until many short calls bring it down', () => {
    const s = new FairScheduler<string>({ ...base, slots: 2 })
    learn(s, 'acme', 'f', 1)
    expect(s.estimateOf('f')).toBe(1)
    learn(s, 'acme', 'f', 800)
    expect(s.estimateOf('f')).toBe(800)
    for (let i = 0; i < 5; i++) learn(s, 'acme', 'f', 1)
    expect(s.estimateOf('f')).toBeGreaterThan(50)
    for (let i = 0; i < 60; i++) learn(s, 'acme', 'f', 1)
    expect(s.estimateOf('f')).toBeLessThan(50)
  })

  it('an explicit cap is kept', () => {
    const s = new FairScheduler<string>({ ...base, slots: 4, maxLongRunningPerAccount: 1 })
    for (let i = 0; i < 5; i++) s.enqueue('acme', 'x', `a${i}`)
    expect(s.next()?.item).toBe('a0')
    expect(s.next()).toBeUndefined()
  })
})

describe('FairScheduler: queue limits', () => {
  const refusal = (f: () => unknown): SvcError => {
    try {
      f()
    } catch (err) {
      return err as SvcError
    }
    throw new Error('not refused')
  }

  it("refuses a tenant past its own queue limit with 1005, and only that tenant", () => {
    const s = new FairScheduler<string>({ ...base, slots: 1, queueLimitPerAccount: 3 })
    for (let i = 0; i < 3; i++) s.enqueue('acme', 'f', `a${i}`)
    const err = refusal(() => s.enqueue('acme', 'f', 'a3'))
    expect(err.code).toBe(1005)
    expect(err.details).toMatchObject({ reason: 'tenant_queue_full', tenant: 'acme', limit: 3 })
    expect(err.retryAfterSeconds).toBe(1)
    expect(s.enqueue('globex', 'f', 'b0')).toEqual({})
    expect(s.stats().find((t) => t.account === 'acme')?.refused).toEqual({ tenant_queue_full: 1 })
  })

  it('when the shared queue is full, the tenant holding the most of it gives way: no other tenant is refused because of it', () => {
    const s = new FairScheduler<string>({ ...base, slots: 1, queueLimit: 4, queueLimitPerAccount: 64 })
    for (let i = 0; i < 4; i++) s.enqueue('acme', 'f', `a${i}`)
    // acme's own next call: it holds the whole queue, so it is refused itself
    expect(refusal(() => s.enqueue('acme', 'f', 'a4')).details).toMatchObject({ reason: 'queue_share' })
    // globex's call is queued; acme's newest waiting call makes room
    const { pushedOut } = s.enqueue('globex', 'f', 'b0')
    expect(pushedOut?.item).toBe('a3')
    expect(pushedOut?.error.code).toBe(1005)
    expect(pushedOut?.error.details).toMatchObject({ reason: 'pushed_out', tenant: 'acme' })
    expect(s.size).toBe(4)
    expect(s.enqueue('globex', 'f', 'b1').pushedOut?.item).toBe('a2')
    // now each holds two: globex's next call is refused as its own share (no one holds more than it)
    expect(refusal(() => s.enqueue('globex', 'f', 'b2')).details).toMatchObject({ reason: 'queue_share', tenant: 'globex' })
    const stats = new Map(s.stats().map((t) => [t.account, t]))
    expect(stats.get('acme')).toMatchObject({ queued: 2, refused: { queue_share: 1, pushed_out: 2 } })
    expect(stats.get('globex')).toMatchObject({ queued: 2, refused: { queue_share: 1 } })
  })

  it('requeue puts a call back at the head of its tenant and undoes its charge; drain empties every queue', () => {
    const s = new FairScheduler<string>({ ...base, slots: 1 })
    s.enqueue('acme', 'f', 'a0')
    s.enqueue('acme', 'f', 'a1')
    const d = s.next()!
    s.requeue(d)
    expect(s.size).toBe(2)
    expect(s.next()?.item).toBe('a0')
    expect(s.drain()).toEqual(['a1'])
    expect(s.size).toBe(0)
    expect(s.stats().find((t) => t.account === 'acme')).toMatchObject({ queued: 0, running: 1 })
  })

  it('validates its settings', () => {
    expect(() => new FairScheduler({ ...base, slots: 0 })).toThrow(/slots/)
    expect(() => new FairScheduler({ ...base, queueLimitPerAccount: -1 })).toThrow(/queueLimitPerAccount/)
    expect(() => new FairScheduler({ ...base, weights: { acme: 0 } })).toThrow(/weight/)
  })
})
