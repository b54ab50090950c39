/**
 * The sandbox workers' outer wall: an OS-level jail around each worker process, beneath the V8
 * isolate (JS/TS) and Pyodide (Python), for code that escaped those. Where the OS allows it a worker
 * runs
 *
 * - as an unprivileged user (uid/gid 65534, `nobody`, when the node runs as root; otherwise the
 *   node's own user, mapped in a user namespace), with no capabilities and no new privileges;
 * - in new network, PID, IPC, UTS (and cgroup) namespaces: no interface but its own loopback, so no
 *   connection reaches the host's 127.0.0.1, the node's ports or any other machine;
 * - in a new mount namespace whose root holds only read-only binds of what node, isolated-vm,
 *   Pyodide and the wheel directories need: never the data directory, the federation key and
 *   certificates, TLS keys or the config file (hidden even when they lie beneath a bound directory);
 *   a private, empty, size-limited /tmp is the only writable place;
 * - with a minimal environment (the node's environment may hold keys), dying with its supervisor.
 *
 * Two mechanisms: bubblewrap (`bwrap`, unprivileged user namespaces), else, when running as root,
 * util-linux `unshare` + `chroot` + `setpriv` (for kernels that refuse user namespaces). Which one
 * is active is probed once, at start, by running node through it.
 */
