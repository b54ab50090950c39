// The CPU limit of JavaScript calls holds while the call runs: a busy loop ends by its CPU limit
// (1007, details.limit 'cpu'), not by its far longer wall-time limit, wherever it loops (the call, a
// continuation after an await, a script's or a module's top level); and a call held off the CPU (its
// worker stopped) is not failed for the wall time that passed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSandbox, type Sandbox, type SandboxOutcome } from '../../../src/engine/sandbox/index.js'
import { fn, request, sleep, waitFor } from './helpers.js'

const CPU_MS = 300
/** far above CPU_MS: a call that ran to it was not stopped by its CPU limit */
const TIMEOUT_MS = 20_000
const limits = { timeoutMs: TIMEOUT_MS, memoryMb: 32, cpuMs: CPU_MS }

let sandbox: Sandbox

beforeAll(async () => {
  sandbox = createSandbox({ workers: 1, maxWarmIsolatesPerWorker: 8, maxLogBytes: 4096, queueLimit: 20 })
  await sandbox.start()
})

afterAll(async () => {
  await sandbox?.stop()
})

async function timed(run: Promise<SandboxOutcome>): Promise<{ out: SandboxOutcome; elapsedMs: number }> {
  const began = performance.now()
  const out = await run
  return { out, elapsedMs: performance.now() - began }
}

function expectStoppedByCpu(out: SandboxOutcome, elapsedMs: number): void {
  expect(out.status, JSON.stringify(out.error)).toBe('error')
  expect(out.error?.code).toBe(1007)
  expect(out.error?.details).toMatchObject({ limit: 'cpu', cpuMs: CPU_MS })
  expect(out.error?.message).toMatch(/CPU limit of 300 ms/)
  // never before its limit; and stopped by it, not by the wall-time limit
  expect(out.cpuTimeMs).toBeGreaterThanOrEqual(CPU_MS)
  expect(elapsedMs).toBeLessThan(TIMEOUT_MS / 2)
}

async function expectServed(key: string): Promise<void> {
  const out = await sandbox.execute(request({ key, limits }))
  expect(out).toMatchObject({ status: 'success', result: 5 })
}

describe('CPU limit while a JavaScript call runs', () => {
  it('stops a synchronous busy loop with the CPU error and discards its isolate', async () => {
    const key = 'cpu/sync'
    const source = 'function f(spin) { if (!spin) return "fresh"; for (;;) {} }'
    const { out, elapsedMs } = await timed(sandbox.execute(fn(key, '', { source, signature: '(spin)', args: { spin: true }, limits })))
    expectStoppedByCpu(out, elapsedMs)
    // the key's next call runs in a new isolate; other keys are served
    const next = await sandbox.execute(fn(key, '', { source, signature: '(spin)', args: { spin: false }, limits }))
    expect(next).toMatchObject({ status: 'success', result: 'fresh' })
    await expectServed('cpu/other')
  })

  it('stops a loop that runs after an await', async () => {
    const { out, elapsedMs } = await timed(sandbox.execute(fn('cpu/after-await', '', {
      source: 'async function f() { await null; await Promise.resolve(1); for (;;) {} }',
      limits,
    })))
    expectStoppedByCpu(out, elapsedMs)
  })

  it('stops a loop at the top level of a script', async () => {
    const { out, elapsedMs } = await timed(sandbox.execute(request({ key: 'cpu/script-top', source: 'for (;;) {}\nfunction add(a, b) { return a + b }', limits })))
    expectStoppedByCpu(out, elapsedMs)
  })

  it('stops a loop at the top level of a module, after a top-level await', async () => {
    const source = 'await null\nfor (;;) {}\nexport function add(a, b) { return a + b }'
    const { out, elapsedMs } = await timed(sandbox.execute(request({ key: 'cpu/module-top', source, limits })))
    expectStoppedByCpu(out, elapsedMs)
  })

  it('does not fail a call for wall time spent off the CPU (its worker stopped meanwhile)', async () => {
    // ~150 ms of CPU, far below the limit, while the worker is stopped for longer than the limit
    const source = 'function f(ms) { const end = Date.now() + ms; let n = 0; while (Date.now() < end) n++; return ms === 0 || n > 0 }'
    const call = (ms: number) => sandbox.execute(fn('cpu/starved', '', { source, signature: '(ms)', args: { ms }, limits }))
    expect(await call(0)).toMatchObject({ status: 'success', result: true }) // warm: the next call starts at once
    const pid = sandbox.stats().perWorker[0]!.pid
    const running = call(150)
    await waitFor(() => sandbox.stats().perWorker.some((w) => w.busy), 5_000)
    await sleep(30)
    process.kill(pid, 'SIGSTOP')
    try {
      await sleep(CPU_MS * 3)
    } finally {
      process.kill(pid, 'SIGCONT')
    }
    const out = await running
    expect(out.status, JSON.stringify(out.error)).toBe('success')
    expect(out.result).toBe(true)
    expect(out.wallTimeMs).toBeGreaterThan(CPU_MS)
    expect(out.cpuTimeMs).toBeLessThan(CPU_MS)
  })

  it('lets a call that stays under its limit finish, and reports its CPU time', async () => {
    const out = await sandbox.execute(fn('cpu/under', 'let s = 0; for (let i = 0; i < 2e6; i++) s += i; return s > 0', { limits: { ...limits, cpuMs: 5_000 } }))
    expect(out).toMatchObject({ status: 'success', result: true })
    expect(out.cpuTimeMs).toBeGreaterThan(0)
    expect(out.cpuTimeMs).toBeLessThan(5_000)
  })
})
