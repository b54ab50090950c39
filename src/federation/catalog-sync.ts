import { SvcError } from '../core/errors.js'
import type { SvcMetrics } from '../engine/metrics.js'
import { isCatalogChange, type ApplyResult, type CatalogChange, type CatalogReplica, type SyncBatch } from '../engine/replication/catalog-replica.js'
import { withoutCode } from '../engine/replication/change-authenticator.js'
import { noopLogger, type FederationLogger } from './logger.js'
import type { FederationMember, FederationNode, GossipVerdict } from './node.js'

export const CATALOG_TOPIC = 'svc/catalog/1'
export const SYNC_PROTOCOL = '/svc/sync/1.0.0'

/** origin certificates a sync batch may present (a federation has far fewer members) */
const MAX_PRESENTED_CERTIFICATES = 1_000
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

const changesOf = (batch: Partial<SyncBatch> | null | undefined): unknown[] =>
  [batch?.added, batch?.updated, batch?.deleted].flatMap((list) => (Array.isArray(list) ? list : []))

/** A batch as it travels between members: without code (code is fetched on demand, digest-checked). */
const travelling = (batch: SyncBatch): SyncBatch =>
  ({ ...batch, added: batch.added.map(withoutCode), updated: batch.updated.map(withoutCode), deleted: batch.deleted.map(withoutCode) })

export interface CatalogSyncInit {
  /** anti-entropy: sync with one member this often (default 2000 ms, 0 disables) */
  syncIntervalMs?: number
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
  private readonly syncing = new Map<string, Promise<void>>()
  private readonly unsubscribe: Array<() => void> = []
  private timer: NodeJS.Timeout | undefined

  constructor(
    private readonly init: CatalogSyncInit,
    private readonly c: CatalogSyncComponents,
  ) {
    this.log = c.logger ?? noopLogger
  }

  async start(): Promise<void> {
    const { node, replica } = this.c
    node.subscribe(CATALOG_TOPIC, async (payload, publisher) => {
      // checkGossipedChange accepted it: the publisher is its origin and signed it
      const change = payload as CatalogChange
      await this.applyFrom([change], { [publisher.peerId]: publisher.registration.auth.certificate }, publisher.peerId)
      // a gap in the origin's sequence: something was missed, repair it from the sender
      if ((replica.versionVector()[change.origin] ?? 0) < change.seq) void this.syncWith(publisher.peerId)
    }, (payload, publisher) => this.checkGossipedChange(payload, publisher))
    await node.handleMembers(SYNC_PROTOCOL, async (request, from) => this.answerSync(request as Partial<SyncBatch>, from))
    this.unsubscribe.push(replica.onLocalChange((change) => this.announce(change)))
    this.unsubscribe.push(replica.onConflict((conflict) => {
      this.log.warn({ key: conflict.key, winner: conflict.winner.rufid_short, losers: conflict.losers.map((l) => l.rufid_short) }, 'catalog conflict recorded')
    }))
    this.unsubscribe.push(node.onMember((event, member) => {
      if (event === 'joined') void this.syncWith(member.peerId)
    }))
    for (const member of node.members()) void this.syncWith(member.peerId)
    const every = this.init.syncIntervalMs ?? 2_000
    if (every > 0) {
      this.timer = setInterval(() => {
        const members = node.members()
        if (members.length === 0) return
        void this.syncWith(members[Math.floor(Math.random() * members.length)]!.peerId)
      }, every)
      this.timer.unref()
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = undefined
    for (const u of this.unsubscribe.splice(0)) u()
    this.c.node.unsubscribe(CATALOG_TOPIC)
    await this.c.node.unhandle(SYNC_PROTOCOL)
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
    const incoming = changesOf(request)
    if (incoming.length) {
      const presented = certificatesOf(request?.certificates)
      if (from) presented[from.peerId] = from.registration.auth.certificate
      const result = await this.applyFrom(incoming, presented, from?.peerId ?? 'rest')
      const forged = result.rejected.filter((r) => r.reason === 'bad_signature')
      if (forged.length > 0) {
        const detail = `sync carried ${forged.length} change(s) whose signature does not verify, first ${forged[0]!.origin}/${forged[0]!.seq}`
        if (from) void this.c.node.refuse(from.peerId, 'forged_change', detail)
        throw new SvcError('PERMISSION_DENIED', `${detail}: nothing of the batch was applied`, {
          details: { rejected: forged.slice(0, 20).map(({ origin, seq, key, reason }) => ({ origin, seq, key, reason })) },
        })
      }
    }
    const vector = request?.vector !== null && typeof request?.vector === 'object' ? request.vector : {}
    return travelling(await this.c.replica.changesSince(vector))
  }

  /**
   * FederationPort.sync (REST): applies the caller's changes (each signed by its origin, checked
   * against the certificates presented in `certificates` or held; a batch with a forged change is
   * refused whole, 1003), answers with ours above its vector, with our origins' certificates.
   */
  sync(batch: Partial<SyncBatch>): Promise<SyncBatch> {
    return this.answerSync(batch)
  }

  /** Incremental sync with one member: pull what it has above our vector, push what it lacks. */
  syncWith(peerId: string): Promise<void> {
    let running = this.syncing.get(peerId)
    if (running) return running
    const { node, replica } = this.c
    running = (async () => {
      const end = this.c.metrics?.federationSyncDuration.startTimer()
      try {
        const answer = await node.request(peerId, SYNC_PROTOCOL, { added: [], updated: [], deleted: [], timestamp: new Date().toISOString(), vector: replica.versionVector() }) as SyncBatch
        const member = node.member(peerId)
        const presented = certificatesOf(answer?.certificates)
        if (member) presented[peerId] = member.registration.auth.certificate
        const result = await this.applyFrom(changesOf(answer), presented, peerId)
        const forged = result.rejected.filter((r) => r.reason === 'bad_signature')
        if (forged.length > 0) {
          await node.refuse(peerId, 'forged_change', `its sync answer carried ${forged.length} change(s) whose signature does not verify, first ${forged[0]!.origin}/${forged[0]!.seq}`)
          return
        }
        const vector = answer?.vector !== null && typeof answer?.vector === 'object' ? answer.vector : {}
        const mine = await replica.changesSince(vector)
        if (mine.added.length + mine.updated.length + mine.deleted.length > 0) {
          await node.request(peerId, SYNC_PROTOCOL, { ...travelling(mine), vector: replica.versionVector() })
        }
      } catch (err) {
        this.log.debug({ peer_id: peerId, err }, 'sync failed')
      } finally {
        end?.()
      }
    })().finally(() => this.syncing.delete(peerId))
    this.syncing.set(peerId, running)
    return running
  }
}
