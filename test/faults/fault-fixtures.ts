// Helpers the fault suite shares: daemons expected to refuse to start, tmpfs mounts, data-directory
// fingerprints, process memory. The suite runs as root on Linux (mount, network namespaces).
import { execFileSync, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { SVC_NODE_BIN } from '../fixtures/daemon-process.js'

export interface DaemonExit {
  code: number | null
  signal: NodeJS.Signals | null
  output: string
  ms: number
}

/**
 * Runs `svc-node start` on `dataDir` and waits for it to exit (a start that must be refused).
 * A daemon that starts listening instead is killed, and the result says so (code null).
 */
export async function runDaemonToExit(dataDir: string, options: { env?: Record<string, string>; uid?: number; gid?: number; timeoutMs?: number } = {}): Promise<DaemonExit> {
  const started = Date.now()
  const proc = spawn(process.execPath, [SVC_NODE_BIN, 'start'], {
    env: {
      ...process.env, API_HOST: '127.0.0.1', API_PORT: '0', GRPC_PORT: '0', SVC_DATA_DIR: dataDir, LOG_FORMAT: 'json',
      SVC_SANDBOX_WORKERS: '1', AUTH_PROVIDER: 'none', ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.uid !== undefined ? { uid: options.uid, gid: options.gid ?? options.uid } : {}),
  })
  let output = ''
  proc.stdout.on('data', (c: Buffer) => {
    output += c.toString('utf8')
    if (output.includes('svc-node listening')) proc.kill('SIGKILL')
  })
  proc.stderr.on('data', (c: Buffer) => {
    output += c.toString('utf8')
  })
  const timer = setTimeout(() => proc.kill('SIGKILL'), options.timeoutMs ?? 60_000)
  const { code, signal } = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.once('exit', (c, s) => resolve({ code: c, signal: s })))
  clearTimeout(timer)
  return { code, signal, output, ms: Date.now() - started }
}

/** SHA-256 of every file under `dir` (names and contents), skipping names that match `skip`. */
export function fingerprint(dir: string, skip: RegExp = /^$/): string {
  const hash = createHash('sha256')
  const walk = (d: string): void => {
    for (const name of readdirSync(d).sort()) {
      if (skip.test(name)) continue
      const path = join(d, name)
      if (statSync(path).isDirectory()) walk(path)
      else hash.update(`${path.slice(dir.length)}\0`).update(readFileSync(path)).update('\0')
    }
  }
  walk(dir)
  return hash.digest('hex')
}

/**
 * LevelDB's own log files (LOG, LOG.old) change on every open attempt; the data files must not. LOCK
 * is empty, and reading it would drop a lock this process holds (POSIX locks end when any descriptor
 * of the file closes).
 */
export const LEVELDB_INFO_LOGS = /^(LOG(\.old)?|LOCK)$/

/** Mounts a tmpfs of `sizeBytes` at `dir` (created); `options` such as 'ro'. */
export function mountTmpfs(dir: string, sizeBytes: number, options: string[] = []): void {
  mkdirSync(dir, { recursive: true })
  execFileSync('mount', ['-t', 'tmpfs', '-o', [`size=${sizeBytes}`, 'mode=0755', ...options].join(','), 'tmpfs', dir])
}

export function remountTmpfs(dir: string, options: string[]): void {
  execFileSync('mount', ['-o', ['remount', ...options].join(','), dir])
}

export function unmount(dir: string): void {
  try {
    execFileSync('umount', [dir], { stdio: 'ignore' })
  } catch {
    execFileSync('umount', ['-l', dir], { stdio: 'ignore' })
  }
}

/** Whether this process may mount file systems (root with CAP_SYS_ADMIN, not in a locked-down container). */
export function canMount(probeDir: string): boolean {
  try {
    mountTmpfs(probeDir, 1 << 20)
    unmount(probeDir)
    return true
  } catch {
    return false
  }
}

/** Resident set size of a process, in bytes (Linux /proc). */
export function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0)
  return kb * 1024
}

/** Direct children of a process (its sandbox workers, for a daemon). */
export function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
}

/**
 * A process and all its descendants (a sandbox worker behind its OS wall is a process tree:
 * bwrap → bwrap → node, or unshare → sh → node).
 */
