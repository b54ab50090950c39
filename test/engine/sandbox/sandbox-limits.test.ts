import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSandbox, type Sandbox, type SandboxRequest } from '../../../src/engine/sandbox/index.js'
import { fn, LIMITS, request, waitFor } from './helpers.js'

let sandbox: Sandbox

beforeAll(async () => {
  sandbox = createSandbox({ workers: 2, maxWarmIsolatesPerWorker: 4, maxLogBytes: 4096, queueLimit: 20 })
  await sandbox.start()
})

afterAll(async () => {
  await sandbox?.stop()
})

async function timed(req: SandboxRequest): Promise<{ elapsed: number; out: Awaited<ReturnType<Sandbox['execute']>> }> {
  const began = performance.now()
  const out = await sandbox.execute(req)
  return { elapsed: performance.now() - began, out }
}

async function expectHealthy(key = 'limits/healthy'): Promise<void> {
  const out = await sandbox.execute(request({ key }))
  expect(out).toMatchObject({ status: 'success', result: 5 })
}

describe('wall time', () => {
  const timeoutMs = 300

  it('ends an endless loop with 1004 within the limit plus 250 ms', async () => {
    const { elapsed, out } = await timed(fn('limits/loop', 'while (true) {}', { limits: { ...LIMITS, timeoutMs } }))
    expect(out.status).toBe('timeout')
    expect(out.error?.code).toBe(1004)
    expect(elapsed).toBeLessThan(timeoutMs + 250)
    await expectHealthy()
  })

  it('ends a promise that never settles with 1004', async () => {
    const { elapsed, out } = await timed(fn('limits/never', 'return new Promise(() => {})', { limits: { ...LIMITS, timeoutMs } }))
    expect(out.status).toBe('timeout')
    expect(out.error?.code).toBe(1004)
    expect(elapsed).toBeLessThan(timeoutMs + 250)
    await expectHealthy()
  })

  it('ends an endless microtask chain with 1004', async () => {
    const body = 'return (async () => { for (;;) await null })()'
    const { elapsed, out } = await timed(fn('limits/microtasks', body, { limits: { ...LIMITS, timeoutMs } }))
    expect(out.error?.code).toBe(1004)
    expect(elapsed).toBeLessThan(timeoutMs + 250)
  })

  it('ends an endless loop in the source top level with 1004', async () => {
    const req = request({ key: 'limits/top-level', source: 'while (true) {}\nfunction add() {}', limits: { ...LIMITS, timeoutMs } })
    const { out } = await timed(req)
    expect(out.error?.code).toBe(1004)
  })

  it('keeps the logs written before a timeout', async () => {
    const { out } = await timed(fn('limits/logs-timeout', 'console.log("started"); while (true) {}', { limits: { ...LIMITS, timeoutMs } }))
    expect(out.status).toBe('timeout')
    expect(out.logs.map((l) => l.message)).toEqual(['started'])
  })

  it('kills and replaces a worker that stops answering (watchdog)', async () => {
    const before = sandbox.stats().restarts
    const pending = timed(fn('limits/frozen', 'while (true) {}', { limits: { ...LIMITS, timeoutMs: 1_000 } }))
    // Freeze the busy worker: the isolate's own timeout cannot answer, only the watchdog can.
    const pid = await waitFor(() => sandbox.stats().perWorker.find((w) => w.busy)?.pid)
    await new Promise((resolve) => setTimeout(resolve, 200))
    process.kill(pid, 'SIGSTOP')
    const { elapsed, out } = await pending
    expect(out.status).toBe('timeout')
    expect(out.error?.code).toBe(1004)
    expect(out.error?.message).toMatch(/killed/)
    expect(elapsed).toBeLessThan(1_000 + 100 + 250)
    await waitFor(() => sandbox.stats().restarts > before && sandbox.stats().readyWorkers === 2)
    expect(sandbox.stats().perWorker.map((w) => w.pid)).not.toContain(pid)
    await expectHealthy()
  })
})

describe('memory', () => {
  it('fails an unbounded allocation with 1007 and serves the next call with a new isolate', async () => {
    const key = 'limits/oom'
    const source = `function f(grow) {
      if (!grow) return 'fine'
      const hoard = []
      for (;;) hoard.push(new Array(100000).fill(Math.random()))
    }`
    const limits = { ...LIMITS, memoryMb: 16, timeoutMs: 10_000 }
    const out = await sandbox.execute(fn(key, '', { source, signature: '(grow)', args: { grow: true }, limits }))
    expect(out.status).toBe('error')
    expect(out.error?.code).toBe(1007)
    expect(out.error?.message).toMatch(/memory limit|died/)
    const next = await sandbox.execute(fn(key, '', { source, signature: '(grow)', args: { grow: false }, limits }))
    expect(next).toMatchObject({ status: 'success', result: 'fine' })
    expect(next.memoryBytes).toBeGreaterThan(0)
    expect(next.memoryBytes).toBeLessThan(16 * 1024 * 1024)
    await expectHealthy()
  })

  it('reports the heap in use after the call', async () => {
    const out = await sandbox.execute(fn('limits/heap', 'globalThis.keep = new Array(200000).fill(1.5); return 1'))
    expect(out.memoryBytes).toBeGreaterThan(1_000_000)
  })
})

describe('cpu time', () => {
  it('fails a call that used more CPU than its limit with 1007', async () => {
    const body = 'const end = Date.now() + 150; let n = 0; while (Date.now() < end) n++; return n'
    const out = await sandbox.execute(fn('limits/cpu', body, { limits: { ...LIMITS, cpuMs: 30 } }))
    expect(out.status).toBe('error')
    expect(out.error?.code).toBe(1007)
    expect(out.error?.message).toMatch(/CPU/)
    expect(out.cpuTimeMs).toBeGreaterThan(30)
  })

  it('reports CPU time in milliseconds for a call within its limit', async () => {
    const out = await sandbox.execute(fn('limits/cpu-ok', 'let s = 0; for (let i = 0; i < 1e6; i++) s += i; return s'))
    expect(out.status).toBe('success')
    expect(out.cpuTimeMs).toBeGreaterThan(0)
    expect(out.cpuTimeMs).toBeLessThan(LIMITS.cpuMs)
  })
})
