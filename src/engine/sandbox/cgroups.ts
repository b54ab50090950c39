/**
 * The sandbox workers' outer memory bound: each worker process in a memory (and pids) cgroup of its
 * own, its limit a little above `execution.worker_memory_mb`. The worker's own check (memory-bound.ts)
 * fires first, after a call; the cgroup stops what that check cannot see in time (a native
 * allocation spike within one call, a runaway process tree), and its OOM kill is reported as the
 * memory error of the call that was running.
 *
 * Which hierarchy is used is found once, at start, from /proc/self/cgroup and /proc/self/mountinfo:
 *
 * - **cgroup v1** when the memory controller is mounted on a v1 hierarchy (these machines: root may
 *   write it): `<memory mount>/<the node's own cgroup>/svc-node.<pid>.<start>.<n>/worker-<n>`, with
 *   `memory.limit_in_bytes` (and `memory.memsw.limit_in_bytes`, so swap does not extend it), and
 *   the same under the pids hierarchy with `pids.max`;
 * - **cgroup v2** when the unified hierarchy has the memory controller: beneath the node's own
 *   cgroup, which must be delegated to the node's user (systemd `Delegate=yes`): v2 lets a cgroup
 *   hand controllers to its children only while it holds no process, so the node moves itself into
 *   `svc-node.<pid>.<start>/supervisor` and its workers go to `svc-node.…/worker-<n>` with
 *   `memory.max`, `memory.swap.max` 0, `memory.oom.group` 1 and `pids.max`;
 * - **none** otherwise (not Linux, no memory controller, no permission, a cgroup shared with other
 *   processes), with the reason; `execution.cgroups: required` then stops the start.
 *
 * A worker's first process joins its cgroup before it executes anything (a `/bin/sh` prefix writes
 * its pid to `cgroup.procs`, then `exec`s the worker's command: the OS wall and node inherit it). A
 * worker's cgroup is removed when it exits; at start, the cgroups left by a node that is gone (its
 * pid no longer runs with the same start time) are removed.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

export const CGROUPS_MODES = ['auto', 'required', 'off'] as const
export type CgroupsMode = (typeof CGROUPS_MODES)[number]
export type CgroupVersion = 'v1' | 'v2'

/** A worker's processes (and threads) at most: a node worker runs about 20 threads. */
export const WORKER_PIDS_MAX = 256

/** The cgroup's memory limit for a worker bound of `workerMemoryMb`: a quarter above it, at least 128 MB above. */
export function cgroupMemoryMbFor(workerMemoryMb: number): number {
  return Math.ceil(Math.max(workerMemoryMb * 1.25, workerMemoryMb + 128))
}

/** What the node states about its workers' memory bound (`GET /api/v1/node/info`, `sandbox.memory_bound`). */
export interface MemoryBoundStatus {
  /** execution.cgroups */
  mode: CgroupsMode
  /** execution.worker_memory_mb: a worker past it (its resident memory, after a call) is replaced */
  workerMemoryMb: number
  /** the cgroup hierarchy the workers are placed in (none: not used, see `reason`) */
  cgroup: CgroupVersion | 'none'
  /** each worker's cgroup memory limit, MB (null without cgroups) */
  cgroupMemoryMb: number | null
  /** each worker's cgroup pids limit (null without a pids cgroup) */
  pidsMax: number | null
  /** why there are no cgroups */
  reason?: string
}

/** One worker's cgroup. */
export interface WorkerCgroup {
  /** command words that run the rest of the command inside the cgroup (prepended to the worker's command) */
  readonly prefix: string[]
  /** processes of the cgroup the kernel's OOM killer killed so far */
  oomKills(): number
  /** removes the cgroup once its processes are gone (tried for about a second) */
  remove(): Promise<void>
}

/** The workers' memory bound: the in-worker check's figure and, where usable, their cgroups. */
export interface MemoryBound {
  readonly status: MemoryBoundStatus
  /** execution.worker_memory_mb (0: no bound) */
  readonly workerMemoryMb: number
  /** A new worker's cgroup (undefined without cgroups, or when it cannot be made: then `onProblem` says why). */
  cgroupForWorker(): WorkerCgroup | undefined
  /** Removes the node's own cgroup directories (its workers have exited). */
  close(): Promise<void>
}

export interface MemoryBoundInit {
  mode: CgroupsMode
  /** the bound checked inside each worker, MB (0: none; then no cgroups either) */
  workerMemoryMb: number
  /** a cgroup that could not be made or removed (the worker runs without it) */
  onProblem?: (message: string) => void
  /** for tests: where /proc/self/cgroup, /proc/self/mountinfo and the cgroup mounts are read */
  host?: Partial<CgroupHost>
}