import { fork, spawn, spawnSync, type ChildProcess, type StdioOptions } from 'node:child_process'
import { existsSync, lstatSync, readlinkSync, realpathSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { delimiter, dirname, isAbsolute, join, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

export const OS_ISOLATION_MODES = ['auto', 'required', 'off'] as const
export type OsIsolationMode = (typeof OS_ISOLATION_MODES)[number]
export type OsIsolationMechanism = 'bubblewrap' | 'unshare'
/** The wall a worker runs behind: `none` when off or unavailable. */
export type OsIsolationLayer = OsIsolationMechanism | 'none'

export interface OsIsolationInit {
  mode: OsIsolationMode
  /** files and directories a worker must not see: the data directory, keys, certificates, the config file */
  hiddenPaths?: string[]
  /** directories a worker reads (wheelhouse, wheel cache); bound read-only even inside a hidden one */
  readablePaths?: string[]
  /** only this mechanism is tried (tests of each mechanism) */
  mechanism?: OsIsolationMechanism
  /** size of the private /tmp, MiB (default 64) */
  tmpSizeMb?: number
}

/** What a node states about its workers' wall (`GET /api/v1/node/info`, metrics). */
export interface OsIsolationStatus {
  mode: OsIsolationMode
  layer: OsIsolationLayer
  /** the uid a worker runs as (outside any user namespace), when it differs from the node's */
  uid: number | null
  network: 'none' | 'host'
  /** why there is no wall (mode `off`, no mechanism works here) */
  reason?: string
  /** why the mechanisms tried before the active one were passed over */
  passedOver?: string
}

export interface WrappedCommand {
  file: string
  args: string[]
  /** the whole environment of the process (node adds its IPC channel's variables) */
  env?: NodeJS.ProcessEnv
}

export interface OsIsolation {
  readonly status: OsIsolationStatus
  /** The command line that runs `argv` (argv[0]: an absolute path) behind the wall. */
  wrap(argv: string[]): WrappedCommand
}

const NOBODY = 65534
const PROBE_TIMEOUT_MS = 15_000
/** read-only system paths, bound when present; symlinks (merged /usr) are recreated as symlinks */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']
/** what node reads from /etc at start (the dynamic linker's cache, OpenSSL's config, public CA roots) */
const SYSTEM_FILES = ['/etc/ld.so.cache', '/etc/ssl/openssl.cnf', '/etc/ssl/certs']
const DEVICES = ['/dev/null', '/dev/zero', '/dev/random', '/dev/urandom']
const WORKER_PATH = '/usr/local/bin:/usr/bin:/bin'

/**
 * Resolves the wall once: `off` → none; otherwise the first mechanism that runs node here
 * (bubblewrap, then unshare as root), else none with the reason. Synchronous: it runs at start.
 */
export function resolveOsIsolation(init: OsIsolationInit): OsIsolation {
  if (!OS_ISOLATION_MODES.includes(init.mode)) throw new Error(`unknown os isolation mode ${String(init.mode)}`)
  if (init.mode === 'off') return unwalled(init.mode, 'os isolation is off (execution.os_isolation)')
  if (process.platform !== 'linux') return unwalled(init.mode, `no OS wall on ${process.platform} (Linux namespaces only)`)
  const plan = planOf(init)
  const reasons: string[] = []
  const mechanisms: OsIsolationMechanism[] = init.mechanism ? [init.mechanism] : ['bubblewrap', 'unshare']
  for (const mechanism of mechanisms) {
    const wall = mechanism === 'bubblewrap' ? bubblewrapWall(init.mode, plan) : unshareWall(init.mode, plan)
    if (typeof wall === 'string') {
      reasons.push(`${mechanism}: ${wall}`)
      continue
    }
    const failure = probe(wall)
    if (failure === undefined) {
      if (reasons.length > 0) wall.status.passedOver = reasons.join('; ')
      return wall
    }
    reasons.push(`${mechanism}: ${failure}`)
  }
  return unwalled(init.mode, reasons.join('; '))
}

function unwalled(mode: OsIsolationMode, reason: string): OsIsolation {
  return {
    status: { mode, layer: 'none', uid: null, network: 'host', reason },
    wrap: (argv) => ({ file: argv[0]!, args: argv.slice(1) }),
  }
}

/**
 * Runs node behind the wall once (`node --version`: the wall's namespaces, mounts and user, and
 * node's binary and libraries in it, without the cost of starting V8 at start-up).
 */
function probe(wall: OsIsolation): string | undefined {
  const cmd = wall.wrap([process.execPath, '--version'])
  const run = spawnSync(cmd.file, cmd.args, { env: cmd.env, encoding: 'utf8', timeout: PROBE_TIMEOUT_MS, stdio: ['ignore', 'ignore', 'pipe'] })
  if (run.error) return run.error.message
  if (run.status === 0) return undefined
  const said = (run.stderr ?? '').trim().split('\n').slice(-2).join(' ').slice(0, 300)
  return `probe exited with ${run.status ?? run.signal}${said ? `: ${said}` : ''}`
}

interface Plan {
  /** read-only system directories and files (absolute paths) */
  system: string[]
  /** read-only: node's own directory, this package, the packages the worker loads */
  packages: string[]
  /** system entries that are symlinks: path → target (merged /usr) */
  symlinks: Array<[string, string]>
  hidden: Array<{ path: string; dir: boolean }>
  readable: string[]
  tmpSizeMb: number
  /** the worker's uid/gid outside any namespace: nobody when the node is root */
  uid: number | null
}

function planOf(init: OsIsolationInit): Plan {
  const system: string[] = []
  const symlinks: Array<[string, string]> = []
  for (const dir of SYSTEM_DIRS) {
    const st = lstatOrUndefined(dir)
    if (st === undefined) continue
    if (st.isSymbolicLink()) symlinks.push([dir, readlinkSync(dir)])
    else if (st.isDirectory()) system.push(dir)
  }
  for (const file of SYSTEM_FILES) if (existsSync(file)) system.push(file)
  // node itself (outside /usr when installed by nvm or in /opt), this package and the packages the worker loads
  const packages: string[] = []
  for (const path of [dirname(realpathSync(process.execPath)), packageRoot(), ...workerPackageDirs()]) {
    if (!covered([...system, ...packages], path)) packages.push(path)
  }
  const real = (p: string): string => (existsSync(p) ? realpathSync(p) : resolve(p))
  const hidden = (init.hiddenPaths ?? []).filter((p) => p !== '').map((p) => {
    const path = real(p)
    return { path, dir: statOrUndefined(path)?.isDirectory() ?? false }
  })
  // a hidden path beneath a bound one is covered over; one outside every bound path is simply absent
  const exposed = hidden.filter((h) => covered([...system, ...packages], h.path) && existsSync(h.path))
  const readable = (init.readablePaths ?? []).filter((p) => p !== '' && statOrUndefined(p)?.isDirectory()).map(real)
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0
  return { system, packages, symlinks, hidden: exposed, readable, tmpSizeMb: init.tmpSizeMb ?? 64, uid: isRoot ? NOBODY : null }
}

/** The directory holding this package's `package.json` (the parent of `src/` or `dist/`). */
function packageRoot(): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
}

/** The `node_modules` directories of the packages a worker loads, when they lie outside this package (hoisted installs). */
function workerPackageDirs(): string[] {
  const require = createRequire(import.meta.url)
  const dirs: string[] = []
  for (const name of ['isolated-vm', 'pyodide', 'tsx']) {
    try {
      const file = realpathSync(require.resolve(name))
      const at = file.lastIndexOf(`${sep}node_modules${sep}`)
      if (at >= 0) dirs.push(file.slice(0, at + `${sep}node_modules`.length))
    } catch {
      // not installed (tsx is a development dependency)
    }
  }
  return dirs
}

function covered(dirs: string[], path: string): boolean {
  return dirs.some((d) => path === d || path.startsWith(d.endsWith(sep) ? d : d + sep))
}

function lstatOrUndefined(path: string): ReturnType<typeof lstatSync> | undefined {
  try {
    return lstatSync(path)
  } catch {
    return undefined
  }
}

function statOrUndefined(path: string): ReturnType<typeof statSync> | undefined {
  try {
    return statSync(path)
  } catch {
    return undefined
  }
}

/** `name` in the node's PATH (unset: the usual system directories). */
function findExecutable(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? `${WORKER_PATH}:/usr/sbin:/sbin`).split(delimiter)) {
    if (!isAbsolute(dir)) continue
    const path = join(dir, name)
    if (statOrUndefined(path)?.isFile()) return path
  }
  return undefined
}

