import { statfs } from 'node:fs/promises'
import { dirname } from 'node:path'
import { ClassicLevel } from 'classic-level'
import { SvcError } from '../../core/errors.js'

/**
 * Whether the node can write: `writable`, or `disk_full` (writes refused with 1010 until space
 * returns; reads go on).
 */
export type StorageCondition = 'writable' | 'disk_full'

export interface StorageState {
  condition: StorageCondition
  /** bytes the file system had free for the node at the last measurement (null: not measured yet) */
  free_bytes: number | null
  min_free_bytes: number
  /** when the condition last changed (ISO 8601) */
  since: string
  /** why writes are refused (the last failure's text), when they are */
  cause?: string
}

export interface NodeDatabaseInit {
  /** the LevelDB directory */
  location: string
  /**
   * Writes are refused while the file system has less free space than this, so LevelDB keeps room to
   * compact and never fails halfway. 0: refused only once a write fails for lack of space.
   */
  minFreeBytes: number
  /** how often free space is measured, and a refused database tried again */
  checkIntervalMs: number
}

const NO_SPACE = /No space left on device|ENOSPC|EDQUOT|quota exceeded/i
/** writes resume this much above the threshold, so a node at the edge does not flap */
const HYSTERESIS_BYTES = 1 << 20
const PROBE_KEY = 'storage_probe'

/** Where a write error came from: its own text or its cause's. */
const textOf = (err: unknown): string => {
  const e = err as { message?: string; cause?: { message?: string } }
  return `${e?.message ?? ''} ${e?.cause?.message ?? ''}`
}

/**
 * The node's LevelDB (classic-level) with a guard on writes for a full disk.
 *
 * Every write of the node (catalog, ledger, keys, audit, replication) goes through this database's
 * `_put`, `_del` and `_batch`, sublevels included. While the file system is short of space the guard
 * refuses writes with 1010 SERVICE_UNAVAILABLE (`details.reason: "disk_full"`) before LevelDB sees
 * them; a write LevelDB fails (no space, or any I/O error) does the same. A watcher measures free
 * space every `checkIntervalMs` and, once there is room again, resumes writes after a probe record
 * reached the disk. After a write LevelDB failed, the database is first closed and opened again (its
 * sublevels with it): LevelDB 1.20 keeps appending to a log that may end in a torn record, and reads a
 * log only up to its first torn record, so writes acknowledged after the failure would vanish at the
 * next open (found by test/faults/disk-full.test.ts); a failed background compaction also stays
 * LevelDB's error until it is reopened. Reads never stop.
 */
export class NodeDatabase extends ClassicLevel<string, unknown> {
  private readonly init: NodeDatabaseInit
  private readonly sublevels = new Set<{ open(): Promise<void> }>()
  private readonly storageListeners = new Set<(state: StorageState) => void>()
  private current: StorageState
  private timer: NodeJS.Timeout | undefined
  private recovering: Promise<void> | undefined
  /**
   * A write failed inside LevelDB: its write-ahead log may end in a torn record, and LevelDB reads a
   * log only up to its first torn record, so anything appended after it would be lost at the next
   * open. No write is let through again until the database was reopened (which ends that log).
   */
  private tainted = false

  constructor(init: NodeDatabaseInit) {
    super(init.location, { valueEncoding: 'json' })
    this.init = init
    this.current = { condition: 'writable', free_bytes: null, min_free_bytes: init.minFreeBytes, since: new Date().toISOString() }
    // every sublevel, so that a reopen can open them again (a sublevel stays closed after its parent closes)
    this.hooks.newsub.add((sublevel: { open(): Promise<void> }) => {
      this.sublevels.add(sublevel)
    })
  }

  get storage(): StorageState {
    return { ...this.current }
  }

  /** Called on each change of condition. */
  onStorageChange(listener: (state: StorageState) => void): () => void {
    this.storageListeners.add(listener)
    return () => this.storageListeners.delete(listener)
  }

  /** Starts measuring free space (idempotent). */
  watchStorage(): void {
    if (this.timer !== undefined) return
    void this.measure()
    this.timer = setInterval(() => void this.measure(), this.init.checkIntervalMs)
    this.timer.unref()
  }

  unwatchStorage(): void {
    if (this.timer !== undefined) clearInterval(this.timer)
    this.timer = undefined
  }

  override async close(): Promise<void> {
    this.unwatchStorage()
    await this.recovering?.catch(() => undefined)
    return super.close()
  }

  // the private API of abstract-level: every write of the database and its sublevels lands here

  async _put(key: unknown, value: unknown, options: unknown): Promise<void> {
    this.admitWrite()
    try {
      await (ClassicLevel.prototype as unknown as Writer)._put.call(this, key, value, options)
    } catch (err) {
      throw this.writeFailed(err)
    }
  }

  async _del(key: unknown, options: unknown): Promise<void> {
    this.admitWrite()
    try {
      await (ClassicLevel.prototype as unknown as Writer)._del.call(this, key, options)
    } catch (err) {
      throw this.writeFailed(err)
    }
  }