/** What cgroup detection reads of the host (tests point it at a fake tree). */
export interface CgroupHost {
  platform: NodeJS.Platform
  procSelfCgroup: string
  mountinfo: string
  /** prepended to every mount point (a fake cgroupfs under a temporary directory) */
  root: string
  pid: number
  /** the start time (clock ticks since boot, /proc/<pid>/stat field 22) of a process; undefined when it is gone */
  startTime(pid: number): string | undefined
}

const NAME = /^svc-node\.(\d+)\.(\d+)\.\d+$/
const REMOVE_TRIES = 20
const REMOVE_PAUSE_MS = 50

/** Resolves the workers' memory bound once, at start (synchronous: it runs while the daemon starts). */
export function resolveMemoryBound(init: MemoryBoundInit): MemoryBound {
  if (!CGROUPS_MODES.includes(init.mode)) throw new Error(`unknown cgroups mode ${String(init.mode)}`)
  const workerMemoryMb = init.workerMemoryMb
  const none = (reason: string): MemoryBound => ({
    status: { mode: init.mode, workerMemoryMb, cgroup: 'none', cgroupMemoryMb: null, pidsMax: null, reason },
    workerMemoryMb,
    cgroupForWorker: () => undefined,
    close: async () => undefined,
  })
  if (init.mode === 'off') return none('cgroups are off (execution.cgroups)')
  if (!(workerMemoryMb > 0)) return none('no worker memory bound (execution.worker_memory_mb is 0)')
  const host = hostOf(init.host)
  if (host.platform !== 'linux') return none(`no cgroups on ${host.platform}`)
  let layout: Layout | string
  try {
    layout = findLayout(host)
  } catch (err) {
    return none(`cannot read the process's cgroups: ${messageOf(err)}`)
  }
  if (typeof layout === 'string') return none(layout)
  const cgroupMemoryMb = cgroupMemoryMbFor(workerMemoryMb)
  resolved++
  const made = layout.version === 'v1' ? setUpV1(layout, host, init) : setUpV2(layout, host, init)
  if (typeof made === 'string') return none(made)
  let next = 1
  return {
    status: { mode: init.mode, workerMemoryMb, cgroup: layout.version, cgroupMemoryMb, pidsMax: made.pidsBase === undefined ? null : WORKER_PIDS_MAX },
    workerMemoryMb,
    cgroupForWorker() {
      const name = `worker-${next++}`
      try {
        return made.makeWorker(name, cgroupMemoryMb * 2 ** 20)
      } catch (err) {
        init.onProblem?.(`cannot make the cgroup ${name} for a sandbox worker (${messageOf(err)}); it runs without one`)
        return undefined
      }
    },
    async close() {
      for (const dir of made.ownDirs()) {
        await removeDir(dir).catch((err: unknown) => init.onProblem?.(`cannot remove the cgroup ${dir}: ${messageOf(err)}`))
      }
    },
  }
}

interface Layout {
  version: CgroupVersion
  /** v1: the node's memory cgroup directory; v2: its cgroup directory */
  memoryParent: string
  /** v1: the node's pids cgroup directory (undefined: no pids hierarchy) */
  pidsParent?: string
}

interface SetUp {
  pidsBase: string | undefined
  makeWorker(name: string, memoryBytes: number): WorkerCgroup
  /** the node's own directories, deepest first */
  ownDirs(): string[]
}

function hostOf(given: Partial<CgroupHost> | undefined): CgroupHost {
  return {
    platform: given?.platform ?? process.platform,
    procSelfCgroup: given?.procSelfCgroup ?? '/proc/self/cgroup',
    mountinfo: given?.mountinfo ?? '/proc/self/mountinfo',
    root: given?.root ?? '',
    pid: given?.pid ?? process.pid,
    startTime: given?.startTime ?? startTimeOf,
  }
}

/** A process's start time (field 22 of /proc/<pid>/stat), undefined when it is gone. */
function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // the command name (field 2) may hold spaces and parentheses: fields resume after the last ')'
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
  } catch {
    return undefined
  }
}

