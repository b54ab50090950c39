import type { AbstractSublevel } from 'abstract-level'
import { SvcError, validationFailed } from '../../core/errors.js'
import { isValidTenantId } from '../../core/rufid.js'
import { requirePermission } from '../authz.js'
import { timeOrderedId, timeOrderedLowerBound } from '../ids.js'
import type { LevelDatabase } from '../storage/catalog-store.js'
import { GroupCommit, type JsonSublevel } from '../storage/group-commit.js'
import type { Principal } from '../types.js'

/**
 * service-spec §2.7 audit entry (plus `code` of a failure, `key_id` of the credential, and `count`
 * on a summary of rate-limit refusals).
 */
export interface AuditEntry {
  id: string
  timestamp: string
  operation: string
  rufid: string | null
  user: string | null
  tenant: string | null
  ip: string
  result: string
  duration_ms: number
  code?: number
  key_id?: string
  method?: string
  /**
   * present on a summary entry only: the number of rate-limit refusals (same caller, operation
   * and address) it stands for; an entry without `count` stands for one
   */
  count?: number
}

export interface AuditQuery {
  from?: string
  to?: string
  /** entries of exactly this tenant; null: entries without a tenant (refused before authentication) */
  tenant?: string | null
  /** entries of this tenant and of its child namespaces (`acme`, `acme.team1`, …) */
  within?: string
  operation?: string
  rufid?: string
  limit?: number
  /** the `next_cursor` of the previous page */
  cursor?: string
}

export interface AuditLogInit {
  /** entries older than this are deleted; 0 keeps everything */
  retentionDays: number
  /** how often the retention sweep runs */
  sweepIntervalMs: number
  /**
   * the node's admin tenant (`auth.default_tenant`): its admins are the operators, who read every
   * tenant's entries; absent, every admin reads only its own tenant
   */
  operatorTenant?: string | undefined
  /**
   * rate-limit refusals of one caller, operation and address after the first are counted and
   * written as one summary entry at the end of this period (default 1000 ms)
   */
  refusalSummaryMs?: number | undefined
  /**
   * entries are group-committed: acknowledged at once and written together within this many ms
   * (default 5); 0: each entry is written before `record` resolves
   */
  flushMs?: number | undefined
}

/** The default of `AuditLogInit.flushMs`. */
export const DEFAULT_AUDIT_FLUSH_MS = 5

/** What an admin asks of `GET /api/v1/audit`: `tenant` as given in the query. */
export type AuditReadRequest = Omit<AuditQuery, 'tenant' | 'within'> & { tenant?: string | undefined }

/** The `tenant` filter value that selects entries without a tenant (authentication failures). */
export const AUDIT_NO_TENANT = '~none'

/** The longest page `query` answers. */
export const MAX_AUDIT_PAGE = 1000

/** Refusals waiting to be summarised, at most this many callers at once (beyond: written one by one). */
const MAX_PENDING_REFUSALS = 10_000

type NewEntry = Omit<AuditEntry, 'id' | 'timestamp'> & { timestamp?: string }

interface PendingRefusals {
  entry: NewEntry
  /** refusals after the first (which was written at once) */
  count: number
  durationTotal: number
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Sub = AbstractSublevel<LevelDatabase, any, string, AuditEntry>

/**
 * The audit log: one LevelDB entry per operation, keyed by a time-ordered id so that time-range
 * queries and the retention sweep are range scans. Entries are group-committed (`flushMs`): each
 * is recorded before the response is sent and written with the others of its few milliseconds, so
 * a crash of the process loses at most the entries of the last `flushMs` (see GroupCommit); a
 * query writes the waiting entries first.
 */
export class AuditLog {
  private readonly entries: Sub
  private timer: NodeJS.Timeout | undefined
  private readonly refusals = new Map<string, PendingRefusals>()
  private refusalTimer: NodeJS.Timeout | undefined
  private flushing: Promise<void> = Promise.resolve()
  private readonly log: GroupCommit
  /** whether `log` is this log's own (not shared with the execution records) */
  private readonly ownLog: boolean

