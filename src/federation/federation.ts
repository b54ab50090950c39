import type { Engine } from '../engine/engine.js'
import type { SvcMetrics } from '../engine/metrics.js'
import type { SyncBatch, VersionVector } from '../engine/replication/catalog-replica.js'
import type { FederatedDiscovery, FederationMemberStatus, FederationNodeInfo, FederationPort, RemoteResult, RemoteResultQuery } from '../engine/replication/federation-port.js'
import type { CachedResult } from '../engine/executions/result-cache.js'
import type { Receipt } from '../core/receipt.js'
import { ResultProvider, type ResultProviderInit } from './result-provider.js'
import type { Principal } from '../engine/types.js'
import { CatalogSync, CATALOG_TOPIC, SYNC_PROTOCOL, type CatalogSyncInit } from './catalog-sync.js'
import { CertificateVerifier } from './certificates.js'
import { createChangeAuthenticator } from './change-authenticator.js'
import { CodeProvider, CODE_PROTOCOL } from './code-provider.js'
import { noopLogger, type FederationLogger } from './logger.js'
import { Latch } from './latch.js'
import { createFederationNode, type FederationMember, type FederationNode, type FederationNodeInit } from './node.js'
import { NODES_TOPIC, Registrar, REGISTER_PROTOCOL, type RegistrarInit } from './registrar.js'
import { WheelProvider, WHEEL_PROTOCOL, type WheelProviderInit } from './wheel-provider.js'

export { CATALOG_TOPIC, CODE_PROTOCOL, NODES_TOPIC, REGISTER_PROTOCOL, SYNC_PROTOCOL, WHEEL_PROTOCOL }

export interface FederationInit extends FederationNodeInit, CatalogSyncInit, RegistrarInit, WheelProviderInit {
  /** results of deterministic functions among members: trust policy and fan-out (result-provider.ts) */
  results?: Omit<ResultProviderInit, 'caCertPem' | 'revoked'>
  /** how many members fetching a digest from this node are told to announce it (code-provider.ts; default 2) */
  announcingFetchers?: number
  /** provider records only while the federation has more nodes than this (code-provider.ts; default 20, kad-dht's k) */
  announceProvidersAbove?: number
  /**
   * `ready` turns true at the latest this long after start (default 30 s; 0: at once), when no
   * member was caught up with by then (none reachable): the node then serves its own catalog
   */
  readyTimeoutMs?: number
  /**
   * once caught up, `ready` waits until no member has joined this node for this long (default 1 s;
   * 0: not at all), within `readyTimeoutMs`: the members that heard of it are still dialling it and
   * proving its membership, and a change it published before they finish reaches each of them only
   * after that (a gossiped change from a peer that is not yet a member is held until it proves itself)
   */
  readySettleMs?: number
}

/** defaults of `FederationInit.readyTimeoutMs` and `readySettleMs` */
export const DEFAULT_READY_TIMEOUT_MS = 30_000
export const DEFAULT_READY_SETTLE_MS = 1_000

/** Why a federation became ready: it caught up with a member, it has none to wait for, or it waited long enough. */
export type ReadyReason = 'caught_up' | 'no_bootstrap' | 'timeout'

export interface FederationComponents {
  /** what the federation needs of the engine: its replicated catalog, lineage (discovery), and its link */
  engine: Pick<Engine, 'replication' | 'functions' | 'federation' | 'executions' | 'auditLog'>
  logger?: FederationLogger
  metrics?: SvcMetrics
}

/**
 * The federation of one node, composed of small services over one libp2p member node:
 * catalog replication (catalog-sync.ts), code on demand and discovery (code-provider.ts), pinned
 * wheels (wheel-provider.ts), registration and the member list (registrar.ts). Each service is
 * given only what it needs and has its own start/stop. While it runs, the federation is
 * connected to the engine's link as its FederationPort and reports refused peers and member
 * changes there (the engine audits and publishes them; replicated changes and conflicts the
 * engine records itself).
 */
export class Federation implements FederationPort {
  readonly node: FederationNode
  readonly catalog: CatalogSync
  readonly code: CodeProvider
  readonly wheels: WheelProvider
  readonly registrar: Registrar
  readonly results: ResultProvider
  private readonly engine: FederationComponents['engine']
  private readonly log: FederationLogger
  private readonly metrics: SvcMetrics | undefined
  private readonly init: FederationInit
  private readonly verifier: CertificateVerifier
  private readonly unsubscribe: Array<() => void> = []
  private readonly readiness = new Latch<ReadyReason>()
  private readyTimer: NodeJS.Timeout | undefined
  private settleTimer: NodeJS.Timeout | undefined
  /** when a member last joined this node (ms) */
  private lastJoinAt = 0

