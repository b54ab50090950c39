// `svc node backup | restore | check`: the operator's tools for a node's data. backup talks to a
// running node (its admin route streams one LevelDB snapshot); restore and check work offline on a
// stopped node's data directory (LevelDB has one writer at a time: the node or the tool).
import { createWriteStream, cpSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { ClassicLevel } from 'classic-level'
import { ConfigError, loadConfig } from '../daemon/config.js'
import { catalogLocation } from '../daemon/data-directory.js'
import {
  CatalogReplica, checkCatalog, createCatalogStore, DATA_FORMAT_VERSION, DataFormatMismatch, readBackup, verifyLevelDirectory,
  type CatalogCheckReport, type LevelDatabase, type LevelFileProblem,
} from '../engine/index.js'
import { CliError, resolveSettings, type ConnectionOptions } from './connection.js'

const say = (line: string): void => {
  process.stdout.write(line + '\n')
}

/** Exit codes of the offline tools. */
export const TOOL_EXIT = { ok: 0, problems: 1, cannot: 2 } as const

function cannot(message: string): CliError {
  return new CliError(1006, 'VALIDATION_FAILED', message, {}, TOOL_EXIT.cannot)
}

/** The data directory a command works on: --data-dir, else the node's configuration (SVC_DATA_DIR, SVC_CONFIG). */
function dataDirOf(opts: { dataDir?: string }): string {
  try {
    return loadConfig({ overrides: opts.dataDir ? { data_dir: resolve(opts.dataDir) } : {} }).data_dir
  } catch (err) {
    if (err instanceof ConfigError) throw cannot(err.message)
    throw err
  }
}

const stampOf = (): string => new Date().toISOString().replace(/[:.]/g, '-')

/** Opens a stopped node's database; a running node holds its lock (exit 2 with what to do). */
async function openStopped(location: string, options: { createIfMissing?: boolean } = {}): Promise<ClassicLevel<string, unknown>> {
  const db = new ClassicLevel<string, unknown>(location, { valueEncoding: 'json', createIfMissing: options.createIfMissing ?? false })
  try {
    await db.open()
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause
    if (cause?.code === 'LEVEL_LOCKED') throw cannot(`the data directory ${dirname(location)} is in use by a running node: stop it first (svc node backup works on a running node)`)
    throw cannot(`cannot open ${location}: ${cause?.message ?? (err as Error).message}`)
  }
  return db
}

// ---- backup ------------------------------------------------------------------------------------

export interface BackupOptions extends ConnectionOptions {
  out?: string
  json?: boolean
}

/** `svc node backup --out FILE`: streams a running node's backup into FILE, verified before it is kept. */
export async function backupNode(opts: BackupOptions): Promise<void> {
  if (!opts.out) throw cannot('--out <archive> is required (a new file, e.g. node-backup.jsonl.gz)')
  const out = resolve(opts.out)
  if (existsSync(out)) throw cannot(`${out} exists: choose another file`)
  const s = resolveSettings(opts)
  const headers: Record<string, string> = {}
  if (s.token) headers.authorization = `Bearer ${s.token}`
  if (s.namespace) headers['x-svc-namespace'] = s.namespace
  let res: Response
  try {
    res = await fetch(`${s.url}/api/v1/admin/backup`, { headers, signal: AbortSignal.timeout(s.timeoutMs) })
  } catch (err) {
    throw new CliError(1010, 'SERVICE_UNAVAILABLE', `cannot reach the svc node at ${s.url}: ${(err as Error).message}`)
  }
  if (!res.ok || res.body === null) {
    const text = await res.text()
    let error: { code?: number; name?: string; message?: string } = {}
    try {
      error = (JSON.parse(text) as { error: typeof error }).error ?? {}
    } catch {
      // not the node's JSON
    }
    throw new CliError(error.code ?? 1009, error.name ?? 'INTERNAL_ERROR', error.message ?? `HTTP ${res.status}`)
  }
  mkdirSync(dirname(out), { recursive: true })
  const partial = `${out}.partial`
  await pipeline(Readable.fromWeb(res.body as never), createWriteStream(partial, { mode: 0o600 }))
  let verified
  try {
    verified = await readBackup(partial, () => undefined)
  } catch (err) {
    rmSync(partial, { force: true })
    throw new CliError(1009, 'INTERNAL_ERROR', `the backup received is not whole, nothing kept: ${(err as Error).message}`)
  }
  renameSync(partial, out)
  const summary = { file: out, bytes: statSync(out).size, records: verified.records, created_at: verified.header.created_at, data_format_version: verified.header.data_format_version }
  if (opts.json) return say(JSON.stringify(summary))
  say(`backup of ${s.url}: ${summary.records} records, ${summary.bytes} bytes, taken ${summary.created_at} → ${out}`)
  say(`it holds the node's database (${verified.header.includes.join(', ')}); not ${verified.header.excludes.join(', ')}`)
  say('the archive is gzip-compressed JSON lines; svc node restore reads it back')
}

// ---- restore -----------------------------------------------------------------------------------

export interface RestoreOptions {
  dataDir?: string
  force?: boolean
  dryRun?: boolean
  json?: boolean
  /** keep the data directory's libp2p identity (peer-key) instead of setting it aside */
  keepIdentity?: boolean
}

/** the node's libp2p identity in its data directory (src/federation/identity.ts) */
const PEER_KEY = 'peer-key'

/**
 * `svc node restore FILE`: checks the whole archive first (header, every record, count, SHA-256),
 * then writes it into a stopped node's data directory. A directory that already holds a database is
 * refused unless --force, which keeps the old database beside it (`catalog.replaced-<time>`).
 *
 * A restored catalog is older than what its federation holds of it: were the node to record new
 * changes under its old identity, they would reuse sequence numbers its members already hold, and
 * never reach them. So the restored catalog gets a fresh replication origin, and a federation
 * identity found in the directory (`peer-key`) is set aside (`peer-key.before-restore-<time>`): the
 * node starts as a new member (issue a certificate for its new PeerId) and its members send it the
 * changes it lost. --keep-identity keeps it (a node that never joined a federation, or whose
 * federation saw nothing after the backup).
 */
export async function restoreNode(file: string, opts: RestoreOptions): Promise<void> {
  const archive = resolve(file)
  if (!existsSync(archive)) throw cannot(`${archive} does not exist`)
  let checked
  try {
    checked = await readBackup(archive, () => undefined)
  } catch (err) {
    throw new CliError(1006, 'VALIDATION_FAILED', `${basename(archive)} cannot be restored: ${(err as Error).message}`, {}, TOOL_EXIT.problems)
  }
  if (checked.header.data_format_version !== DATA_FORMAT_VERSION) {
    throw new CliError(1006, 'VALIDATION_FAILED', `the backup holds data format ${checked.header.data_format_version}; this svc-node reads format ${DATA_FORMAT_VERSION}`, {}, TOOL_EXIT.problems)
  }
  const dataDir = dataDirOf(opts)
  const location = catalogLocation(dataDir)
  if (opts.dryRun) {
    const summary = { file: archive, records: checked.records, created_at: checked.header.created_at, would_restore_into: location, dry_run: true }
    if (opts.json) return say(JSON.stringify(summary))
    return say(`${basename(archive)} is whole: ${checked.records} records taken ${checked.header.created_at}; nothing written (--dry-run)`)
  }
  const occupied = existsSync(location) && readdirSync(location).length > 0
  let setAside: string | undefined
  if (occupied) {
    if (!opts.force) throw cannot(`${dataDir} already holds a database: restore into an empty data directory, or add --force (the current one is kept as catalog.replaced-<time>)`)
    // a running node holds the lock: never move a database from under it
    await (await openStopped(location)).close()
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  const restoring = `${location}.restoring`
  rmSync(restoring, { recursive: true, force: true })
  const db = new ClassicLevel<Buffer, Buffer>(restoring, { keyEncoding: 'buffer', valueEncoding: 'buffer' })
  try {
    await db.open()
    let batch: Array<{ type: 'put'; key: Buffer; value: Buffer }> = []
    const { records } = await readBackup(archive, async ({ key, value }) => {
      batch.push({ type: 'put', key, value })
      if (batch.length >= 1000) {
        await db.batch(batch)
        batch = []
      }
    })
    if (records !== checked.records) throw new Error('the archive changed while it was restored')
    if (batch.length > 0) await db.batch(batch)
    const json = db.sublevel<string, unknown>('repl_meta', { keyEncoding: 'utf8', valueEncoding: 'json' })
    await json.del('origin', { sync: true } as object)
    await db.close()
  } catch (err) {
    await db.close().catch(() => undefined)
    rmSync(restoring, { recursive: true, force: true })
    throw new CliError(1009, 'INTERNAL_ERROR', `restore failed, nothing changed in ${dataDir}: ${(err as Error).message}`, {}, TOOL_EXIT.problems)
  }
  if (occupied) {
    setAside = `${location}.replaced-${stampOf()}`
    renameSync(location, setAside)
  } else {
    rmSync(location, { recursive: true, force: true })
  }
  renameSync(restoring, location)
  let identityAside: string | null = null
  if (!opts.keepIdentity && existsSync(join(dataDir, PEER_KEY))) {
    identityAside = join(dataDir, `${PEER_KEY}.before-restore-${stampOf()}`)
    renameSync(join(dataDir, PEER_KEY), identityAside)
  }
  const summary = { file: archive, records: checked.records, created_at: checked.header.created_at, data_dir: dataDir, replaced: setAside ?? null, identity_set_aside: identityAside }
  if (opts.json) return say(JSON.stringify(summary))
  say(`restored ${checked.records} records taken ${checked.header.created_at} into ${dataDir}`)
  if (setAside) say(`the database it replaced is kept in ${setAside} (delete it once the node runs well)`)
  if (identityAside) {
    say(`its federation identity is set aside as ${identityAside}: the node starts with a new PeerId (svc federation peer-id --data-dir ${dataDir}),`)
    say('which needs a certificate from the federation CA (svc federation cert issue) before it joins; its members then send it the changes it lost')
  }
}

// ---- check -------------------------------------------------------------------------------------

export interface CheckOptions {
  dataDir?: string
  repair?: boolean
  json?: boolean
}

export interface NodeCheckReport extends CatalogCheckReport {
  data_dir: string
  /** problems of LevelDB's files (checked before the database is opened) */
  files: LevelFileProblem[]
  /** with --repair on damaged files: where the original database was copied before LevelDB repaired it */
  salvaged_copy: string | null
}

/**
 * `svc node check [--repair]` on a stopped node's data directory: LevelDB's files first (every log
 * record's and table block's checksum), then the catalog (engine/storage/catalog-check.ts). Damaged
 * files are never opened without --repair: LevelDB would silently drop what it cannot read. With
 * --repair, the database is copied aside, LevelDB's repair salvages what is readable, and the
 * catalog's repairable problems are fixed. Exit 0: consistent (or fully repaired); 1: problems
 * remain; 2: could not check.
 */
export async function checkNode(opts: CheckOptions): Promise<void> {
  const dataDir = dataDirOf(opts)
  const location = catalogLocation(dataDir)
  if (!existsSync(location)) throw cannot(`${dataDir} holds no database (no ${location})`)
  const files = verifyLevelDirectory(location, { full: true })
  let salvaged: string | null = null
  if (files.length > 0 && opts.repair) {
    // a running node holds the lock: check that before touching anything
    await (await openStopped(location)).close().catch(() => undefined)
    salvaged = `${location}.before-repair-${stampOf()}`
    cpSync(location, salvaged, { recursive: true })
    await ClassicLevel.repair(location)
  }
  let report: NodeCheckReport
  if (files.length > 0 && !opts.repair) {
    report = {
      data_dir: dataDir, files, salvaged_copy: null, problems: [], repaired: 0, ok: false,
      checked: { functions: 0, ledger_entries: 0, branch_heads: 0, api_keys: 0, replication_entries: 0 },
    }
  } else {
    const db = await openStopped(location)
    try {
      const store = createCatalogStore({ db: db as unknown as LevelDatabase })
      try {
        await store.start()
      } catch (err) {
        if (err instanceof DataFormatMismatch) throw cannot(err.message)
        throw err
      }
      const replication = new CatalogReplica({ db: db as unknown as LevelDatabase, store })
      await replication.start()
      const catalog = await checkCatalog({ db: db as unknown as LevelDatabase, store, replication }, { repair: opts.repair === true })
      await replication.stop()
      report = { ...catalog, data_dir: dataDir, files: salvaged === null ? files : verifyLevelDirectory(location, { full: true }), salvaged_copy: salvaged }
      report.ok = report.ok && report.files.length === 0
    } finally {
      await db.close()
    }
  }
  if (opts.json) say(JSON.stringify(report))
  else printCheck(report, opts.repair === true)
  process.exitCode = report.ok ? TOOL_EXIT.ok : TOOL_EXIT.problems
}

function printCheck(r: NodeCheckReport, repair: boolean): void {
  const c = r.checked
  for (const f of r.files) say(`file ${f.file}: ${f.problem}`)
  if (r.files.length > 0 && !repair) {
    say(`the database's files are damaged (${r.files.length} problems): not opened, since LevelDB would silently drop what it cannot read.`)
    say('restore the latest backup (svc node restore), or salvage what is readable with svc node check --repair (the database is copied aside first)')
    return
  }
  if (r.salvaged_copy) say(`LevelDB repaired the damaged files; the original database is kept in ${r.salvaged_copy}`)
  say(`checked ${c.functions} function versions, ${c.ledger_entries} ledger entries, ${c.branch_heads} branch heads, ${c.replication_entries} replication entries, ${c.api_keys} API keys in ${r.data_dir}`)
  for (const p of r.problems) say(`${p.repaired ? 'repaired' : p.repairable ? 'repairable' : 'problem'} ${p.kind} ${p.key}: ${p.message}`)
  const open = r.problems.filter((p) => !p.repaired)
  say(r.ok ? (r.repaired > 0 ? `consistent after ${r.repaired} repairs` : 'consistent') : `${open.length} problems${open.some((p) => p.repairable) ? ' (run with --repair to fix the repairable ones)' : ''}`)
}
