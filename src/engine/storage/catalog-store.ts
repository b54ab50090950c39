import type { AbstractBatchOperation, AbstractLevel, AbstractSublevel } from 'abstract-level'
import type { BranchHead, BranchMove } from '../branches/types.js'
import type { Registry } from 'prom-client'
import type { ExecutionRecord, FunctionStats, FunctionVersion, LedgerEntry } from '../types.js'
import { ExecutionReceipts, type StoredExecutionRecord } from './execution-receipts.js'
import { ExecutionRetention, type ExecutionRetentionInit, type SweepResult } from './execution-retention.js'
import { GroupCommit, type JsonSublevel, type QueuedPut } from './group-commit.js'
import { readNow } from './read-now.js'
import { DataFormatMismatch } from './storage-errors.js'
import {
  accountOf, bytesOf, EXECUTION_ENTRY_BYTES, TenantUsage, usageKey, type AccountStorage, type Reservation, type UsageKind, type UsageTotals,
} from './tenant-usage.js'

/** Format of what this code writes. Bump it with a migration when the layout changes. */
export const DATA_FORMAT_VERSION = 1

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type LevelDatabase = AbstractLevel<any, string, any>
type Json = AbstractSublevel<LevelDatabase, unknown, string, unknown>

export interface PutOp {
  type: 'put'
  sublevel: Json
  key: string
  value: unknown
}

const SEP = ':'
const pad = (n: number): string => n.toString().padStart(10, '0')
/** The smallest string greater than every key that starts with `prefix`. */
const prefixEnd = (prefix: string): string => prefix + '\uffff'

export const functionKey = (tenant: string, short: string, version: number): string =>
  [tenant, short, pad(version)].join(SEP)
export const ledgerKey = (tenant: string, name: string, version: number): string =>
  [tenant, name, pad(version)].join(SEP)
export const branchHeadKey = (tenant: string, name: string, branch: string): string =>
  [tenant, name, branch].join(SEP)

export interface CatalogStoreComponents {
  /** An opened or openable abstract-level database (classic-level on disk, memory-level in tests). */
  db: LevelDatabase
  /** where the tenant storage metrics are registered (`svc_tenant_storage_bytes`, …) */
  metrics?: { registry: Registry } | undefined
  /** told after each retention sweep that removed records (the daemon logs it) */
  onSwept?: ((result: SweepResult) => void) | undefined
}

export interface CatalogStoreInit {
  /**
   * Execution records and usage statistics are group-committed: acknowledged at once and written
   * together within this many ms (default 5). 0: each is written before `putExecution` resolves.
   * Catalog writes of this node (versions, ledger, branch heads) are never delayed and always
   * synced; a version replicated from another node is written unsynced with its change
   * (catalog-replica.ts `applyVersion`).
   */
  executionFlushMs?: number
  /**
   * Bytes each account (the root of a tenant's namespaces) may store: writes past it are refused
   * with 1005 `tenant_quota` (tenant-usage.ts). 0 or absent: no quota.
   */
  tenantQuotaBytes?: number
  /** Execution-record retention by age and count per account (execution-retention.ts); absent: records are kept. */
  retention?: ExecutionRetentionInit
}

/** Options of `putExecution`. */
export interface PutExecutionOptions {
  /** stored even past the account's quota: the small record of a call refused for the quota */
  overQuota?: boolean
  /**
   * the space set aside when the record was acknowledged (`reserveExecution`): released here, and
   * the record stored even if it turned out larger
   */
  reservation?: Reservation
}

/** One stored item's usage (see tenant-usage.ts). */
interface UsageItem {
  tenant: string
  kind: UsageKind
  item: string
  bytes: number
}

/** Marks the `tenant_usage` entries as built for every item (an older build's data gets them built once at start). */
const USAGE_FORMAT_KEY = 'tenant_usage_format'
const USAGE_FORMAT = 1
/** The usage totals a clean stop stored (removed by the start that takes them). */
const USAGE_TOTALS_KEY = 'tenant_usage_totals'
/** Bytes a usage entry of a catalog item takes (its key and value): charged with the item. */
const ITEM_ENTRY_BYTES = 120
const SWEEP_RETRY_AFTER_S = 3600
/** Where API key records live (auth/level-key-storage.ts): counted once when the usage entries are first built. */
const API_KEYS_SUBLEVEL = 'api_keys'

