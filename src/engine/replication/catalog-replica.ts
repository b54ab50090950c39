import { createHash, randomUUID } from 'node:crypto'
import type { AbstractSublevel } from 'abstract-level'
import { SvcError } from '../../core/errors.js'
import { Mutex } from '../mutex.js'
import type { CatalogStore, LevelDatabase } from '../storage/catalog-store.js'
import type { FunctionVersion, LedgerEntry } from '../types.js'
import { HybridLogicalClock } from './hlc.js'

type Json = AbstractSublevel<LevelDatabase, unknown, string, unknown>

/**
 * One replicated change of the catalog: a function version (added) or its tombstone (deleted),
 * keyed by (tenant, function_name, version), stamped with its origin replica, that origin's
 * sequence number and a hybrid logical clock.
 */
export interface CatalogChange {
  origin: string
  seq: number
  hlc: string
  op: 'added' | 'updated' | 'deleted'
  key: string
  fn: FunctionVersion
  ledger: LedgerEntry
}

/** {origin → highest sequence number held} */
export type VersionVector = Record<string, number>

/** The body of an incremental sync (service-spec §2.7) plus the sender's version vector. */
export interface SyncBatch {
  added: CatalogChange[]
  updated: CatalogChange[]
  deleted: CatalogChange[]
  /** UTC time of the batch (the sync cursor a caller keeps) */
  timestamp: string
  vector: VersionVector
}

/** One version a key's contenders include: an entry per distinct content (hash) at that key. */
interface Contender {
  rufid_short: string
  content_digest: string
  origin: string
  /** HLC of the change that first added it: the winner is the smallest (hlc, origin, rufid_short) */
  hlc: string
  deleted_at?: string
}

export interface CatalogConflict {
  key: string
  tenant_id: string
  function_name: string
  version: number
  winner: Contender
  losers: Contender[]
  detected_at: string
}

export interface ApplyResult {
  applied: number
  conflicts: CatalogConflict[]
}

export interface CatalogReplicaComponents {
  db: LevelDatabase
  store: CatalogStore
}

export const catalogKey = (tenant: string, name: string, version: number): string =>
  `${tenant}\u0000${name}\u0000${String(version).padStart(10, '0')}`

const pad = (n: number): string => n.toString().padStart(12, '0')
const contenderOrder = (a: Contender, b: Contender): number =>
  a.hlc < b.hlc ? -1 : a.hlc > b.hlc ? 1 : a.origin < b.origin ? -1 : a.origin > b.origin ? 1 : a.rufid_short < b.rufid_short ? -1 : a.rufid_short > b.rufid_short ? 1 : 0

/**
 * The replicated catalog of this node: a change log in LevelDB (`repl_log`, by origin and sequence),
 * the contenders of every key (`repl_entries`), conflicts (`repl_conflicts`). Applying changes is
 * idempotent and order-independent: every replica that holds the same changes holds the same
 * entries, winners and conflicts, and `digest()` shows it.
 */
export class CatalogReplica {
  private readonly db: LevelDatabase
  private readonly store: CatalogStore
  private log!: Json
  private entries!: Json
  private conflictTable!: Json
  private meta!: Json
  private readonly mutex = new Mutex()
  private readonly vector: VersionVector = {}
  /** `tenant:short:version` of losing versions → the conflict */
  private readonly losers = new Map<string, CatalogConflict>()
  private readonly changeListeners = new Set<(change: CatalogChange) => void>()
  private readonly appliedListeners = new Set<(fn: FunctionVersion) => void>()
  private readonly conflictListeners = new Set<(conflict: CatalogConflict) => void>()
  private clock = new HybridLogicalClock()
  private started = false
  origin = ''

  constructor(components: CatalogReplicaComponents) {
    this.db = components.db
    this.store = components.store
  }

  /** Loads the origin id, version vector and conflicts (the database is opened by the store). */
  async start(): Promise<void> {
    if (this.started) return
    const json = { valueEncoding: 'json' as const }
    this.log = this.db.sublevel<string, unknown>('repl_log', json) as Json
    this.entries = this.db.sublevel<string, unknown>('repl_entries', json) as Json
    this.conflictTable = this.db.sublevel<string, unknown>('repl_conflicts', json) as Json
    this.meta = this.db.sublevel<string, unknown>('repl_meta', json) as Json
    let origin = (await this.meta.get('origin')) as string | undefined
    if (origin === undefined) {
      origin = randomUUID()
      await this.meta.put('origin', origin)
    }
    this.origin = origin
    for await (const key of this.log.keys()) {
      const [o, seq] = key.split('/') as [string, string]
      this.vector[o] = Math.max(this.vector[o] ?? 0, Number(seq))
    }
    const lastHlc = (await this.meta.get('hlc')) as string | undefined
    if (lastHlc) this.clock.observe(lastHlc)
    for await (const value of this.conflictTable.values()) this.indexConflict(value as CatalogConflict)
    this.started = true
  }