  async _batch(operations: unknown, options: unknown): Promise<void> {
    this.admitWrite()
    try {
      await (ClassicLevel.prototype as unknown as Writer)._batch.call(this, operations, options)
    } catch (err) {
      throw this.writeFailed(err)
    }
  }

  /**
   * Puts already encoded: full keys (the sublevel's prefix included) and values as their stored text
   * (JSON), in one batch; an entry with `del` deletes its key. abstract-level's `batch` clones each operation, looks up its encodings,
   * runs hooks and prefixes its key: for the small puts of the group commit that was more than half
   * of a put's CPU (bench: 40 → 16 µs a put). The guard of `_batch` applies as to every write; a
   * database not open takes the public path, which waits for an opening one or refuses.
   */
  async writeEncoded(puts: ReadonlyArray<{ key: string; value: string } | { key: string; del: true }>, sync: boolean): Promise<void> {
    const ops = puts.map((put) => ('del' in put ? { type: 'del' as const, key: put.key } : { type: 'put' as const, key: put.key, value: put.value }))
    if (this.status !== 'open') {
      await this.batch(ops.map((op) => (op.type === 'put' ? { ...op, valueEncoding: 'utf8' } : op)) as never, { sync } as object)
      return
    }
    await this._batch(ops, { sync })
  }

  private refusal(): SvcError {
    const s = this.current
    const free = s.free_bytes === null ? 'unknown' : `${Math.floor(s.free_bytes / 2 ** 20)} MiB`
    return new SvcError('SERVICE_UNAVAILABLE', `the node cannot write: its disk is full (${free} free, writes resume above ${Math.ceil((s.min_free_bytes + HYSTERESIS_BYTES) / 2 ** 20)} MiB); reads go on`, {
      details: { reason: 'disk_full', free_bytes: s.free_bytes, min_free_bytes: s.min_free_bytes },
      retryAfterSeconds: Math.max(1, Math.ceil(this.init.checkIntervalMs / 1000)),
    })
  }

  private admitWrite(): void {
    if (this.current.condition !== 'writable') throw this.refusal()
  }

  /**
   * 1010 (disk_full) now when the node cannot write: for writes that are queued and written later
   * (group commit), so they are refused before they are acknowledged, as every other write is.
   */
  assertWritable(): void {
    this.admitWrite()
  }

  private writeFailed(err: unknown): unknown {
    if (!/IO error/i.test(textOf(err)) && !NO_SPACE.test(textOf(err))) return err
    this.tainted = true
    this.change('disk_full', { cause: textOf(err).trim() })
    return this.refusal()
  }

  private change(condition: StorageCondition, extra: Partial<StorageState> = {}): void {
    const was = this.current.condition
    this.current = { ...this.current, ...extra, condition, ...(condition !== was ? { since: new Date().toISOString() } : {}) }
    if (condition === 'writable') delete this.current.cause
    if (condition !== was) for (const l of this.storageListeners) l(this.storage)
  }

  /** One measurement: refuse writes below the threshold, try to resume above it. */
  private async measure(): Promise<void> {
    let free: number
    try {
      // the directory exists once LevelDB opened; its parent always does
      const stats = await statfs(this.status === 'open' ? this.location : dirname(this.location))
      free = stats.bavail * stats.bsize
    } catch {
      return
    }
    this.current.free_bytes = free
    if (this.current.condition === 'writable') {
      if (free < this.init.minFreeBytes) this.change('disk_full', { cause: `free space under ${this.init.minFreeBytes} bytes` })
      return
    }
    if (free >= this.init.minFreeBytes + HYSTERESIS_BYTES && this.recovering === undefined && this.status === 'open') {
      this.recovering = this.recover().finally(() => {
        this.recovering = undefined
      })
    }
  }

  /**
   * Space is back. After a write LevelDB failed, the database is closed and opened again: that ends
   * a log that may hold a torn record, and clears the error LevelDB keeps after a failed background
   * compaction. Then a probe write; writes resume once it is on disk.
   */
  private async recover(): Promise<void> {
    if (this.tainted) {
      await super.close()
      await this.open()
      await Promise.all([...this.sublevels].map((s) => s.open()))
      this.tainted = false
    }
    try {
      await (ClassicLevel.prototype as unknown as Writer)._put.call(this, PROBE_KEY, JSON.stringify(new Date().toISOString()), { sync: true })
    } catch (err) {
      this.tainted = true
      this.change('disk_full', { cause: textOf(err).trim() })
      return
    }
    this.change('writable')
  }
}

interface Writer {
  _put(this: NodeDatabase, key: unknown, value: unknown, options: unknown): Promise<void>
  _del(this: NodeDatabase, key: unknown, options: unknown): Promise<void>
  _batch(this: NodeDatabase, operations: unknown, options: unknown): Promise<void>
}
