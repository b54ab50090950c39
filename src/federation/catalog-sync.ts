import { SvcError } from '../core/errors.js'
import type { SvcMetrics } from '../engine/metrics.js'
import { isCatalogChange, vectorRoot, type ApplyResult, type CatalogChange, type CatalogReplica, type CompactVector, type SyncBatch, type SyncPageLimits, type VersionVector } from '../engine/replication/catalog-replica.js'
import { withoutCode } from '../engine/replication/change-authenticator.js'
import { noopLogger, type FederationLogger } from './logger.js'
import type { FederationMember, FederationNode, GossipVerdict } from './node.js'
import { Latch } from './latch.js'

export const CATALOG_TOPIC = 'svc/catalog/1'
export const SYNC_PROTOCOL = '/svc/sync/1.0.0'
/**
 * Sync by summary first: a member sends the root of its version vector (`{ root }`) and gets the
 * other's root back; equal roots end the exchange. Otherwise it sends its compacted vector (active
 * origins and the digest of retired ones, with changes the other lacks) and gets the changes above
 * it back; a member whose retired digest differs answers `retired_mismatch` and the exchange falls
 * back to `/svc/sync/1.0.0` (the whole vector), as it does with a member of an earlier build that
 * does not speak this protocol.
 */
export const SYNC_SUMMARY_PROTOCOL = '/svc/sync-summary/1.0.0'

/** default retention of an origin in the active part of the vector: a week without a change */
export const DEFAULT_RETIRE_ORIGINS_AFTER_MS = 7 * 24 * 3_600_000
/** a member that did not speak the summary protocol is asked again after this long (it may have been upgraded) */
const LEGACY_PEER_RECHECK_MS = 10 * 60_000
const ROOT = /^[0-9a-f]{64}$/
/** at most this many entries in a vector a peer sends (a federation has far fewer origins) */
const MAX_VECTOR_ENTRIES = 1_000_000

/**
 * A sync batch (an answer to `/svc/sync/1.0.0`, `/svc/sync-summary/1.0.0` or REST, and a push)
 * carries at most this many changes: a page. Its changes are signature-checked and applied in one
 * request (bounded work under the 10 s request deadline), and 2,000 changes of ~1.5 KB without
 * code are ~3 MB.
 */
export const SYNC_PAGE_MAX_CHANGES = 2_000
/**
 * ... and at most this many bytes of JSON of changes and certificates: a quarter of the 32 MiB a
 * length-prefixed message may hold, the rest left for the sender's version vector that travels with
 * a page (~60 bytes per origin) and for changes larger than the usual.
 */
export const SYNC_PAGE_MAX_BYTES = 8 * 1024 * 1024
/**
 * A sync round asks for (and pushes) at most this many pages (128,000 changes at the default page
 * size: any catalog a joining member meets today), and stops earlier when a page moved no vector:
 * a member that answers `more: true` with nothing new holds no one in a loop. The next round
 * (anti-entropy, a join, a gap in gossip) goes on from where this one stopped.
 */
export const SYNC_MAX_PAGES_PER_ROUND = 64

/**
 * origin certificates a sync batch may present: one per change of a page at most (an earlier
 * build's unbounded answer may present more: the changes of the origins left out wait for a later
 * round)
 */
const MAX_PRESENTED_CERTIFICATES = SYNC_PAGE_MAX_CHANGES
const MAX_CERTIFICATE_CHARS = 16 * 1024

/** The origin certificates a sync batch presents, as far as they are well formed (bounded). */
function certificatesOf(value: unknown): Record<string, string> {
  const out: Record<string, string> = {}
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return out
  for (const [origin, pem] of Object.entries(value as Record<string, unknown>).slice(0, MAX_PRESENTED_CERTIFICATES)) {
    if (typeof pem === 'string' && pem.length <= MAX_CERTIFICATE_CHARS) out[origin] = pem
  }
  return out
}

/** A version vector as a peer sent it: integer entries only (bounded); anything else is empty. */
function vectorOf(value: unknown): VersionVector {
  const out: VersionVector = {}
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return out
  let n = 0
  for (const [origin, seq] of Object.entries(value as Record<string, unknown>)) {
    if (n++ >= MAX_VECTOR_ENTRIES) break
    if (Number.isInteger(seq) && (seq as number) > 0) out[origin] = seq as number
  }
  return out
}