  constructor(init: FederationInit, components: FederationComponents) {
    this.init = init
    this.engine = components.engine
    this.log = components.logger ?? noopLogger
    this.metrics = components.metrics
    const link = this.engine.federation
    this.verifier = new CertificateVerifier({ caCertPem: init.caCertPem, revoked: init.revoked ?? [] })
    this.node = createFederationNode(init, {
      logger: this.log,
      onMembersChanged: (count) => this.metrics?.federationNodesActive.set(count),
      // the node logged the refusal at warn; it is counted here and audited by the engine
      onRefused: (refusal) => {
        this.metrics?.federationMembershipRefusals.inc({ reason: refusal.reason })
        void link.memberRefused(refusal).catch((err: unknown) => this.log.warn({ err }, 'audit of a membership refusal failed'))
      },
    })
    const { node, log, metrics } = this
    const replica = this.engine.replication
    this.code = new CodeProvider({
      node, replica, functions: this.engine.functions, logger: log, ...(metrics ? { metrics } : {}),
      ...(init.announcingFetchers !== undefined ? { announcingFetchers: init.announcingFetchers } : {}),
      ...(init.announceProvidersAbove !== undefined ? { announceProvidersAbove: init.announceProvidersAbove } : {}),
    })
    this.wheels = new WheelProvider({ ...(init.wheelDirs ? { wheelDirs: init.wheelDirs } : {}) }, { node, logger: log })
    this.registrar = new Registrar({
      ...(init.registryPeers ? { registryPeers: init.registryPeers } : {}),
      ...(init.registrationTtlMs !== undefined ? { registrationTtlMs: init.registrationTtlMs } : {}),
      ...(init.maxRegistrations !== undefined ? { maxRegistrations: init.maxRegistrations } : {}),
    }, { node, verifier: this.verifier, replica, logger: log })
    this.catalog = new CatalogSync({
      ...(init.syncIntervalMs !== undefined ? { syncIntervalMs: init.syncIntervalMs } : {}),
      ...(init.syncIntervalMaxMs !== undefined ? { syncIntervalMaxMs: init.syncIntervalMaxMs } : {}),
      ...(init.retireOriginsAfterMs !== undefined ? { retireOriginsAfterMs: init.retireOriginsAfterMs } : {}),
      ...(init.syncPage !== undefined ? { syncPage: init.syncPage } : {}),
      ...(init.maxSyncPagesPerRound !== undefined ? { maxSyncPagesPerRound: init.maxSyncPagesPerRound } : {}),
      ...(init.maxConcurrentSyncs !== undefined ? { maxConcurrentSyncs: init.maxConcurrentSyncs } : {}),
      ...(init.newcomerWindowMs !== undefined ? { newcomerWindowMs: init.newcomerWindowMs } : {}),
      ...(init.joinSyncJitterMs !== undefined ? { joinSyncJitterMs: init.joinSyncJitterMs } : {}),
    }, {
      node, replica, logger: log, ...(metrics ? { metrics } : {}),
      onAddedBy: (digest, origin) => this.code.hintHolder(digest, origin),
    })
    this.results = new ResultProvider(
      { ...init.results, caCertPem: init.caCertPem, revoked: init.revoked ?? [] },
      { node, results: this.engine.executions.results, audit: this.engine.auditLog, logger: log },
    )
  }

  get nodeId(): string {
    return this.node.peerId
  }

