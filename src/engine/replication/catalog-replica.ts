import { createHash, randomUUID } from 'node:crypto'
import type { AbstractSublevel } from 'abstract-level'
import { canonicalJson } from '../../core/canonical-json.js'
import { SvcError } from '../../core/errors.js'
import { isShortRufid } from '../../core/rufid.js'
import { branchStates, mergeMoves, placeMove, type BranchFork, type PlacedMove } from '../branches/rebuild-heads.js'
import { BRANCH_NAME, type BranchedLedgerEntry, type BranchMove } from '../branches/types.js'
import { LruCache } from '../lru.js'
import { Mutex } from '../mutex.js'
import type { CatalogStore, LevelDatabase } from '../storage/catalog-store.js'
import { readNow } from '../storage/read-now.js'
import type { FunctionVersion, LedgerEntry } from '../types.js'
import { signedBytes, withoutCode, type ChangeAuthenticator, type ChangeRejection, type ChangeVerdict } from './change-authenticator.js'
import { HybridLogicalClock } from './hlc.js'

type Json = AbstractSublevel<LevelDatabase, unknown, string, unknown>

/**
 * One replicated change of the catalog: a function version (added) or its tombstone (deleted),
 * keyed by (tenant, function_name, version), stamped with its origin replica, that origin's
 * sequence number and a hybrid logical clock.
 */
export interface VersionChange {
  /** absent in changes recorded before branch moves replicated */
  kind?: 'version'
  origin: string
  seq: number
  hlc: string
  op: 'added' | 'updated' | 'deleted'
  key: string
  fn: FunctionVersion
  ledger: LedgerEntry
  /** the origin's signature over `signedBytes(change)` (base64); absent on changes recorded before changes were signed */
  sig?: string
}

/**
 * One move of a branch head (updated), keyed by (tenant, function_name, branch). The move names
 * its parent move, so every replica places it in the same tree (see `walkBranch`).
 */
export interface BranchChange {
  kind: 'branch'
  origin: string
  seq: number
  hlc: string
  op: 'updated'
  key: string
  tenant_id: string
  function_name: string
  move: PlacedMove
  /** the origin's signature over `signedBytes(change)` (base64) */
  sig?: string
}

export type CatalogChange = VersionChange | BranchChange

/** {origin → highest sequence number held} */
export type VersionVector = Record<string, number>

/**
 * The version vector as a summary exchange carries it when roots differ: the origins that changed
 * within the retention period (`active`), and a digest of the rest (`retired`, the origins whose
 * last change is older). Two replicas whose `retired` digests are equal hold the same retired
 * origins at the same sequence numbers, so each can rebuild the other's whole vector from the
 * other's `active` part and its own retired entries (`vectorOf`).
 */
export interface CompactVector {
  active: VersionVector
  /** sha256 (hex) over the retired (origin, seq) entries, sorted by origin (`vectorRoot` of them) */
  retired: string
  /** how many origins `retired` covers */
  retired_count: number
}

/** The body of an incremental sync (service-spec §2.7) plus the sender's version vector. */
export interface SyncBatch {
  added: CatalogChange[]
  updated: CatalogChange[]
  deleted: CatalogChange[]
  /** UTC time of the batch (the sync cursor a caller keeps) */
  timestamp: string
  vector: VersionVector
  /**
   * origin → its credential (a federation certificate, PEM), for the origins of the changes in the
   * batch: a node that never met an origin checks its changes with it
   */
  certificates?: Record<string, string>
  /**
   * the sender stopped early (a page, see `changesSince`): the receiver asks again with its vector
   * advanced by this batch for the rest. Absent from an earlier build's answers (one whole batch)
   */
  more?: boolean
}