/** The bytes a value takes stored under `key` in `sublevel` (key, prefix, JSON). */
const storedBytes = (sublevel: Json | JsonSublevel, key: string, value: unknown): number =>
  (sublevel as unknown as { prefix: string }).prefix.length + Buffer.byteLength(key) + Buffer.byteLength(JSON.stringify(value) ?? '')

/** The default of `CatalogStoreInit.executionFlushMs`. */
export const DEFAULT_EXECUTION_FLUSH_MS = 5

export interface NewVersionWrite {
  fn: FunctionVersion
  ledger: LedgerEntry
  /** a branch head moved to this version in the same batch (its move is in `ledger.branches`) */
  head?: BranchHead
}

export interface BranchMoveWrite {
  /** the ledger entry of the version the head moved to, with the move appended to its `branches` */
  ledger: LedgerEntry
  head: BranchHead
  /** the move itself (it is also in `ledger.branches`) */
  move: BranchMove
}

/**
 * The node's durable state on LevelDB. Sublevels:
 * - `meta`: data-format version;
 * - `functions`: FunctionVersion by `tenant:hash:version`;
 * - `function_version_ledger`: LedgerEntry by `tenant:function_name:version`;
 * - `digests`: content digest by short hash (collision detection across the node);
 * - `executions`: ExecutionRecord by execution id (time-ordered ids), group-committed; its receipt
 *   by reference (`receipt_ref`, see execution-receipts.ts; records written before hold it inline);
 * - `receipts`: execution receipts by receipt digest, their certificate by reference, written with
 *   the first record that carries them; `receipt_certificates`: certificate PEM by SHA-256 of its text;
 * - `function_stats`: FunctionStats by `tenant:hash:version`, written with the executions;
 * - `branch_heads`: BranchHead by `tenant:function_name:branch` (derived: rebuildable from the ledger);
 * - `tenant_usage`: the bytes each stored item of a tenant takes, written in the item's batch
 *   (tenant-usage.ts): the per-tenant quota and execution-record retention stand on it.
 */
export class CatalogStore {
  private readonly db: LevelDatabase
  private readonly meta: Json
  private readonly functions: Json
  private readonly ledger: Json
  private readonly digests: Json
  private readonly executions: Json
  private readonly stats: Json
  private readonly heads: Json
  /** records' receipts, stored once (a cached answer's record refers to the receipt that computed it) */
  private readonly receipts: ExecutionReceipts
  private readonly receiptsSublevel: JsonSublevel
  private readonly certificatesSublevel: JsonSublevel
  private started = false
  /** execution records and statistics waiting to be written */
  private readonly executionLog: GroupCommit
  private readonly executionFlushMs: number
  private readonly usageEntries: Json
  /** what each account stores, and its quota */
  readonly usage: TenantUsage
  private readonly retention: ExecutionRetention
  /** bytes charged for records stored while queued or running, by execution id (their final put replaces them) */
  private readonly unfinished = new Map<string, number>()

  constructor(components: CatalogStoreComponents, init: CatalogStoreInit = {}) {
    this.db = components.db
    this.executionFlushMs = init.executionFlushMs ?? DEFAULT_EXECUTION_FLUSH_MS
    this.executionLog = new GroupCommit({ flushMs: this.executionFlushMs }, { db: this.db })
    const json = { valueEncoding: 'json' as const }
    this.meta = this.db.sublevel<string, unknown>('meta', json) as Json
    this.functions = this.db.sublevel<string, unknown>('functions', json) as Json
    this.ledger = this.db.sublevel<string, unknown>('function_version_ledger', json) as Json
    this.digests = this.db.sublevel<string, unknown>('digests', json) as Json
    this.executions = this.db.sublevel<string, unknown>('executions', json) as Json
    this.stats = this.db.sublevel<string, unknown>('function_stats', json) as Json
    this.heads = this.db.sublevel<string, unknown>('branch_heads', json) as Json
    const receipts = this.db.sublevel<string, unknown>('receipts', json) as JsonSublevel
    const certificates = this.db.sublevel<string, unknown>('receipt_certificates', json) as JsonSublevel
    this.receipts = new ExecutionReceipts({ receipts, certificates, peek: (sublevel, key) => this.executionLog.peek(sublevel, key) })
    this.receiptsSublevel = receipts
    this.certificatesSublevel = certificates
    this.usageEntries = this.db.sublevel<string, unknown>('tenant_usage', json) as Json
    const retention = init.retention ?? { retentionDays: 0, maxPerTenant: 0, sweepIntervalMs: 3_600_000 }
    this.usage = new TenantUsage(
      { quotaBytes: init.tenantQuotaBytes ?? 0, retryAfterSeconds: retention.retentionDays > 0 || retention.maxPerTenant > 0 ? Math.ceil(retention.sweepIntervalMs / 1000) : SWEEP_RETRY_AFTER_S },
      { entries: this.usageEntries as JsonSublevel, metrics: components.metrics },
    )
    this.retention = new ExecutionRetention(retention, {
      db: this.db,
      executions: this.executions as JsonSublevel,
      receipts,
      certificates,
      usageEntries: this.usageEntries as JsonSublevel,
      usage: this.usage,
      log: this.executionLog,
      receiptCache: this.receipts,
      isUnfinished: (id) => this.unfinished.has(id),
      writable: () => {
        try {
          this.assertExecutionsWritable()
          return true
        } catch {
          return false
        }
      },
      onSwept: components.onSwept,
    })
  }

