import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import { CHANGE_REJECTIONS } from './replication/change-authenticator.js'
import type { SandboxTenantStats } from './sandbox/types.js'

/**
 * Every metric name of service-spec §8, on one registry per node (several in-process nodes in a
 * test each get their own). Adapters record the `svc_protocol_*` ones; the engine the rest.
 */
export interface SvcMetrics {
  registry: Registry
  protocolRequests: Counter<'protocol' | 'operation' | 'status'>
  protocolRequestDuration: Histogram<'protocol' | 'operation'>
  protocolErrors: Counter<'protocol' | 'code'>
  rufidCreations: Counter<'language'>
  rufidResolutions: Counter<'cached'>
  rufidCacheHitsRatio: Gauge
  functionExecutions: Counter<'language' | 'status'>
  functionExecutionDuration: Histogram<'language'>
  functionErrors: Counter<'code'>
  resultCacheLookups: Counter<'result'>
  resultCacheHitsRatio: Gauge
  federationNodesActive: Gauge
  federationSyncDuration: Histogram
  federationDiscoveryRequests: Counter<'result'>
  /** peers refused membership (disconnected and denied for a back-off period), by reason */
  federationMembershipRefusals: Counter<'reason'>
  /** replicated changes not applied (see CHANGE_REJECTIONS), by reason */
  federationChangesRejected: Counter<'reason'>
  /** peers in the DHT routing table, by whether they proved membership (`verified="false"` should be 0) */
  federationRoutingTablePeers: Gauge<'verified'>
  /** what `svc_federation_dht_routing_table_peers` reads at scrape time; the federation sets `read` */
  routingTableSource: { read: () => { verified: number; others: number } }
  /** what `svc_rufid_cache_hits_ratio` reads at scrape time; the registry sets `read` */
  cacheHitRatioSource: { read: () => number }
  /**
   * what the `svc_sandbox_tenant_*` metrics read at scrape time (the sandbox's fair scheduler, per
   * root tenant); the daemon sets `read`
   */
  sandboxTenantsSource: { read: () => readonly SandboxTenantStats[] }
  // -- event-loop blocks (issue 27; operations/loop-monitor.ts) ------------------------------
  // (the lag itself is prom-client's default nodejs_eventloop_lag_* gauges, on the daemon's registry)
  /** stalls of the event loop longer than the block threshold, by the operation that ran (`none`: no operation) */
  eventLoopBlocks: Counter<'protocol' | 'operation'>
  /** how long each of those stalls held the event loop */
  eventLoopBlockDuration: Histogram
}

export interface MetricsInit {
  /** also collect process and Node.js default metrics (once per registry) */
  defaultMetrics?: boolean
}

/** the `result` label values of `svc_federation_discovery_requests_total` */
export const DISCOVERY_RESULTS = ['found', 'not_found', 'error'] as const

/**
 * The `reason` label values of `svc_federation_membership_refusals_total`: why a peer was refused
 * membership (the federation refuses every outcome but a verified certificate, within a deadline).
 * - timeout: no verified answer within `federation.membership_timeout_ms` (silent, hanging, slow drip)
 * - malformed: an answer that is not a registration (not JSON, no certificate, not an X.509 certificate)
 * - oversized: an answer longer than a registration can be
 * - stream_reset: the exchange was reset or the connection closed before it ended
 * - no_protocol: the peer does not speak the membership protocol
 * - bad_chain: a certificate not issued by the federation CA
 * - not_yet_valid, expired, revoked: a certificate outside its validity period or revoked
 * - peer_id_mismatch: a certificate (or registration) bound to another PeerId than the connection's
 * - disagreement: a second exchange presented another certificate than the first
 * - forged_change: a member sent a replicated change whose signature does not verify
 * - replayed_change: a member gossiped another origin's (genuine) change as its own message
 */
export const MEMBERSHIP_REFUSAL_REASONS = [
  'timeout', 'malformed', 'oversized', 'stream_reset', 'no_protocol', 'bad_chain', 'not_yet_valid', 'expired', 'revoked',
  'peer_id_mismatch', 'disagreement', 'forged_change', 'replayed_change',
] as const
export type MembershipRefusalReason = (typeof MEMBERSHIP_REFUSAL_REASONS)[number]