const changesOf = (batch: Partial<SyncBatch> | null | undefined): unknown[] =>
  [batch?.added, batch?.updated, batch?.deleted].flatMap((list) => (Array.isArray(list) ? list : []))

const isEmpty = (batch: SyncBatch): boolean => batch.added.length + batch.updated.length + batch.deleted.length === 0

/** A batch as it travels between members: without code (code is fetched on demand, digest-checked). */
const travelling = (batch: SyncBatch): SyncBatch =>
  ({ ...batch, added: batch.added.map(withoutCode), updated: batch.updated.map(withoutCode), deleted: batch.deleted.map(withoutCode) })

/** A page pushed by the summary protocol: its changes and certificates (neither whole vector nor `more`). */
const pushed = (batch: SyncBatch): Omit<SyncBatch, 'vector' | 'more'> => {
  const { vector: _vector, more: _more, ...page } = travelling(batch)
  return page
}

export interface CatalogSyncInit {
  /**
   * anti-entropy: sync with one random member this often (default 2000 ms, 0 disables) while the
   * catalog changes; see `syncIntervalMaxMs`
   */
  syncIntervalMs?: number
  /**
   * while anti-entropy rounds find nothing to exchange (equal roots), the wait before the next one
   * doubles, up to this (default 30 s; at most `syncIntervalMs` disables the back-off). It is back
   * to `syncIntervalMs` as soon as a round finds a difference, a change is made here or gossiped
   * here, or a member joins
   */
  syncIntervalMaxMs?: number
  /**
   * an origin whose last change is older than this is folded into the retired digest of the
   * compacted vector a summary exchange sends (default a week)
   */
  retireOriginsAfterMs?: number
  /**
   * the size of a sync page (default `SYNC_PAGE_MAX_CHANGES`, `SYNC_PAGE_MAX_BYTES`; at most those:
   * a member presents at most `SYNC_PAGE_MAX_CHANGES` certificates per batch). Smaller in tests.
   */
  syncPage?: Partial<SyncPageLimits>
  /** pages a sync round asks for or pushes at most (default `SYNC_MAX_PAGES_PER_ROUND`) */
  maxSyncPagesPerRound?: number
  /**
   * sync rounds this node starts run at most this many at once (default 2); more wait their turn,
   * in order. A newcomer otherwise pulls the whole catalog from every member at once
   */
  maxConcurrentSyncs?: number
  /**
   * for this long after it starts (default 30 s) this node is the newcomer: it syncs with each
   * member as it joins. After that, a member that joins is synced with after a random wait of up
   * to `joinSyncJitterMs` (default 5 s): the newcomer syncs with every member itself (a round
   * pulls and pushes), so by then the roots are equal and the round costs one exchange, instead
   * of every member sending the newcomer its catalog at once. 0 for either: at once
   */
  newcomerWindowMs?: number
  joinSyncJitterMs?: number
}

/** The summary exchange's answer (to `{ root }`, or to a compacted vector with changes), as `/svc/sync-summary/1.0.0` carries it. */
type SummaryAnswer = { root: string } | (Omit<SyncBatch, 'vector'> & CompactVector) | ({ retired_mismatch: true } & CompactVector)

/** default longest wait between two anti-entropy rounds while they find nothing (see `CatalogSyncInit.syncIntervalMaxMs`) */
export const DEFAULT_SYNC_INTERVAL_MAX_MS = 30_000
/** defaults of `CatalogSyncInit.maxConcurrentSyncs`, `newcomerWindowMs` and `joinSyncJitterMs` */
export const DEFAULT_MAX_CONCURRENT_SYNCS = 2
export const DEFAULT_NEWCOMER_WINDOW_MS = 30_000
export const DEFAULT_JOIN_SYNC_JITTER_MS = 5_000

/** How changes from other origins reached this node (for the tests and the scale measurements). */
export interface ChangesReceived {
  /** applied from gossip (`svc/catalog/1`), as their origin published them */
  gossip: number
  /** applied from a sync round: a join, a gap in gossip, anti-entropy, a sync a member started */
  sync: number
  /** gossiped changes that came after a gap in their origin's sequence (a sync with the origin follows) */
  gaps: number
}