  /** `groupCommit`: one shared with other records of `db` (the catalog store's), else its own */
  constructor(private readonly init: AuditLogInit, components: { db: LevelDatabase; groupCommit?: GroupCommit }) {
    this.entries = components.db.sublevel<string, AuditEntry>('audit', { valueEncoding: 'json' }) as unknown as Sub
    this.log = components.groupCommit ?? new GroupCommit({ flushMs: init.flushMs ?? DEFAULT_AUDIT_FLUSH_MS }, components)
    this.ownLog = components.groupCommit === undefined
  }

  /**
   * Entries recorded and not written yet: waiting in this log's own group commit (a shared one is
   * counted by its owner) and rate-limit summaries not yet recorded. What a stop would lose.
   */
  unwritten(): number {
    let n = 0
    for (const p of this.refusals.values()) if (p.count > 0) n++
    if (this.ownLog) for (const count of this.log.unwritten().values()) n += count
    return n
  }

  /** A stop out of time: the waiting entries are given up (see GroupCommit.abandon). Count `unwritten()` first. */
  abandon(reason: Error): void {
    if (this.refusalTimer) clearTimeout(this.refusalTimer)
    this.refusalTimer = undefined
    this.refusals.clear()
    if (this.ownLog) this.log.abandon(reason)
  }

  async start(): Promise<void> {
    if (this.timer || this.init.retentionDays <= 0) return
    this.timer = setInterval(() => void this.sweep().catch(() => undefined), this.init.sweepIntervalMs)
    this.timer.unref()
  }

  /** Stops the sweep and writes the pending refusal summaries and entries (before the database closes). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = undefined
    await this.flushRefusals()
    await this.log.flush()
  }

  async record(entry: NewEntry): Promise<AuditEntry> {
    const now = entry.timestamp ? Date.parse(entry.timestamp) : Date.now()
    const full: AuditEntry = { ...entry, id: timeOrderedId('au_', now), timestamp: new Date(now).toISOString() }
    await this.log.write([{ sublevel: this.entries as unknown as JsonSublevel, key: full.id, value: full }])
    return full
  }

  /** Writes the entries still waiting; resolves when they are written. */
  flush(): Promise<void> {
    return this.log.flush()
  }

  /**
   * A rate-limit refusal, cheaply: the first refusal of a caller (tenant, user, key, address) and
   * operation in a summary period is written at once; the next ones only count, and one summary
   * entry with their `count` is written when the period ends (or at stop). A flood therefore costs
   * at most two writes per caller and period, and every refusal is accounted for.
   */
  async recordRefusal(entry: NewEntry): Promise<void> {
    const key = JSON.stringify([entry.tenant, entry.user, entry.key_id, entry.method, entry.ip, entry.operation, entry.code])
    const pending = this.refusals.get(key)
    if (pending) {
      pending.count++
      pending.durationTotal += entry.duration_ms
      return
    }
    if (this.refusals.size < MAX_PENDING_REFUSALS) {
      this.refusals.set(key, { entry, count: 0, durationTotal: 0 })
      this.refusalTimer ??= setTimeout(() => void this.flushRefusals().catch(() => undefined), this.init.refusalSummaryMs ?? 1000).unref()
    }
    await this.record(entry)
  }

  /** Writes one summary entry per caller with refusals counted since its first. */
  flushRefusals(): Promise<void> {
    if (this.refusalTimer) clearTimeout(this.refusalTimer)
    this.refusalTimer = undefined
    const batch = [...this.refusals.values()].filter((p) => p.count > 0)
    this.refusals.clear()
    const write = async (): Promise<void> => {
      for (const { entry, count, durationTotal } of batch) {
        const { timestamp: _t, ...rest } = entry
        await this.record({ ...rest, count, duration_ms: Math.round((durationTotal / count) * 1000) / 1000 })
      }
    }
    this.flushing = this.flushing.then(write, write)
    return this.flushing
  }