/** the `reason` label values of `svc_federation_changes_rejected_total` */
/**
 * Why a replicated change was not applied; `sequence_gap`: a gossiped change above a gap in its
 * origin's sequence, not applied on its own (a sync with its origin brings it with the missing ones).
 */
export const CHANGE_REJECTION_REASONS = [...CHANGE_REJECTIONS, 'malformed', 'duplicate_sequence', 'sequence_gap'] as const

const LATENCY_BUCKETS = [0.0005, 0.001, 0.002, 0.003, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

export function createMetrics(init: MetricsInit = {}): SvcMetrics {
  const registry = new Registry()
  if (init.defaultMetrics) collectDefaultMetrics({ register: registry })
  const registers = [registry]
  const ratioSource = { read: (): number => 0 }
  const sandboxTenantsSource = { read: (): readonly SandboxTenantStats[] => [] }
  const routingTableSource = { read: (): { verified: number; others: number } => ({ verified: 0, others: 0 }) }
  const metrics: SvcMetrics = {
    registry,
    protocolRequests: new Counter({
      name: 'svc_protocol_requests_total', help: 'Requests served, by protocol, operation and status',
      labelNames: ['protocol', 'operation', 'status'], registers,
    }),
    protocolRequestDuration: new Histogram({
      name: 'svc_protocol_request_duration_seconds', help: 'Request duration by protocol and operation',
      labelNames: ['protocol', 'operation'], buckets: LATENCY_BUCKETS, registers,
    }),
    protocolErrors: new Counter({
      name: 'svc_protocol_errors_total', help: 'Requests answered with an error, by protocol and svc error code',
      labelNames: ['protocol', 'code'], registers,
    }),
    rufidCreations: new Counter({
      name: 'svc_rufid_creations_total', help: 'New function versions created', labelNames: ['language'], registers,
    }),
    rufidResolutions: new Counter({
      name: 'svc_rufid_resolutions_total', help: 'RUFID resolutions, by whether the cache answered',
      labelNames: ['cached'], registers,
    }),
    rufidCacheHitsRatio: new Gauge({
      name: 'svc_rufid_cache_hits_ratio', help: 'Resolution cache hits over lookups since start', registers,
      collect() {
        this.set(ratioSource.read())
      },
    }),
    functionExecutions: new Counter({
      name: 'svc_function_executions_total', help: 'Function executions, by language and final status',
      labelNames: ['language', 'status'], registers,
    }),
    functionExecutionDuration: new Histogram({
      name: 'svc_function_execution_duration_seconds', help: 'Function execution wall time',
      labelNames: ['language'], buckets: LATENCY_BUCKETS, registers,
    }),
    functionErrors: new Counter({
      name: 'svc_function_errors_total', help: 'Failed executions by svc error code', labelNames: ['code'], registers,
    }),
    resultCacheLookups: new Counter({
      name: 'svc_result_cache_lookups_total',
      help: 'Calls of deterministic functions, by where the result came from: hit (this node\'s result cache), remote_hit (a member\'s verified receipt), miss (run here)',
      labelNames: ['result'], registers,
    }),
    resultCacheHitsRatio: new Gauge({
      name: 'svc_result_cache_hits_ratio', help: 'Result cache hits (local and remote) over lookups since start', registers,
    }),
    federationNodesActive: new Gauge({
      name: 'svc_federation_nodes_active', help: 'Federation members currently connected', registers,
    }),
    federationSyncDuration: new Histogram({
      name: 'svc_federation_sync_duration_seconds', help: 'Duration of catalog sync rounds',
      buckets: LATENCY_BUCKETS, registers,
    }),
    federationDiscoveryRequests: new Counter({
      name: 'svc_federation_discovery_requests_total', help: 'Federated discovery requests', labelNames: ['result'],
      registers,
    }),
    federationMembershipRefusals: new Counter({
      name: 'svc_federation_membership_refusals_total', help: 'Peers refused federation membership (disconnected, redials refused for a back-off period), by reason',
      labelNames: ['reason'], registers,
    }),
    federationChangesRejected: new Counter({
      name: 'svc_federation_changes_rejected_total', help: 'Replicated catalog changes not applied (unsigned, forged, unknown or untrusted origin, malformed), by reason',
      labelNames: ['reason'], registers,
    }),
    federationRoutingTablePeers: new Gauge({
      name: 'svc_federation_dht_routing_table_peers', help: 'Peers in the DHT routing table, by whether they proved federation membership',
      labelNames: ['verified'], registers,
      collect() {
        const { verified, others } = routingTableSource.read()
        this.set({ verified: 'true' }, verified)
        this.set({ verified: 'false' }, others)
      },
    }),
    routingTableSource,
    cacheHitRatioSource: ratioSource,
    sandboxTenantsSource,
    // -- event-loop blocks (issue 27; operations/loop-monitor.ts) ------------------------------
    eventLoopBlocks: new Counter({
      name: 'svc_event_loop_blocks_total',
      help: 'Stalls of the event loop longer than server.block_warn_ms, by the protocol and operation whose synchronous code ran (none: no operation)',
      labelNames: ['protocol', 'operation'], registers,
    }),
    eventLoopBlockDuration: new Histogram({
      name: 'svc_event_loop_block_seconds', help: 'How long each stall of the event loop longer than server.block_warn_ms lasted',
      buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registers,
    }),
  }
  registerSandboxTenantMetrics(registers, sandboxTenantsSource)
  // every result the federation reports (src/federation/: code-provider.ts, node.ts, catalog-sync.ts) reads 0 before the first
  // discovery, so a rate() or an alert on it has a series from the start
  for (const result of DISCOVERY_RESULTS) metrics.federationDiscoveryRequests.inc({ result }, 0)
  for (const reason of MEMBERSHIP_REFUSAL_REASONS) metrics.federationMembershipRefusals.inc({ reason }, 0)
  for (const reason of CHANGE_REJECTION_REASONS) metrics.federationChangesRejected.inc({ reason }, 0)
  return metrics
}

/**
 * Per-tenant sandbox scheduling, read from the scheduler at scrape time (the `tenant` label is the
 * root tenant; a tenant appears once it has sent a call): calls waiting and running, worker time
 * served, and calls refused by reason (tenant_queue_full: its own queue limit; queue_share: the
 * shared queue was full and it held the most; pushed_out: a waiting call refused to make room for
 * another tenant's).
 */
function registerSandboxTenantMetrics(registers: Registry[], source: SvcMetrics['sandboxTenantsSource']): void {
  new Gauge({
    name: 'svc_sandbox_tenant_queued', help: 'Calls of a tenant waiting for a sandbox worker', labelNames: ['tenant'], registers,
    collect() {
      this.reset()
      for (const t of source.read()) this.set({ tenant: t.tenant }, t.queued)
    },
  })
  new Gauge({
    name: 'svc_sandbox_tenant_running', help: 'Calls of a tenant running in sandbox workers', labelNames: ['tenant'], registers,
    collect() {
      this.reset()
      for (const t of source.read()) this.set({ tenant: t.tenant }, t.running)
    },
  })
  new Counter({
    name: 'svc_sandbox_tenant_worker_seconds_total', help: 'Sandbox worker time held by the calls of a tenant', labelNames: ['tenant'], registers,
    collect() {
      this.reset()
      for (const t of source.read()) this.inc({ tenant: t.tenant }, t.servedMs / 1000)
    },
  })
  new Counter({
    name: 'svc_sandbox_tenant_refused_total',
    help: 'Calls of a tenant refused by the sandbox scheduler (1005), by reason: tenant_queue_full, queue_share, pushed_out',
    labelNames: ['tenant', 'reason'], registers,
    collect() {
      this.reset()
      for (const t of source.read()) {
        for (const [reason, n] of Object.entries(t.refused)) if (n) this.inc({ tenant: t.tenant, reason }, n)
      }
    },
  })
}