/**
 * How one sync round ended: the roots were equal (nothing exchanged), the members differed (changes
 * went one way or both, or the member is of an earlier build), or it failed (unreachable, refused)
 */
export type SyncOutcome = 'equal' | 'changed' | 'failed'

/** How the sync rounds this node started ended (for operators' logs and the tests). */
export interface SyncRounds {
  /** the roots were equal: nothing more was sent */
  equal: number
  /** roots differed and the compacted vectors sufficed */
  compacted: number
  /** whole-vector sync: the member spoke no summary, or its retired digest differed */
  full: number
}

export interface CatalogSyncComponents {
  node: FederationNode
  replica: CatalogReplica
  /**
   * Told, before a received change that adds a version is applied, which origin added that
   * content (it published it, so it holds the code).
   */
  onAddedBy?: (contentDigest: string, origin: string) => void
  logger?: FederationLogger
  metrics?: SvcMetrics
}

/**
 * Catalog replication between members: this node's changes gossiped as they happen
 * (`svc/catalog/1`, each signed by its origin; a member gossips its own changes only), and
 * incremental sync by version vector (`/svc/sync/1.0.0`) when a member joins, when gossip shows a
 * gap, and with one random member every `syncIntervalMs` (anti-entropy). A change whose signature
 * does not verify gets its sender refused.
 */
export class CatalogSync {
  private readonly log: FederationLogger
  private readonly syncing = new Map<string, Promise<SyncOutcome>>()
  /** members that did not speak the summary protocol → when to ask them again (ms) */
  private readonly legacyPeers = new Map<string, number>()
  readonly rounds: SyncRounds = { equal: 0, compacted: 0, full: 0 }
  readonly received: ChangesReceived = { gossip: 0, sync: 0, gaps: 0 }
  private readonly unsubscribe: Array<() => void> = []
  private timer: NodeJS.Timeout | undefined
  private running = false
  /** the wait before the next anti-entropy round (between `syncIntervalMs` and `syncIntervalMaxMs`) */
  private antiEntropyMs = 0
  /** when the next anti-entropy round is due (ms) */
  private antiEntropyAt = 0
  private readonly page: SyncPageLimits
  private readonly maxPages: number
  /** rounds running, and those waiting for one of the `maxConcurrentSyncs` turns */
  private activeRounds = 0
  private readonly waitingRounds: Array<() => void> = []
  /** members that joined → the timer of the round with them (see `newcomerWindowMs`) */
  private readonly joinRounds = new Map<string, NodeJS.Timeout>()
  private startedAt = 0
  /** the member a round first pulled everything from (see `caughtUp`) */
  private readonly caughtUpWith = new Latch<string>()

  constructor(
    private readonly init: CatalogSyncInit,
    private readonly c: CatalogSyncComponents,
  ) {
    this.log = c.logger ?? noopLogger
    this.page = {
      maxChanges: Math.max(1, Math.min(init.syncPage?.maxChanges ?? SYNC_PAGE_MAX_CHANGES, SYNC_PAGE_MAX_CHANGES)),
      maxBytes: Math.max(1, Math.min(init.syncPage?.maxBytes ?? SYNC_PAGE_MAX_BYTES, SYNC_PAGE_MAX_BYTES)),
    }
    this.maxPages = Math.max(1, init.maxSyncPagesPerRound ?? SYNC_MAX_PAGES_PER_ROUND)
  }