  /** Opens the database and checks (or, on an empty database, writes) the data-format version. */
  async start(): Promise<void> {
    if (this.started) return
    await this.db.open()
    const stored = await this.meta.get('data_format_version')
    if (stored === undefined) {
      await this.meta.put('data_format_version', DATA_FORMAT_VERSION)
    } else if (stored !== DATA_FORMAT_VERSION) {
      await this.db.close()
      throw new DataFormatMismatch(stored, DATA_FORMAT_VERSION)
    }
    const loading = performance.now()
    await this.buildUsageEntries()
    // the totals a clean stop stored, taken once (a crash after this start leaves none: the next one sums the entries)
    const totals = await this.meta.get(USAGE_TOTALS_KEY)
    if (totals !== undefined) await this.meta.del(USAGE_TOTALS_KEY, { sync: true } as object)
    if (totals !== undefined && this.usage.restore(totals)) {
      this.usageLoaded = { entries: 0, accounts: Object.keys((totals as UsageTotals).accounts).length, ms: Math.round(performance.now() - loading), from: 'clean_stop' }
    } else {
      this.usageLoaded = { ...(await this.usage.load()), ms: Math.round(performance.now() - loading), from: 'scan' }
    }
    this.retention.start()
    this.started = true
  }

  /**
   * How the last start counted each tenant's storage: from the totals of a clean stop, or by
   * summing the usage entries (how many, how long in ms).
   */
  usageLoaded: { entries: number; accounts: number; ms: number; from: 'clean_stop' | 'scan' } | undefined

  /**
   * Writes the execution records still waiting and the usage totals (the next start takes them
   * instead of summing the entries), then closes the database.
   */
  async stop(): Promise<void> {
    if (!this.started) return
    this.started = false
    this.retention.stop()
    try {
      await this.executionLog.flush()
      // saves the next start a scan; a disk that refuses it costs that scan, nothing else
      await this.meta.put(USAGE_TOTALS_KEY, this.usage.totals(), { sync: true } as object).catch(() => undefined)
    } finally {
      await this.db.close()
    }
  }

  /**
   * Whether execution records are acknowledged before they are written (group commit on:
   * `executionFlushMs` > 0), so a caller may also answer before it hands a record over.
   */
  get executionsQueued(): boolean {
    return this.executionFlushMs > 0
  }

  /** Throws what `putExecution` would reject with now (1010 on a full disk), for a caller that answers first and puts after. */
  assertExecutionsWritable(): void {
    (this.db as { assertWritable?(): void }).assertWritable?.()
  }

  /** Writes the execution records and statistics still waiting; resolves when they are written. */
  flushExecutions(): Promise<void> {
    return this.executionLog.flush()
  }

  /**
   * What the group commit holds and has not written yet, by sublevel name (`executions`,
   * `function_stats`, `receipts`, and `audit` when the audit log shares it): what a stop would lose.
   */
  unwritten(): Map<string, number> {
    return this.executionLog.unwritten()
  }

  /**
   * A stop out of time (a disk that refuses writes): the waiting records are given up, nothing is
   * retried, and `stop` no longer waits for them. Count `unwritten()` first.
   */
  abandonWrites(reason: Error): void {
    this.executionLog.abandon(reason)
  }

  get isOpen(): boolean {
    return this.started && this.db.status === 'open'
  }

  async getFunction(tenant: string, short: string, version: number): Promise<FunctionVersion | undefined> {
    return readNow<FunctionVersion>(this.functions, functionKey(tenant, short, version))
  }