  /**
   * `GET /api/v1/audit`, for an admin. An operator (an admin of the node's admin tenant) reads
   * every entry, and may filter on any tenant, or on `~none` for entries without one
   * (authentication failures, requests refused before authentication). Any other admin reads its
   * own tenant and that tenant's child namespaces, and may filter on one of those only (1003).
   */
  async readAs(principal: Principal, request: AuditReadRequest): Promise<{ items: AuditEntry[]; next_cursor: string | null }> {
    requirePermission(principal, 'rufid.admin')
    const operator = this.init.operatorTenant !== undefined && principal.tenant_id === this.init.operatorTenant
    const { tenant, ...rest } = request
    if (tenant === undefined || tenant === '') return this.query(operator ? rest : { ...rest, within: principal.tenant_id })
    if (tenant !== AUDIT_NO_TENANT && !isValidTenantId(tenant)) {
      throw validationFailed(`tenant must be a tenant id or ${AUDIT_NO_TENANT}`, [{ pointer: '/tenant', message: 'malformed tenant' }])
    }
    const own = tenant === principal.tenant_id || tenant.startsWith(`${principal.tenant_id}.`)
    if (!operator && !own) {
      throw new SvcError('PERMISSION_DENIED', `only an admin of the node's admin tenant reads the audit entries of ${tenant === AUDIT_NO_TENANT ? 'unauthenticated requests' : `tenant ${tenant}`}`, {
        details: { tenant_id: principal.tenant_id, requested: tenant },
      })
    }
    return this.query({ ...rest, tenant: tenant === AUDIT_NO_TENANT ? null : tenant })
  }

  async query(q: AuditQuery): Promise<{ items: AuditEntry[]; next_cursor: string | null }> {
    const limit = Math.min(Math.max(Math.trunc(q.limit ?? 100), 1), MAX_AUDIT_PAGE)
    const from = q.from === undefined ? undefined : parseTime(q.from, 'from')
    const to = q.to === undefined ? undefined : parseTime(q.to, 'to')
    const range: { gt?: string; gte?: string; lt?: string } = {}
    if (q.cursor) range.gt = q.cursor
    else if (from !== undefined) range.gte = timeOrderedLowerBound('au_', from)
    if (to !== undefined) range.lt = timeOrderedLowerBound('au_', to + 1)
    const items: AuditEntry[] = []
    let scanned = 0
    await this.log.flush()
    for await (const entry of this.entries.values(range)) {
      scanned++
      if (from !== undefined && Date.parse(entry.timestamp) < from) continue
      if (q.tenant !== undefined && entry.tenant !== q.tenant) continue
      if (q.within !== undefined && entry.tenant !== q.within && !(entry.tenant ?? '').startsWith(`${q.within}.`)) continue
      if (q.operation !== undefined && entry.operation !== q.operation) continue
      if (q.rufid !== undefined && entry.rufid !== q.rufid && !(entry.rufid ?? '').includes(q.rufid)) continue
      items.push(entry)
      if (items.length > limit || scanned > 100_000) break
    }
    const more = items.length > limit
    if (more) items.length = limit
    return { items, next_cursor: more ? items[items.length - 1]!.id : null }
  }

  /** Deletes entries older than the retention period. */
  async sweep(now = Date.now()): Promise<number> {
    if (this.init.retentionDays <= 0) return 0
    const cutoff = timeOrderedLowerBound('au_', now - this.init.retentionDays * 86_400_000)
    await this.log.flush()
    let n = 0
    for await (const key of this.entries.keys({ lt: cutoff })) {
      await this.entries.del(key)
      n++
    }
    return n
  }
}

function parseTime(value: string, name: string): number {
  const t = Date.parse(value)
  if (Number.isNaN(t)) throw validationFailed(`${name} must be an ISO 8601 time`, [{ pointer: `/${name}`, message: 'not a time' }])
  return t
}