  async start(): Promise<void> {
    const { node, replica } = this.c
    node.subscribe(CATALOG_TOPIC, async (payload, publisher) => {
      // checkGossipedChange accepted it: the publisher is its origin and signed it
      const change = payload as CatalogChange
      // A gap in the origin's sequence (a gossip message was missed, or arrives late): the change is
      // not applied on its own, since the vector would then move past the missing one and no sync
      // would ever offer it again; a sync with the sender (the origin: members gossip only their
      // own changes) brings the missing ones and this one, in order (from wherever the origin's
      // relayed changes start: changes recorded before they were signed are never relayed).
      this.quicken()
      if (change.seq > replica.sequenceOf(change.origin) + 1) {
        this.c.metrics?.federationChangesRejected.inc({ reason: 'sequence_gap' })
        this.received.gaps++
        void this.syncWith(publisher.peerId)
        return
      }
      const result = await this.applyFrom([change], { [publisher.peerId]: publisher.registration.auth.certificate }, publisher.peerId)
      this.received.gossip += result.applied
    }, (payload, publisher) => this.checkGossipedChange(payload, publisher))
    await node.handleMembers(SYNC_PROTOCOL, async (request, from) => this.answerSync(request as Partial<SyncBatch>, from))
    await node.handleMembers(SYNC_SUMMARY_PROTOCOL, async (request, from) => this.answerSummary(request, from))
    this.unsubscribe.push(replica.onLocalChange((change) => {
      this.quicken()
      this.announce(change)
    }))
    this.unsubscribe.push(replica.onConflict((conflict) => {
      this.log.warn({ key: conflict.key, winner: conflict.winner.rufid_short, losers: conflict.losers.map((l) => l.rufid_short) }, 'catalog conflict recorded')
    }))
    this.unsubscribe.push(node.onMember((event, member) => {
      if (event === 'joined') {
        this.legacyPeers.delete(member.peerId) // it may have restarted on a newer build
        this.quicken()
        this.syncWithJoined(member.peerId)
      } else {
        this.legacyPeers.delete(member.peerId)
        this.cancelJoinRound(member.peerId)
      }
    }))
    this.startedAt = Date.now()
    for (const member of node.members()) void this.syncWith(member.peerId)
    this.running = true
    this.antiEntropyMs = this.baseIntervalMs()
    this.armAntiEntropy(this.antiEntropyMs)
  }

  /**
   * Whether this node caught up with the federation since it started: a sync round pulled
   * everything a member had (their roots were equal, or the last page it pulled did not say
   * `more`). Until then its catalog may lack what was published while it was away or before it
   * existed (the daemon's readiness waits for this; federation.ts `ready`).
   */
  get caughtUp(): boolean {
    return this.caughtUpWith.isSet
  }

  /** Calls `listener` once this node has caught up (at once when it has). Returns the unsubscribe. */
  onCaughtUp(listener: (peerId: string) => void): () => void {
    return this.caughtUpWith.on(listener)
  }

  /** A round pulled everything `peerId` had. */
  private pulledAllOf(peerId: string): void {
    if (this.caughtUpWith.isSet) return
    this.log.info({ peer_id: peerId, ms_since_start: Date.now() - this.startedAt }, 'catalog caught up with a member')
    this.caughtUpWith.set(peerId)
  }

  private baseIntervalMs(): number {
    return this.init.syncIntervalMs ?? 2_000
  }

  /**
   * The next anti-entropy round in `ms` (none when anti-entropy is off). A round that found nothing
   * to exchange doubles the wait before the next one, up to `syncIntervalMaxMs`; any other outcome
   * keeps it. An idle federation's members then exchange a root every 30 s rather than every 2 s,
   * and a change, a difference or a join brings the pace back (`quicken`).
   */
  private armAntiEntropy(ms: number): void {
    if (!this.running || this.baseIntervalMs() <= 0) return
    if (this.timer) clearTimeout(this.timer)
    this.antiEntropyAt = Date.now() + ms
    this.timer = setTimeout(() => {
      this.timer = undefined
      void this.antiEntropyRound().finally(() => this.armAntiEntropy(this.antiEntropyMs))
    }, ms)
    this.timer.unref()
  }

  private async antiEntropyRound(): Promise<void> {
    const members = this.c.node.members()
    if (members.length === 0) return
    const outcome = await this.syncWith(members[Math.floor(Math.random() * members.length)]!.peerId)
    const base = this.baseIntervalMs()
    const max = Math.max(base, this.init.syncIntervalMaxMs ?? DEFAULT_SYNC_INTERVAL_MAX_MS)
    if (outcome === 'equal') this.antiEntropyMs = Math.min(max, this.antiEntropyMs * 2)
    else if (outcome === 'changed') this.antiEntropyMs = base
  }

  /** Anti-entropy back at its base pace: the catalog changes (here or elsewhere), or a member joined. */
  private quicken(): void {
    const base = this.baseIntervalMs()
    if (!this.running || base <= 0 || this.antiEntropyMs <= base) return
    this.antiEntropyMs = base
    // a round waiting longer than the base pace is brought forward (a running round re-arms itself)
    if (this.timer !== undefined && this.antiEntropyAt > Date.now() + base) this.armAntiEntropy(base)
  }

