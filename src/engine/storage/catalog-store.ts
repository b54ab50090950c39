import type { AbstractBatchOperation, AbstractLevel, AbstractSublevel } from 'abstract-level'
import type { BranchHead, BranchMove } from '../branches/types.js'
import type { ExecutionRecord, FunctionStats, FunctionVersion, LedgerEntry } from '../types.js'
import { ExecutionReceipts, type StoredExecutionRecord } from './execution-receipts.js'
import { GroupCommit, type JsonSublevel } from './group-commit.js'
import { readNow } from './read-now.js'
import { DataFormatMismatch } from './storage-errors.js'

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
}

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
 * - `branch_heads`: BranchHead by `tenant:function_name:branch` (derived: rebuildable from the ledger).
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
  private started = false
  /** execution records and statistics waiting to be written */
  private readonly executionLog: GroupCommit
  private readonly executionFlushMs: number

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
    this.receipts = new ExecutionReceipts({
      receipts: this.db.sublevel<string, unknown>('receipts', json) as JsonSublevel,
      certificates: this.db.sublevel<string, unknown>('receipt_certificates', json) as JsonSublevel,
      peek: (sublevel, key) => this.executionLog.peek(sublevel, key),
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
    this.started = true
  }

  /** Writes the execution records still waiting, then closes the database. */
  async stop(): Promise<void> {
    if (!this.started) return
    this.started = false
    try {
      await this.executionLog.flush()
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
    await this.write([
      { type: 'put', sublevel: this.functions, key: functionKey(fn.tenant_id, fn.rufid_short, fn.version), value: fn },
      { type: 'put', sublevel: this.ledger, key: ledgerKey(ledger.tenant_id, ledger.function_name, ledger.version), value: ledger },
      { type: 'put', sublevel: this.digests, key: fn.rufid_short, value: fn.content_digest },
      ...(head ? [this.headPut(head)] : []),
      ...(alongside as PutOp[]),
    ], true)
  }

  /** Moves a branch head to an existing version: its ledger entry (with the move) and the head, atomically. */
  async putBranchMove({ ledger, head }: BranchMoveWrite): Promise<void> {
    await this.write([
      { type: 'put', sublevel: this.ledger, key: ledgerKey(ledger.tenant_id, ledger.function_name, ledger.version), value: ledger },
      this.headPut(head),
    ], true)
  }

  /** Stores heads (as the ledger determines them), atomically. */
  async putBranchHeads(heads: BranchHead[]): Promise<void> {
    if (heads.length > 0) await this.write(heads.map((h) => this.headPut(h)), true)
  }

  /** Stores a ledger entry as it is (replication merges the moves it carries). */
  async putLedgerEntry(ledger: LedgerEntry): Promise<void> {
    await this.write([{ type: 'put', sublevel: this.ledger, key: ledgerKey(ledger.tenant_id, ledger.function_name, ledger.version), value: ledger }], true)
  }

  /** Replaces every stored head with `heads` (a rebuild from the ledger). */
  async replaceBranchHeads(heads: BranchHead[]): Promise<void> {
    const ops: Array<AbstractBatchOperation<LevelDatabase, string, unknown>> = []
    for await (const key of this.heads.keys()) ops.push({ type: 'del', key, sublevel: this.heads } as unknown as AbstractBatchOperation<LevelDatabase, string, unknown>)
    for (const h of heads) ops.push(this.headPut(h) as unknown as AbstractBatchOperation<LevelDatabase, string, unknown>)
    await this.db.batch(ops, { sync: true } as object)
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
    await this.write([
      { type: 'put', sublevel: this.functions, key: functionKey(fn.tenant_id, fn.rufid_short, fn.version), value: fn },
      { type: 'put', sublevel: this.ledger, key: ledgerKey(ledger.tenant_id, ledger.function_name, ledger.version), value: ledger },
      ...(alongside as PutOp[]),
    ], true)
  }

  /**
   * Stores a version received from a federation peer (replication): the version and its digest,
   * and the ledger entry when that content holds the key (a conflict's loser has none), atomically.
   */
  async putReplicatedVersion(fn: FunctionVersion, ledger: LedgerEntry | undefined): Promise<void> {
    await this.write(this.replicatedVersionOps(fn, ledger), true)
  }

  /**
   * The batch operations `putReplicatedVersion` writes, for a caller that writes them in one batch
   * with its own (the replica: a change's log entry and the version it materializes, together).
   */
  replicatedVersionOps(fn: FunctionVersion, ledger: LedgerEntry | undefined): PutOp[] {
    return [
      { type: 'put', sublevel: this.functions, key: functionKey(fn.tenant_id, fn.rufid_short, fn.version), value: fn },
      { type: 'put', sublevel: this.digests, key: fn.rufid_short, value: fn.content_digest },
      ...(ledger ? [{ type: 'put' as const, sublevel: this.ledger, key: ledgerKey(ledger.tenant_id, ledger.function_name, ledger.version), value: ledger }] : []),
    ]
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
   */
  putExecution(record: ExecutionRecord, stats?: FunctionStats, receiptDigest?: string): Promise<void> {
    // queued writes are acknowledged before they reach LevelDB: refused now when it cannot write
    // (a NodeDatabase on a full disk), not lost at the flush
    try {
      this.assertExecutionsWritable()
    } catch (err) {
      return Promise.reject(err)
    }
    const { value, puts } = this.receipts.split(record, receiptDigest)
    // the receipt (when new) is queued before the record that refers to it: same batch or an earlier one
    puts.push({ sublevel: this.executions as JsonSublevel, key: record.execution_id, value })
    if (stats !== undefined) {
      puts.push({ sublevel: this.stats as JsonSublevel, key: functionKey(record.tenant_id, record.rufid_short, record.version), value: stats })
    }
    return this.executionLog.write(puts)
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
