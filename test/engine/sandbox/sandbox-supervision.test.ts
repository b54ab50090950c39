import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterEach, describe, expect, it } from 'vitest'
import { isSvcError } from '../../../src/core/errors.js'
import { createSandbox, type Sandbox, type SandboxInit, type SandboxOutcome } from '../../../src/engine/sandbox/index.js'
import { fn, LIMITS, request, sleep, waitFor } from './helpers.js'

const opened: Sandbox[] = []

async function open(init: Partial<SandboxInit> = {}): Promise<Sandbox> {
  const sandbox = createSandbox({ workers: 2, maxWarmIsolatesPerWorker: 4, maxLogBytes: 4096, queueLimit: 10, ...init })
  opened.push(sandbox)
  await sandbox.start()
  return sandbox
}

afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.stop()))
})

const spin = (ms: number, value: string): string => `const end = Date.now() + ${ms}; while (Date.now() < end) {} return ${JSON.stringify(value)}`

function errorCode(err: unknown): number | undefined {
  return isSvcError(err) ? err.code : undefined
}

describe('crash recovery', () => {
  it('replaces a worker killed while idle, and the next call succeeds', async () => {
    const sandbox = await open({ workers: 1 })
    const [worker] = sandbox.stats().perWorker
    process.kill(worker!.pid, 'SIGKILL')
    const out = await sandbox.execute(request())
    expect(out).toMatchObject({ status: 'success', result: 5 })
    expect(out.workerPid).not.toBe(worker!.pid)
    await waitFor(() => sandbox.stats().restarts === 1 && sandbox.stats().readyWorkers === 1)
  })

  it('fails a call whose worker is killed while busy with 1007; another tenant in another worker is unaffected', async () => {
    const sandbox = await open({ workers: 2 })
    const limits = { ...LIMITS, timeoutMs: 10_000, cpuMs: 10_000 }
    const tenantA = sandbox.execute(fn('tenant-a/slow', spin(1_200, 'A done'), { limits }))
    const pidA = await waitFor(() => sandbox.stats().perWorker.find((w) => w.busy)?.pid)
    const tenantB = sandbox.execute(fn('tenant-b/loop', 'while (true) {}', { limits }))
    const pidB = await waitFor(() => sandbox.stats().perWorker.find((w) => w.busy && w.pid !== pidA)?.pid)
    await sleep(200)
    process.kill(pidB, 'SIGKILL')

    const b = await tenantB
    expect(b.status).toBe('error')
    expect(b.error?.code).toBe(1007)
    expect(b.error?.message).toMatch(/died.*SIGKILL/)
    const a = await tenantA
    expect(a).toMatchObject({ status: 'success', result: 'A done', workerPid: pidA })

    expect(await sandbox.execute(request())).toMatchObject({ status: 'success', result: 5 })
    await waitFor(() => sandbox.stats().readyWorkers === 2)
    expect(sandbox.stats().restarts).toBe(1)
  })
})

describe('warm isolates', () => {
  it('routes a key back to the worker that holds it warm', async () => {
    const sandbox = await open({ workers: 2 })
    const first = await sandbox.execute(request({ key: 'warm/one' }))
    const other = await sandbox.execute(request({ key: 'warm/two' }))
    expect(other.workerPid).not.toBe(first.workerPid)
    for (let i = 0; i < 4; i++) {
      expect((await sandbox.execute(request({ key: 'warm/one' }))).workerPid).toBe(first.workerPid)
      expect((await sandbox.execute(request({ key: 'warm/two' }))).workerPid).toBe(other.workerPid)
    }
    expect(sandbox.stats().warmIsolates).toBe(2)
  })

  it('keeps at most maxWarmIsolatesPerWorker isolates per worker (LRU)', async () => {
    const sandbox = await open({ workers: 1, maxWarmIsolatesPerWorker: 2 })
    for (const key of ['lru/a', 'lru/b', 'lru/c', 'lru/a']) {
      expect((await sandbox.execute(request({ key }))).status).toBe('success')
    }
    expect(sandbox.stats().warmIsolates).toBe(2)
  })

  it('sends a source once per worker, and sends it again when the worker no longer has it', async () => {
    // the worker keeps 64 characters of source and one warm isolate: after key b ran, key a's
    // source and isolate are both gone, while the supervisor still counts the source as sent
    const sandbox = await open({ workers: 1, maxWarmIsolatesPerWorker: 1, maxSourceCharsPerWorker: 64 })
    const a = request({ key: 'src/a', source: 'function add(a, b) { return a + b } // a', args: { a: 1, b: 2 } })
    const b = request({ key: 'src/b', source: 'function add(a, b) { return a * b } // b', args: { a: 3, b: 4 } })
    for (const [req, result] of [[a, 3], [b, 12], [a, 3], [a, 3], [b, 12]] as const) {
      const out = await sandbox.execute(req)
      expect(out.error?.message).toBeUndefined()
      expect(out.result).toBe(result)
    }
    expect(sandbox.stats().restarts).toBe(0)
  })

  it('works without warm isolates', async () => {
    const sandbox = await open({ workers: 1, maxWarmIsolatesPerWorker: 0 })
    expect((await sandbox.execute(request())).result).toBe(5)
    expect((await sandbox.execute(request())).result).toBe(5)
    expect(sandbox.stats().warmIsolates).toBe(0)
  })
})