  async stop(): Promise<void> {
    this.running = false
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
    for (const t of this.joinRounds.values()) clearTimeout(t)
    this.joinRounds.clear()
    for (const u of this.unsubscribe.splice(0)) u()
    this.c.node.unsubscribe(CATALOG_TOPIC)
    await this.c.node.unhandle(SYNC_PROTOCOL)
    await this.c.node.unhandle(SYNC_SUMMARY_PROTOCOL)
    await Promise.allSettled([...this.syncing.values()])
  }

  private announce(change: CatalogChange): void {
    if (!this.c.node.started) return
    void this.c.node.publish(CATALOG_TOPIC, withoutCode(change)).catch((err: unknown) => this.log.debug({ err }, 'gossip publish failed'))
  }

  /**
   * A gossiped change, before it is delivered or forwarded: a member gossips its own changes only,
   * signed. Another origin's change in a member's message is a replay (its signature verifies) or
   * a forgery; a signature that does not verify is a forgery: either way the publisher is refused.
   */
  private async checkGossipedChange(payload: unknown, publisher: FederationMember): Promise<GossipVerdict> {
    if (!isCatalogChange(payload)) return 'reject' // a change this version does not know: not applied, not forwarded
    const change = payload
    const verdict = await this.c.replica.verifyChange(change, { [publisher.peerId]: publisher.registration.auth.certificate })
    if (!verdict.ok && verdict.reason === 'unsigned') {
      this.c.metrics?.federationChangesRejected.inc({ reason: 'unsigned' })
      return 'reject'
    }
    if (change.origin !== publisher.peerId) {
      return {
        refuse: verdict.ok ? 'replayed_change' : 'forged_change',
        detail: `gossiped change ${change.seq} of ${change.origin} as its own message${verdict.ok ? '' : ` (${verdict.detail})`}`,
      }
    }
    if (verdict.ok) return 'accept'
    if (verdict.reason === 'bad_signature') return { refuse: 'forged_change', detail: `gossiped change ${change.seq}: ${verdict.detail}` }
    this.c.metrics?.federationChangesRejected.inc({ reason: verdict.reason })
    this.log.warn({ peer_id: publisher.peerId, seq: change.seq, reason: verdict.reason, detail: verdict.detail }, 'gossiped change not applied')
    return 'reject'
  }

  /**
   * Applies changes received from `source` (a member's PeerId, or `rest`), checked against their
   * origins' certificates (`credentials` presented with them, or held); counts and logs what was
   * not applied.
   */
  private async applyFrom(changes: unknown[], credentials: Record<string, string>, source: string): Promise<ApplyResult> {
    // the origin of an added version published it and holds its code: a resolve asks it first. Told
    // before the version is stored (a resolve may see it at once); a hint only orders the
    // candidates (a member that lacks the code says so, the digest check decides)
    for (const c of changes) {
      if (isCatalogChange(c) && c.kind !== 'branch' && c.op === 'added' && c.origin !== this.c.node.peerId) this.c.onAddedBy?.(c.fn.content_digest, c.origin)
    }
    const result = await this.c.replica.apply(changes as CatalogChange[], { credentials })
    if (result.rejected.length > 0) {
      for (const r of result.rejected) this.c.metrics?.federationChangesRejected.inc({ reason: r.reason })
      const serious = result.rejected.filter((r) => r.reason !== 'duplicate_sequence' && r.reason !== 'unsigned')
      const summary = { source, rejected: result.rejected.length, first: result.rejected.slice(0, 5).map((r) => `${r.origin}/${r.seq}: ${r.reason}`) }
      if (serious.length > 0) this.log.warn(summary, 'replicated changes not applied')
      else this.log.debug(summary, 'replicated changes not applied')
    }
    return result
  }

  private async answerSync(request: Partial<SyncBatch> | null, from?: FederationMember): Promise<SyncBatch> {
    await this.applyRequest(request, from)
    return travelling(await this.c.replica.changesSince(vectorOf(request?.vector), this.page))
  }

