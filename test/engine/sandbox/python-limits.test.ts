import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSandbox, type Sandbox, type SandboxRequest } from '../../../src/engine/sandbox/index.js'
import { ADD_PY, py, pyBody, PYTHON_HOOK_TIMEOUT_MS } from './fixtures/python.js'
import { LIMITS, waitFor } from './helpers.js'

/** The worker's Python kill grace here (the default is 1000 ms; this keeps the watchdog test short). */
const PYTHON_KILL_GRACE_MS = 600

let sandbox: Sandbox

beforeAll(async () => {
  sandbox = createSandbox({ workers: 1, maxWarmIsolatesPerWorker: 8, maxLogBytes: 4096, queueLimit: 20, pythonKillGraceMs: PYTHON_KILL_GRACE_MS })
  await sandbox.start()
  await expectHealthy()
}, PYTHON_HOOK_TIMEOUT_MS)

afterAll(async () => {
  await sandbox?.stop()
})

async function timed(req: SandboxRequest): Promise<{ elapsed: number; out: Awaited<ReturnType<Sandbox['execute']>> }> {
  const began = performance.now()
  const out = await sandbox.execute(req)
  return { elapsed: performance.now() - began, out }
}

async function expectHealthy(): Promise<Awaited<ReturnType<Sandbox['execute']>>> {
  const out = await sandbox.execute(py('limits/healthy', ADD_PY, { functionName: 'add', args: { a: 2, b: 3 } }))
  expect(out).toMatchObject({ status: 'success', result: 5 })
  return out
}

describe('wall time', () => {
  const timeoutMs = 300

  it('ends an endless loop with 1004 within the limit plus 250 ms; the warm interpreter serves the next call', async () => {
    const pid = (await expectHealthy()).workerPid
    const { elapsed, out } = await timed(pyBody('limits/loop', 'while True:\n    pass', { limits: { ...LIMITS, timeoutMs } }))
    expect(out.status).toBe('timeout')
    expect(out.error?.code).toBe(1004)
    expect(elapsed).toBeLessThan(timeoutMs + 250)
    const began = performance.now()
    const next = await expectHealthy()
    expect(next.workerPid).toBe(pid)
    expect(performance.now() - began).toBeLessThan(500)
  })

  it('ends an endless loop at the top level of the source with 1004', async () => {
    const { elapsed, out } = await timed(py('limits/top-level', 'while True:\n    pass\n\ndef f():\n    return 1\n', { limits: { ...LIMITS, timeoutMs } }))
    expect(out.error?.code).toBe(1004)
    expect(elapsed).toBeLessThan(timeoutMs + 250)
  })

  it('ends a sleep longer than the limit with 1004', async () => {
    const { elapsed, out } = await timed(pyBody('limits/sleep', 'import time\ntime.sleep(5)\nreturn 1', { limits: { ...LIMITS, timeoutMs } }))
    expect(out.error?.code).toBe(1004)
    expect(elapsed).toBeLessThan(timeoutMs + 250)
  })

  it('keeps the output written before a timeout', async () => {
    const { out } = await timed(pyBody('limits/logs', 'print("started")\nwhile True:\n    pass', { limits: { ...LIMITS, timeoutMs } }))
    expect(out.status).toBe('timeout')
    expect(out.logs.map((l) => l.message)).toEqual(['started'])
  })

  it('reports a KeyboardInterrupt the function raises itself as its own error (1007), not as a limit', async () => {
    const out = await sandbox.execute(pyBody('limits/own-interrupt', 'raise KeyboardInterrupt'))
    expect(out.error?.code).toBe(1007)
    expect(out.error?.message).toMatch(/raised KeyboardInterrupt/)
    expect(out.error?.details?.limit).toBeUndefined()
  })

  it('reports 1004 when the function swallows the interrupt but returns after its deadline', async () => {
    const body = 'import time\ntry:\n    while True:\n        pass\nexcept KeyboardInterrupt:\n    pass\nreturn "late"'
    const { out } = await timed(pyBody('limits/swallow-once', body, { limits: { ...LIMITS, timeoutMs } }))
    expect(out.error?.code).toBe(1004)
    await expectHealthy()
  })
})

