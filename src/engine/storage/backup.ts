import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { createInterface } from 'node:readline'
import { Readable } from 'node:stream'
import { createGunzip, createGzip } from 'node:zlib'
import { SvcError } from '../../core/errors.js'
import { requirePermission } from '../authz.js'
import type { Principal } from '../types.js'
import type { LevelDatabase } from './catalog-store.js'
import type { Mutex } from '../mutex.js'

/**
 * The backup archive of a node (`svc node backup`): gzip of JSON lines.
 *
 *   {"format":"svc-node-backup","version":1,"created_at":…,"data_format_version":1,…}   header
 *   ["<key>","<value>"]                       one line per LevelDB record, as UTF-8 text
 *   {"kb":"<base64>","vb":"<base64>"}         (a record whose bytes are not UTF-8 text)
 *   {"end":true,"records":N,"sha256":"…"}     trailer: SHA-256 of every byte before it
 *
 * The records are every key of the node's LevelDB, read through one iterator, so one snapshot:
 * functions, the version ledger, the digest index, branch heads, executions and their statistics,
 * API key records (hashes only), the audit log, the replication log, entries, moves and conflicts,
 * and the data-format version. Not in it: the node's libp2p key (`peer-key`) and certificate
 * (`cert/`), which are its identity, not its data (keep them with the node's configuration; a
 * restored node may take a new identity), and the wheel cache (fetched again on demand).
 */
export const BACKUP_FORMAT = 'svc-node-backup'
export const BACKUP_VERSION = 1

export interface BackupHeader {
  format: typeof BACKUP_FORMAT
  version: number
  created_at: string
  data_format_version: number
  /** the svc-node version that wrote it */
  written_by: string
  includes: string[]
  excludes: string[]
}

export interface BackupInit {
  dataFormatVersion: number
  writtenBy: string
  /** the node's admin tenant: only its admins (the operators) may take a backup */
  operatorTenant: string
}

export interface BackupComponents {
  db: LevelDatabase
  /**
   * The catalog's write lock: the snapshot is taken while holding it, so it never falls between the
   * writes of one catalog change (a version and its replication record are two batches today).
   */
  catalogLock?: Mutex
}

const INCLUDES = ['functions', 'function_version_ledger', 'digests', 'branch_heads', 'executions', 'receipts', 'receipt_certificates', 'function_stats', 'api_keys (hashes)', 'audit', 'replication (log, entries, moves, conflicts)', 'meta']
const EXCLUDES = ['peer-key (the libp2p identity)', 'cert/ (the node certificate)', 'wheels/ (a cache)']

/** Throws 1003 unless the principal is an operator: an admin of the node's admin tenant. */
export function requireOperator(principal: Principal, operatorTenant: string): void {
  requirePermission(principal, 'rufid.admin')
  if (principal.tenant_id !== operatorTenant) {
    throw new SvcError('PERMISSION_DENIED', `only an admin of the node's admin tenant (${operatorTenant}) may do this: it covers every tenant`, {
      details: { tenant_id: principal.tenant_id },
    })
  }
}

const isText = (b: Buffer): string | undefined => {
  const s = b.toString('utf8')
  return Buffer.byteLength(s, 'utf8') === b.length && Buffer.from(s, 'utf8').equals(b) ? s : undefined
}

/** The archive's lines (uncompressed), from one snapshot of `db`. */
async function* backupLines({ db, catalogLock }: BackupComponents, init: BackupInit): AsyncGenerator<Buffer> {
  const hash = createHash('sha256')
  const emit = (text: string): Buffer => {
    const line = Buffer.from(text + '\n', 'utf8')
    hash.update(line)
    return line
  }
  // the iterator takes its snapshot when it is created (synchronously), between two catalog changes
  type RawIterator = AsyncIterable<[Buffer, Buffer]> & { close(): Promise<void> }
  const snapshot = async (): Promise<RawIterator> => db.iterator({ keyEncoding: 'buffer', valueEncoding: 'buffer' } as never) as RawIterator
  const iterator = catalogLock ? await catalogLock.run(snapshot) : await snapshot()
  const header: BackupHeader = {
    format: BACKUP_FORMAT, version: BACKUP_VERSION, created_at: new Date().toISOString(),
    data_format_version: init.dataFormatVersion, written_by: init.writtenBy, includes: INCLUDES, excludes: EXCLUDES,
  }
  let records = 0
  try {
    yield emit(JSON.stringify(header))
    let batch: Buffer[] = []
    for await (const [key, value] of iterator) {
      const k = isText(key)
      const v = isText(value)
      batch.push(emit(k !== undefined && v !== undefined ? JSON.stringify([k, v]) : JSON.stringify({ kb: key.toString('base64'), vb: value.toString('base64') })))
      records++
      if (batch.length >= 256) {
        yield Buffer.concat(batch)
        batch = []
      }
    }
    if (batch.length > 0) yield Buffer.concat(batch)
  } finally {
    await iterator.close()
  }
  const digest = hash.digest('hex')
  yield Buffer.from(JSON.stringify({ end: true, records, sha256: digest }) + '\n', 'utf8')
}

