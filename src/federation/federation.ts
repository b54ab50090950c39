import { readdir, readFile, stat } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { SvcError } from '../core/errors.js'
import { computeRufid, formatRufid } from '../core/rufid.js'
import type { Engine } from '../engine/engine.js'
import { MAX_REMOTE_WHEEL_BYTES, sha256Of } from '../engine/execution/python-wheelhouse.js'
import type { SvcMetrics } from '../engine/metrics.js'
import { isCatalogChange, type ApplyResult, type CatalogChange, type SyncBatch, type VersionVector } from '../engine/replication/catalog-replica.js'
import { withoutCode } from '../engine/replication/change-authenticator.js'
import type { FederatedDiscovery, FederationMemberStatus, FederationNodeInfo, FederationPort } from '../engine/replication/federation-port.js'
import type { FunctionVersion, Principal } from '../engine/types.js'
import { CertificateVerifier, MembershipError } from './certificates.js'
import { createChangeAuthenticator } from './change-authenticator.js'
import { noopLogger, type FederationLogger } from './logger.js'
import { MemberStatusService } from './member-status.js'
import { ProviderAnnouncer } from './provider-announcer.js'
import { createFederationNode, type FederationMember, type FederationNode, type FederationNodeInit, type GossipVerdict, type MembershipRefusal, type NodeRegistration } from './node.js'

export const CATALOG_TOPIC = 'svc/catalog/1'
export const NODES_TOPIC = 'svc/nodes/1'
export const SYNC_PROTOCOL = '/svc/sync/1.0.0'
export const CODE_PROTOCOL = '/svc/code/1.0.0'
export const REGISTER_PROTOCOL = '/svc/register/1.0.0'
export const WHEEL_PROTOCOL = '/svc/wheel/1.0.0'

export interface FederationInit extends FederationNodeInit {
  /** PeerIds of registry nodes to register with after start (may be empty: every member is a registry) */
  registryPeers?: string[]
  /** anti-entropy: sync with one member this often (default 2000 ms, 0 disables) */
  syncIntervalMs?: number
  /**
   * Directories of pure-Python wheels this node serves to members (by sha256) and announces as a
   * provider of (its wheelhouse, and the wheels it fetched from peers).
   */
  wheelDirs?: string[]
}

export interface FederationComponents {
  engine: Engine
  logger?: FederationLogger
  metrics?: SvcMetrics
}

const MAX_HOLDER_HINTS = 10_000
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

/**
 * The federation of one node: its libp2p member node, catalog replication (gossip of changes and
 * incremental sync by version vector), discovery (DHT provider records keyed by a CID of each
 * content digest), code on demand, and registration. It implements the engine's FederationPort.
 */
export class Federation implements FederationPort {
  readonly node: FederationNode
  private readonly engine: Engine
  private readonly log: FederationLogger
  private readonly metrics: SvcMetrics | undefined
  private readonly init: FederationInit
  private readonly verifier: CertificateVerifier
  /** registrations learnt from a registry's broadcast (members not connected to us directly) */
  private readonly registered = new Map<string, NodeRegistration>()
  private readonly unsubscribe: Array<() => void> = []
  private readonly syncing = new Map<string, Promise<void>>()
  /**
   * content digest → the origin of the change that added that content (by gossip or sync; since
   * changes are signed, the node that published it): it holds the code, so a fetch asks it first
   * (the digest check still decides).
   * Bounded: the oldest hints are dropped past MAX_HOLDER_HINTS.
   */
  private readonly holders = new Map<string, string>()
  /** this node's wheels: sha256 → path, and the file stamp each hash was computed for */
  private wheels = new Map<string, string>()
  private readonly wheelStamps = new Map<string, { stamp: string; sha256: string }>()
  /** each wheel directory's mtime when it was last indexed (adding or renaming a file changes it) */
  private readonly wheelDirStamps = new Map<string, number>()
  private timer: NodeJS.Timeout | undefined
  private readonly memberStatusService: MemberStatusService
  /** makes the nodes that fetched code its providers (batched, delayed: provider-announcer.ts) */
  private readonly announcer: ProviderAnnouncer