/** How much one sync batch may carry (`changesSince`): whichever limit comes first. */
export interface SyncPageLimits {
  maxChanges: number
  /** bytes of JSON (UTF-8) of the changes (without code) and of their certificates */
  maxBytes: number
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

/** Two different contents for one (tenant, function_name, version). */
export interface VersionConflict {
  /** absent in conflicts recorded before branch conflicts existed */
  kind?: 'version'
  key: string
  tenant_id: string
  function_name: string
  version: number
  winner: Contender
  losers: Contender[]
  detected_at: string
}

/** One move of a fork of a branch (a conflict names no key hash). */
export interface BranchContender {
  move_id: string
  version: string
  rufid_short: string
  moved_at: string
  moved_by: string
}

/** A branch moved concurrently: moves with the same parent; the earliest wins. */
export interface BranchConflict {
  kind: 'branch'
  key: string
  tenant_id: string
  function_name: string
  branch: string
  /** the move both sides moved from (null: both created the branch) */
  parent_move_id: string | null
  winner: BranchContender
  losers: BranchContender[]
  detected_at: string
}

export type CatalogConflict = VersionConflict | BranchConflict

/** A change `apply` did not apply, and why. */
export interface RejectedChange {
  origin: string
  seq: number
  key: string
  reason: ChangeRejection | 'malformed' | 'duplicate_sequence'
  detail: string
}

export interface ApplyResult {
  applied: number
  conflicts: CatalogConflict[]
  /**
   * changes not applied. When one of them is `bad_signature` (forged or altered), the sender is
   * not to be trusted and nothing of the batch was applied.
   */
  rejected: RejectedChange[]
}

export interface ApplyOptions {
  /** origin → credential presented with the changes (a sync batch's `certificates`, a gossip sender's certificate) */
  credentials?: Record<string, string> | undefined
}

interface OriginCredential {
  credential: string
  expires_at: string
}

/** The replica's data format: 2 = origins are federation identities and changes are signed. */
export const REPLICA_FORMAT = 2

export interface CatalogReplicaComponents {
  db: LevelDatabase
  store: CatalogStore
  /**
   * The catalog's write lock, shared with the function registry: remote changes are applied under
   * it, and local changes are recorded by callers that hold it.
   */
  catalogLock?: Mutex
}

export const catalogKey = (tenant: string, name: string, version: number): string =>
  `${tenant}\u0000${name}\u0000${String(version).padStart(10, '0')}`
/** the key of a branch's changes and conflicts (its own prefix: never a version's key) */
export const branchChangeKey = (tenant: string, name: string, branch: string): string =>
  `branch\u0000${tenant}\u0000${name}\u0000${branch}`
/** moves by the ledger entry they are recorded on, then id */
const moveKey = (tenant: string, name: string, version: number, id: string): string => `${catalogKey(tenant, name, version)}\u0000${id}`

interface StoredMove {
  tenant_id: string
  function_name: string
  move: PlacedMove
}

const contenderOf = (m: PlacedMove): BranchContender =>
  ({ move_id: m.id, version: `v${m.version}`, rufid_short: m.rufid_short, moved_at: m.moved_at, moved_by: m.moved_by })

const pad = (n: number): string => n.toString().padStart(12, '0')

/**
 * sha256 (hex) over a version vector's entries sorted by origin (`<origin>:<seq>\n` each): equal on
 * replicas that hold the same origins at the same sequence numbers. The empty vector has a root too.
 */
export function vectorRoot(vector: VersionVector): string {
  const hash = createHash('sha256')
  for (const origin of Object.keys(vector).sort()) hash.update(`${origin}:${vector[origin]!}\n`)
  return hash.digest('hex')
}

/** the wall-clock milliseconds of an HLC stamp (0 when it does not parse) */
const wallOf = (hlc: string): number => {
  const m = /^(\d{18})-\d{6}$/.exec(hlc)
  return m === null ? 0 : Number(m[1])
}
const contenderOrder = (a: Contender, b: Contender): number =>
  a.hlc < b.hlc ? -1 : a.hlc > b.hlc ? 1 : a.origin < b.origin ? -1 : a.origin > b.origin ? 1 : a.rufid_short < b.rufid_short ? -1 : a.rufid_short > b.rufid_short ? 1 : 0

/**
 * The replicated catalog of this node: a change log in LevelDB (`repl_log`, by origin and sequence),
 * the contenders of every key (`repl_entries`), every branch move (`repl_moves`), conflicts
 * (`repl_conflicts`). Applying changes is idempotent and order-independent: every replica that
 * holds the same changes holds the same entries, winners, branch heads and conflicts, and
 * `digest()` shows it.
 *
 * Branch moves are materialized into the ledger entries they point at (a move whose version has
 * not arrived waits in `repl_moves`), and heads are always what the ledger determines
 * (`branchStates`): rebuilding heads from the ledger alone gives the stored heads on every node.
 */
export class CatalogReplica {
  private readonly db: LevelDatabase
  private readonly store: CatalogStore
  private log!: Json
  private entries!: Json
  private conflictTable!: Json
  private moves!: Json
  private meta!: Json
  private origins!: Json
  private readonly lock: Mutex
  /**
   * `catalogKey`s of the versions `repl_moves` holds moves for (loaded at start, added by each
   * move): a replicated version without any, nearly all of them, reads none
   */
  private readonly movedVersions = new Set<string>()
  private readonly vector: VersionVector = {}
  /** origin → the wall time (ms) of the HLC of its change at `vector[origin]` (its last change) */
  private readonly lastChangeAt = new Map<string, number>()
  /** `vectorRoot(relayableVector())`, until the vector moves */
  private rootMemo: string | undefined
  /** `tenant:short:version` of losing versions → the conflict */
  private readonly losers = new Map<string, VersionConflict>()
  private readonly changeListeners = new Set<(change: CatalogChange) => void>()
  private readonly appliedListeners = new Set<(fn: FunctionVersion) => void>()
  private readonly conflictListeners = new Set<(conflict: CatalogConflict) => void>()
  private clock = new HybridLogicalClock()
  private started = false
  private authenticator: ChangeAuthenticator | undefined
  /** origin → the credential that last vouched for it (the one valid longest), persisted in `repl_origins` */
  private readonly credentials = new Map<string, OriginCredential>()
  /**
   * origins whose changes up to this sequence number were recorded unsigned (before format 2, or
   * under a previous origin of this node): kept locally, never relayed, never scanned by `changesSince`
   */
  private legacy: VersionVector = {}
  /**
   * changes that verified lately, by origin, signature and a hash of the signed bytes: a gossiped
   * change is checked by the gossip validator and again when it is applied
   */
  private readonly verifiedLately = new LruCache<ChangeVerdict & { ok: true }>(1024, () => undefined)
  origin = ''