/** A gzip stream of the backup archive of `db` (one snapshot), for an operator. */
export function backupStream(principal: Principal, components: BackupComponents, init: BackupInit): Readable {
  requireOperator(principal, init.operatorTenant)
  return Readable.from(backupLines(components, init)).pipe(createGzip())
}

export interface BackupRecord {
  key: Buffer
  value: Buffer
}

/**
 * Reads an archive and checks it whole: its header, every line, the record count and the SHA-256
 * of the trailer. `onRecord` sees each record as it is read; nothing read may be trusted (or kept)
 * unless this resolves. Rejects with a message that says what is wrong.
 */
export async function readBackup(file: string, onRecord: (record: BackupRecord) => void | Promise<void>): Promise<{ header: BackupHeader; records: number }> {
  const hash = createHash('sha256')
  const lines = createInterface({ input: createReadStream(file).pipe(createGunzip()), crlfDelay: Infinity })
  let header: BackupHeader | undefined
  let records = 0
  let trailer: { end: true; records: number; sha256: string } | undefined
  let n = 0
  try {
    for await (const line of lines) {
      n++
      if (trailer !== undefined) throw new Error(`line ${n}: data after the trailer`)
      let parsed: unknown
      try {
        parsed = JSON.parse(line)
      } catch {
        throw new Error(`line ${n} is not JSON`)
      }
      if (header === undefined) {
        const h = parsed as Partial<BackupHeader>
        if (h?.format !== BACKUP_FORMAT) throw new Error('not an svc-node backup (no svc-node-backup header)')
        if (h.version !== BACKUP_VERSION) throw new Error(`backup format version ${String(h.version)}; this svc-node reads version ${BACKUP_VERSION}`)
        header = h as BackupHeader
      } else if (Array.isArray(parsed)) {
        if (parsed.length !== 2 || typeof parsed[0] !== 'string' || typeof parsed[1] !== 'string') throw new Error(`line ${n}: a malformed record`)
        records++
        await onRecord({ key: Buffer.from(parsed[0], 'utf8'), value: Buffer.from(parsed[1], 'utf8') })
      } else if (parsed !== null && typeof parsed === 'object' && 'kb' in parsed) {
        const r = parsed as { kb: unknown; vb: unknown }
        if (typeof r.kb !== 'string' || typeof r.vb !== 'string') throw new Error(`line ${n}: a malformed record`)
        records++
        await onRecord({ key: Buffer.from(r.kb, 'base64'), value: Buffer.from(r.vb, 'base64') })
      } else if (parsed !== null && typeof parsed === 'object' && (parsed as { end?: unknown }).end === true) {
        trailer = parsed as { end: true; records: number; sha256: string }
        continue
      } else {
        throw new Error(`line ${n}: neither a record nor the trailer`)
      }
      hash.update(line + '\n')
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'Z_BUF_ERROR' || (err as NodeJS.ErrnoException).code === 'Z_DATA_ERROR') {
      throw new Error(`the archive is cut short or damaged (${(err as Error).message})`)
    }
    throw err
  }
  if (header === undefined) throw new Error('the archive is empty')
  if (trailer === undefined) throw new Error(`the archive ends without its trailer after ${records} records (cut short)`)
  if (trailer.records !== records) throw new Error(`the trailer counts ${trailer.records} records, the archive holds ${records}`)
  if (trailer.sha256 !== hash.digest('hex')) throw new Error('the SHA-256 of the archive does not match its trailer (damaged)')
  return { header, records }
}