  /**
   * Applies the changes a sync request carries (checked against the certificates it presents and
   * the sender's); a forged one gets the sender refused and the whole batch refused (1003).
   */
  private async applyRequest(request: Partial<SyncBatch> | null, from?: FederationMember): Promise<void> {
    const incoming = changesOf(request)
    if (incoming.length) {
      const presented = certificatesOf(request?.certificates)
      if (from) presented[from.peerId] = from.registration.auth.certificate
      const result = await this.applyFrom(incoming, presented, from?.peerId ?? 'rest')
      this.received.sync += result.applied
      const forged = result.rejected.filter((r) => r.reason === 'bad_signature')
      if (forged.length > 0) {
        const detail = `sync carried ${forged.length} change(s) whose signature does not verify, first ${forged[0]!.origin}/${forged[0]!.seq}`
        if (from) void this.c.node.refuse(from.peerId, 'forged_change', detail)
        throw new SvcError('PERMISSION_DENIED', `${detail}: nothing of the batch was applied`, {
          details: { rejected: forged.slice(0, 20).map(({ origin, seq, key, reason }) => ({ origin, seq, key, reason })) },
        })
      }
    }
  }

  /** The cutoff of the active origins now: origins whose last change is older are retired. */
  private retiredBefore(): number {
    return Date.now() - (this.init.retireOriginsAfterMs ?? DEFAULT_RETIRE_ORIGINS_AFTER_MS)
  }

  /**
   * `/svc/sync-summary/1.0.0`: a root is answered with ours; a compacted vector (with the changes
   * the sender pushes) with the changes above the sender's whole vector, rebuilt from its active
   * origins and our retired ones when the retired digests agree, else with `retired_mismatch`.
   */
  private async answerSummary(raw: unknown, from: FederationMember): Promise<SummaryAnswer> {
    const request = raw as Partial<{ root: unknown; active: unknown; retired: unknown }> | null
    const { replica } = this.c
    if (request === null || typeof request !== 'object') throw new SvcError('VALIDATION_FAILED', 'a summary request is { root } or { active, retired, added?, updated?, deleted?, certificates? }')
    if (request.active === undefined) {
      if (typeof request.root !== 'string' || !ROOT.test(request.root)) throw new SvcError('VALIDATION_FAILED', 'root: 64 hex characters')
      return { root: replica.vectorRoot() }
    }
    if (typeof request.retired !== 'string' || !ROOT.test(request.retired) || request.active === null || typeof request.active !== 'object') {
      throw new SvcError('VALIDATION_FAILED', 'a compacted vector needs active (origin → seq) and retired (64 hex characters)')
    }
    await this.applyRequest(raw as Partial<SyncBatch>, from)
    const mine = replica.compactVector(this.retiredBefore())
    const compact: CompactVector = { active: mine.active, retired: mine.retired, retired_count: mine.retired_count }
    if (mine.retired !== request.retired) return { retired_mismatch: true, ...compact }
    const theirs = { ...mine.retiredEntries, ...vectorOf(request.active) }
    // the changes above the sender's vector, without our whole vector (the point of the exchange)
    const { vector: _whole, ...changes } = travelling(await replica.changesSince(theirs, this.page))
    return { ...changes, ...compact }
  }

  /**
   * FederationPort.sync (REST): applies the caller's changes (each signed by its origin, checked
   * against the certificates presented in `certificates` or held; a batch with a forged change is
   * refused whole, 1003), answers with ours above its vector, with our origins' certificates: a
   * page, with `more: true` when there is more (the caller asks again with its vector advanced).
   */
  sync(batch: Partial<SyncBatch>): Promise<SyncBatch> {
    return this.answerSync(batch)
  }

  /**
   * Incremental sync with one member: roots first (`/svc/sync-summary/1.0.0`), and when they differ
   * the compacted vectors; the whole vector (`/svc/sync/1.0.0`) when the member speaks no summary or
   * its retired origins differ. Pulls what it has above our vector, pushes what it lacks.
   */
  syncWith(peerId: string): Promise<SyncOutcome> {
    this.cancelJoinRound(peerId)
    let running = this.syncing.get(peerId)
    if (running) return running
    running = (async (): Promise<SyncOutcome> => {
      await this.roundTurn()
      const end = this.c.metrics?.federationSyncDuration.startTimer()
      try {
        const done = await this.syncBySummary(peerId)
        if (done === 'full') {
          this.rounds.full++
          await this.syncByVector(peerId)
          return 'changed'
        }
        return done
      } catch (err) {
        this.log.debug({ peer_id: peerId, err }, 'sync failed')
        return 'failed'
      } finally {
        end?.()
        this.roundDone()
      }
    })().finally(() => this.syncing.delete(peerId))
    this.syncing.set(peerId, running)
    return running
  }