  constructor(components: CatalogReplicaComponents) {
    this.db = components.db
    this.store = components.store
    this.lock = components.catalogLock ?? new Mutex()
  }

  /** Loads the origin id, version vector and conflicts (the database is opened by the store). */
  async start(): Promise<void> {
    if (this.started) return
    const json = { valueEncoding: 'json' as const }
    this.log = this.db.sublevel<string, unknown>('repl_log', json) as Json
    this.entries = this.db.sublevel<string, unknown>('repl_entries', json) as Json
    this.conflictTable = this.db.sublevel<string, unknown>('repl_conflicts', json) as Json
    this.moves = this.db.sublevel<string, unknown>('repl_moves', json) as Json
    this.meta = this.db.sublevel<string, unknown>('repl_meta', json) as Json
    this.origins = this.db.sublevel<string, unknown>('repl_origins', json) as Json
    let origin = (await this.meta.get('origin')) as string | undefined
    if (origin === undefined) {
      origin = randomUUID()
      await this.meta.put('origin', origin)
    }
    this.origin = origin
    for await (const value of this.moves.values()) {
      const m = value as StoredMove
      this.movedVersions.add(catalogKey(m.tenant_id, m.function_name, m.move.version))
    }
    for await (const key of this.log.keys()) {
      const [o, seq] = key.split('/') as [string, string]
      this.vector[o] = Math.max(this.vector[o] ?? 0, Number(seq))
    }
    for (const [o, top] of Object.entries(this.vector)) {
      const last = (await this.log.get(`${o}/${pad(top)}`)) as CatalogChange | undefined
      this.lastChangeAt.set(o, last === undefined ? 0 : wallOf(last.hlc))
    }
    this.rootMemo = undefined
    const lastHlc = (await this.meta.get('hlc')) as string | undefined
    if (lastHlc) this.clock.observe(lastHlc)
    for await (const value of this.conflictTable.values()) this.indexConflict(value as CatalogConflict)
    for await (const [o, value] of this.origins.iterator()) this.credentials.set(o, value as OriginCredential)
    // format 1 (before changes were signed): everything logged so far is unsigned; it stays, is not
    // relayed, and this node's own part is signed again under its federation identity (useAuthenticator)
    const format = (await this.meta.get('format')) as number | undefined
    if (format === undefined || format < REPLICA_FORMAT) {
      await this.meta.batch([
        { type: 'put', key: 'legacy_vector', value: this.vector },
        { type: 'put', key: 'format', value: REPLICA_FORMAT },
      ])
    }
    this.legacy = ((await this.meta.get('legacy_vector')) as VersionVector | undefined) ?? {}
    this.rootMemo = undefined
    this.started = true
  }

  /**
   * Attaches the federation's signer and checker: this node's changes carry `auth.origin` and its
   * signature from now on, and remote changes are applied only when they verify. Changes this node
   * recorded before (unsigned, or under a previous origin: a replica id of format 1, a previous
   * identity) are recorded again, signed, under `auth.origin` (same clock and content, new
   * sequence numbers), so that the federation can check and relay them; the originals stay.
   */
  async useAuthenticator(auth: ChangeAuthenticator): Promise<{ signed: number; reissued: number }> {
    return this.lock.run(async () => {
      this.authenticator = auth
      let signed = 0
      let reissued = 0
      const previous = this.origin
      const formerOrigins = new Set(((await this.meta.get('former_origins')) as string[] | undefined) ?? [])
      if (previous !== auth.origin && previous !== '') formerOrigins.add(previous)
      formerOrigins.delete(auth.origin)
      this.origin = auth.origin
      await this.meta.batch([{ type: 'put', key: 'origin', value: auth.origin }, { type: 'put', key: 'former_origins', value: [...formerOrigins] }])
      // own changes recorded while no authenticator was attached
      const top = this.vector[auth.origin] ?? 0
      const from = (this.legacy[auth.origin] ?? 0) + 1
      if (from <= top) {
        for await (const [key, value] of this.log.iterator({ gte: `${auth.origin}/${pad(from)}`, lte: `${auth.origin}/${pad(top)}` })) {
          const c = value as CatalogChange
          if (typeof c.sig === 'string') continue
          await this.log.put(key, { ...c, sig: await this.signatureOf(c) })
          signed++
        }
      }
      // own changes recorded under a former origin: recorded again under this one, in order
      for (const former of formerOrigins) {
        const last = this.vector[former] ?? 0
        const through = ((await this.meta.get(`reissued/${former}`)) as number | undefined) ?? 0
        if (through < last) {
          for await (const value of this.log.values({ gt: `${former}/${pad(through)}`, lte: `${former}/${pad(last)}` })) {
            const { sig: _sig, ...c } = value as CatalogChange
            const again = { ...c, origin: auth.origin, seq: (this.vector[auth.origin] ?? 0) + 1 } as CatalogChange
            again.sig = await this.signatureOf(again)
            await this.applyOne(again, true)
            reissued++
          }
        }
        this.legacy[former] = Math.max(this.legacy[former] ?? 0, last)
        await this.meta.batch([{ type: 'put', key: 'legacy_vector', value: this.legacy }, { type: 'put', key: `reissued/${former}`, value: last }])
      }
      this.rootMemo = undefined
      return { signed, reissued }
    })
  }