  constructor(init: FederationInit, components: FederationComponents) {
    this.init = init
    this.engine = components.engine
    this.log = components.logger ?? noopLogger
    this.metrics = components.metrics
    this.verifier = new CertificateVerifier({ caCertPem: init.caCertPem, revoked: init.revoked ?? [] })
    this.node = createFederationNode(init, {
      logger: this.log,
      onMembersChanged: (count) => this.metrics?.federationNodesActive.set(count),
      onRefused: (refusal) => this.recordRefusal(refusal),
    })
    this.memberStatusService = new MemberStatusService({ node: this.node, replica: this.engine.replication, registered: () => this.registered })
    this.announcer = new ProviderAnnouncer({}, { provide: (digest, timeoutMs) => this.node.provide(digest, timeoutMs), logger: this.log })
  }

  /** A refused peer, counted and audited (the node logged it at warn). */
  private recordRefusal(refusal: MembershipRefusal): void {
    this.metrics?.federationMembershipRefusals.inc({ reason: refusal.reason })
    void this.engine.auditLog.record({
      operation: 'federation.membership.refused', rufid: null, user: refusal.peer_id, tenant: null,
      ip: refusal.remote_addr ?? '', result: `refused (${refusal.reason}): ${refusal.detail}; redials refused until ${refusal.denied_until}`,
      duration_ms: 0, code: 1003,
    }).catch((err: unknown) => this.log.warn({ err }, 'audit of a membership refusal failed'))
  }

  get nodeId(): string {
    return this.node.peerId
  }