describe('queue', () => {
  it("runs a tenant's queued calls in FIFO order; past queueLimit that tenant, holding the whole queue, is refused with 1005", async () => {
    const sandbox = await open({ workers: 1, queueLimit: 3 })
    const finished: string[] = []
    const call = (name: string, ms: number): Promise<SandboxOutcome> =>
      sandbox.execute(fn(`queue/${name}`, spin(ms, name))).then((out) => {
        finished.push(String(out.result))
        return out
      })
    const running = call('first', 300)
    const queued = [call('second', 10), call('third', 10), call('fourth', 10)]
    expect(sandbox.stats().queued).toBe(3)
    const refused = await call('fifth', 10).catch((e: unknown) => e)
    expect(errorCode(refused)).toBe(1005)
    expect((refused as { details: Record<string, unknown> }).details).toMatchObject({ reason: 'queue_share', tenant: 'queue' })
    await Promise.all([running, ...queued])
    expect(finished).toEqual(['first', 'second', 'third', 'fourth'])
  })

  it("a full queue makes room for another tenant's call: the newest waiting call of the tenant holding the most is refused with 1005", async () => {
    const sandbox = await open({ workers: 1, queueLimit: 3 })
    const running = sandbox.execute(fn('queue/first', spin(300, 'first')))
    const queued = ['second', 'third', 'fourth'].map((name) => sandbox.execute(fn(`queue/${name}`, spin(10, name))).then((o) => o.result, (e: unknown) => e))
    const other = await sandbox.execute(request({ key: 'globex/add/v1' }))
    expect(other.result).toBe(5)
    const [second, third, fourth] = await Promise.all(queued)
    expect([second, third]).toEqual(['second', 'third'])
    expect(errorCode(fourth)).toBe(1005)
    expect((fourth as { details: Record<string, unknown> }).details).toMatchObject({ reason: 'pushed_out', tenant: 'queue' })
    await running
  })
})

describe('lifecycle', () => {
  it('start() is idempotent', async () => {
    const sandbox = createSandbox({ workers: 2, maxWarmIsolatesPerWorker: 2, maxLogBytes: 1024, queueLimit: 2 })
    opened.push(sandbox)
    await Promise.all([sandbox.start(), sandbox.start()])
    const pids = sandbox.stats().perWorker.map((w) => w.pid)
    expect(pids).toHaveLength(2)
    await sandbox.start()
    expect(sandbox.stats().perWorker.map((w) => w.pid)).toEqual(pids)
  })

  it('refuses calls with 1010 before start and after stop', async () => {
    const sandbox = createSandbox({ workers: 1, maxWarmIsolatesPerWorker: 2, maxLogBytes: 1024, queueLimit: 2 })
    expect(errorCode(await sandbox.execute(request()).catch((e: unknown) => e))).toBe(1010)
    await sandbox.start()
    await sandbox.stop()
    expect(errorCode(await sandbox.execute(request()).catch((e: unknown) => e))).toBe(1010)
    expect(sandbox.stats()).toMatchObject({ running: false, readyWorkers: 0, perWorker: [] })
  })

  it('stop() rejects running and queued calls with 1010 and kills the workers; start() works again', async () => {
    const sandbox = await open({ workers: 1 })
    const limits = { ...LIMITS, timeoutMs: 10_000 }
    const [pid] = sandbox.stats().perWorker.map((w) => w.pid)
    const running = sandbox.execute(fn('stop/running', 'while (true) {}', { limits })).catch((e: unknown) => e)
    const queued = sandbox.execute(request()).catch((e: unknown) => e)
    await waitFor(() => sandbox.stats().busyWorkers === 1)
    await sandbox.stop()
    expect(errorCode(await running)).toBe(1010)
    expect(errorCode(await queued)).toBe(1010)
    expect(() => process.kill(pid!, 0)).toThrow()

    await sandbox.start()
    expect((await sandbox.execute(request())).result).toBe(5)
  })

  it('startOnDemand: no worker until the first call; concurrent first calls share one start; stop() kills them', async () => {
    const sandbox = await open({ workers: 2, startOnDemand: true })
    expect(sandbox.stats()).toMatchObject({ running: true, readyWorkers: 0, perWorker: [] })
    const outs = await Promise.all([sandbox.execute(request()), sandbox.execute(request()), sandbox.execute(request())])
    for (const out of outs) expect(out).toMatchObject({ status: 'success', result: 5 })
    await waitFor(() => sandbox.stats().readyWorkers === 2)
    await sleep(200)
    expect(sandbox.stats().perWorker).toHaveLength(2) // one start for all three calls
    expect(sandbox.stats().restarts).toBe(0)
    const pids = sandbox.stats().perWorker.map((w) => w.pid)
    await sandbox.stop()
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow()
    expect(errorCode(await sandbox.execute(request()).catch((e: unknown) => e))).toBe(1010)
  })

  it('leaves nothing behind: a process that stops its sandbox exits by itself', async () => {
    const fixture = fileURLToPath(new URL('./fixtures/exit-after-stop.ts', import.meta.url))
    const { stdout } = await promisify(execFile)(process.execPath, ['--no-node-snapshot', '--import', 'tsx', fixture], {
      timeout: 20_000,
      killSignal: 'SIGKILL',
    })
    expect(JSON.parse(stdout)).toEqual({ ok: 'ok', slow: 'timeout' })
  })
})
