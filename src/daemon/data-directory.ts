import { closeSync, fsyncSync, mkdirSync, openSync, unlinkSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { isSvcError } from '../core/errors.js'
import { DataFormatMismatch, StorageCorrupted, verifyLevelDirectory } from '../engine/index.js'
import { EXIT_CODES, type ExitReason } from './exit-codes.js'

/** The LevelDB database inside a data directory. */
export const catalogLocation = (dataDir: string): string => join(dataDir, 'catalog')

/** A start-up failure with the exit code that names its cause. */
export class StartupFailure extends Error {
  readonly reason: ExitReason

  constructor(reason: ExitReason, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'StartupFailure'
    this.reason = reason
  }

  get exitCode(): number {
    return EXIT_CODES[this.reason]
  }
}

const NOT_WRITABLE = new Set(['EACCES', 'EPERM', 'EROFS'])

/**
 * Before anything opens the database: the data directory exists (created 0700 when missing) and can
 * be written and synced, and the database's logs and tables pass their checks. Nothing is changed
 * when a check fails.
 */
export function prepareDataDirectory(dataDir: string): void {
  const probe = join(dataDir, `.write-probe-${process.pid}`)
  try {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 })
    const fd = openSync(probe, 'w', 0o600)
    try {
      writeSync(fd, 'svc-node')
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    unlinkSync(probe)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? ''
    if (code === 'ENOSPC' || code === 'EDQUOT') {
      throw new StartupFailure('disk_full', `no space left in the data directory ${dataDir}: free some space, then start again`, { cause: err })
    }
    if (NOT_WRITABLE.has(code) || code === 'ENOTDIR' || code === 'ENOENT') {
      throw new StartupFailure('data_dir_not_writable', `the data directory ${dataDir} cannot be written (${code}): fix its permissions or mount, or set data_dir (SVC_DATA_DIR) to a writable directory`, { cause: err })
    }
    throw err
  }
  const problems = verifyLevelDirectory(catalogLocation(dataDir), { full: false })
  if (problems.length > 0) {
    const corrupted = new StorageCorrupted(catalogLocation(dataDir), problems)
    throw new StartupFailure('data_corrupted', `${corrupted.message}. Refusing to start: LevelDB would drop what it cannot read. ` +
      'Restore the latest backup (svc node restore), or salvage what is readable with svc node check --repair', { cause: corrupted })
  }
}

/** The start-up failure `err` (thrown while the node started) stands for, when it is one. */
export function classifyStartupError(err: unknown, dataDir: string): StartupFailure | undefined {
  if (err instanceof StartupFailure) return err
  if (err instanceof DataFormatMismatch) return new StartupFailure('data_format_mismatch', err.message, { cause: err })
  const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } }
  if (e?.code !== 'LEVEL_DATABASE_NOT_OPEN' && !isSvcError(err)) {
    // the database opened, then failed on its first reads: corrupted tables and manifests show here
    if (/Corruption:/.test(String(e?.message ?? ''))) return new StartupFailure('data_corrupted', `the database in ${catalogLocation(dataDir)} is corrupted: ${e.message}`, { cause: err })
    return undefined
  }
  const text = `${e.cause?.message ?? ''} ${e.message ?? ''}`
  if (e.cause?.code === 'LEVEL_LOCKED' || /\block\b.*(temporarily unavailable|already held)/i.test(text)) {
    return new StartupFailure('data_dir_in_use', `the data directory ${dataDir} is in use by another process (a running svc-node?): stop it first`, { cause: err })
  }
  if (/Corruption:/.test(text)) {
    return new StartupFailure('data_corrupted', `the database in ${catalogLocation(dataDir)} is corrupted (${e.cause?.message ?? e.message}). ` +
      'Restore the latest backup (svc node restore), or salvage what is readable with svc node check --repair', { cause: err })
  }
  if (/No space left|ENOSPC/i.test(text)) return new StartupFailure('disk_full', `no space left to open the database in ${dataDir}: free some space, then start again`, { cause: err })
  if (/Permission denied|Read-only file system|EACCES|EROFS|EPERM/i.test(text)) {
    return new StartupFailure('data_dir_not_writable', `the database in ${catalogLocation(dataDir)} cannot be written: ${e.cause?.message ?? e.message}`, { cause: err })
  }
  return undefined
}