  async stop(): Promise<void> {
    await this.lock.run(async () => undefined)
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

  /** The vector's entry of one origin (0: none of its changes held), without copying the vector. */
  sequenceOf(origin: string): number {
    return this.vector[origin] ?? 0
  }

  /**
   * The part of the vector other replicas can hold too: origins with signed changes (an origin whose
   * changes are all unsigned, recorded before changes were signed, is never relayed).
   */
  relayableVector(): VersionVector {
    const out: VersionVector = {}
    for (const [origin, top] of Object.entries(this.vector)) if (top > (this.legacy[origin] ?? 0)) out[origin] = top
    return out
  }

  /**
   * The root of the relayable vector (`vectorRoot`): two replicas with the same root have nothing
   * to exchange by version-vector sync. Kept until the vector moves (recomputed once after).
   */
  vectorRoot(): string {
    this.rootMemo ??= vectorRoot(this.relayableVector())
    return this.rootMemo
  }

  /**
   * The relayable vector split at `retiredBefore` (ms): origins whose last change (the HLC of the
   * change at their top sequence number: the same on every replica that holds it) is older are
   * folded into the `retired` digest; `retiredEntries` are those entries (kept here, never sent).
   */
  compactVector(retiredBefore: number): CompactVector & { retiredEntries: VersionVector } {
    const active: VersionVector = {}
    const retiredEntries: VersionVector = {}
    let retiredCount = 0
    for (const [origin, top] of Object.entries(this.relayableVector())) {
      if ((this.lastChangeAt.get(origin) ?? 0) < retiredBefore) {
        retiredEntries[origin] = top
        retiredCount++
      } else {
        active[origin] = top
      }
    }
    return { active, retired: vectorRoot(retiredEntries), retired_count: retiredCount, retiredEntries }
  }

  /** The vector now at `origin`: moves it up to `seq` (the change stamped `hlc`). */
  private advance(origin: string, seq: number, hlc: string): void {
    if (seq < (this.vector[origin] ?? 0)) return
    this.vector[origin] = seq
    this.lastChangeAt.set(origin, wallOf(hlc))
    this.rootMemo = undefined
  }

  /** A fresh move id, `<hlc>@<origin>`: unique across the federation, in clock order. */
  newMoveId(): string {
    return `${this.clock.now()}@${this.origin || 'local'}`
  }

  /** Records a local create or delete (the store already holds it). The caller holds the catalog lock. */
  async recordLocal(op: 'added' | 'deleted', fn: FunctionVersion, ledger: LedgerEntry): Promise<CatalogChange | undefined> {
    const planned = await this.planLocal(op, fn, ledger)
    if (planned === undefined) return undefined
    await this.db.batch(planned.ops as never, { sync: false } as object)
    return planned.commit()
  }

  /**
   * A local create or delete as batch operations, not written: the registry writes them in the same
   * atomic batch as the version itself, so a version is never stored without its replication record
   * (nor the record without the version), then calls `commit`, which moves the version vector,
   * indexes a conflict and tells the listeners. The caller holds the catalog lock from plan to commit.
   */
  async planLocal(op: 'added' | 'deleted', fn: FunctionVersion, ledger: LedgerEntry): Promise<PlannedChange | undefined> {
    if (!this.started) return undefined
    const change: VersionChange = {
      origin: this.origin, seq: (this.vector[this.origin] ?? 0) + 1, hlc: this.clock.now(), op,
      key: catalogKey(fn.tenant_id, fn.function_name, fn.version), fn, ledger,
    }
    if (this.authenticator) change.sig = await this.signatureOf(change)
    const plan = await this.planVersion(change, `${change.origin}/${pad(change.seq)}`)
    return {
      ops: plan.ops,
      commit: () => {
        plan.commit()
        for (const l of this.changeListeners) l(change)
        return change
      },
    }
  }

  /**
   * Records a local branch move (the store already holds it, in `ledger.branches` and the head).
   * The caller holds the catalog lock.
   */
  async recordLocalMove(ledger: LedgerEntry, move: BranchMove): Promise<CatalogChange | undefined> {
    if (!this.started || move.id === undefined) return undefined
    const placed = placeMove({ ...move, id: move.id }, ledger)
    return this.recordOwn({
      kind: 'branch', origin: this.origin, seq: (this.vector[this.origin] ?? 0) + 1, hlc: this.clock.now(), op: 'updated',
      key: branchChangeKey(ledger.tenant_id, ledger.function_name, move.branch),
      tenant_id: ledger.tenant_id, function_name: ledger.function_name, move: placed,
    })
  }

  private async recordOwn(change: CatalogChange): Promise<CatalogChange> {
    if (this.authenticator) change.sig = await this.signatureOf(change)
    await this.applyOne(change, true)
    for (const l of this.changeListeners) l(change)
    return change
  }

  private async signatureOf(change: CatalogChange): Promise<string> {
    return Buffer.from(await this.authenticator!.sign(signedBytes(change))).toString('base64')
  }

  /** The credential held for `origin` (this node's own for its origin). */
  credentialOf(origin: string): string | undefined {
    if (this.authenticator !== undefined && origin === this.authenticator.origin) return this.authenticator.credential
    return this.credentials.get(origin)?.credential
  }

  /**
   * Checks a change's signature against its origin and that a credential (presented in
   * `credentials`, or held) vouches for that origin now. Without an authenticator attached (a node
   * that is not federated) no change verifies.
   */
  async verifyChange(c: CatalogChange, credentials?: Record<string, string>): Promise<ChangeVerdict> {
    const auth = this.authenticator
    if (auth === undefined) return { ok: false, reason: 'unknown_origin', detail: 'this node is not federated: it checks no origin' }
    if (typeof c.sig !== 'string' || c.sig === '') return { ok: false, reason: 'unsigned', detail: `change ${c.origin}/${c.seq} carries no signature` }
    const signature = Uint8Array.from(Buffer.from(c.sig, 'base64'))
    const bytes = signedBytes(c)
    const memo = `${c.origin}\n${c.sig}\n${createHash('sha256').update(bytes).digest('base64')}`
    const known = this.verifiedLately.take(memo)
    if (known !== undefined && Date.parse(known.credentialExpiresAt) >= Date.now()) {
      this.verifiedLately.put(memo, known)
      return known
    }
    const presented = credentials?.[c.origin]
    const candidates = [...new Set([presented, this.credentialOf(c.origin)].filter((x): x is string => typeof x === 'string' && x !== ''))]
    if (candidates.length === 0) return auth.verify(c.origin, bytes, signature, undefined)
    let verdict: ChangeVerdict | undefined
    for (const credential of candidates) {
      verdict = await auth.verify(c.origin, bytes, signature, credential)
      if (verdict.ok) {
        await this.remember(c.origin, credential, verdict.credentialExpiresAt)
        this.verifiedLately.put(memo, verdict)
        return verdict
      }
      if (verdict.reason === 'bad_signature') return verdict
    }
    return verdict!
  }

  /** Keeps the credential of `origin` that stays valid longest. */
  private async remember(origin: string, credential: string, expiresAt: string): Promise<void> {
    if (this.authenticator?.origin === origin) return
    const held = this.credentials.get(origin)
    if (held !== undefined && (held.credential === credential || held.expires_at >= expiresAt)) return
    const value: OriginCredential = { credential, expires_at: expiresAt }
    this.credentials.set(origin, value)
    await this.origins.put(origin, value)
  }

  /**
   * Applies changes from another replica (gossip or sync): unknown ones only, in any order, each
   * only when its origin's signature and credential verify (see `verifyChange`). A batch with a
   * forged or altered change (`bad_signature`) is not applied at all.
   */
  async apply(changes: readonly CatalogChange[], options: ApplyOptions = {}): Promise<ApplyResult> {
    const conflicts: CatalogConflict[] = []
    const rejected: RejectedChange[] = []
    const reject = (c: { origin?: unknown; seq?: unknown; key?: unknown }, reason: RejectedChange['reason'], detail: string): void => {
      rejected.push({ origin: String(c?.origin ?? ''), seq: Number(c?.seq ?? 0), key: String(c?.key ?? ''), reason, detail })
    }
    const valid: CatalogChange[] = []
    for (const c of changes) {
      if (isCatalogChange(c)) valid.push(c)
      else reject(c ?? {}, 'malformed', 'not a catalog change')
    }
    const ordered = valid.sort((a, b) => (a.origin === b.origin ? a.seq - b.seq : a.hlc < b.hlc ? -1 : 1))
    const verified: CatalogChange[] = []
    for (const c of ordered) {
      const held = await readNow<CatalogChange>(this.log, `${c.origin}/${pad(c.seq)}`)
      if (held !== undefined && held.sig === c.sig && sameBytes(signedBytes(held), signedBytes(c))) continue // already applied
      const verdict = await this.verifyChange(c, options.credentials)
      if (!verdict.ok) reject(c, verdict.reason, verdict.detail)
      else if (held !== undefined) reject(c, 'duplicate_sequence', `${c.origin} signed another change ${c.seq}, which this node holds`)
      else verified.push(c)
    }
    if (rejected.some((r) => r.reason === 'bad_signature')) return { applied: 0, conflicts, rejected }
    let applied = 0
    for (const c of verified) {
      const outcome = await this.lock.run(() => this.applyOne(c, false))
      if (outcome === undefined) continue
      applied++
      conflicts.push(...outcome.conflicts)
    }
    return { applied, conflicts, rejected }
  }

  /**
   * Signed changes above `vector` (what a replica with that vector lacks), as a sync batch, with
   * the credential of each origin in it. Unsigned changes (recorded before changes were signed) are
   * not relayed. With `page`, the batch stops before it would exceed `maxChanges` changes or
   * `maxBytes` (the JSON size of the changes as they travel, without code, and of the certificates;
   * at least one change), and says `more: true`: each origin's part is then a prefix of what the
   * replica lacks of it (never a gap), so its vector advanced by the batch asks for the rest.
   */
  async changesSince(vector: VersionVector, page?: SyncPageLimits): Promise<SyncBatch> {
    const batch: SyncBatch = { added: [], updated: [], deleted: [], timestamp: new Date().toISOString(), vector: this.versionVector() }
    const certificates: Record<string, string> = {}
    let count = 0
    let bytes = 0
    scan: for (const [origin, top] of Object.entries(this.vector)) {
      const asked = vector?.[origin]
      const from = Math.max(Number.isInteger(asked) ? asked! : 0, this.legacy[origin] ?? 0) + 1
      if (from > top) continue
      const credential = this.credentialOf(origin)
      for await (const value of this.log.values({ gte: `${origin}/${pad(from)}`, lte: `${origin}/${pad(top)}` })) {
        const c = value as CatalogChange
        if (typeof c.sig !== 'string') continue
        // the origin's certificate travels with its first change in the batch
        const presents = credential !== undefined && certificates[origin] === undefined
        if (page !== undefined) {
          const size = Buffer.byteLength(JSON.stringify(withoutCode(c))) + (presents ? Buffer.byteLength(origin) + Buffer.byteLength(credential) + 6 : 0)
          if (count > 0 && (count >= page.maxChanges || bytes + size > page.maxBytes)) {
            batch.more = true
            break scan
          }
          bytes += size
        }
        batch[c.op].push(c)
        count++
        if (presents) certificates[origin] = credential
      }
    }
    batch.certificates = certificates
    return batch
  }

  /**
   * A digest over every replicated entry and branch move (sorted), the same on replicas that
   * converged. `entries` counts function versions (each content of a key), `branch_moves` moves.
   */
  async digest(): Promise<{ digest: string; entries: number; branch_moves: number }> {
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
    let moves = 0
    for await (const key of this.moves.keys()) {
      hash.update(`move|${key}\n`)
      moves++
    }
    return { digest: hash.digest('hex'), entries: n, branch_moves: moves }
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
  conflictOf(tenant: string, short: string, version: number): VersionConflict | undefined {
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
    if (conflict.kind === 'branch') return // a branch fork makes no version a loser
    for (const [k, c] of this.losers) if (c.key === conflict.key) this.losers.delete(k)
    for (const l of conflict.losers) this.losers.set(`${conflict.tenant_id}:${l.rufid_short}:${conflict.version}`, conflict)
  }

  /** Inside the catalog lock. Undefined when the change was already held. */
  private async applyOne(c: CatalogChange, local: boolean): Promise<{ conflicts: CatalogConflict[] } | undefined> {
    const logKey = `${c.origin}/${pad(c.seq)}`
    if (!local && (await readNow(this.log, logKey)) !== undefined) return undefined
    if (!local) this.clock.observe(c.hlc)
    if (c.kind === 'branch') return this.applyMove(c, logKey, local)
    return this.applyVersion(c, logKey, local)
  }

  /** A branch move: logged, kept in `repl_moves`, recorded on its ledger entry when that exists, heads refreshed. */
  private async applyMove(c: BranchChange, logKey: string, local: boolean): Promise<{ conflicts: CatalogConflict[] }> {
    const stored: StoredMove = { tenant_id: c.tenant_id, function_name: c.function_name, move: c.move }
    await this.db.batch([
      { type: 'put', sublevel: this.log, key: logKey, value: c },
      { type: 'put', sublevel: this.moves, key: moveKey(c.tenant_id, c.function_name, c.move.version, c.move.id), value: stored },
      { type: 'put', sublevel: this.meta, key: 'hlc', value: this.clock.last },
    ] as never, { sync: false } as object)
    this.movedVersions.add(catalogKey(c.tenant_id, c.function_name, c.move.version))
    this.advance(c.origin, c.seq, c.hlc)
    if (!local) {
      const entry = (await this.store.getLedgerEntry(c.tenant_id, c.function_name, c.move.version)) as BranchedLedgerEntry | undefined
      if (entry !== undefined) {
        const merged = mergeMoves(entry.branches, [c.move])
        if (merged.length !== (entry.branches ?? []).length) await this.store.putLedgerEntry({ ...entry, branches: merged } as LedgerEntry)
      }
    }
    return { conflicts: await this.refreshBranches(c.tenant_id, c.function_name, new Set([c.move.branch])) }
  }

  /** Moves recorded for (tenant, name, version) that its ledger entry may not carry yet. */
  private async movesOf(tenant: string, name: string, version: number): Promise<PlacedMove[]> {
    if (!this.movedVersions.has(catalogKey(tenant, name, version))) return []
    const prefix = `${catalogKey(tenant, name, version)}\u0000`
    const out: PlacedMove[] = []
    for await (const value of this.moves.values({ gte: prefix, lt: `${prefix}\uffff` })) out.push((value as StoredMove).move)
    return out
  }

  /**
   * Stores the heads the ledger now determines for `branches` of one lineage, and records the forks
   * on their winning paths that are new as conflicts. Inside the catalog lock.
   */
  private async refreshBranches(tenant: string, name: string, branches: ReadonlySet<string>): Promise<CatalogConflict[]> {
    if (branches.size === 0) return []
    const states = branchStates(await this.store.ledgerEntries({ tenant, function_name: name })).filter((st) => branches.has(st.branch))
    const changed = []
    for (const st of states) {
      if (st.head === undefined) continue
      const current = await this.store.getBranchHead(tenant, name, st.branch)
      if (current === undefined || canonicalJson(current) !== canonicalJson(st.head)) changed.push(st.head)
    }
    await this.store.putBranchHeads(changed)
    const found: CatalogConflict[] = []
    for (const st of states) {
      for (const fork of st.forks) {
        const conflict = await this.recordFork(tenant, name, st.branch, fork)
        if (conflict) found.push(conflict)
      }
    }
    return found
  }

  /** A fork of a branch as a conflict; undefined when the same fork is already recorded. */
  private async recordFork(tenant: string, name: string, branch: string, fork: BranchFork): Promise<BranchConflict | undefined> {
    const key = `${branchChangeKey(tenant, name, branch)}\u0000${fork.parent ?? ''}`
    const conflict: BranchConflict = {
      kind: 'branch', key, tenant_id: tenant, function_name: name, branch, parent_move_id: fork.parent,
      winner: contenderOf(fork.winner), losers: fork.losers.map(contenderOf), detected_at: new Date().toISOString(),
    }
    const before = (await this.conflictTable.get(key)) as BranchConflict | undefined
    const same = (x: BranchConflict | undefined): string => canonicalJson(x === undefined ? null : { w: x.winner, l: x.losers })
    if (before !== undefined && same(before) === same(conflict)) return undefined
    await this.conflictTable.put(key, conflict)
    for (const l of this.conflictListeners) l(conflict)
    return conflict
  }

  /** A function version or its tombstone. */
  /**
   * A version change's replication records (log, key contenders, clock, conflict) as batch
   * operations, and what follows once they are stored (`commit`: the vector moves, a new conflict is
   * indexed and told); `winner` is the content that holds the key.
   */
  private async planVersion(c: VersionChange, logKey: string): Promise<{ ops: unknown[]; winner: Contender; commit(): CatalogConflict[] }> {
    const before = (await readNow<Contender[]>(this.entries, c.key)) ?? []
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
    let conflict: VersionConflict | undefined
    const losers = contenders.slice(1)
    if (losers.length > 0) {
      conflict = {
        kind: 'version', key: c.key, tenant_id: c.fn.tenant_id, function_name: c.fn.function_name, version: c.fn.version,
        winner, losers, detected_at: new Date().toISOString(),
      }
      ops.push({ type: 'put', sublevel: this.conflictTable, key: c.key, value: conflict })
    }
    return {
      ops,
      winner,
      commit: () => {
        this.advance(c.origin, c.seq, c.hlc)
        if (conflict) this.indexConflict(conflict)
        const found: CatalogConflict[] = conflict && before.length !== contenders.length ? [conflict] : []
        for (const x of found) for (const l of this.conflictListeners) l(x)
        return found
      },
    }
  }

  /**
   * A version change: its replication records and, for a change from another replica, the version
   * it materializes, in ONE batch: a node that stops between the two never holds the change without
   * its version, which no sync would offer it again (the vector already counts it). Its reads take
   * no turn of the event loop (`readNow`).
   *
   * The batch is not synced to disk (a local create is: its caller is told it is stored). A process
   * that crashes loses nothing (LevelDB has written it to its log file); a machine that fails within
   * the file system's write-back period may lose the last changes it applied, change and version
   * together, and its vector (read from the log at start) then asks its next sync for them again.
   * Their origin synced them, and every member holds them. Measured on 20 nodes on 2 cores, where
   * every member applies every change at once: the synced batch took p50 29 / p90 57 ms of a
   * member's apply, 19 / 45 unsynced (issue 17).
   */
  private async applyVersion(c: VersionChange, logKey: string, local: boolean): Promise<{ conflicts: CatalogConflict[] }> {
    const plan = await this.planVersion(c, logKey)
    if (local) {
      await this.db.batch(plan.ops as never, { sync: false } as object)
      return { conflicts: plan.commit() }
    }
    // materialize: the version itself (the loser stays stored, addressable by its hash), and the
    // ledger entry of whichever content won the key, carrying every branch move recorded on that
    // key (the stored entry's, the change's, and moves that arrived before the version)
    const winner = plan.winner
    const { tenant_id: tenant, function_name: name, version } = c.fn
    const stored = await this.store.getFunction(tenant, c.fn.rufid_short, version)
    const fn: FunctionVersion = stored && c.op !== 'deleted' ? stored : { ...(stored ?? c.fn), ...(c.op === 'deleted' ? { deleted_at: c.fn.deleted_at ?? c.hlc } : {}) }
    const existing = (await this.store.getLedgerEntry(tenant, name, version)) as BranchedLedgerEntry | undefined
    const base: BranchedLedgerEntry | undefined = winner.rufid_short === c.fn.rufid_short
      ? { ...c.ledger, ...(winner.deleted_at !== undefined ? { deleted_at: winner.deleted_at } : {}) }
      : existing
    const moves = mergeMoves(mergeMoves(existing?.branches, (c.ledger as BranchedLedgerEntry).branches), await this.movesOf(tenant, name, version))
    const ledger = base === undefined ? undefined : ({ ...base, ...(moves.length > 0 ? { branches: moves } : {}) } as LedgerEntry)
    await this.db.batch([...plan.ops, ...this.store.replicatedVersionOps(fn, ledger)] as never, { sync: false } as object)
    const found = plan.commit()
    for (const l of this.appliedListeners) l(fn)
    if (ledger !== undefined && moves.length > 0) found.push(...(await this.refreshBranches(tenant, name, new Set(moves.map((m) => m.branch)))))
    return { conflicts: found }
  }
}

/** A local change planned as batch operations (written with the catalog's own), then committed. */
export interface PlannedChange {
  ops: unknown[]
  commit(): CatalogChange
}

const MAX_MOVE_ID = 200
/** an origin: a federation PeerId (base58) or, in changes of format 1, a replica UUID */
const ORIGIN = /^[A-Za-z0-9-]{1,128}$/

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && Buffer.compare(a, b) === 0


/** A change as a peer may send it: anything else is dropped before it touches the catalog. */
export function isCatalogChange(value: unknown): value is CatalogChange {
  const c = value as CatalogChange
  if (typeof c !== 'object' || c === null || typeof c.origin !== 'string' || !ORIGIN.test(c.origin) || !Number.isInteger(c.seq) || c.seq <= 0 ||
    typeof c.hlc !== 'string' || typeof c.key !== 'string' || (c.sig !== undefined && typeof c.sig !== 'string')) return false
  if (c.kind === 'branch') {
    const m = c.move as Partial<PlacedMove> | null
    return c.op === 'updated' && typeof c.tenant_id === 'string' && typeof c.function_name === 'string' &&
      typeof m === 'object' && m !== null && typeof m.branch === 'string' && BRANCH_NAME.test(m.branch) &&
      typeof m.id === 'string' && m.id.length > 0 && m.id.length <= MAX_MOVE_ID &&
      (m.parent === null || (typeof m.parent === 'string' && m.parent.length <= MAX_MOVE_ID && m.parent !== m.id)) &&
      Number.isInteger(m.version) && (m.version ?? 0) > 0 && isShortRufid(m.rufid_short) &&
      Number.isInteger(m.seq) && typeof m.key_hash === 'string' && typeof m.moved_at === 'string' && typeof m.moved_by === 'string' &&
      c.key === branchChangeKey(c.tenant_id, c.function_name, m.branch)
  }
  return (c.kind === undefined || c.kind === 'version') && (c.op === 'added' || c.op === 'updated' || c.op === 'deleted') &&
    typeof c.fn === 'object' && c.fn !== null && typeof c.ledger === 'object' && c.ledger !== null &&
    c.key === catalogKey(c.fn.tenant_id, c.fn.function_name, c.fn.version) &&
    c.ledger.tenant_id === c.fn.tenant_id && c.ledger.function_name === c.fn.function_name && c.ledger.version === c.fn.version
}