  /** Every stored version of one hash for a tenant, newest first (tombstones included). */
  async versionsOfHash(tenant: string, short: string): Promise<FunctionVersion[]> {
    const prefix = [tenant, short, ''].join(SEP)
    const out: FunctionVersion[] = []
    for await (const value of this.functions.values({ gte: prefix, lt: prefixEnd(prefix), reverse: true })) {
      out.push(value as FunctionVersion)
    }
    return out
  }

  /** The newest ledger entry of a lineage, if any (tombstones included: versions are never reused). */
  async latestLedgerEntry(tenant: string, name: string): Promise<LedgerEntry | undefined> {
    const prefix = [tenant, name, ''].join(SEP)
    for await (const value of this.ledger.values({ gte: prefix, lt: prefixEnd(prefix), reverse: true, limit: 1 })) {
      return value as LedgerEntry
    }
    return undefined
  }

  async ledgerEntries(filter: { tenant?: string; function_name?: string } = {}): Promise<LedgerEntry[]> {
    const prefix = filter.tenant === undefined ? '' : [filter.tenant, ...(filter.function_name ? [filter.function_name] : []), ''].join(SEP)
    const range = prefix ? { gte: prefix, lt: prefixEnd(prefix) } : {}
    const out: LedgerEntry[] = []
    for await (const value of this.ledger.values(range)) out.push(value as LedgerEntry)
    return out
  }

  async digestOf(short: string): Promise<string | undefined> {
    return readNow<string>(this.digests, short)
  }

  /**
   * Writes a new version, its ledger entry, its digest, (when given) a branch head and `alongside`
   * (replication's records of the change, same database) atomically, synced to disk.
   */
  async putNewVersion({ fn, ledger, head }: NewVersionWrite, alongside: readonly unknown[] = []): Promise<void> {
    const ops: PutOp[] = [
      { type: 'put', sublevel: this.functions, key: functionKey(fn.tenant_id, fn.rufid_short, fn.version), value: fn },
      { type: 'put', sublevel: this.ledger, key: ledgerKey(ledger.tenant_id, ledger.function_name, ledger.version), value: ledger },
      ...(head ? [this.headPut(head)] : []),
    ]
    // a tenant's own write: refused past its quota, before anything is written
    const usage = await this.charge(ops, true)
    await this.write([...ops, { type: 'put', sublevel: this.digests, key: fn.rufid_short, value: fn.content_digest }, ...usage.ops, ...(alongside as PutOp[])], true)
    usage.apply()
  }

  /** Moves a branch head to an existing version: its ledger entry (with the move) and the head, atomically. */
  async putBranchMove({ ledger, head }: BranchMoveWrite): Promise<void> {
    const ops: PutOp[] = [
      { type: 'put', sublevel: this.ledger, key: ledgerKey(ledger.tenant_id, ledger.function_name, ledger.version), value: ledger },
      this.headPut(head),
    ]
    const usage = await this.charge(ops, true)
    await this.write([...ops, ...usage.ops], true)
    usage.apply()
  }

  /** Stores heads (as the ledger determines them), atomically. */
  async putBranchHeads(heads: BranchHead[]): Promise<void> {
    if (heads.length === 0) return
    const ops = heads.map((h) => this.headPut(h))
    const usage = await this.charge(ops, false)
    await this.write([...ops, ...usage.ops], true)
    usage.apply()
  }

  /** Stores a ledger entry as it is (replication merges the moves it carries). */
  async putLedgerEntry(ledger: LedgerEntry): Promise<void> {
    const ops: PutOp[] = [{ type: 'put', sublevel: this.ledger, key: ledgerKey(ledger.tenant_id, ledger.function_name, ledger.version), value: ledger }]
    const usage = await this.charge(ops, false)
    await this.write([...ops, ...usage.ops], true)
    usage.apply()
  }

