import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

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
  federationNodesActive: Gauge
  federationSyncDuration: Histogram
  federationDiscoveryRequests: Counter<'result'>
  /** what `svc_rufid_cache_hits_ratio` reads at scrape time; the registry sets `read` */
  cacheHitRatioSource: { read: () => number }
}

export interface MetricsInit {
  /** also collect process and Node.js default metrics (once per registry) */
  defaultMetrics?: boolean
}

/** the `result` label values of `svc_federation_discovery_requests_total` */
export const DISCOVERY_RESULTS = ['found', 'not_found', 'error'] as const

const LATENCY_BUCKETS = [0.0005, 0.001, 0.002, 0.003, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

export function createMetrics(init: MetricsInit = {}): SvcMetrics {
  const registry = new Registry()
  if (init.defaultMetrics) collectDefaultMetrics({ register: registry })
  const registers = [registry]
  const ratioSource = { read: (): number => 0 }
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
    cacheHitRatioSource: ratioSource,
  }
  // every result the federation reports (src/federation/federation.ts) reads 0 before the first
  // discovery, so a rate() or an alert on it has a series from the start
  for (const result of DISCOVERY_RESULTS) metrics.federationDiscoveryRequests.inc({ result }, 0)
  return metrics
}
