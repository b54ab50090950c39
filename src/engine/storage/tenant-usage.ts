import { Counter, Gauge, type Registry } from 'prom-client'
import { SvcError } from '../../core/errors.js'
import type { JsonSublevel } from './group-commit.js'
import { tenantRoot } from '../types.js'

/**
 * What each tenant stores on this node, and its quota (issue 27: one tenant must not fill the disk
 * for the others).
 *
 * **Accounts.** Usage is counted per account: the root of a tenant's namespace, the part of its id
 * before the first dot (`acme.team1` and `acme.x.y` count against `acme`). A credential narrowed
 * to a child namespace keeps its root (rootTenantOf), and a key minted inside a child namespace
 * (tenant `acme.team1`) is still `acme`'s: spreading writes over namespaces or keys escapes nothing.
 *
 * **What is counted.** Each stored item a tenant's writes make has one entry in the `tenant_usage`
 * sublevel, `<account>:<kind>:<item>` → its bytes (key and JSON value as stored):
 * - `x` execution records (with the receipt and signer certificate the record wrote first, and this
 *   entry itself), keyed by execution id, so an account's records are listed oldest first (retention);
 *   their entry also names the receipt and certificate the record refers to (receipt clean-up);
 * - `f` function versions (source, manifest, lockfile, texts), `l` ledger entries, `b` branch heads,
 *   `k` API key records (a new key is refused past the quota, a revocation never).
 * An entry is written and deleted in the same LevelDB batch as its item (execution records in the
 * group commit's batches), so what is on disk always adds up. A clean stop stores the totals, which
 * the next start takes (and removes); after a crash (no totals) the entries are summed, a scan of
 * small entries bounded by retention (docs/tenant-isolation/storage.md has the measured time). Not counted: audit entries (the node's
 * record of what callers did, refusals included: never refused, bounded by rate limits and
 * `audit.retention_days`), usage statistics (one small entry per function version), the
 * replication log's copy of a change, the digest index.
 *
 * **The quota.** With `quotaBytes` > 0 a write that would take an account past it is refused with
 * 1005 RATE_LIMITED (`details.reason: 'tenant_quota'`) before anything is written; writes that free
 * space (deletes) and what the node must keep (replicated changes, the small record of a refused
 * call) are never refused. One account at its quota changes nothing for another.
 */

/** The kinds of item counted (see the module comment). */
export type UsageKind = 'x' | 'f' | 'l' | 'b' | 'k'

/**
 * A stored usage entry: the bytes charged, and for an execution record the digest of the receipt it
 * refers to and the reference of that receipt's certificate (null: none).
 */
export type UsageEntry = [bytes: number] | [bytes: number, receiptRef: string | null, certificateRef: string | null]

/** The account a tenant's storage counts against: the root of its namespace (see the module comment). */
export const accountOf = tenantRoot

/** The key of an item's usage entry. */
export const usageKey = (account: string, kind: UsageKind, item: string): string => `${account}:${kind}:${item}`

/** The first key of an account's entries of one kind; `prefixEnd` of it bounds them. */
export const usagePrefix = (account: string, kind: UsageKind): string => `${account}:${kind}:`

/** The bytes an entry charges (0 for a missing or malformed one). */
export const bytesOf = (entry: unknown): number => (Array.isArray(entry) && typeof entry[0] === 'number' ? entry[0] : 0)

/**
 * Bytes a stored usage entry of an execution record takes: its key (account, kind, 29-character
 * id, the sublevel's prefix) and value (up to two 64-character digests).
 */
export const EXECUTION_ENTRY_BYTES = 200

export interface TenantUsageInit {
  /** bytes each account may store; 0: no quota */
  quotaBytes: number
  /** what a refusal's Retry-After says (when retention may have freed space), seconds */
  retryAfterSeconds: number
}

export interface TenantUsageComponents {
  /** the `tenant_usage` sublevel */
  entries: JsonSublevel
  /** where `svc_tenant_storage_bytes` and the refusal counter are registered (absent: nowhere) */
  metrics?: { registry: Registry } | undefined
}

/** Every account's bytes and execution records, as stored at a clean stop. */
export interface UsageTotals {
  accounts: Record<string, [bytes: number, records: number]>
}

/** Space set aside for a write acknowledged before it is stored (see `reserve`). */
export interface Reservation {
  readonly account: string
  readonly bytes: number
  /** gives the space back (idempotent) */
  release(): void
}

/** An account's storage, as `GET /api/v1/auth/whoami` and the metrics show it. */
export interface AccountStorage {
  account: string
  used_bytes: number
  /** null: no quota */
  quota_bytes: number | null
  execution_records: number
}

/** The in-memory totals of the usage entries, and the quota checks (see the module comment). */
export class TenantUsage {
  private readonly bytes = new Map<string, number>()
  private readonly records = new Map<string, number>()
  private readonly reserved = new Map<string, number>()
  private readonly refusals: Counter<'tenant'> | undefined