/** Where the memory controller lives for this process, or why it cannot be used. */
function findLayout(host: CgroupHost): Layout | string {
  const membership = readFileSync(host.procSelfCgroup, 'utf8').split('\n').filter((l) => l !== '').map((line) => {
    const first = line.indexOf(':')
    const second = line.indexOf(':', first + 1)
    return { controllers: line.slice(first + 1, second).split(','), path: line.slice(second + 1) }
  })
  const mounts = readFileSync(host.mountinfo, 'utf8').split('\n').filter((l) => l !== '').map((line) => {
    const fields = line.split(' ')
    const dash = fields.indexOf('-')
    return { root: unescapeMount(fields[3] ?? '/'), point: unescapeMount(fields[4] ?? ''), type: fields[dash + 1] ?? '', options: (fields[dash + 3] ?? '').split(',') }
  })
  const dirOf = (mount: { root: string; point: string }, path: string): string => {
    const rel = mount.root !== '/' && (path === mount.root || path.startsWith(`${mount.root}/`)) ? path.slice(mount.root.length) : path
    return join(host.root, mount.point, rel)
  }
  const v1 = (controller: string): string | undefined => {
    const mount = mounts.find((m) => m.type === 'cgroup' && m.options.includes(controller))
    const member = membership.find((m) => m.controllers.includes(controller))
    return mount && member ? dirOf(mount, member.path) : undefined
  }
  const memoryV1 = v1('memory')
  if (memoryV1 !== undefined) {
    const pidsV1 = v1('pids')
    return pidsV1 === undefined ? { version: 'v1', memoryParent: memoryV1 } : { version: 'v1', memoryParent: memoryV1, pidsParent: pidsV1 }
  }
  const unified = mounts.find((m) => m.type === 'cgroup2')
  const member = membership.find((m) => m.controllers.length === 1 && m.controllers[0] === '')
  if (unified === undefined || member === undefined) return 'no memory controller is mounted (cgroup v1 memory or cgroup v2)'
  const own = dirOf(unified, member.path)
  const available = readWords(join(own, 'cgroup.controllers'))
  if (!available.includes('memory')) return `the memory controller is not available to the node's cgroup ${own} (cgroup v2: delegate it, e.g. systemd Delegate=yes)`
  return { version: 'v2', memoryParent: own }
}

function setUpV1(layout: Layout, host: CgroupHost, init: MemoryBoundInit): SetUp | string {
  removeLeftovers([layout.memoryParent, layout.pidsParent], host, init)
  const base = join(layout.memoryParent, ownName(host))
  try {
    mkdirSync(base)
  } catch (err) {
    return `cannot create a memory cgroup under ${layout.memoryParent} (${codeOf(err)}): cgroup v1 needs root`
  }
  let pidsBase: string | undefined
  if (layout.pidsParent !== undefined) {
    pidsBase = join(layout.pidsParent, ownName(host))
    try {
      mkdirSync(pidsBase)
    } catch (err) {
      init.onProblem?.(`cannot create a pids cgroup under ${layout.pidsParent} (${codeOf(err)}): workers get no pids limit`)
      pidsBase = undefined
    }
  }
  return {
    pidsBase,
    makeWorker(name, memoryBytes) {
      const memory = join(base, name)
      mkdirSync(memory)
      const dirs = [memory]
      try {
        writeFileSync(join(memory, 'memory.limit_in_bytes'), String(memoryBytes))
        // with swap accounting on, the memory+swap limit too (it must not be below the memory limit)
        if (existsSync(join(memory, 'memory.memsw.limit_in_bytes'))) writeFileSync(join(memory, 'memory.memsw.limit_in_bytes'), String(memoryBytes))
        if (pidsBase !== undefined) {
          const pids = join(pidsBase, name)
          mkdirSync(pids)
          dirs.push(pids)
          writeFileSync(join(pids, 'pids.max'), String(WORKER_PIDS_MAX))
        }
      } catch (err) {
        for (const dir of dirs.reverse()) tryRmdir(dir)
        throw err
      }
      return workerCgroup(dirs, () => counterOf(join(memory, 'memory.oom_control'), 'oom_kill'))
    },
    ownDirs: () => [base, ...(pidsBase === undefined ? [] : [pidsBase])],
  }
}

