import type { ExecutionReceipts } from './execution-receipts.js'
import type { GroupCommit, JsonSublevel, QueuedPut } from './group-commit.js'
import { timeOrderedLowerBound } from '../ids.js'
import { bytesOf, usagePrefix, type TenantUsage } from './tenant-usage.js'

/**
 * Execution-record retention (issue 27): by age and by count per account (the root of a tenant's
 * namespaces, see tenant-usage.ts), swept periodically like the audit log's retention.
 *
 * A sweep walks each account's usage entries of execution records (oldest first: the ids are
 * time-ordered) and removes the records older than `retentionDays` and, beyond `maxPerTenant`,
 * the oldest ones; a record still queued or running is left for the next sweep. A record goes with
 * its usage entry in one batch of the group commit (the same channel that writes records, so no
 * write can overtake a deletion), and the account's usage shrinks by what the record was charged.
 * Then the receipts those records referred to and no remaining record of the account refers to
 * are removed (several records share one receipt: a deterministic function's cached answers), and
 * the signer certificates no remaining receipt refers to. Last, LevelDB compacts the key ranges
 * that were deleted (`compactRange`), so that the space returns to the file system now rather than
 * whenever LevelDB would compact them on its own.
 *
 * A receipt or certificate is forgotten by the store's receipt cache before the references are
 * looked for, and its deletion is queued only if no record carried it again since: a record
 * written meanwhile writes it again (same bytes), never refers to one that is gone.
 */

export interface ExecutionRetentionInit {
  /** records older than this many days are removed; 0: kept whatever their age */
  retentionDays: number
  /** an account keeps at most this many records (the newest); 0: no limit */
  maxPerTenant: number
  /** how often the sweep runs (ms) */
  sweepIntervalMs: number
}

export interface ExecutionRetentionComponents {
  /** the node's database: `compactRange` where it has one (classic-level) */
  db: unknown
  executions: JsonSublevel
  receipts: JsonSublevel
  certificates: JsonSublevel
  usageEntries: JsonSublevel
  usage: TenantUsage
  /** the store's group commit: deletions go through it, after what was queued before */
  log: GroupCommit
  receiptCache: Pick<ExecutionReceipts, 'forgetReceipt' | 'forgetCertificate' | 'hasWritten' | 'knowsCertificate'>
  /** a record still queued or running (its final status not stored yet) */
  isUnfinished(executionId: string): boolean
  /** whether the database takes writes now (a full disk: the sweep waits for the next period) */
  writable(): boolean
  /** told after each sweep that removed anything */
  onSwept?: ((result: SweepResult) => void) | undefined
}

/** What one sweep removed. */
export interface SweepResult {
  records: number
  /** bytes the records (and what they wrote first: receipt, certificate) were charged */
  bytes: number
  receipts: number
  certificates: number
  /** key ranges LevelDB compacted (0 where the database has no compactRange) */
  compactedRanges: number
  ms: number
}

/** Deletions queued before the group commit is flushed (and the sweep yields). */
const CHUNK = 512

const prefixEnd = (prefix: string): string => prefix + '\uffff'
const prefixOf = (sublevel: JsonSublevel): string => (sublevel as unknown as { prefix: string }).prefix

/** Key range of one sublevel's deleted keys, for compaction. */
class DeletedRange {
  min: string | undefined
  max: string | undefined

  add(key: string): void {
    if (this.min === undefined || key < this.min) this.min = key
    if (this.max === undefined || key > this.max) this.max = key
  }
}

/** Sweeps execution records past their retention (see the module comment). */
export class ExecutionRetention {
  private timer: NodeJS.Timeout | undefined
  private running: Promise<SweepResult> | undefined

  constructor(private readonly init: ExecutionRetentionInit, private readonly c: ExecutionRetentionComponents) {}

  get enabled(): boolean {
    return this.init.retentionDays > 0 || this.init.maxPerTenant > 0
  }

  start(): void {
    if (this.timer !== undefined || !this.enabled) return
    this.timer = setInterval(() => void this.sweep().catch(() => undefined), this.init.sweepIntervalMs)
    this.timer.unref()
  }