  async stop(): Promise<void> {
    await this.mutex.run(async () => undefined)
    this.started = false
  }

  /** Called for every change this node makes itself (the federation gossips it). */
  onLocalChange(listener: (change: CatalogChange) => void): () => void {
    this.changeListeners.add(listener)
    return () => this.changeListeners.delete(listener)
  }

  /** Called for every function version whose stored state a remote change altered. */
  onApplied(listener: (fn: FunctionVersion) => void): () => void {
    this.appliedListeners.add(listener)
    return () => this.appliedListeners.delete(listener)
  }

  onConflict(listener: (conflict: CatalogConflict) => void): () => void {
    this.conflictListeners.add(listener)
    return () => this.conflictListeners.delete(listener)
  }

  versionVector(): VersionVector {
    return { ...this.vector }
  }

  /** Records a local create or delete (the store already holds it). */
  async recordLocal(op: 'added' | 'deleted', fn: FunctionVersion, ledger: LedgerEntry): Promise<CatalogChange | undefined> {
    if (!this.started) return undefined
    const change = await this.mutex.run(async () => {
      const seq = (this.vector[this.origin] ?? 0) + 1
      const c: CatalogChange = {
        origin: this.origin, seq, hlc: this.clock.now(), op,
        key: catalogKey(fn.tenant_id, fn.function_name, fn.version), fn, ledger,
      }
      await this.applyOne(c, true)
      return c
    })
    for (const l of this.changeListeners) l(change)
    return change
  }

  /** Applies changes from another replica (gossip or sync); unknown ones only, in any order. */
  async apply(changes: readonly CatalogChange[]): Promise<ApplyResult> {
    const conflicts: CatalogConflict[] = []
    let applied = 0
    const ordered = [...changes].filter(isChange).sort((a, b) => (a.origin === b.origin ? a.seq - b.seq : a.hlc < b.hlc ? -1 : 1))
    for (const c of ordered) {
      const outcome = await this.mutex.run(() => this.applyOne(c, false))
      if (outcome === undefined) continue
      applied++
      if (outcome.conflict) conflicts.push(outcome.conflict)
    }
    return { applied, conflicts }
  }

  /** Changes above `vector` (everything a replica with that vector lacks), as a sync batch. */
  async changesSince(vector: VersionVector): Promise<SyncBatch> {
    const batch: SyncBatch = { added: [], updated: [], deleted: [], timestamp: new Date().toISOString(), vector: this.versionVector() }
    for (const [origin, top] of Object.entries(this.vector)) {
      const from = (vector[origin] ?? 0) + 1
      if (from > top) continue
      for await (const value of this.log.values({ gte: `${origin}/${pad(from)}`, lte: `${origin}/${pad(top)}` })) {
        const c = value as CatalogChange
        batch[c.op].push(c)
      }
    }
    return batch
  }

  /** A digest over every replicated entry (sorted), the same on replicas that converged. */
  async digest(): Promise<{ digest: string; entries: number }> {
    const hash = createHash('sha256')
    let n = 0
    for await (const [key, value] of this.entries.iterator()) {
      const contenders = value as Contender[]
      const winner = contenders[0]!.rufid_short
      for (const c of contenders) {
        hash.update(`${key}|${c.rufid_short}|${c.content_digest}|${c.deleted_at === undefined ? 0 : 1}|${c.rufid_short === winner ? 1 : 0}\n`)
        n++
      }
    }
    return { digest: hash.digest('hex'), entries: n }
  }

  async conflicts(filter: { tenant?: string } = {}): Promise<CatalogConflict[]> {
    const out: CatalogConflict[] = []
    for await (const value of this.conflictTable.values()) {
      const c = value as CatalogConflict
      if (filter.tenant === undefined || c.tenant_id === filter.tenant) out.push(c)
    }
    return out
  }

  /** The stored version (with its code when this node holds it). */
  localVersion(tenant: string, short: string, version: number): Promise<FunctionVersion | undefined> {
    return this.store.getFunction(tenant, short, version)
  }

  /** The conflict that (tenant, short, version) lost, if any. */
  conflictOf(tenant: string, short: string, version: number): CatalogConflict | undefined {
    return this.losers.get(`${tenant}:${short}:${version}`)
  }

  /** Throws 2002 when (tenant, short, version) is the losing side of a conflict. */
  assertNotLoser(tenant: string, short: string, version: number): void {
    const conflict = this.conflictOf(tenant, short, version)
    if (conflict === undefined) return
    throw new SvcError('SYNC_CONFLICT', `rufid ${short} v${version} lost a federation conflict for ${conflict.function_name} v${conflict.version} to ${conflict.winner.rufid_short}`, {
      details: {
        function_name: conflict.function_name, version: `v${conflict.version}`,
        winner: { rufid_short: conflict.winner.rufid_short, content_digest: conflict.winner.content_digest, origin: conflict.winner.origin },
        loser: { rufid_short: short, content_digest: conflict.losers.find((l) => l.rufid_short === short)?.content_digest ?? null },
      },
    })
  }