  constructor(private readonly init: TenantUsageInit, private readonly c: TenantUsageComponents) {
    const registry = c.metrics?.registry
    if (registry === undefined) return
    const totals = this.bytes
    const quota = init.quotaBytes
    new Gauge({
      name: 'svc_tenant_storage_bytes',
      help: 'Bytes each tenant (root of its namespaces) stores on this node: execution records, function versions, ledger entries, branch heads, API keys',
      labelNames: ['tenant'],
      registers: [registry],
      collect() {
        this.reset()
        for (const [account, bytes] of totals) this.set({ tenant: account }, bytes)
      },
    })
    new Gauge({
      name: 'svc_tenant_storage_quota_bytes',
      help: 'The storage quota of each tenant (storage.tenant_quota_mb); 0: none',
      registers: [registry],
      collect() {
        this.set(quota)
      },
    })
    this.refusals = new Counter({
      name: 'svc_tenant_storage_refusals_total',
      help: 'Writes refused because they would take a tenant past its storage quota (1005 tenant_quota)',
      labelNames: ['tenant'],
      registers: [registry],
    })
  }

  get quotaBytes(): number {
    return this.init.quotaBytes
  }

  /** Sums the stored entries (at start). */
  async load(): Promise<{ entries: number; accounts: number }> {
    this.bytes.clear()
    this.records.clear()
    let entries = 0
    for await (const [key, value] of this.c.entries.iterator()) {
      entries++
      const colon = key.indexOf(':')
      if (colon <= 0) continue
      this.add(key.slice(0, colon), bytesOf(value), key.startsWith(':x:', colon) ? 1 : 0)
    }
    return { entries, accounts: this.bytes.size }
  }

  /** The totals, to be stored at a clean stop and taken at the next start instead of `load` (see CatalogStore). */
  totals(): UsageTotals {
    const accounts: UsageTotals['accounts'] = {}
    for (const [account, bytes] of this.bytes) accounts[account] = [bytes, this.records.get(account) ?? 0]
    for (const [account, records] of this.records) accounts[account] ??= [0, records]
    return { accounts }
  }

  /** Takes totals stored at a clean stop; false when they are malformed (then `load`). */
  restore(totals: unknown): boolean {
    const accounts = (totals as UsageTotals | undefined)?.accounts
    if (typeof accounts !== 'object' || accounts === null) return false
    const entries = Object.entries(accounts)
    if (!entries.every(([, v]) => Array.isArray(v) && v.length === 2 && v.every((n) => Number.isSafeInteger(n) && n >= 0))) return false
    this.bytes.clear()
    this.records.clear()
    for (const [account, [bytes, records]] of entries) this.add(account, bytes, records)
    return true
  }

  /** Bytes an account stores (and holds reserved). */
  used(account: string): number {
    return (this.bytes.get(account) ?? 0) + (this.reserved.get(account) ?? 0)
  }

  /** Execution records an account stores. */
  recordCount(account: string): number {
    return this.records.get(account) ?? 0
  }

  /** Accounts with execution records. */
  accountsWithRecords(): string[] {
    return [...this.records.entries()].filter(([, n]) => n > 0).map(([account]) => account)
  }

  storageOf(account: string): AccountStorage {
    return {
      account,
      used_bytes: this.bytes.get(account) ?? 0,
      quota_bytes: this.init.quotaBytes > 0 ? this.init.quotaBytes : null,
      execution_records: this.records.get(account) ?? 0,
    }
  }

  /** Counts stored (positive) or removed (negative) bytes and execution records of an account. */
  add(account: string, bytes: number, records = 0): void {
    if (bytes !== 0) {
      const total = (this.bytes.get(account) ?? 0) + bytes
      if (total <= 0) this.bytes.delete(account)
      else this.bytes.set(account, total)
    }
    if (records !== 0) {
      const count = (this.records.get(account) ?? 0) + records
      if (count <= 0) this.records.delete(account)
      else this.records.set(account, count)
    }
  }

  /** Throws 1005 (`tenant_quota`) when storing `bytes` more would take the account past its quota. */
  check(account: string, bytes: number): void {
    const quota = this.init.quotaBytes
    if (quota <= 0 || bytes <= 0) return
    const used = this.used(account)
    if (used + bytes <= quota) return
    this.refusals?.inc({ tenant: account })
    throw new SvcError('RATE_LIMITED', `tenant ${account} is at its storage quota on this node: ${used} of ${quota} bytes used, and this write needs ${bytes} more ` +
      '(storage.tenant_quota_mb; execution records leave with retention, see execution.records)', {
      details: { reason: 'tenant_quota', tenant: account, used_bytes: used, quota_bytes: quota, needed_bytes: bytes },
      retryAfterSeconds: this.init.retryAfterSeconds,
    })
  }

  /**
   * Sets `bytes` aside for a write acknowledged now and stored a moment later (a cached answer's
   * record), so that the writes acknowledged meanwhile see it; 1005 when it does not fit.
   */
  reserve(account: string, bytes: number): Reservation {
    this.check(account, bytes)
    this.reserved.set(account, (this.reserved.get(account) ?? 0) + bytes)
    return new HeldSpace(this.reserved, account, bytes)
  }
}

/** A reservation (see `TenantUsage.reserve`). */
class HeldSpace implements Reservation {
  private held = true

  constructor(private readonly reserved: Map<string, number>, readonly account: string, readonly bytes: number) {}

  release(): void {
    if (!this.held) return
    this.held = false
    const left = (this.reserved.get(this.account) ?? 0) - this.bytes
    if (left <= 0) this.reserved.delete(this.account)
    else this.reserved.set(this.account, left)
  }
}