function setUpV2(layout: Layout, host: CgroupHost, init: MemoryBoundInit): SetUp | string {
  const own = layout.memoryParent
  removeLeftovers([own], host, init)
  const base = join(own, ownName(host))
  const supervisor = join(base, 'supervisor')
  const wanted = readWords(join(own, 'cgroup.controllers')).includes('pids') ? ['memory', 'pids'] : ['memory']
  try {
    mkdirSync(base)
  } catch (err) {
    return `cannot create a cgroup under ${own} (${codeOf(err)}): delegate the node's cgroup to its user (systemd Delegate=yes)`
  }
  const undo = (reason: string): string => {
    try {
      if (existsSync(supervisor)) {
        writeFileSync(join(own, 'cgroup.procs'), String(host.pid))
        tryRmdir(supervisor)
      }
    } catch {
      // stays where it is
    }
    tryRmdir(base)
    return reason
  }
  try {
    // a cgroup hands controllers to its children only while it holds no process: the node leaves its
    // own cgroup for a leaf beneath it, then enables memory (and pids) below its own and below base
    if (!wanted.every((c) => readWords(join(own, 'cgroup.subtree_control')).includes(c))) {
      mkdirSync(supervisor)
      writeFileSync(join(supervisor, 'cgroup.procs'), String(host.pid))
      writeFileSync(join(own, 'cgroup.subtree_control'), wanted.map((c) => `+${c}`).join(' '))
    }
    writeFileSync(join(base, 'cgroup.subtree_control'), wanted.map((c) => `+${c}`).join(' '))
  } catch (err) {
    const code = codeOf(err)
    return undo(code === 'EBUSY'
      ? `the node's cgroup ${own} holds other processes: give the node a cgroup of its own (systemd Delegate=yes)`
      : `cannot enable the memory controller below ${own} (${code}): delegate the node's cgroup to its user (systemd Delegate=yes)`)
  }
  const pids = wanted.includes('pids')
  const moved = existsSync(supervisor)
  return {
    pidsBase: pids ? base : undefined,
    makeWorker(name, memoryBytes) {
      const dir = join(base, name)
      mkdirSync(dir)
      try {
        writeFileSync(join(dir, 'memory.max'), String(memoryBytes))
        if (existsSync(join(dir, 'memory.swap.max'))) writeFileSync(join(dir, 'memory.swap.max'), '0')
        // an OOM kill takes the whole worker (the wall's processes and node), not one of them
        if (existsSync(join(dir, 'memory.oom.group'))) writeFileSync(join(dir, 'memory.oom.group'), '1')
        if (pids) writeFileSync(join(dir, 'pids.max'), String(WORKER_PIDS_MAX))
      } catch (err) {
        tryRmdir(dir)
        throw err
      }
      return workerCgroup([dir], () => counterOf(join(dir, 'memory.events'), 'oom_kill'))
    },
    // while the node itself is in base/supervisor, base stays (the next start removes it)
    ownDirs: () => (moved ? [] : [base]),
  }
}

/** A worker's cgroup over its directories (one per hierarchy: memory first). */
function workerCgroup(dirs: string[], oomKills: () => number): WorkerCgroup {
  // joins each cgroup (its cgroup.procs), then becomes the worker's command; 125 when it cannot join
  const script = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
  return {
    prefix: ['/bin/sh', '-c', script, 'svc-cgroup', ...dirs.map((d) => join(d, 'cgroup.procs')), '--'],
    oomKills,
    async remove() {
      for (const dir of dirs) await removeDir(dir)
    },
  }
}

/** Removes an empty cgroup directory, waiting (about a second at most) for its last processes to leave. */
async function removeDir(dir: string): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      rmdirSync(dir)
      return
    } catch (err) {
      const code = codeOf(err)
      if (code === 'ENOENT') return
      if (code !== 'EBUSY' || i >= REMOVE_TRIES) throw err
    }
    await new Promise((resolve) => setTimeout(resolve, REMOVE_PAUSE_MS))
  }
}

/** Memory bounds resolved by this process so far (a process may run several sandboxes, in tests). */
let resolved = 0

/**
 * `svc-node.<pid>.<start time>.<n>`: a node's directory (the n-th memory bound of that process);
 * the directories of a node still alive (its pid running with the same start time) are never touched.
 */
function ownName(host: CgroupHost): string {
  return `svc-node.${host.pid}.${host.startTime(host.pid) ?? '0'}.${resolved}`
}

/** Removes the directories of nodes that are gone (a crash left them), with their workers' cgroups. */
function removeLeftovers(parents: Array<string | undefined>, host: CgroupHost, init: MemoryBoundInit): void {
  for (const parent of parents) {
    if (parent === undefined) continue
    let entries: string[]
    try {
      entries = readdirSync(parent)
    } catch {
      continue
    }
    for (const entry of entries) {
      const match = NAME.exec(entry)
      if (match === null) continue
      const [, pid, start] = match
      if (host.startTime(Number(pid)) === start) continue // a live node's
      const dir = join(parent, entry)
      let children: string[] = []
      try {
        children = readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name)
      } catch {
        // gone meanwhile
      }
      for (const child of children) tryRmdir(join(dir, child))
      if (!tryRmdir(dir)) init.onProblem?.(`cannot remove the cgroup ${dir} a previous run left (processes still in it?)`)
    }
  }
}

function tryRmdir(dir: string): boolean {
  try {
    rmdirSync(dir)
    return true
  } catch (err) {
    return codeOf(err) === 'ENOENT'
  }
}

/** `name N` in a flat-keyed cgroup file (memory.oom_control, memory.events); 0 when absent. */
function counterOf(file: string, name: string): number {
  try {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      const [key, value] = line.split(' ')
      if (key === name) return Number(value) || 0
    }
  } catch {
    // gone
  }
  return 0
}

function readWords(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').trim().split(/\s+/).filter((w) => w !== '')
  } catch {
    return []
  }
}

/** mountinfo escapes blanks, tabs, newlines and backslashes as octal. */
function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)))
}

function codeOf(err: unknown): string {
  return (err as NodeJS.ErrnoException | undefined)?.code ?? messageOf(err)
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
