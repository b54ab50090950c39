// Cgroup detection and layout on fake hosts (a cgroup tree of plain directories under a temporary
// directory): which hierarchy is chosen, where a node's and its workers' cgroups go, what is written
// to them, why none is used, and that a gone node's leftovers are removed while a live node's stay.
// The real kernel paths are covered by sandbox-memory-bound.test.ts where the host allows it.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { cgroupMemoryMbFor, resolveMemoryBound, type CgroupHost } from '../../../src/engine/sandbox/cgroups.js'

const PID = 4242
const START = '777'
let dirs: string[] = []

afterEach(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  dirs = []
})

/** A fake host: /proc/self/cgroup and mountinfo texts, and files under a temporary root. */
function fakeHost(cgroup: string, mountinfo: string[], files: Record<string, string>, live: Record<number, string> = { [PID]: START }): Partial<CgroupHost> {
  const root = mkdtempSync(join(tmpdir(), 'svc-cgroups-'))
  dirs.push(root)
  writeFileSync(join(root, 'cgroup'), cgroup)
  writeFileSync(join(root, 'mountinfo'), mountinfo.join('\n') + '\n')
  for (const [path, text] of Object.entries(files)) {
    const full = join(root, path)
    mkdirSync(join(full, '..'), { recursive: true })
    if (path.endsWith('/')) mkdirSync(full, { recursive: true })
    else writeFileSync(full, text)
  }
  return { platform: 'linux', procSelfCgroup: join(root, 'cgroup'), mountinfo: join(root, 'mountinfo'), root, pid: PID, startTime: (pid) => live[pid] }
}

const read = (host: Partial<CgroupHost>, path: string): string => readFileSync(join(host.root!, path), 'utf8').trim()
const V1_MOUNTS = [
  '30 25 0:26 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:12 - cgroup cgroup rw,memory',
  '31 25 0:27 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup rw,pids',
  '32 25 0:28 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:14 - cgroup2 cgroup2 rw',
]
const V1_CGROUP = '8:pids:/\n4:memory:/svc.slice/node.service\n0::/svc.slice/node.service\n'

describe('cgroup v1 (the memory controller on its own hierarchy)', () => {
  it('makes the node\'s cgroups under its own, and a cgroup per worker with its memory and pids limits', async () => {
    const own = '/sys/fs/cgroup/memory/svc.slice/node.service'
    const host = fakeHost(V1_CGROUP, V1_MOUNTS, { [`${own}/`]: '', '/sys/fs/cgroup/pids/': '' })
    const bound = resolveMemoryBound({ mode: 'required', workerMemoryMb: 1000, host })
    expect(bound.status).toEqual({ mode: 'required', workerMemoryMb: 1000, cgroup: 'v1', cgroupMemoryMb: 1250, pidsMax: 256 })
    const [base] = readdirSync(join(host.root!, own))
    expect(base).toMatch(new RegExp(`^svc-node\\.${PID}\\.${START}\\.\\d+$`))
    const worker = bound.cgroupForWorker()!
    expect(read(host, `${own}/${base}/worker-1/memory.limit_in_bytes`)).toBe(String(1250 * 2 ** 20))
    expect(read(host, `/sys/fs/cgroup/pids/${base}/worker-1/pids.max`)).toBe('256')
    // the worker's first process joins both before it executes the worker
    expect(worker.prefix.slice(0, 2)).toEqual(['/bin/sh', '-c'])
    expect(worker.prefix.slice(4)).toEqual([
      join(host.root!, own, base!, 'worker-1', 'cgroup.procs'),
      join(host.root!, '/sys/fs/cgroup/pids', base!, 'worker-1', 'cgroup.procs'),
      '--',
    ])
    writeFileSync(join(host.root!, own, base!, 'worker-1', 'memory.oom_control'), 'oom_kill_disable 0\nunder_oom 0\noom_kill 2\n')
    expect(worker.oomKills()).toBe(2)
  })

  it('removes the cgroups a gone node left, not those of a node still running', async () => {
    const own = '/sys/fs/cgroup/memory/svc.slice/node.service'
    const host = fakeHost(V1_CGROUP, V1_MOUNTS, {
      [`${own}/svc-node.100.5.1/worker-3/`]: '',
      [`${own}/svc-node.200.9.1/worker-1/`]: '',
      [`${own}/unrelated/`]: '',
      '/sys/fs/cgroup/pids/svc-node.100.5.1/worker-3/': '',
    }, { [PID]: START, 200: '9', 100: '6' /* pid 100 runs again, started later: another process */ })
    resolveMemoryBound({ mode: 'auto', workerMemoryMb: 1000, host })
    const left = readdirSync(join(host.root!, own)).sort()
    expect(left.filter((d) => !d.startsWith(`svc-node.${PID}.`))).toEqual(['svc-node.200.9.1', 'unrelated'])
    expect(existsSync(join(host.root!, '/sys/fs/cgroup/pids/svc-node.100.5.1'))).toBe(false)
  })

  it('says why when the cgroup cannot be made (no permission)', () => {
    const host = fakeHost(V1_CGROUP, V1_MOUNTS, {}) // the node's own memory cgroup directory does not exist
    const bound = resolveMemoryBound({ mode: 'auto', workerMemoryMb: 1000, host })
    expect(bound.status).toMatchObject({ cgroup: 'none', cgroupMemoryMb: null, pidsMax: null })
    expect(bound.status.reason).toMatch(/cannot create a memory cgroup under .*node\.service \(ENOENT\)/)
    expect(bound.cgroupForWorker()).toBeUndefined()
  })
})