/** The environment of a walled worker: nothing of the node's (it may hold keys). */
function workerEnv(): NodeJS.ProcessEnv {
  return { PATH: WORKER_PATH, HOME: '/tmp', TMPDIR: '/tmp', LANG: 'C.UTF-8', TZ: WORKER_TZ, ...WORKER_MALLOC }
}

/**
 * glibc malloc in every worker serves blocks of 128 KiB and more with their own mappings (its
 * threshold otherwise rises up to 32 MiB as blocks are freed): such a block costs no resident memory
 * until written, so the charges that count a function's memory outside the V8 heap against its limit
 * (js-memory-guard.ts), never written, cost address space only; and a freed block goes back to the
 * system at once, which the worker's memory bound reads.
 */
const WORKER_MALLOC = { MALLOC_MMAP_THRESHOLD_: String(128 * 1024) }

/**
 * Every worker's time zone, whatever the node's: a function's local time (`Date#getHours`,
 * `toString`, Python's `time.localtime`) must not depend on where the member that ran it is set
 * up (a deterministic function's result is shared across the federation by its receipt).
 */
export const WORKER_TZ = 'UTC'

const dropPrivileges = (setpriv: string, uid: number): string[] =>
  [setpriv, `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--no-new-privs', '--']

function bubblewrapWall(mode: OsIsolationMode, plan: Plan): OsIsolation | string {
  const bwrap = findExecutable('bwrap')
  if (bwrap === undefined) return 'bwrap is not installed (Debian: apt-get install bubblewrap)'
  const setpriv = plan.uid === null ? undefined : findExecutable('setpriv')
  if (plan.uid !== null && setpriv === undefined) return 'setpriv (util-linux) is missing: cannot leave root'
  const args: string[] = [
    '--unshare-user', '--unshare-ipc', '--unshare-pid', '--unshare-net', '--unshare-uts', '--unshare-cgroup-try',
    '--disable-userns', '--die-with-parent', '--new-session', '--cap-drop', 'ALL',
  ]
  // the private /tmp first: a bound path beneath /tmp (a data directory's wheel cache) goes on top of it
  args.push('--size', String(plan.tmpSizeMb * 2 ** 20), '--perms', '1777', '--tmpfs', '/tmp')
  // bwrap runs as nobody when the node is root: every source must be reachable by nobody (a wheel
  // cache beneath a 0700 data directory is not; then the probe fails and root falls back to unshare)
  for (const path of [...plan.system, ...plan.packages]) args.push('--ro-bind', path, path)
  for (const [path, target] of plan.symlinks) args.push('--symlink', target, path)
  for (const h of plan.hidden) args.push(...(h.dir ? ['--tmpfs', h.path] : ['--ro-bind', '/dev/null', h.path]))
  for (const path of plan.readable) args.push('--ro-bind', path, path)
  // read-only once the readable directories inside them have their mount points
  for (const h of plan.hidden) if (h.dir) args.push('--remount-ro', h.path)
  args.push('--proc', '/proc', '--dev', '/dev', '--remount-ro', '/', '--chdir', '/tmp')
  const prefix = setpriv !== undefined && plan.uid !== null ? dropPrivileges(setpriv, plan.uid) : []
  return {
    status: { mode, layer: 'bubblewrap', uid: plan.uid, network: 'none' },
    wrap: (argv) => {
      const full = [...prefix, bwrap, ...args, '--', ...argv]
      return { file: full[0]!, args: full.slice(1), env: workerEnv() }
    },
  }
}

/** Single-quotes a word for /bin/sh. */
const q = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`

/**
 * The fallback for root on kernels that refuse user namespaces: `unshare` makes the namespaces, a
 * small shell script (pid 1 of the new PID namespace, which dies with `unshare` and takes the
 * namespace down) builds the read-only root on a tmpfs, then chroots into it as nobody.
 */
function unshareWall(mode: OsIsolationMode, plan: Plan): OsIsolation | string {
  if (plan.uid === null) return 'the unshare fallback needs root (bubblewrap is the unprivileged one)'
  const unshare = findExecutable('unshare')
  const setpriv = findExecutable('setpriv')
  const chroot = findExecutable('chroot')
  if (unshare === undefined || setpriv === undefined || chroot === undefined) return 'unshare, setpriv or chroot (util-linux, coreutils) is missing'
  // the new root is a tmpfs mounted (in the private mount namespace only) on an empty directory
  const staging = stagingDir([...plan.system, ...plan.packages, ...plan.readable])
  if (staging === undefined) return 'no empty directory to build the new root on (/mnt, /media, /srv)'
  const lines = ['set -e', `R=${q(staging)}`, 'mount --make-rprivate /']
  lines.push('mount -t tmpfs -o mode=0755,size=1m svc-wall "$R"')
  const bind = (path: string): void => {
    const dir = statOrUndefined(path)?.isDirectory() ?? false
    lines.push(dir ? `mkdir -p "$R"${q(path)}` : `mkdir -p "$R"${q(dirname(path))} && touch "$R"${q(path)}`)
    lines.push(`mount --bind ${q(path)} "$R"${q(path)}`, `mount -o remount,bind,ro,nosuid,nodev "$R"${q(path)}`)
  }
  lines.push(`mkdir -p "$R"/tmp "$R"/proc "$R"/dev`)
  lines.push(`mount -t tmpfs -o mode=1777,nosuid,nodev,size=${plan.tmpSizeMb}m svc-tmp "$R"/tmp`)
  for (const path of [...plan.system, ...plan.packages]) bind(path)
  for (const [path, target] of plan.symlinks) lines.push(`ln -s ${q(target)} "$R"${q(path)}`)
  for (const h of plan.hidden) {
    lines.push(h.dir ? `mount -t tmpfs -o size=4k,mode=0755 svc-hidden "$R"${q(h.path)}` : `mount --bind /dev/null "$R"${q(h.path)}`)
  }
  for (const path of plan.readable) bind(path)
  lines.push('mount -t proc -o nosuid,nodev,noexec proc "$R"/proc')
  for (const dev of DEVICES) lines.push(`touch "$R"${dev} && mount --bind ${dev} "$R"${dev}`)
  lines.push('mount -o remount,ro "$R"')
  // not `exec`: this shell stays pid 1 and keeps the parent-death signal, which a change of user clears
  lines.push(`${q(chroot)} "$R" ${dropPrivileges(setpriv, plan.uid).map(q).join(' ')} "$@"`, 'exit $?')
  const script = lines.join('\n')
  // setpriv gives unshare itself a parent-death signal: it dies with the node, and its child (pid 1
  // of the namespace, by --kill-child) with it, which ends every process in the namespace
  const prefix = [setpriv, '--pdeathsig', 'SIGKILL', '--', unshare, '--mount', '--net', '--ipc', '--uts', '--pid', '--fork', '--kill-child=SIGKILL', '--', '/bin/sh', '-c', script, 'svc-wall']
  return {
    status: { mode, layer: 'unshare', uid: plan.uid, network: 'none' },
    wrap: (argv) => ({ file: prefix[0]!, args: [...prefix.slice(1), ...argv], env: workerEnv() }),
  }
}

/**
 * A directory for the unshare fallback's new root: a tmpfs covers it inside the namespace only, so
 * it must not hold anything the root binds.
 */
function stagingDir(bound: string[]): string | undefined {
  return ['/mnt', '/media', '/srv'].find((dir) => statOrUndefined(dir)?.isDirectory() && !bound.some((p) => covered([dir], p)))
}

/** A node script and its arguments, as the sandbox starts it (worker.js, or a check spawned the same way). */
export interface NodeScript {
  path: string
  execArgv: string[]
  args: string[]
}

/**
 * Starts a node script behind the wall (or forks it plainly when there is none), with standard
 * output and error piped and node's IPC channel as fd 3: an inherited descriptor, which the wall
 * passes through. `prefix`: command words run first, outside the wall, that end by executing the
 * rest (a worker's cgroup placement, cgroups.ts). The one way sandbox workers are started.
 */
export function launchNodeScript(isolation: OsIsolation | undefined, script: NodeScript, prefix: readonly string[] = []): ChildProcess {
  const stdio: StdioOptions = ['ignore', 'pipe', 'pipe', 'ipc']
  if (isolation === undefined || isolation.status.layer === 'none') {
    const env = { ...process.env, TZ: WORKER_TZ, ...WORKER_MALLOC }
    if (prefix.length === 0) return fork(script.path, script.args, { execArgv: script.execArgv, stdio, serialization: 'json', env })
    const argv = [...prefix, process.execPath, ...script.execArgv, script.path, ...script.args]
    return spawn(argv[0]!, argv.slice(1), { env, stdio, serialization: 'json' })
  }
  const cmd = isolation.wrap([process.execPath, ...script.execArgv, script.path, ...script.args])
  const argv = [...prefix, cmd.file, ...cmd.args]
  return spawn(argv[0]!, argv.slice(1), { env: cmd.env, stdio, serialization: 'json' })
}