  /** Waits for one of the `maxConcurrentSyncs` turns. */
  private async roundTurn(): Promise<void> {
    if (this.activeRounds < Math.max(1, this.init.maxConcurrentSyncs ?? DEFAULT_MAX_CONCURRENT_SYNCS)) {
      this.activeRounds++
      return
    }
    await new Promise<void>((resolve) => this.waitingRounds.push(resolve))
  }

  /** A round ended: its turn goes to the first waiting one. */
  private roundDone(): void {
    const next = this.waitingRounds.shift()
    if (next) next()
    else this.activeRounds--
  }

  /** A member joined: a round with it now (this node is the newcomer), or after a random wait. */
  private syncWithJoined(peerId: string): void {
    const windowMs = this.init.newcomerWindowMs ?? DEFAULT_NEWCOMER_WINDOW_MS
    const jitterMs = this.init.joinSyncJitterMs ?? DEFAULT_JOIN_SYNC_JITTER_MS
    if (jitterMs <= 0 || Date.now() - this.startedAt < windowMs) {
      void this.syncWith(peerId)
      return
    }
    if (this.joinRounds.has(peerId) || this.syncing.has(peerId)) return
    const timer = setTimeout(() => {
      this.joinRounds.delete(peerId)
      if (this.running) void this.syncWith(peerId)
    }, Math.floor(Math.random() * jitterMs))
    timer.unref()
    this.joinRounds.set(peerId, timer)
  }

  /** A round with the member starts now (or it left): the one its join scheduled is not needed. */
  private cancelJoinRound(peerId: string): void {
    const timer = this.joinRounds.get(peerId)
    if (timer === undefined) return
    clearTimeout(timer)
    this.joinRounds.delete(peerId)
  }

  /** The summary exchange: 'equal' (equal roots), 'changed', or 'full' when whole-vector sync must follow. */
  private async syncBySummary(peerId: string): Promise<'equal' | 'changed' | 'full'> {
    const { node, replica } = this.c
    const recheckAt = this.legacyPeers.get(peerId)
    if (recheckAt !== undefined && recheckAt > Date.now()) return 'full'
    const root = replica.vectorRoot()
    let answer: SummaryAnswer
    try {
      answer = await node.request(peerId, SYNC_SUMMARY_PROTOCOL, { root }) as SummaryAnswer
    } catch (err) {
      if ((err as Error).name !== 'UnsupportedProtocolError') throw err
      // a member of an earlier build: whole-vector sync, and no summary asked of it for a while
      this.legacyPeers.set(peerId, Date.now() + LEGACY_PEER_RECHECK_MS)
      this.log.debug({ peer_id: peerId }, 'member speaks no sync summary: whole-vector sync')
      return 'full'
    }
    this.legacyPeers.delete(peerId)
    if ((answer as { root?: unknown })?.root === root) {
      this.rounds.equal++
      this.pulledAllOf(peerId)
      return 'equal'
    }
    // the roots differ: exchange compacted vectors, and the changes each lacks, a page at a time
    let mine = replica.compactVector(this.retiredBefore())
    let pulled = await node.request(peerId, SYNC_SUMMARY_PROTOCOL, { active: mine.active, retired: mine.retired }) as SummaryAnswer
    for (let pages = 1; ; pages++) {
      if (!this.isCompactAnswer(pulled) || 'retired_mismatch' in pulled) return 'full'
      const before = replica.vectorRoot()
      if (!(await this.applyAnswer(peerId, pulled))) return 'changed'
      if (pulled.more !== true) this.pulledAllOf(peerId)
      if (!this.another(peerId, 'pull', pulled.more, pages, replica.vectorRoot() !== before)) break
      mine = replica.compactVector(this.retiredBefore())
      pulled = await node.request(peerId, SYNC_SUMMARY_PROTOCOL, { active: mine.active, retired: mine.retired }) as SummaryAnswer
    }
    // equal retired digests: the member's whole vector is its active origins and our retired ones
    let theirs = { ...mine.retiredEntries, ...vectorOf(pulled.active) }
    for (let pages = 1; ; pages++) {
      const lacking = await replica.changesSince(theirs, this.page)
      if (isEmpty(lacking)) break
      const now = replica.compactVector(this.retiredBefore())
      const answer = await node.request(peerId, SYNC_SUMMARY_PROTOCOL, { ...pushed(lacking), active: now.active, retired: now.retired }) as SummaryAnswer
      if (!this.isCompactAnswer(answer) || 'retired_mismatch' in answer) break
      if (!(await this.applyAnswer(peerId, answer))) break
      const next = { ...now.retiredEntries, ...vectorOf(answer.active) }
      if (!this.another(peerId, 'push', lacking.more, pages, vectorRoot(next) !== vectorRoot(theirs))) break
      theirs = next
    }
    this.rounds.compacted++
    return 'changed'
  }