  /** Replaces every stored head with `heads` (a rebuild from the ledger). */
  async replaceBranchHeads(heads: BranchHead[]): Promise<void> {
    const ops: Array<AbstractBatchOperation<LevelDatabase, string, unknown>> = []
    const freed = new Map<string, number>()
    for await (const key of this.heads.keys()) {
      ops.push({ type: 'del', key, sublevel: this.heads } as unknown as AbstractBatchOperation<LevelDatabase, string, unknown>)
      const entryKey = usageKey(accountOf(key.slice(0, key.indexOf(SEP))), 'b', key)
      const previous = bytesOf(await readNow(this.usageEntries, entryKey))
      if (previous > 0) {
        ops.push({ type: 'del', key: entryKey, sublevel: this.usageEntries } as unknown as AbstractBatchOperation<LevelDatabase, string, unknown>)
        const account = accountOf(key.slice(0, key.indexOf(SEP)))
        freed.set(account, (freed.get(account) ?? 0) + previous)
      }
    }
    const puts = heads.map((h) => this.headPut(h))
    // charged as new: the deletions above come first in the batch
    const usage = this.chargeNew(puts)
    for (const op of [...puts, ...usage.ops]) ops.push(op as unknown as AbstractBatchOperation<LevelDatabase, string, unknown>)
    await this.db.batch(ops, { sync: true } as object)
    for (const [account, bytes] of freed) this.usage.add(account, -bytes)
    usage.apply()
  }

  async getBranchHead(tenant: string, name: string, branch: string): Promise<BranchHead | undefined> {
    return (await this.heads.get(branchHeadKey(tenant, name, branch))) as BranchHead | undefined
  }

  /** Stored heads in key order (tenant, function name, branch), optionally of one tenant or lineage. */
  async branchHeads(filter: { tenant?: string; function_name?: string } = {}): Promise<BranchHead[]> {
    const prefix = filter.tenant === undefined ? '' : [filter.tenant, ...(filter.function_name ? [filter.function_name] : []), ''].join(SEP)
    const range = prefix ? { gte: prefix, lt: prefixEnd(prefix) } : {}
    const out: BranchHead[] = []
    for await (const value of this.heads.values(range)) out.push(value as BranchHead)
    return out
  }

  private headPut(head: BranchHead): PutOp {
    return { type: 'put', sublevel: this.heads, key: branchHeadKey(head.tenant_id, head.function_name, head.branch), value: head }
  }

  /** Marks one version deleted in both tables, with `alongside` (replication's records), atomically. */
  async putTombstone(fn: FunctionVersion, ledger: LedgerEntry, alongside: readonly unknown[] = []): Promise<void> {
    const ops: PutOp[] = [
      { type: 'put', sublevel: this.functions, key: functionKey(fn.tenant_id, fn.rufid_short, fn.version), value: fn },
      { type: 'put', sublevel: this.ledger, key: ledgerKey(ledger.tenant_id, ledger.function_name, ledger.version), value: ledger },
    ]
    // a delete is never refused for the quota (the tombstone keeps the version: it frees little)
    const usage = await this.charge(ops, false)
    await this.write([...ops, ...usage.ops, ...(alongside as PutOp[])], true)
    usage.apply()
  }

  /**
   * Stores a version received from a federation peer (replication): the version and its digest,
   * and the ledger entry when that content holds the key (a conflict's loser has none), atomically.
   */
  async putReplicatedVersion(fn: FunctionVersion, ledger: LedgerEntry | undefined): Promise<void> {
    const ops = this.replicatedItemOps(fn, ledger)
    const usage = await this.charge(ops, false)
    await this.write([...ops, { type: 'put', sublevel: this.digests, key: fn.rufid_short, value: fn.content_digest }, ...usage.ops], true)
    usage.apply()
  }

  /**
   * The batch operations `putReplicatedVersion` writes, for a caller that writes them in one batch
   * with its own (the replica: a change's log entry and the version it materializes, together).
   * Replicated versions count in their tenant's usage and are never refused for its quota; their
   * usage is counted when the operations are made (a batch that then fails leaves the count high
   * until the next start, which sums what is on disk).
   */
  replicatedVersionOps(fn: FunctionVersion, ledger: LedgerEntry | undefined): PutOp[] {
    const ops = this.replicatedItemOps(fn, ledger)
    const usage = this.chargeNow(ops)
    usage.apply()
    return [...ops, { type: 'put', sublevel: this.digests, key: fn.rufid_short, value: fn.content_digest }, ...usage.ops]
  }

  private replicatedItemOps(fn: FunctionVersion, ledger: LedgerEntry | undefined): PutOp[] {
    return [
      { type: 'put', sublevel: this.functions, key: functionKey(fn.tenant_id, fn.rufid_short, fn.version), value: fn },
      ...(ledger ? [{ type: 'put' as const, sublevel: this.ledger, key: ledgerKey(ledger.tenant_id, ledger.function_name, ledger.version), value: ledger }] : []),
    ]
  }