  private indexConflict(conflict: CatalogConflict): void {
    for (const [k, c] of this.losers) if (c.key === conflict.key) this.losers.delete(k)
    for (const l of conflict.losers) this.losers.set(`${conflict.tenant_id}:${l.rufid_short}:${conflict.version}`, conflict)
  }

  /** Inside the mutex. Undefined when the change was already held. */
  private async applyOne(c: CatalogChange, local: boolean): Promise<{ conflict?: CatalogConflict } | undefined> {
    const logKey = `${c.origin}/${pad(c.seq)}`
    if (!local && (await this.log.get(logKey)) !== undefined) return undefined
    if (!local) this.clock.observe(c.hlc)
    const before = ((await this.entries.get(c.key)) as Contender[] | undefined) ?? []
    const contenders = before.map((x) => ({ ...x }))
    const same = contenders.find((x) => x.rufid_short === c.fn.rufid_short)
    if (c.op === 'deleted') {
      if (same) same.deleted_at = c.fn.deleted_at ?? c.hlc
      else contenders.push({ rufid_short: c.fn.rufid_short, content_digest: c.fn.content_digest, origin: c.origin, hlc: c.hlc, deleted_at: c.fn.deleted_at ?? c.hlc })
    } else if (same) {
      if (contenderOrder({ ...same, hlc: c.hlc, origin: c.origin }, same) < 0) {
        same.hlc = c.hlc
        same.origin = c.origin
      }
    } else {
      contenders.push({ rufid_short: c.fn.rufid_short, content_digest: c.fn.content_digest, origin: c.origin, hlc: c.hlc })
    }
    contenders.sort(contenderOrder)
    const winner = contenders[0]!
    const ops: Array<{ type: 'put'; sublevel: Json; key: string; value: unknown }> = [
      { type: 'put', sublevel: this.log, key: logKey, value: c },
      { type: 'put', sublevel: this.entries, key: c.key, value: contenders },
      { type: 'put', sublevel: this.meta, key: 'hlc', value: this.clock.last },
    ]
    let conflict: CatalogConflict | undefined
    const losers = contenders.slice(1)
    if (losers.length > 0) {
      conflict = {
        key: c.key, tenant_id: c.fn.tenant_id, function_name: c.fn.function_name, version: c.fn.version,
        winner, losers, detected_at: new Date().toISOString(),
      }
      ops.push({ type: 'put', sublevel: this.conflictTable, key: c.key, value: conflict })
    }
    await this.db.batch(ops as never, { sync: false } as object)
    this.vector[c.origin] = Math.max(this.vector[c.origin] ?? 0, c.seq)
    if (conflict) this.indexConflict(conflict)
    if (!local) {
      // materialize: the version itself (the loser stays stored, addressable by its hash), and the
      // ledger entry of whichever content won the key
      const stored = await this.store.getFunction(c.fn.tenant_id, c.fn.rufid_short, c.fn.version)
      const fn: FunctionVersion = stored && c.op !== 'deleted' ? stored : { ...(stored ?? c.fn), ...(c.op === 'deleted' ? { deleted_at: c.fn.deleted_at ?? c.hlc } : {}) }
      const ledger = winner.rufid_short === c.fn.rufid_short
        ? { ...c.ledger, ...(winner.deleted_at !== undefined ? { deleted_at: winner.deleted_at } : {}) }
        : undefined
      await this.store.putReplicatedVersion(fn, ledger)
      for (const l of this.appliedListeners) l(fn)
    } else if (winner.rufid_short !== c.fn.rufid_short) {
      // a local write that already lost (a later local version of a conflicting key): keep the winner's ledger
    }
    if (conflict && (before.length !== contenders.length)) for (const l of this.conflictListeners) l(conflict)
    return conflict ? { conflict } : {}
  }
}

function isChange(value: unknown): value is CatalogChange {
  const c = value as CatalogChange
  return typeof c === 'object' && c !== null && typeof c.origin === 'string' && Number.isInteger(c.seq) && c.seq > 0 &&
    typeof c.hlc === 'string' && (c.op === 'added' || c.op === 'updated' || c.op === 'deleted') && typeof c.key === 'string' &&
    typeof c.fn === 'object' && c.fn !== null && typeof c.ledger === 'object' && c.ledger !== null &&
    c.key === catalogKey(c.fn.tenant_id, c.fn.function_name, c.fn.version) &&
    c.ledger.tenant_id === c.fn.tenant_id && c.ledger.function_name === c.fn.function_name && c.ledger.version === c.fn.version
}