describe('cgroup v2 (the unified hierarchy)', () => {
  const MOUNTS = ['29 25 0:25 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate']
  const own = '/sys/fs/cgroup/svc.slice/node.service'

  it('moves the node into a leaf of its delegated cgroup, enables memory and pids below it, and limits each worker', () => {
    const host = fakeHost('0::/svc.slice/node.service\n', MOUNTS, {
      [`${own}/cgroup.controllers`]: 'cpu io memory pids',
      [`${own}/cgroup.subtree_control`]: '',
      [`${own}/cgroup.procs`]: String(PID),
    })
    const bound = resolveMemoryBound({ mode: 'required', workerMemoryMb: 2048, host })
    expect(bound.status).toEqual({ mode: 'required', workerMemoryMb: 2048, cgroup: 'v2', cgroupMemoryMb: cgroupMemoryMbFor(2048), pidsMax: 256 })
    const base = readdirSync(join(host.root!, own)).find((d) => d.startsWith('svc-node.'))!
    expect(read(host, `${own}/${base}/supervisor/cgroup.procs`)).toBe(String(PID))
    expect(read(host, `${own}/cgroup.subtree_control`)).toBe('+memory +pids')
    expect(read(host, `${own}/${base}/cgroup.subtree_control`)).toBe('+memory +pids')
    const worker = bound.cgroupForWorker()!
    expect(read(host, `${own}/${base}/worker-1/memory.max`)).toBe(String(cgroupMemoryMbFor(2048) * 2 ** 20))
    expect(read(host, `${own}/${base}/worker-1/pids.max`)).toBe('256')
    expect(worker.prefix.slice(4)).toEqual([join(host.root!, own, base, 'worker-1', 'cgroup.procs'), '--'])
    writeFileSync(join(host.root!, own, base, 'worker-1', 'memory.events'), 'low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n')
    expect(worker.oomKills()).toBe(1)
  })

  it('says why when the memory controller is not delegated to the node', () => {
    const host = fakeHost('0::/svc.slice/node.service\n', MOUNTS, { [`${own}/cgroup.controllers`]: 'cpu io pids' })
    const bound = resolveMemoryBound({ mode: 'auto', workerMemoryMb: 2048, host })
    expect(bound.status.cgroup).toBe('none')
    expect(bound.status.reason).toMatch(/memory controller is not available to the node's cgroup .*Delegate=yes/)
  })
})

describe('no cgroups', () => {
  it('off, no bound, another platform, no memory controller: none, with the reason', () => {
    const host = fakeHost('0::/\n', ['29 25 0:25 / /proc rw - proc proc rw'], {})
    expect(resolveMemoryBound({ mode: 'off', workerMemoryMb: 2048, host }).status).toMatchObject({ cgroup: 'none', reason: 'cgroups are off (execution.cgroups)', workerMemoryMb: 2048 })
    expect(resolveMemoryBound({ mode: 'auto', workerMemoryMb: 0, host }).status.reason).toMatch(/no worker memory bound/)
    expect(resolveMemoryBound({ mode: 'auto', workerMemoryMb: 2048, host: { ...host, platform: 'darwin' } }).status.reason).toBe('no cgroups on darwin')
    expect(resolveMemoryBound({ mode: 'auto', workerMemoryMb: 2048, host }).status.reason).toMatch(/no memory controller is mounted/)
  })
})