describe('memory', () => {
  it('fails a memory bomb with 1007; the same worker serves the next call', async () => {
    const pid = (await expectHealthy()).workerPid
    const out = await sandbox.execute(pyBody('limits/bomb', 'hoard = []\nwhile True:\n    hoard.append(" " * 1_000_000)', {
      limits: { ...LIMITS, memoryMb: 32, timeoutMs: 10_000 },
    }))
    expect(out.status).toBe('error')
    expect(out.error?.code).toBe(1007)
    expect(out.error?.message).toMatch(/memory limit of 32 MB/)
    const next = await expectHealthy()
    expect(next.workerPid).toBe(pid)
  })

  it('fails one huge allocation with 1007', async () => {
    const out = await sandbox.execute(pyBody('limits/huge', 'return len(bytearray(1_500_000_000))', { limits: { ...LIMITS, memoryMb: 64 } }))
    expect(out.error?.code).toBe(1007)
    expect(out.error?.message).toMatch(/memory limit/)
  })

  it('lets a call use memory within its limit, again and again', async () => {
    for (let i = 0; i < 3; i++) {
      const out = await sandbox.execute(pyBody('limits/within', 'data = [" " * 1000 for _ in range(10_000)]\nreturn len(data)', { limits: { ...LIMITS, memoryMb: 32 } }))
      expect(out).toMatchObject({ status: 'success', result: 10_000 })
    }
  })

  it('reports deep recursion as 1007 without harming the interpreter', async () => {
    const src = 'import sys\n\ndef f():\n    sys.setrecursionlimit(1_000_000)\n    def down(n):\n        return down(n + 1)\n    return down(0)\n'
    const out = await sandbox.execute(py('limits/recursion', src))
    expect(out.error?.code).toBe(1007)
    expect(out.error?.message).toMatch(/RecursionError/)
    const limit = await sandbox.execute(pyBody('limits/recursion-limit', 'import sys\nreturn sys.getrecursionlimit()'))
    expect(limit.result).toBeLessThan(1_000_000)
    await expectHealthy()
  })
})

describe('CPU time', () => {
  it('ends a busy loop at its CPU limit, long before its wall-time limit, with 1007 naming the CPU limit', async () => {
    const pid = (await expectHealthy()).workerPid
    const { out } = await timed(pyBody('limits/cpu-loop', 'while True:\n    pass', { limits: { timeoutMs: 10_000, memoryMb: 32, cpuMs: 500 } }))
    expect(out.status).toBe('error')
    expect(out.error?.code).toBe(1007)
    expect(out.error?.details).toMatchObject({ limit: 'cpu', cpuMs: 500 })
    expect(out.error?.message).toMatch(/over its CPU limit of 500 ms/)
    // never before its limit, and within the 100 ms of CPU past it
    expect(out.cpuTimeMs).toBeGreaterThanOrEqual(500)
    expect(out.cpuTimeMs).toBeLessThan(600)
    expect(out.wallTimeMs).toBeLessThan(10_000)
    const next = await expectHealthy()
    expect(next.workerPid).toBe(pid)
  })

  it('does not count time a call spends waiting', async () => {
    const out = await sandbox.execute(pyBody('limits/cpu-sleep', 'import time\ntime.sleep(0.6)\nreturn "rested"', { limits: { timeoutMs: 5_000, memoryMb: 32, cpuMs: 200 } }))
    expect(out).toMatchObject({ status: 'success', result: 'rested' })
    expect(out.cpuTimeMs).toBeLessThan(200)
  })

  it('ends a loop at the top level of the source at its CPU limit', async () => {
    const out = await sandbox.execute(py('limits/cpu-top', 'while True:\n    pass\n\ndef f():\n    return 1\n', { limits: { timeoutMs: 10_000, memoryMb: 32, cpuMs: 300 } }))
    expect(out.error?.code).toBe(1007)
    expect(out.error?.details).toMatchObject({ limit: 'cpu' })
  })

  it('reports the CPU limit when the function swallows the interrupt but returns after it', async () => {
    const body = 'try:\n    while True:\n        pass\nexcept KeyboardInterrupt:\n    pass\nreturn "late"'
    const out = await sandbox.execute(pyBody('limits/cpu-swallow-once', body, { limits: { timeoutMs: 10_000, memoryMb: 32, cpuMs: 300 } }))
    expect(out.error?.code).toBe(1007)
    expect(out.error?.details).toMatchObject({ limit: 'cpu' })
    await expectHealthy()
  })
})