  /**
   * The usage entry of an API key record (`k`) for the key storage's own batch (level-key-storage.ts),
   * and `apply()` once written. `check`: a new key, refused (1005 tenant_quota) past the quota; a
   * revocation (the record replaced) never is.
   */
  async keyUsage(tenant: string, keyId: string, bytes: number, check: boolean): Promise<{ ops: PutOp[]; apply(): void }> {
    const item: UsageItem = { tenant, kind: 'k', item: keyId, bytes: bytes + ITEM_ENTRY_BYTES }
    const previous = bytesOf(await readNow(this.usageEntries, usageKey(accountOf(tenant), 'k', keyId)))
    return this.itemUsageOps([item], [previous], check)
  }

  /** The usage item a catalog put stores (function versions, ledger entries, branch heads). */
  private itemOf(op: PutOp): UsageItem {
    const kind: UsageKind = op.sublevel === this.functions ? 'f' : op.sublevel === this.ledger ? 'l' : 'b'
    return { tenant: op.key.slice(0, op.key.indexOf(SEP)), kind, item: op.key, bytes: storedBytes(op.sublevel, op.key, op.value) + ITEM_ENTRY_BYTES }
  }

  /**
   * The usage entries of catalog puts, and what they change in each account's usage (the bytes of
   * the item each replaces are read from its stored entry). `check`: a tenant's own write, refused
   * (1005 tenant_quota) when it would take its account past the quota. `apply()` once written.
   */
  private async charge(ops: PutOp[], check: boolean): Promise<{ ops: PutOp[]; apply(): void }> {
    const previous: number[] = []
    for (const op of ops) {
      const item = this.itemOf(op)
      previous.push(bytesOf(await readNow(this.usageEntries, usageKey(accountOf(item.tenant), item.kind, item.item))))
    }
    return this.usageOps(ops, previous, check)
  }

  /** `charge` read at once (the replica's batch is made synchronously): an entry not readable now counts as new. */
  private chargeNow(ops: PutOp[]): { ops: PutOp[]; apply(): void } {
    const previous = ops.map((op) => {
      const item = this.itemOf(op)
      const read = readNow(this.usageEntries, usageKey(accountOf(item.tenant), item.kind, item.item))
      if (read instanceof Promise) {
        read.catch(() => undefined)
        return 0
      }
      return bytesOf(read)
    })
    return this.usageOps(ops, previous, false)
  }

  /** `charge` of items that replace nothing. */
  private chargeNew(ops: PutOp[]): { ops: PutOp[]; apply(): void } {
    return this.usageOps(ops, ops.map(() => 0), false)
  }

  private usageOps(ops: PutOp[], previous: number[], check: boolean): { ops: PutOp[]; apply(): void } {
    return this.itemUsageOps(ops.map((op) => this.itemOf(op)), previous, check)
  }

  private itemUsageOps(items: UsageItem[], previous: number[], check: boolean): { ops: PutOp[]; apply(): void } {
    const deltas = new Map<string, number>()
    const entries: PutOp[] = []
    items.forEach((item, i) => {
      const account = accountOf(item.tenant)
      deltas.set(account, (deltas.get(account) ?? 0) + item.bytes - previous[i]!)
      entries.push({ type: 'put', sublevel: this.usageEntries, key: usageKey(account, item.kind, item.item), value: [item.bytes] })
    })
    if (check) for (const [account, delta] of deltas) this.usage.check(account, delta)
    return {
      ops: entries,
      apply: () => {
        for (const [account, delta] of deltas) this.usage.add(account, delta)
      },
    }
  }

  async getLedgerEntry(tenant: string, name: string, version: number): Promise<LedgerEntry | undefined> {
    return readNow<LedgerEntry>(this.ledger, ledgerKey(tenant, name, version))
  }

  /** Live (not deleted) function versions of a tenant, in key order. */
  async *functionsOfTenant(tenant: string): AsyncGenerator<FunctionVersion> {
    const prefix = tenant + SEP
    for await (const value of this.functions.values({ gte: prefix, lt: prefixEnd(prefix) })) {
      yield value as FunctionVersion
    }
  }

  /** Every function version of every tenant (tombstones included), in key order. */
  async *allFunctions(): AsyncGenerator<FunctionVersion> {
    for await (const value of this.functions.values()) yield value as FunctionVersion
  }