  /**
   * Whether a round goes on with another page: the last one said `more`, moved a vector (`moved`:
   * ours when pulling, the member's when pushing) and the round has pages left.
   */
  private another(peerId: string, way: 'pull' | 'push', more: boolean | undefined, pages: number, moved: boolean): boolean {
    if (more !== true) return false
    if (!moved) {
      this.log.debug({ peer_id: peerId, way, pages }, 'sync page moved no vector: the round stops')
      return false
    }
    if (pages >= this.maxPages) {
      this.log.debug({ peer_id: peerId, way, pages }, 'sync round reached its page bound: the next round goes on')
      return false
    }
    return true
  }

  private isCompactAnswer(answer: SummaryAnswer | null): answer is (Omit<SyncBatch, 'vector'> & CompactVector) | ({ retired_mismatch: true } & CompactVector) {
    const a = answer as Partial<CompactVector> | null
    return a !== null && typeof a === 'object' && typeof a.retired === 'string' && a.active !== null && typeof a.active === 'object'
  }

  /**
   * Applies the changes a member answered with (checked against the certificates it presented and
   * its own); false when one was forged (the member is refused).
   */
  private async applyAnswer(peerId: string, answer: Partial<SyncBatch> | null): Promise<boolean> {
    const member = this.c.node.member(peerId)
    const presented = certificatesOf(answer?.certificates)
    if (member) presented[peerId] = member.registration.auth.certificate
    const result = await this.applyFrom(changesOf(answer), presented, peerId)
    this.received.sync += result.applied
    const forged = result.rejected.filter((r) => r.reason === 'bad_signature')
    if (forged.length === 0) return true
    await this.c.node.refuse(peerId, 'forged_change', `its sync answer carried ${forged.length} change(s) whose signature does not verify, first ${forged[0]!.origin}/${forged[0]!.seq}`)
    return false
  }

  /**
   * Whole-vector sync (`/svc/sync/1.0.0`, as every earlier build speaks it), a page at a time while
   * the member says `more` (an earlier build answers everything at once, without it).
   */
  private async syncByVector(peerId: string): Promise<void> {
    const { node, replica } = this.c
    let answer: SyncBatch
    for (let pages = 1; ; pages++) {
      const before = replica.vectorRoot()
      answer = await node.request(peerId, SYNC_PROTOCOL, { added: [], updated: [], deleted: [], timestamp: new Date().toISOString(), vector: replica.versionVector() }) as SyncBatch
      if (!(await this.applyAnswer(peerId, answer))) return
      if (answer?.more !== true) this.pulledAllOf(peerId)
      if (!this.another(peerId, 'pull', answer?.more, pages, replica.vectorRoot() !== before)) break
    }
    // what the member lacks, a page at a time: each answer brings its vector with the page applied
    let theirs = vectorOf(answer?.vector)
    for (let pages = 1; ; pages++) {
      const mine = await replica.changesSince(theirs, this.page)
      if (isEmpty(mine)) break
      const { more: _more, ...page } = travelling(mine)
      const reply = await node.request(peerId, SYNC_PROTOCOL, { ...page, vector: replica.versionVector() }) as Partial<SyncBatch> | null
      const next = vectorOf(reply?.vector)
      if (!this.another(peerId, 'push', mine.more, pages, vectorRoot(next) !== vectorRoot(theirs))) break
      theirs = next
    }
  }
}
