// A sandbox worker's total memory bound (execution.worker_memory_mb) and its cgroup: the call that
// leaves a worker past its bound gets the memory error and the worker is replaced; where the node may
// use cgroups, each worker runs in a memory and pids cgroup of its own, removed when it exits, and an
// OOM kill there is the running call's memory error.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { cgroupMemoryMbFor, createSandbox, resolveMemoryBound, type MemoryBound, type Sandbox } from '../../../src/engine/sandbox/index.js'
import { waitFor } from './helpers.js'

const BOUND_MB = 300
const limits = { timeoutMs: 20_000, memoryMb: 128, cpuMs: 20_000 }
const add = { language: 'javascript', source: 'function add(a, b) { return a + b }', functionName: 'add', signature: '(a, b)', args: [2, 3], limits }

let sandbox: Sandbox | undefined
let bound: MemoryBound | undefined

afterEach(async () => {
  await sandbox?.stop()
  await bound?.close()
  sandbox = undefined
  bound = undefined
})

async function start(memoryBound: MemoryBound): Promise<Sandbox> {
  bound = memoryBound
  sandbox = createSandbox({ workers: 1, maxWarmIsolatesPerWorker: 32, maxLogBytes: 4096, queueLimit: 20, memoryBound })
  await sandbox.start()
  return sandbox
}

describe('worker memory bound', () => {
  it('answers the call that leaves the worker past its bound with the memory error, and replaces the worker', async () => {
    const sb = await start(resolveMemoryBound({ mode: 'off', workerMemoryMb: BOUND_MB }))
    const first = sb.stats().perWorker[0]!.pid
    // each call keeps 60 MiB alive in its own warm isolate: the worker passes 300 MB within a few
    let failed: Awaited<ReturnType<Sandbox['execute']>> | undefined
    let served = 0
    for (let i = 0; i < 12 && failed === undefined; i++) {
      const out = await sb.execute({ key: `bound/hog-${i}`, language: 'javascript', source: 'function f() { globalThis.kept = new Uint8Array(60 * 2 ** 20).fill(1); return 1 }', functionName: 'f', signature: '()', args: [], limits })
      if (out.status === 'success') served++
      else failed = out
    }
    expect(failed, `${served} calls served, none refused`).toBeDefined()
    expect(failed!.error?.code).toBe(1007)
    expect(failed!.error?.details).toMatchObject({ limit: 'memory', workerMemoryMb: BOUND_MB })
    expect(failed!.error?.message).toMatch(/memory bound of 300 MB/)
    expect(failed!.workerPid).toBe(first)
    // a new worker serves the next call
    await waitFor(() => sb.stats().readyWorkers === 1 && sb.stats().perWorker[0]!.pid !== first)
    const next = await sb.execute({ key: 'bound/add', ...add })
    expect(next).toMatchObject({ status: 'success', result: 5 })
    expect(next.workerPid).not.toBe(first)
    expect(sb.stats().restarts).toBe(1)
  })
})

// whether this host lets the node use cgroups (root on cgroup v1, a delegated cgroup on v2)
const probe = resolveMemoryBound({ mode: 'auto', workerMemoryMb: BOUND_MB })
const cgroups = probe.status.cgroup

describe.skipIf(cgroups === 'none')(`worker cgroups (${cgroups === 'none' ? `skipped: ${probe.status.reason}` : cgroups})`, () => {
  beforeAll(() => probe.close())

  it('puts each worker in its own memory and pids cgroup while it runs, and removes it when it exits', async () => {
    const sb = await start(resolveMemoryBound({ mode: 'required', workerMemoryMb: BOUND_MB }))
    expect(bound!.status).toMatchObject({ cgroup: cgroups, cgroupMemoryMb: cgroupMemoryMbFor(BOUND_MB), pidsMax: 256 })
    const pid = sb.stats().perWorker[0]!.pid
    const memoryBytes = String(cgroupMemoryMbFor(BOUND_MB) * 2 ** 20)
    // the directories of this worker's cgroups, found through the mounts of each hierarchy
    const mounts = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').map((l) => l.split(' ')).filter((f) => f.includes('-'))
    const dirs: string[] = []
    for (const line of readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n').filter((l) => /svc-node\./.test(l))) {
      const [, controllers, path] = line.split(':') as [string, string, string]
      const mount = mounts.find((f) => {
        const type = f[f.indexOf('-') + 1]
        return cgroups === 'v2' ? type === 'cgroup2' : type === 'cgroup' && f[f.indexOf('-') + 3]!.split(',').some((o) => controllers.split(',').includes(o))
      })
      expect(mount, line).toBeDefined()
      dirs.push(join(mount![4]!, path))
    }
    expect(dirs.length).toBe(cgroups === 'v1' ? 2 : 1)
    if (cgroups === 'v1') {
      const memory = dirs.find((d) => existsSync(join(d, 'memory.limit_in_bytes')))
      const pids = dirs.find((d) => existsSync(join(d, 'pids.max')))
      expect(readFileSync(join(memory!, 'memory.limit_in_bytes'), 'utf8').trim()).toBe(memoryBytes)
      expect(readFileSync(join(pids!, 'pids.max'), 'utf8').trim()).toBe('256')
    } else {
      expect(readFileSync(join(dirs[0]!, 'memory.max'), 'utf8').trim()).toBe(memoryBytes)
      expect(readFileSync(join(dirs[0]!, 'pids.max'), 'utf8').trim()).toBe('256')
    }
    for (const dir of dirs) expect(readFileSync(join(dir, 'cgroup.procs'), 'utf8')).not.toBe('')
    await sb.execute({ key: 'cgroup/add', ...add })
    await sandbox!.stop()
    sandbox = undefined
    await waitFor(() => dirs.every((d) => !existsSync(d)), 5_000)
  })

  it('reports an OOM kill by the cgroup as the running call\'s memory error, and serves the next call', async () => {
    const sb = await start(resolveMemoryBound({ mode: 'required', workerMemoryMb: BOUND_MB }))
    const first = sb.stats().perWorker[0]!.pid
    // one call faults in more than the cgroup allows before the check after it could run
    const out = await sb.execute({ key: 'cgroup/spike', language: 'javascript', source: 'function f() { const a = new Uint8Array(700 * 2 ** 20); a.fill(1); return a.length }', functionName: 'f', signature: '()', args: [], limits: { ...limits, memoryMb: 2048 } })
    expect(out.status).toBe('error')
    expect(out.error?.code).toBe(1007)
    expect(out.error?.details).toMatchObject({ limit: 'memory', reason: 'oom_kill', cgroupMemoryMb: cgroupMemoryMbFor(BOUND_MB) })
    await waitFor(() => sb.stats().readyWorkers === 1 && sb.stats().perWorker[0]!.pid !== first)
    expect(await sb.execute({ key: 'cgroup/add', ...add })).toMatchObject({ status: 'success', result: 5 })
  })
})