  /**
   * Stores an execution record and, when given, the function's updated usage statistics. They are
   * group-committed (see `CatalogStoreInit.executionFlushMs`): readable at once through this store,
   * written within the flush period. The record's receipt is stored once, by its digest
   * (`receiptDigest` when the caller knows it), in the same batch as the first record carrying it.
   * The record's usage entry (its bytes, and the receipt and certificate it refers to) goes in the
   * same batch; a record that would take its account past the quota is refused with 1005
   * `tenant_quota` (see `options` for the exceptions), before anything is queued.
   */
  putExecution(record: ExecutionRecord, stats?: FunctionStats, receiptDigest?: string, options: PutExecutionOptions = {}): Promise<void> {
    options.reservation?.release()
    // queued writes are acknowledged before they reach LevelDB: refused now when it cannot write
    // (a NodeDatabase on a full disk), not lost at the flush
    try {
      this.assertExecutionsWritable()
    } catch (err) {
      return Promise.reject(err)
    }
    const id = record.execution_id
    const account = accountOf(record.tenant_id)
    const split = this.receipts.split(record, receiptDigest)
    // encoded once: measured here, written as it is
    const encoded = JSON.stringify(split.value)
    let bytes = storedBytes(this.executions, id, undefined) + Buffer.byteLength(encoded) + EXECUTION_ENTRY_BYTES
    for (const put of split.puts) {
      put.encoded = JSON.stringify(put.value)
      bytes += storedBytes(put.sublevel, put.key, undefined) + Buffer.byteLength(put.encoded)
    }
    // (most records are put once, final: no lookup while no record is unfinished)
    const previous = this.unfinished.size === 0 ? undefined : this.unfinished.get(id)
    const delta = bytes - (previous ?? 0)
    if (options.overQuota !== true && options.reservation === undefined) {
      try {
        this.usage.check(account, delta)
      } catch (err) {
        return Promise.reject(err)
      }
    }
    // the receipt (when new) is queued before the record that refers to it: same batch or an earlier one
    const puts: QueuedPut[] = split.puts
    puts.push({ sublevel: this.executions as JsonSublevel, key: id, value: split.value, encoded })
    if (stats !== undefined) {
      puts.push({ sublevel: this.stats as JsonSublevel, key: functionKey(record.tenant_id, record.rufid_short, record.version), value: stats })
    }
    puts.push({ sublevel: this.usageEntries as JsonSublevel, key: usageKey(account, 'x', id), value: [bytes, split.receiptRef, split.certificateRef] })
    split.remember()
    this.usage.add(account, delta, previous === undefined ? 1 : 0)
    if (record.status === 'queued' || record.status === 'running') this.unfinished.set(id, bytes)
    else if (previous !== undefined) this.unfinished.delete(id)
    return this.executionLog.write(puts)
  }

  /**
   * 1005 (`tenant_quota`) now when the tenant's account cannot store `bytes` more: a call checks
   * before it runs (its record is stored after), so code does not run to be refused.
   */
  assertTenantCanStore(tenant: string, bytes: number): void {
    this.usage.check(accountOf(tenant), bytes)
  }

  /**
   * Sets aside the space of a record acknowledged now and stored a moment later (a cached answer's
   * bookkeeping runs after the answer): pass it to `putExecution`. 1005 (`tenant_quota`) when it
   * does not fit.
   */
  reserveExecution(tenant: string, bytes: number): Reservation {
    return this.usage.reserve(accountOf(tenant), bytes)
  }

  /** What the tenant's account (the root of its namespaces) stores, and its quota. */
  storageOf(tenant: string): AccountStorage {
    return this.usage.storageOf(accountOf(tenant))
  }

  /** Runs one retention sweep of execution records now (it also runs every sweep period). */
  sweepExecutions(now?: number): Promise<SweepResult> {
    return this.retention.sweep(now)
  }