describe('supervision', () => {
  it('discards the interpreter of a function that keeps swallowing the interrupt (1004); the worker lives on', async () => {
    const before = sandbox.stats().restarts
    // a stdlib class attribute lives as long as the tenant's interpreter (python-prelude.py)
    const mark = 'import string\nstring.Template._mark = getattr(string.Template, "_mark", 0) + 1\nreturn string.Template._mark'
    const marked = await sandbox.execute(pyBody('limits/mark', mark))
    const body = 'while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass'
    const { elapsed, out } = await timed(pyBody('limits/stubborn', body, { limits: { ...LIMITS, timeoutMs: 500 } }))
    expect(out.status).toBe('timeout')
    expect(out.error?.code).toBe(1004)
    expect(out.error?.message).toMatch(/interpreter was discarded/)
    expect(out.error?.details).toMatchObject({ limit: 'time', interpreterDiscarded: true })
    // well before the watchdog (the time limit plus the Python kill grace)
    expect(elapsed).toBeLessThan(500 + PYTHON_KILL_GRACE_MS)
    expect(out.workerPid).toBe(marked.workerPid)
    expect(sandbox.stats().restarts).toBe(before)
    // the tenant's next call runs in a new interpreter, in the same worker
    const again = await sandbox.execute(pyBody('limits/mark', mark))
    expect(again).toMatchObject({ status: 'success', result: 1, workerPid: marked.workerPid })
  }, 60_000)

  it('discards the interpreter of a function that keeps swallowing the CPU interrupt (1007)', async () => {
    const body = 'while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass'
    const pid = (await expectHealthy()).workerPid
    const out = await sandbox.execute(pyBody('limits/stubborn-cpu', body, { limits: { timeoutMs: 10_000, memoryMb: 32, cpuMs: 300 } }))
    expect(out.error?.code).toBe(1007)
    expect(out.error?.details).toMatchObject({ limit: 'cpu', interpreterDiscarded: true })
    expect((await expectHealthy()).workerPid).toBe(pid)
  }, 60_000)

  it('kills a worker stuck in a C loop that never checks for signals (watchdog) with 1004; a new worker serves the next call', async () => {
    const before = sandbox.stats().restarts
    const pid = (await expectHealthy()).workerPid
    const body = 'import collections, itertools\ncollections.deque(itertools.count(), 0)'
    const { elapsed, out } = await timed(pyBody('limits/c-loop', body, { limits: { ...LIMITS, timeoutMs: 500 } }))
    expect(out.status).toBe('timeout')
    expect(out.error?.code).toBe(1004)
    expect(out.error?.message).toMatch(/killed/)
    // the watchdog: the time limit plus the Python kill grace, plus scheduling slack
    expect(elapsed).toBeLessThan(500 + PYTHON_KILL_GRACE_MS + 250)
    await waitFor(() => sandbox.stats().restarts > before && sandbox.stats().readyWorkers === 1)
    const next = await expectHealthy()
    expect(next.workerPid).not.toBe(pid)
  }, 60_000)
})