export function processTree(pid: number): number[] {
  const tree = [pid]
  for (let i = 0; i < tree.length; i++) {
    let tasks: string[] = []
    try {
      tasks = readdirSync(`/proc/${tree[i]}/task`)
    } catch {
      continue
    }
    for (const task of tasks) {
      try {
        tree.push(...readFileSync(`/proc/${tree[i]}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number))
      } catch {
        // the process or thread ended meanwhile
      }
    }
  }
  return tree
}

/** The node process of a sandbox worker: the worker's pid itself without a wall, the innermost node behind one. */
export function workerNodePid(workerPid: number): number {
  const nodes = processTree(workerPid).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'node'
    } catch {
      return false
    }
  })
  return nodes.at(-1) ?? workerPid
}

/** CPU time of a process tree, ms. */
export const treeCpuMs = (pid: number): number => processTree(pid).reduce((sum, p) => sum + safely(() => cpuMs(p)), 0)

/** Resident memory of a process tree, bytes. */
export const treeRssBytes = (pid: number): number => processTree(pid).reduce((sum, p) => sum + safely(() => rssBytes(p)), 0)

function safely(read: () => number): number {
  try {
    return read()
  } catch {
    return 0
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** The admin key a standard-mode node prints at its first start (`ADMIN_API_KEY=…`). */
export function adminKeyOf(output: string): string {
  const key = /ADMIN_API_KEY=(svck_[A-Za-z0-9_-]+)/.exec(output)?.[1]
  if (key === undefined) throw new Error(`no ADMIN_API_KEY in the daemon's output:\n${output.slice(0, 2000)}`)
  return key
}

export interface OfflineInspection {
  problems: Array<{ kind: string; key: string; message: string }>
  digest: string
  functions: number
}

/**
 * Opens a stopped node's database in this process and runs the catalog check (no repair) and the
 * replication digest: what the node will find when it starts again.
 */
export async function inspectOffline(dataDir: string): Promise<OfflineInspection> {
  const { ClassicLevel } = await import('classic-level')
  const { CatalogReplica, checkCatalog, createCatalogStore } = await import('../../src/engine/index.js')
  type Db = Parameters<typeof createCatalogStore>[0]['db']
  const db = new ClassicLevel<string, unknown>(join(dataDir, 'catalog'), { valueEncoding: 'json' }) as unknown as Db
  const store = createCatalogStore({ db })
  await store.start()
  try {
    const replication = new CatalogReplica({ db, store })
    await replication.start()
    const report = await checkCatalog({ db, store, replication })
    const { digest } = await replication.digest()
    return { problems: report.problems, digest, functions: report.checked.functions }
  } finally {
    await store.stop()
  }
}

/** CPU time a process has used (user + system), in milliseconds (Linux /proc, 100 ticks a second). */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Runs `svc <args>` and parses its JSON output (the federation and key tools print JSON). */
async function svcJson<T>(args: string[], env: Record<string, string> = {}): Promise<T> {
  const { runSvc } = await import('../cli/run-svc.js')
  const r = await runSvc(args, { env })
  if (r.status !== 0) throw new Error(`svc ${args.join(' ')} exited ${r.status}: ${r.stderr}`)
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as T
}

export interface FederationMember {
  name: string
  dataDir: string
  peerId: string
  certFile: string
}

/** A federation CA made by `svc federation ca init` (its directory). */
export async function federationCa(root: string): Promise<{ dir: string; caFile: string }> {
  const dir = join(root, 'ca')
  const { ca_cert } = await svcJson<{ ca_cert: string }>(['federation', 'ca', 'init', '--out', dir])
  return { dir, caFile: ca_cert }
}

/** A member's data directory, PeerId and certificate, made by `svc federation cert issue --data-dir`. */
export async function federationMember(root: string, ca: { dir: string }, name: string): Promise<FederationMember> {
  const dataDir = join(root, name)
  mkdirSync(dataDir, { recursive: true })
  const issued = await svcJson<{ peer_id: string; cert_file: string }>(['federation', 'cert', 'issue', '--ca', ca.dir, '--data-dir', dataDir, '--out', join(dataDir, 'cert')])
  return { name, dataDir, peerId: issued.peer_id, certFile: issued.cert_file }
}

/** An administrator key for `tenant`, minted into a stopped node's data directory, its database created when missing (`svc keys create --admin --init`). */
export async function mintAdminKeyOffline(dataDir: string, tenant: string): Promise<string> {
  return (await svcJson<{ api_key: string }>(['keys', 'create', '--admin', '--init', '--tenant', tenant, '--json'], { SVC_DATA_DIR: dataDir })).api_key
}

/** Writes a node config file (JSON is YAML) with its federation settings; returns its path. */
export function writeFederationConfig(
  root: string,
  member: FederationMember,
  caFile: string,
  federation: { listen?: string[]; bootstrap?: string[]; sync_interval_ms?: number; [key: string]: unknown } = {},
  extra: Record<string, unknown> = {},
): string {
  const file = join(root, `${member.name}.config.json`)
  writeFileSync(file, JSON.stringify({
    ...extra,
    federation: { enabled: true, listen: ['/ip4/127.0.0.1/tcp/0'], bootstrap: [], ca_file: caFile, cert_file: member.certFile, sync_interval_ms: 500, ...federation },
  }))
  return file
}