  /**
   * Once, on data written before the usage entries existed: one entry per stored execution record,
   * function version, ledger entry and branch head (a scan of the whole database), then the format
   * mark. Afterwards every write keeps them.
   */
  private async buildUsageEntries(): Promise<void> {
    if ((await this.meta.get(USAGE_FORMAT_KEY)) === USAGE_FORMAT) return
    let ops: PutOp[] = []
    const flush = async (): Promise<void> => {
      if (ops.length > 0) await this.write(ops, false)
      ops = []
    }
    const add = async (op: PutOp): Promise<void> => {
      ops.push(op)
      if (ops.length >= 1000) await flush()
    }
    // a receipt and a certificate are charged to the first record that refers to them, as when written
    const receiptsSeen = new Set<string>()
    const certificatesSeen = new Set<string>()
    for await (const [id, value] of this.executions.iterator()) {
      const stored = value as StoredExecutionRecord
      if (typeof stored?.tenant_id !== 'string') continue
      let bytes = storedBytes(this.executions, id, value) + EXECUTION_ENTRY_BYTES
      let certificateRef: string | null = null
      const receiptRef = typeof stored.receipt_ref === 'string' ? stored.receipt_ref : null
      if (receiptRef !== null) {
        const receipt = (await this.receiptsSublevel.get(receiptRef)) as { certificate?: { sha256?: unknown } } | undefined
        if (typeof receipt?.certificate?.sha256 === 'string') certificateRef = receipt.certificate.sha256
        if (receipt !== undefined && !receiptsSeen.has(receiptRef)) {
          receiptsSeen.add(receiptRef)
          bytes += storedBytes(this.receiptsSublevel, receiptRef, receipt)
        }
        if (certificateRef !== null && !certificatesSeen.has(certificateRef)) {
          certificatesSeen.add(certificateRef)
          bytes += storedBytes(this.certificatesSublevel, certificateRef, await this.certificatesSublevel.get(certificateRef))
        }
      }
      await add({ type: 'put', sublevel: this.usageEntries, key: usageKey(accountOf(stored.tenant_id), 'x', id), value: [bytes, receiptRef, certificateRef] })
    }
    for (const sublevel of [this.functions, this.ledger, this.heads]) {
      for await (const [key, value] of sublevel.iterator()) {
        const op: PutOp = { type: 'put', sublevel, key, value }
        for (const entry of this.chargeNew([op]).ops) await add(entry)
      }
    }
    const keys = this.db.sublevel<string, unknown>(API_KEYS_SUBLEVEL, { valueEncoding: 'json' }) as Json
    for await (const [keyId, value] of keys.iterator()) {
      const tenant = (value as { tenant_id?: unknown })?.tenant_id
      if (typeof tenant !== 'string') continue
      const item: UsageItem = { tenant, kind: 'k', item: keyId, bytes: storedBytes(keys, keyId, value) + ITEM_ENTRY_BYTES }
      for (const entry of this.itemUsageOps([item], [0], false).ops) await add(entry)
    }
    await flush()
    // totals stored by a stop before this build are not this build's: the entries are summed
    await this.meta.del(USAGE_TOTALS_KEY)
    await this.meta.put(USAGE_FORMAT_KEY, USAGE_FORMAT, { sync: true } as object)
  }

  /** One atomic batch across sublevels; `sync` waits for the write to reach the disk. */
  private async write(ops: PutOp[], sync: boolean): Promise<void> {
    await this.db.batch(ops as unknown as Array<AbstractBatchOperation<LevelDatabase, string, unknown>>, { sync } as object)
  }

  /**
   * The group commit of execution records, for other records of the same database flushed as often
   * (the audit log): one batch then carries an execution's record and its audit entry, instead of
   * one batch each. Undefined for another database or another flush period.
   */
  groupCommitFor(db: LevelDatabase, flushMs: number): GroupCommit | undefined {
    return db === this.db && flushMs === this.executionFlushMs ? this.executionLog : undefined
  }

  async getStats(tenant: string, short: string, version: number): Promise<FunctionStats | undefined> {
    const key = functionKey(tenant, short, version)
    const queued = this.executionLog.peek(this.stats as JsonSublevel, key)
    if (queued !== undefined) return queued as FunctionStats
    return (await this.stats.get(key)) as FunctionStats | undefined
  }

  /** A stored execution record, its receipt included. */
  async getExecution(id: string): Promise<ExecutionRecord | undefined> {
    const stored = (this.executionLog.peek(this.executions as JsonSublevel, id) ?? await this.executions.get(id)) as StoredExecutionRecord | undefined
    return stored === undefined ? undefined : this.receipts.join(stored)
  }

  /**
   * Executions whose ids (time-ordered) fall in [fromId, toId) (the waiting ones are written first),
   * without their receipts (`getExecution` reads one whole).
   */
  async *executionsBetween(fromId: string, toId: string): AsyncGenerator<Omit<ExecutionRecord, 'receipt'>> {
    await this.executionLog.flush()
    for await (const value of this.executions.values({ gte: fromId, lt: toId })) {
      const { receipt: _receipt, receipt_ref: _ref, ...record } = value as StoredExecutionRecord
      yield record
    }
  }
}

export function createCatalogStore(components: CatalogStoreComponents, init: CatalogStoreInit = {}): CatalogStore {
  return new CatalogStore(components, init)
}