  async start(): Promise<void> {
    // refused before anything starts (connect below would refuse it after the node started)
    if (this.engine.federation.port !== undefined) throw new Error('another federation is connected to this engine')
    // this node's changes carry its PeerId and signature; others' are applied only when they verify
    const signing = await this.engine.replication.useAuthenticator(createChangeAuthenticator({
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
    const link = this.engine.federation
    this.unsubscribe.push(this.node.onMember((event, member) => link.memberChanged(event, { node_id: member.peerId, endpoint: member.registration.endpoint })))
    await this.code.start()
    await this.wheels.start()
    await this.registrar.start()
    await this.results.start()
    this.unsubscribe.push(link.connect(this))
    const timeoutMs = this.init.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS
    if ((this.init.bootstrap ?? []).length === 0) this.becomeReady('no_bootstrap')
    else if (timeoutMs <= 0) this.becomeReady('timeout')
    else {
      this.unsubscribe.push(this.node.onMember((event) => {
        if (event === 'joined') this.lastJoinAt = Date.now()
      }))
      this.unsubscribe.push(this.catalog.onCaughtUp(() => this.settleThenReady()))
      this.readyTimer = setTimeout(() => {
        if (this.readiness.isSet) return
        this.log.warn({ timeout_ms: timeoutMs, members: this.node.members().length }, 'no member caught up with since start: serving the local catalog')
        this.becomeReady('timeout')
      }, timeoutMs)
      this.readyTimer.unref()
    }
    await this.catalog.start()
  }

  /**
   * Whether this node serves as a caught-up member (the daemon's readiness: /readyz, gRPC health).
   * A node that starts with bootstrap peers may lack what was published while it was away, or
   * everything, if it is new: it is ready once a sync round pulled everything a member had
   * (`CatalogSync.caughtUp`) and no member joined it for `readySettleMs` since (the members that
   * heard of it have dialled it and verified its certificate, so what it publishes reaches them
   * at once), or `readyTimeoutMs` after start whatever it reached. A node without bootstrap peers
   * (the federation's first) has nothing to wait for.
   */
  get ready(): boolean {
    return this.readiness.isSet
  }

  /** Calls `listener` once the node is ready (at once when it is). Returns the unsubscribe. */
  onReady(listener: (reason: ReadyReason) => void): () => void {
    return this.readiness.on(listener)
  }

  /** Caught up: ready once no member joined for `readySettleMs` (the members dialling this node are done). */
  private settleThenReady(): void {
    const settleMs = this.init.readySettleMs ?? DEFAULT_READY_SETTLE_MS
    const quietFor = Date.now() - this.lastJoinAt
    if (this.readiness.isSet || !this.node.started) return
    if (quietFor >= settleMs) {
      this.becomeReady('caught_up')
      return
    }
    this.settleTimer = setTimeout(() => this.settleThenReady(), settleMs - quietFor)
    this.settleTimer.unref()
  }

  private becomeReady(reason: ReadyReason): void {
    if (this.readiness.isSet) return
    this.clearReadyTimers()
    this.readiness.set(reason)
  }

  private clearReadyTimers(): void {
    if (this.readyTimer) clearTimeout(this.readyTimer)
    this.readyTimer = undefined
    if (this.settleTimer) clearTimeout(this.settleTimer)
    this.settleTimer = undefined
  }

  async stop(): Promise<void> {
    this.clearReadyTimers()
    this.readiness.reset()
    for (const u of this.unsubscribe.splice(0)) u()
    await this.catalog.stop()
    await this.results.stop()
    await this.registrar.stop()
    await this.wheels.stop()
    await this.code.stop()
    await this.node.stop()
  }

  // ---- FederationPort: each call answered by the service that owns it ----------------------------

  findResult(query: RemoteResultQuery): Promise<RemoteResult | undefined> {
    return this.results.find(query)
  }

  offerResult(key: string, entry: CachedResult): void {
    this.results.offer(key, entry)
  }

  acceptsResult(entry: CachedResult): boolean {
    return this.results.accepts(entry)
  }

  compareResult(remote: RemoteResult, local: Receipt): void {
    this.results.compare(remote, local)
  }

  nodes(): FederationNodeInfo[] {
    return this.registrar.nodes()
  }

  memberStatus(): Promise<FederationMemberStatus[]> {
    return this.registrar.memberStatus()
  }

  register(registration: unknown): Promise<FederationNodeInfo[]> {
    return this.registrar.register(registration)
  }

  discover(principal: Principal, rufid: string): Promise<FederatedDiscovery> {
    return this.code.discover(principal, rufid)
  }

  sync(batch: Partial<SyncBatch>): Promise<SyncBatch> {
    return this.catalog.sync(batch)
  }

  fetchCode(tenant: string, short: string, version: number, contentDigest: string): Promise<string> {
    return this.code.fetchCode(tenant, short, version, contentDigest)
  }

  fetchWheel(pin: { name: string; version: string; sha256: string }): Promise<{ filename: string; bytes: Uint8Array }> {
    return this.wheels.fetchWheel(pin)
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