  /**
   * Stops the periodic sweep. A sweep running on goes on until its next write fails (the database
   * closing): a sweep waits for the group commit, which on a full disk waits for space.
   */
  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer)
    this.timer = undefined
  }

  /** One sweep (one at a time: a sweep asked for while one runs gets that one). */
  sweep(now = Date.now()): Promise<SweepResult> {
    this.running ??= this.sweepOnce(now).finally(() => {
      this.running = undefined
    })
    return this.running
  }

  private async sweepOnce(now: number): Promise<SweepResult> {
    const started = performance.now()
    const result: SweepResult = { records: 0, bytes: 0, receipts: 0, certificates: 0, compactedRanges: 0, ms: 0 }
    if (!this.enabled || !this.c.writable()) return result
    // every record queued so far has its usage entry on disk
    await this.c.log.flush()
    const cutoff = this.init.retentionDays > 0 ? timeOrderedLowerBound('ex_', now - this.init.retentionDays * 86_400_000) : undefined
    const ranges = { executions: new DeletedRange(), usage: new DeletedRange(), receipts: new DeletedRange(), certificates: new DeletedRange() }
    const certificateCandidates = new Set<string>()
    for (const account of this.c.usage.accountsWithRecords()) {
      const receipts = await this.sweepAccount(account, cutoff, result, ranges)
      await this.removeReceipts(account, receipts, result, ranges.receipts, certificateCandidates)
    }
    await this.removeCertificates(certificateCandidates, result, ranges.certificates)
    await this.c.log.flush()
    if (result.records > 0) {
      result.compactedRanges = await this.compact([
        [this.c.executions, ranges.executions], [this.c.usageEntries, ranges.usage], [this.c.receipts, ranges.receipts], [this.c.certificates, ranges.certificates],
      ])
    }
    result.ms = Math.round(performance.now() - started)
    if (result.records > 0) this.c.onSwept?.(result)
    return result
  }

  /**
   * Removes an account's records past retention, oldest first; returns the receipts they referred
   * to (digest → certificate reference), forgotten by the receipt cache.
   */
  private async sweepAccount(account: string, cutoff: string | undefined, result: SweepResult, ranges: Record<'executions' | 'usage', DeletedRange>): Promise<Map<string, string | null>> {
    const receipts = new Map<string, string | null>()
    const max = this.init.maxPerTenant
    let excess = max > 0 ? this.c.usage.recordCount(account) - max : 0
    const prefix = usagePrefix(account, 'x')
    let chunk: QueuedPut[] = []
    let removed = { records: 0, bytes: 0 }
    const write = async (): Promise<void> => {
      if (chunk.length === 0) return
      await this.c.log.write(chunk)
      this.c.usage.add(account, -removed.bytes, -removed.records)
      result.records += removed.records
      result.bytes += removed.bytes
      chunk = []
      removed = { records: 0, bytes: 0 }
      await this.c.log.flush()
    }
    // the victims are read first (an iterator open across writes would see a snapshot anyway)
    const victims: Array<{ key: string; id: string; entry: unknown }> = []
    for await (const [key, entry] of this.c.usageEntries.iterator({ gte: prefix, lt: prefixEnd(prefix) })) {
      const id = key.slice(prefix.length)
      const old = cutoff !== undefined && id < cutoff
      if (!old && excess <= 0) break
      if (this.c.isUnfinished(id)) continue
      victims.push({ key, id, entry })
      excess--
    }
    for (const { key, id, entry } of victims) {
      chunk.push({ sublevel: this.c.executions, key: id, value: undefined, del: true }, { sublevel: this.c.usageEntries, key, value: undefined, del: true })
      ranges.executions.add(prefixOf(this.c.executions) + id)
      ranges.usage.add(prefixOf(this.c.usageEntries) + key)
      removed.records++
      removed.bytes += bytesOf(entry)
      const receiptRef = Array.isArray(entry) ? entry[1] : undefined
      if (typeof receiptRef === 'string' && !receipts.has(receiptRef)) {
        const certificateRef = Array.isArray(entry) && typeof entry[2] === 'string' ? entry[2] : null
        receipts.set(receiptRef, certificateRef)
        // a record written from now on that carries it writes it again
        this.c.receiptCache.forgetReceipt(receiptRef)
      }
      if (chunk.length >= CHUNK) await write()
    }
    await write()
    return receipts
  }

  /** Removes the receipts no remaining record of the account refers to. */
  private async removeReceipts(account: string, candidates: Map<string, string | null>, result: SweepResult, range: DeletedRange, certificates: Set<string>): Promise<void> {
    if (candidates.size === 0) return
    // records queued before the receipts were forgotten are on disk: their entries are read below
    await this.c.log.flush()
    const prefix = usagePrefix(account, 'x')
    for await (const entry of this.c.usageEntries.values({ gte: prefix, lt: prefixEnd(prefix) })) {
      const ref = Array.isArray(entry) ? entry[1] : undefined
      if (typeof ref === 'string') candidates.delete(ref)
      if (candidates.size === 0) return
    }
    const dels: QueuedPut[] = []
    for (const [ref, certificateRef] of candidates) {
      // a record written since carried it again (and wrote it again): it stays
      if (this.c.receiptCache.hasWritten(ref)) continue
      dels.push({ sublevel: this.c.receipts, key: ref, value: undefined, del: true })
      range.add(prefixOf(this.c.receipts) + ref)
      if (certificateRef !== null) certificates.add(certificateRef)
    }
    for (let i = 0; i < dels.length; i += CHUNK) await this.c.log.write(dels.slice(i, i + CHUNK))
    result.receipts += dels.length
  }

  /** Removes the certificates no remaining receipt refers to (looked up through the records' usage entries). */
  private async removeCertificates(candidates: Set<string>, result: SweepResult, range: DeletedRange): Promise<void> {
    if (candidates.size === 0) return
    for (const ref of candidates) this.c.receiptCache.forgetCertificate(ref)
    await this.c.log.flush()
    for await (const entry of this.c.usageEntries.values()) {
      const ref = Array.isArray(entry) ? entry[2] : undefined
      if (typeof ref === 'string') candidates.delete(ref)
      if (candidates.size === 0) return
    }
    const dels: QueuedPut[] = []
    for (const ref of candidates) {
      if (this.c.receiptCache.knowsCertificate(ref)) continue
      dels.push({ sublevel: this.c.certificates, key: ref, value: undefined, del: true })
      range.add(prefixOf(this.c.certificates) + ref)
    }
    if (dels.length > 0) await this.c.log.write(dels)
    result.certificates += dels.length
  }

  /** Compacts the deleted key ranges where the database can (classic-level); returns how many it compacted. */
  private async compact(ranges: Array<[JsonSublevel, DeletedRange]>): Promise<number> {
    const db = this.c.db as { compactRange?: (start: string, end: string) => Promise<void> }
    if (typeof db.compactRange !== 'function') return 0
    let n = 0
    for (const [, range] of ranges) {
      if (range.min === undefined || range.max === undefined) continue
      try {
        await db.compactRange(range.min, range.max)
        n++
      } catch {
        // the space returns when LevelDB compacts on its own
      }
    }
    return n
  }
}