  async start(): Promise<void> {
    const replica = this.engine.replication
    // this node's changes carry its PeerId and signature; others' are applied only when they verify
    const signing = await replica.useAuthenticator(createChangeAuthenticator({
      privateKey: this.init.privateKey, peerId: this.node.peerId, certPem: this.init.certPem, verifier: this.verifier,
    }))
    if (signing.signed + signing.reissued > 0) this.log.info({ ...signing, origin: this.node.peerId }, 'catalog changes of this node signed under its federation identity')
    await this.node.start()
    if (this.metrics) {
      this.metrics.routingTableSource.read = () => {
        const table = this.node.started ? this.node.routingTable() : { verified: [], others: [] }
        return { verified: table.verified.length, others: table.others.length }
      }
    }
    this.node.subscribe(CATALOG_TOPIC, async (payload, publisher) => {
      // checkGossipedChange accepted it: the publisher is its origin and signed it
      const change = payload as CatalogChange
      await this.applyFrom([change], { [publisher.peerId]: publisher.registration.auth.certificate }, publisher.peerId)
      // a gap in the origin's sequence: something was missed, repair it from the sender
      if ((replica.versionVector()[change.origin] ?? 0) < change.seq) void this.syncWith(publisher.peerId)
    }, (payload, publisher) => this.checkGossipedChange(payload, publisher))
    this.node.subscribe(NODES_TOPIC, (payload) => {
      const registration = payload as NodeRegistration
      try {
        this.verifier.verify(registration.auth.certificate, registration.node_id)
        if (registration.node_id !== this.nodeId) this.registered.set(registration.node_id, registration)
      } catch {
        // an invalid registration is not applied
      }
    })
    await this.node.handleMembers(SYNC_PROTOCOL, async (request, from) => this.answerSync(request as Partial<SyncBatch>, from))
    await this.node.handleMembers(CODE_PROTOCOL, async (request) => this.serveCode(request as { tenant_id: string; rufid_short: string; version: number; content_digest: string }))
    await this.node.handleMembers(REGISTER_PROTOCOL, async (request) => this.register(request))
    await this.node.handleMembers(WHEEL_PROTOCOL, async (request) => this.serveWheel(request as { sha256?: unknown }))
    await this.memberStatusService.start()
    this.announcer.start()
    this.unsubscribe.push(replica.onLocalChange((change) => this.announce(change)))
    this.unsubscribe.push(replica.onConflict((conflict) => {
      const what = conflict.kind === 'branch'
        ? `branch ${conflict.branch} of ${conflict.function_name} moved concurrently: move ${conflict.winner.move_id} to ${conflict.winner.version} wins`
        : `conflict on ${conflict.function_name} v${conflict.version}: ${conflict.winner.rufid_short} wins`
      this.log.warn({ key: conflict.key, winner: conflict.winner.rufid_short, losers: conflict.losers.map((l) => l.rufid_short) }, 'catalog conflict recorded')
      void this.engine.auditLog.record({
        operation: 'federation.conflict', rufid: conflict.losers.map((l) => l.rufid_short).join(','), user: 'federation', tenant: conflict.tenant_id,
        ip: '', result: what, duration_ms: 0, code: 2002,
      }).catch(() => undefined)
    }))
    // replicated versions reach the node's listeners (marketplace index, subscriptions) as local ones do
    this.unsubscribe.push(replica.onApplied((fn) => {
      this.engine.events.publishSystem({
        type: fn.deleted_at === undefined ? 'function.created' : 'function.deleted',
        tenant_id: fn.tenant_id,
        rufid: formatRufid(fn.rufid_short, fn.version, fn.tenant_id),
        message: `function ${fn.function_name} v${fn.version} ${fn.deleted_at === undefined ? 'replicated' : 'deleted'} from a federation peer`,
        data: { function_name: fn.function_name, version: `v${fn.version}`, replicated: true },
      })
    }))
    this.unsubscribe.push(this.node.onMember((event, member) => {
      this.engine.events.publishSystem({
        type: event === 'joined' ? 'peer.joined' : 'peer.left', tenant_id: null, rufid: null,
        message: `federation member ${member.peerId} ${event}`, data: { node_id: member.peerId, endpoint: member.registration.endpoint },
      })
      if (event === 'joined') void this.syncWith(member.peerId)
    }))
    this.engine.attachFederation(this)
    for (const member of this.node.members()) void this.syncWith(member.peerId)
    void this.provideAll()
    void this.provideWheels()
    void this.registerWithRegistries()
    const every = this.init.syncIntervalMs ?? 2_000
    if (every > 0) {
      this.timer = setInterval(() => {
        const members = this.node.members()
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
    await this.announcer.stop()
    if (this.engine.federation === this) this.engine.attachFederation(undefined)
    await Promise.allSettled([...this.syncing.values()])
    await this.node.stop()
  }

  // ---- replication ---------------------------------------------------------------------------

  private announce(change: CatalogChange): void {
    if (!this.node.started) return
    void this.node.publish(CATALOG_TOPIC, withoutCode(change)).catch((err: unknown) => this.log.debug({ err }, 'gossip publish failed'))
    if (change.kind !== 'branch' && change.op === 'added') void this.provide(change.fn.content_digest)
  }

  /**
   * A gossiped change, before it is delivered or forwarded: a member gossips its own changes only,
   * signed. Another origin's change in a member's message is a replay (its signature verifies) or
   * a forgery; a signature that does not verify is a forgery: either way the publisher is refused.
   */
  private async checkGossipedChange(payload: unknown, publisher: FederationMember): Promise<GossipVerdict> {
    if (!isCatalogChange(payload)) return 'reject' // a change this version does not know: not applied, not forwarded
    const change = payload
    const verdict = await this.engine.replication.verifyChange(change, { [publisher.peerId]: publisher.registration.auth.certificate })
    if (!verdict.ok && verdict.reason === 'unsigned') {
      this.metrics?.federationChangesRejected.inc({ reason: 'unsigned' })
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
    this.metrics?.federationChangesRejected.inc({ reason: verdict.reason })
    this.log.warn({ peer_id: publisher.peerId, seq: change.seq, reason: verdict.reason, detail: verdict.detail }, 'gossiped change not applied')
    return 'reject'
  }

  /**
   * Applies changes received from `source` (a member's PeerId, or `rest`), checked against their
   * origins' certificates (`credentials` presented with them, or held); counts and logs what was
   * not applied.
   */
  private async applyFrom(changes: unknown[], credentials: Record<string, string>, source: string): Promise<ApplyResult> {
    // the origin of an added version published it and holds its code: a resolve asks it first. Set
    // before the version is stored (a resolve may see it at once); a hint only orders the
    // candidates (a member that lacks the code says so, the digest check decides)
    for (const c of changes) {
      if (isCatalogChange(c) && c.kind !== 'branch' && c.op === 'added' && c.origin !== this.nodeId) this.hintHolder(c.fn.content_digest, c.origin)
    }
    const result = await this.engine.replication.apply(changes as CatalogChange[], { credentials })
    if (result.rejected.length > 0) {
      for (const r of result.rejected) this.metrics?.federationChangesRejected.inc({ reason: r.reason })
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
        if (from) void this.node.refuse(from.peerId, 'forged_change', detail)
        throw new SvcError('PERMISSION_DENIED', `${detail}: nothing of the batch was applied`, {
          details: { rejected: forged.slice(0, 20).map(({ origin, seq, key, reason }) => ({ origin, seq, key, reason })) },
        })
      }
    }
    const vector = request?.vector !== null && typeof request?.vector === 'object' ? request.vector : {}
    const batch = await this.engine.replication.changesSince(vector)
    return { ...batch, added: batch.added.map(withoutCode), updated: batch.updated.map(withoutCode), deleted: batch.deleted.map(withoutCode) }
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
    running = (async () => {
      const end = this.metrics?.federationSyncDuration.startTimer()
      try {
        const replica = this.engine.replication
        const answer = await this.node.request(peerId, SYNC_PROTOCOL, { added: [], updated: [], deleted: [], timestamp: new Date().toISOString(), vector: replica.versionVector() }) as SyncBatch
        const member = this.node.member(peerId)
        const presented = certificatesOf(answer?.certificates)
        if (member) presented[peerId] = member.registration.auth.certificate
        const result = await this.applyFrom(changesOf(answer), presented, peerId)
        const forged = result.rejected.filter((r) => r.reason === 'bad_signature')
        if (forged.length > 0) {
          await this.node.refuse(peerId, 'forged_change', `its sync answer carried ${forged.length} change(s) whose signature does not verify, first ${forged[0]!.origin}/${forged[0]!.seq}`)
          return
        }
        const vector = answer?.vector !== null && typeof answer?.vector === 'object' ? answer.vector : {}
        const mine = await replica.changesSince(vector)
        if (mine.added.length + mine.updated.length + mine.deleted.length > 0) {
          await this.node.request(peerId, SYNC_PROTOCOL, { ...mine, added: mine.added.map(withoutCode), updated: mine.updated.map(withoutCode), deleted: mine.deleted.map(withoutCode), vector: replica.versionVector() })
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

  // ---- discovery and code ----------------------------------------------------------------------

  private hintHolder(digest: string, peerId: string): void {
    this.holders.delete(digest)
    this.holders.set(digest, peerId)
    if (this.holders.size > MAX_HOLDER_HINTS) this.holders.delete(this.holders.keys().next().value!)
  }

  private async provide(digest: string): Promise<void> {
    try {
      await this.node.provide(digest)
    } catch (err) {
      this.log.debug({ err, digest }, 'provide failed')
    }
  }

  private async provideAll(): Promise<void> {
    const digests = new Set<string>()
    for await (const fn of this.engineStoreFunctions()) if (fn.deleted_at === undefined && fn.source_code !== '') digests.add(fn.content_digest)
    for (const d of digests) await this.provide(d)
  }

  private async *engineStoreFunctions(): AsyncGenerator<FunctionVersion> {
    // every version this node recorded or applied is in the replica's change log
    const batch = await this.engine.replication.changesSince({})
    for (const c of [...batch.added, ...batch.updated]) {
      if (c.kind === 'branch') continue
      const found = await this.engine.replication.localVersion(c.fn.tenant_id, c.fn.rufid_short, c.fn.version)
      if (found) yield found
    }
  }

  private async serveCode(request: { tenant_id: string; rufid_short: string; version: number; content_digest: string }): Promise<{ source_code: string }> {
    const fn = await this.engine.replication.localVersion(request.tenant_id, request.rufid_short, request.version)
    if (fn === undefined || fn.source_code === '' || fn.content_digest !== request.content_digest) {
      throw new SvcError('RUFID_NOT_FOUND', 'this node does not hold that code')
    }
    return { source_code: fn.source_code }
  }

  /**
   * FederationPort.fetchCode. Candidates, each tried once and in turn: the origin that added the
   * content (it published it), providers from the DHT as the query finds them
   * (members only), then the other members (a provider record may not have reached the DHT yet,
   * or its publisher left: nodes that fetched the code serve it too). The first code that hashes
   * to `contentDigest` wins; none → 2001.
   *
   * A publisher announces its provider record at once; a node that fetched code announces itself
   * too, 5–10 s later and one digest at a time (provider-announcer.ts), so code outlives its
   * publisher and is found in O(log N) hops; the member scan above stays the last resort.
   */
  async fetchCode(tenant: string, short: string, version: number, contentDigest: string): Promise<string> {
    const fn = await this.engine.replication.localVersion(tenant, short, version)
    const tried = new Set<string>()
    const attempt = async (peerId: string): Promise<string | undefined> => {
      if (tried.has(peerId) || peerId === this.nodeId) return undefined
      tried.add(peerId)
      try {
        const answer = await this.node.request(peerId, CODE_PROTOCOL, { tenant_id: tenant, rufid_short: short, version, content_digest: contentDigest }, 5_000) as { source_code?: unknown }
        if (typeof answer.source_code !== 'string' || fn === undefined) return undefined
        const digest = computeRufid({ ...fn, source_code: answer.source_code }).content_digest
        if (digest !== contentDigest) {
          this.log.warn({ peer_id: peerId, rufid_short: short, expected: contentDigest, got: digest }, 'provider served code that does not match its digest: refused')
          return undefined
        }
        this.announcer.enqueue(contentDigest) // this node holds it now (the caller stores it)
        return answer.source_code
      } catch (err) {
        this.log.debug({ peer_id: peerId, err }, 'code fetch failed')
        return undefined
      }
    }
    const holder = this.holders.get(contentDigest)
    if (holder !== undefined && this.node.member(holder) !== undefined) {
      const code = await attempt(holder)
      if (code !== undefined) return code
    }
    for await (const provider of this.node.providers(contentDigest, { timeoutMs: 2_000 })) {
      const code = await attempt(provider.peerId)
      if (code !== undefined) return code
    }
    for (const peerId of this.node.members().map((m) => m.peerId).sort()) {
      const code = await attempt(peerId)
      if (code !== undefined) return code
    }
    throw new SvcError('FEDERATION_UNREACHABLE', `no reachable provider holds ${short} v${version}`, { details: { rufid_short: short, content_digest: contentDigest, tried: [...tried] } })
  }

  // ---- wheels ------------------------------------------------------------------------------------

  /**
   * Hashes the wheels in `wheelDirs` (unchanged files are not hashed again) and indexes them; reads
   * asynchronously, so a large wheelhouse does not stall the node while it starts.
   */
  private async indexWheels(): Promise<string[]> {
    const found: string[] = []
    const wheels = new Map<string, string>() // swapped in whole: a concurrent lookup never sees half an index
    for (const dir of this.init.wheelDirs ?? []) {
      let files: string[]
      try {
        this.wheelDirStamps.set(dir, (await stat(dir)).mtimeMs)
        files = (await readdir(dir)).filter((f) => f.endsWith('.whl') && !f.startsWith('.'))
      } catch {
        continue
      }
      for (const file of files) {
        const path = join(dir, file)
        try {
          const st = await stat(path)
          if (!st.isFile() || st.size > MAX_REMOTE_WHEEL_BYTES) continue
          const stamp = `${st.size}:${st.mtimeMs}`
          let known = this.wheelStamps.get(path)
          if (known?.stamp !== stamp) {
            known = { stamp, sha256: sha256Of(await readFile(path)) }
            this.wheelStamps.set(path, known)
          }
          if (!wheels.has(known.sha256)) wheels.set(known.sha256, path)
          found.push(known.sha256)
        } catch {
          // a file that vanished or cannot be read is not served
        }
      }
    }
    this.wheels = wheels
    return found
  }

  /** Announces every wheel of this node as a DHT provider record keyed by its sha256. */
  private async provideWheels(): Promise<void> {
    for (const sha of new Set(await this.indexWheels())) await this.provide(sha)
  }

  /** Whether a wheel directory changed (a file added, removed or renamed) since it was indexed. */
  private async wheelDirsChanged(): Promise<boolean> {
    for (const dir of this.init.wheelDirs ?? []) {
      const mtime = await stat(dir).then((st) => st.mtimeMs, () => undefined)
      if (mtime !== this.wheelDirStamps.get(dir)) return true
    }
    return false
  }

  private async serveWheel(request: { sha256?: unknown }): Promise<{ filename: string; bytes: string }> {
    const sha = request?.sha256
    if (typeof sha !== 'string' || !/^[0-9a-f]{64}$/.test(sha)) throw new SvcError('VALIDATION_FAILED', 'a wheel is asked for by its sha256 (64 lower-case hexadecimal digits)')
    // a wheel fetched or added since the last look (a miss costs a stat per directory, not a rescan)
    if (!this.wheels.has(sha) && await this.wheelDirsChanged()) await this.indexWheels()
    const path = this.wheels.get(sha)
    const bytes = path === undefined ? undefined : await readFile(path).catch(() => undefined)
    if (path === undefined || bytes === undefined || sha256Of(bytes) !== sha) {
      throw new SvcError('RUFID_NOT_FOUND', 'this node does not hold that wheel')
    }
    return { filename: basename(path), bytes: bytes.toString('base64') }
  }

  /**
   * FederationPort.fetchWheel: members that provide a wheel with `pin.sha256` (DHT provider records
   * keyed by the hash, announced for wheelhouses), then the other members; the first wheel whose
   * bytes have that hash wins. Once stored here, this node serves it to members that ask (it does
   * not announce it: see fetchCode).
   */
  async fetchWheel(pin: { name: string; version: string; sha256: string }): Promise<{ filename: string; bytes: Uint8Array }> {
    const tried = new Set<string>()
    const attempt = async (peerId: string): Promise<{ filename: string; bytes: Uint8Array } | undefined> => {
      if (tried.has(peerId) || peerId === this.nodeId) return undefined
      tried.add(peerId)
      try {
        const answer = await this.node.request(peerId, WHEEL_PROTOCOL, { sha256: pin.sha256 }, 30_000) as { filename?: unknown; bytes?: unknown }
        if (typeof answer.filename !== 'string' || typeof answer.bytes !== 'string' || answer.bytes.length > Math.ceil(MAX_REMOTE_WHEEL_BYTES / 3) * 4) return undefined
        const bytes = Buffer.from(answer.bytes, 'base64')
        if (sha256Of(bytes) !== pin.sha256) {
          this.log.warn({ peer_id: peerId, pin: `${pin.name}==${pin.version}` }, 'a member served a wheel that does not match its sha256: refused')
          return undefined
        }
        return { filename: answer.filename, bytes }
      } catch (err) {
        this.log.debug({ peer_id: peerId, err }, 'wheel fetch failed')
        return undefined
      }
    }
    const candidates = async function* (self: Federation): AsyncGenerator<string> {
      for await (const provider of self.node.providers(pin.sha256, { timeoutMs: 2_000 })) yield provider.peerId
      for (const m of self.node.members().map((x) => x.peerId).sort()) yield m
    }
    for await (const peerId of candidates(this)) {
      const wheel = await attempt(peerId)
      if (wheel === undefined) continue
      return wheel
    }
    throw new SvcError('FEDERATION_UNREACHABLE', `no federation member served a wheel of ${pin.name}==${pin.version} with sha256 ${pin.sha256}`, {
      details: { pin: `${pin.name}==${pin.version}`, sha256: pin.sha256, tried: [...tried] },
    })
  }

  async discover(principal: Principal, rufid: string): Promise<FederatedDiscovery> {
    try {
      const target = this.engine.functions.target(principal, rufid)
      const lineage = await this.engine.functions.lineage(principal, target)
      const entries = lineage.entries.filter((e) => e.rufid_short === target.short && (target.version === undefined || e.version === target.version))
      const digest = entries[0]?.content_digest ?? null
      const nodes: FederatedDiscovery['nodes'] = []
      if (digest) {
        const local = await this.engine.replication.localVersion(principal.tenant_id, target.short, entries[entries.length - 1]!.version)
        if (local && local.source_code !== '') nodes.push({ node_id: this.nodeId, endpoint: this.node.self.endpoint, source: 'self' })
        for (const p of await this.node.findProviders(digest, { timeoutMs: 2_000 })) {
          nodes.push({ node_id: p.peerId, endpoint: p.registration.endpoint, source: 'dht' })
        }
      }
      this.metrics?.federationDiscoveryRequests.inc({ result: nodes.length ? 'found' : 'not_found' })
      return {
        rufid, rufid_short: target.short, content_digest: digest, function_name: lineage.function_name,
        versions: entries.filter((e) => e.deleted_at === undefined).map((e) => `v${e.version}`), nodes,
      }
    } catch (err) {
      this.metrics?.federationDiscoveryRequests.inc({ result: 'error' })
      throw err
    }
  }

  // ---- registration ------------------------------------------------------------------------------

  nodes(): FederationNodeInfo[] {
    const info = (r: NodeRegistration, self: boolean, verified_at: string | null): FederationNodeInfo =>
      ({ node_id: r.node_id, endpoint: r.endpoint, capabilities: r.capabilities, self, verified_at })
    const out = new Map<string, FederationNodeInfo>()
    out.set(this.nodeId, info(this.node.self, true, null))
    for (const m of this.node.members()) out.set(m.peerId, info(m.registration, false, m.verified_at))
    for (const [id, r] of this.registered) if (!out.has(id)) out.set(id, info(r, false, null))
    return [...out.values()].sort((a, b) => (a.self ? -1 : b.self ? 1 : a.node_id.localeCompare(b.node_id)))
  }

  memberStatus(): Promise<FederationMemberStatus[]> {
    return this.memberStatusService.statuses()
  }

  /** Checks a registration's certificate against its node_id, broadcasts it, returns the node list. */
  async register(raw: unknown): Promise<FederationNodeInfo[]> {
    const r = raw as Partial<NodeRegistration> | null
    if (r === null || typeof r !== 'object' || typeof r.node_id !== 'string' || typeof r.endpoint !== 'string' || typeof r.auth?.certificate !== 'string') {
      throw new SvcError('VALIDATION_FAILED', 'a registration needs node_id, endpoint, capabilities and auth.certificate')
    }
    try {
      this.verifier.verify(r.auth.certificate, r.node_id)
    } catch (err) {
      const failure = err instanceof MembershipError ? err.failure : 'malformed'
      throw new SvcError('PERMISSION_DENIED', `registration refused: ${(err as Error).message}`, { details: { failure } })
    }
    const registration: NodeRegistration = {
      node_id: r.node_id, endpoint: r.endpoint,
      capabilities: { languages: r.capabilities?.languages ?? [], max_concurrent: r.capabilities?.max_concurrent ?? 1, protocols: r.capabilities?.protocols ?? [] },
      auth: { certificate: r.auth.certificate, public_key: r.auth.public_key ?? '' },
    }
    if (registration.node_id !== this.nodeId) this.registered.set(registration.node_id, registration)
    await this.node.publish(NODES_TOPIC, registration).catch(() => undefined)
    return this.nodes()
  }

  private async registerWithRegistries(): Promise<void> {
    for (const peer of this.init.registryPeers ?? []) {
      if (peer === this.nodeId) continue
      try {
        const list = await this.node.request(peer, REGISTER_PROTOCOL, this.node.self) as FederationNodeInfo[]
        this.log.info({ registry: peer, nodes: list.length }, 'registered with the federation registry')
      } catch (err) {
        this.log.warn({ registry: peer, err }, 'registration failed')
      }
    }
  }

  /** for tests: the member record of a peer */
  member(peerId: string): FederationMember | undefined {
    return this.node.member(peerId)
  }
}

export function createFederation(init: FederationInit, components: FederationComponents): Federation {
  return new Federation(init, components)
}

export type { VersionVector }
