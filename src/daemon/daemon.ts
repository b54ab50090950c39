import { mkdirSync, readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { createServer as createTlsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join, resolve } from 'node:path'
import type { Logger } from 'pino'
import { createClientAddresses } from '../api/client-address.js'
import { createGraphqlMiddleware } from '../api/graphql/http.js'
import { attachGraphqlWs } from '../api/graphql/ws.js'
import { createGrpcServer } from '../api/grpc/server.js'
import { createRestApi } from '../api/rest/app.js'
import { CONSOLE_PATH, isConsoleBuilt } from '../api/rest/console.js'
import { attachEventSocket } from '../api/ws/event-socket.js'
import { createSandbox, resolveMemoryBound, resolveOsIsolation, type MemoryBound, type OsIsolation } from '../engine/sandbox/index.js'
import {
  createCatalogStore, createEngine, createMetrics, EventBus, LoopMonitor, NodeDatabase, type Engine, type EngineAuthInit, type LevelDatabase,
} from '../engine/index.js'
import { announceAdminKey } from './admin-key.js'
import { catalogLocation, prepareDataDirectory, StartupFailure } from './data-directory.js'
import { startDaemonFederation, type DaemonFederation } from '../federation/daemon-wiring.js'
import { nodeCapabilities } from '../federation/node.js'
import { loadNodeReceiptSigner } from '../federation/receipt-signer.js'
import type { SvcConfig } from './config.js'
import { VERSION } from './version.js'

export interface Daemon {
  readonly engine: Engine
  /** base URL of the REST door, e.g. http://127.0.0.1:8080 */
  readonly url: string
  /** host:port of the gRPC door, when enabled */
  readonly grpcAddress: string | undefined
  start(): Promise<void>
  /**
   * Stops taking requests, lets in-flight ones finish, writes what waits and closes storage, all
   * within `server.shutdown_grace_ms` whatever the state of the disk; resolves with what it could
   * not do (never rejects). A second call returns the same stop.
   */
  stop(): Promise<StopReport>
}

/** What a stop could not do within the grace (`server.shutdown_grace_ms`). */
export interface StopReport {
  /** storage flushed and closed within the grace: nothing acknowledged was lost */
  complete: boolean
  /** the steps that did not finish within their share of the grace (`doors`, `http`, `federation`, `engine`) */
  unfinished: string[]
  /** records acknowledged and never written (all 0 when complete) */
  unwritten: { execution_records: number; statistics: number; audit_entries: number; receipts: number; other: number }
  /** how long the stop took (ms) */
  ms: number
}

/**
 * Of the shutdown grace, the storage's flush and close get at least this much (or a quarter of a
 * shorter grace), however long in-flight requests take: requests still running then are cut.
 */
const STORAGE_SHARE_MS = 2000
/** The engine's stop (the storage's flush and close) gets at least this long, even with a shorter grace. */
const MIN_STORAGE_MS = 250
/** After a stop out of time, closing LevelDB (which releases its lock) is given this long. */
const CLOSE_AFTER_TIMEOUT_MS = 250

/** How a piece of work ended by a deadline: finished, failed, or still running. */
async function settleBy(work: Promise<unknown>, deadline: number): Promise<'done' | 'failed' | 'timeout'> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<'timeout'>((resolveTimeout) => {
    timer = setTimeout(() => resolveTimeout('timeout'), Math.max(0, deadline - Date.now()))
  })
  try {
    return await Promise.race([work.then(() => 'done' as const, () => 'failed' as const), timeout])
  } finally {
    clearTimeout(timer)
  }
}

export interface DaemonComponents {
  logger: Logger
  /** the environment (native test mode reads ADMIN_API_KEY, WRITE_ADMIN_KEY_FILE, ADMIN_KEY_FILE) */
  env?: NodeJS.ProcessEnv
  /** where the one-time admin key is shown (default: standard output) */
  announce?: (text: string) => void
}

/**
 * The sandbox workers' OS wall (execution.os_isolation), resolved once at start: they never see the
 * data directory (the wheel cache inside it excepted, read-only), the node's keys and certificates
 * or its config file. `required` without a working wall stops the start (exit code 8); `auto`
 * without one warns once.
 */
function wallFor(config: Readonly<SvcConfig>, env: NodeJS.ProcessEnv, wheelDirs: string[], logger: Logger): OsIsolation {
  const mode = config.execution.os_isolation
  const { tls } = config.server
  const fed = config.federation
  const hiddenPaths = [
    config.data_dir, tls.cert_file, tls.key_file, tls.client_ca_file, config.auth.jwt.public_key_file, config.auth.oauth_introspection.client_secret_file,
    fed.ca_file, fed.cert_file, fed.identity_file, env.SVC_CONFIG ?? '',
  ].filter((p) => p !== '').map((p) => resolve(p))
  // bound when the wall starts: the wheel cache must exist by then (wheels fetched later appear in it)
  for (const dir of wheelDirs) mkdirSync(dir, { recursive: true })
  const wall = resolveOsIsolation({ mode, hiddenPaths, readablePaths: wheelDirs })
  const { status } = wall
  const log = logger.child({ component: 'sandbox' })
  if (status.layer !== 'none') log.info({ os_isolation: status }, `sandbox workers run behind an OS wall (${status.layer})`)
  else if (mode === 'required') {
    throw new StartupFailure('sandbox_isolation_unavailable', `execution.os_isolation is required but no OS wall works on this host (${status.reason}). ` +
      'Install bubblewrap (apt-get install bubblewrap) and allow unprivileged user namespaces, or run as root with util-linux, or set execution.os_isolation to auto')
  } else if (mode === 'auto') {
    log.warn({ os_isolation: status }, `sandbox workers run WITHOUT an OS wall: ${status.reason}`)
  }
  return wall
}

/**
 * The sandbox workers' memory bound (execution.worker_memory_mb) and their cgroups
 * (execution.cgroups), resolved once at start: `required` without usable cgroups stops the start
 * (exit code 8); `auto` without them says why once.
 */
function memoryBoundFor(config: Readonly<SvcConfig>, logger: Logger): MemoryBound {
  const x = config.execution
  const log = logger.child({ component: 'sandbox' })
  const bound = resolveMemoryBound({
    mode: x.cgroups,
    workerMemoryMb: x.worker_memory_mb,
    onProblem: (message) => log.warn({}, message),
  })
  const { status } = bound
  if (status.cgroup !== 'none') log.info({ memory_bound: status }, `sandbox workers run in cgroup ${status.cgroup} memory cgroups of ${status.cgroupMemoryMb} MB each`)
  else if (x.cgroups === 'required') {
    throw new StartupFailure('sandbox_isolation_unavailable', `execution.cgroups is required but the sandbox workers cannot be put in cgroups here (${status.reason}). ` +
      'Run the node as root (cgroup v1), delegate its cgroup to its user (cgroup v2, systemd Delegate=yes), or set execution.cgroups to auto')
  } else if (x.cgroups === 'auto' && x.worker_memory_mb > 0) {
    log.warn({ memory_bound: status }, `sandbox workers run without memory cgroups: ${status.reason}`)
  }
  return bound
}

/** The composition root: config → components → start/stop in order. */
export function createDaemon(config: Readonly<SvcConfig>, { logger, env = process.env, announce }: DaemonComponents): Daemon {
  // before LevelDB opens (it opens as soon as it is constructed): a data directory that cannot be
  // written or whose files fail their checks stops the start with its own exit code
  prepareDataDirectory(config.data_dir)
  const nodeDatabase = new NodeDatabase({
    location: catalogLocation(config.data_dir),
    minFreeBytes: config.storage.min_free_mb * 2 ** 20,
    checkIntervalMs: config.storage.check_interval_ms,
  })
  const storageLogger = logger.child({ component: 'storage' })
  nodeDatabase.onStorageChange((state) => {
    if (state.condition === 'writable') storageLogger.info({ storage: state }, 'storage writable again: writes resume')
    else storageLogger.error({ storage: state }, 'disk full: writes are refused with 1010 until space returns; reads go on')
  })
  const db = nodeDatabase as unknown as LevelDatabase
  const metrics = createMetrics({ defaultMetrics: true })
  const records = config.execution.records
  const store = createCatalogStore(
    {
      db,
      metrics,
      onSwept: (swept) => storageLogger.info({ swept }, `retention removed ${swept.records} execution records (${swept.bytes} bytes), ${swept.receipts} receipts`),
    },
    {
      executionFlushMs: config.execution.record_flush_ms,
      tenantQuotaBytes: config.storage.tenant_quota_mb * 2 ** 20,
      retention: { retentionDays: records.retention_days, maxPerTenant: records.max_per_tenant, sweepIntervalMs: records.sweep_interval_ms },
    },
  )
  // -- event-loop blocks (issue 27): a stall longer than server.block_warn_ms names its operation --
  const loopMonitor = config.server.block_warn_ms > 0
    ? new LoopMonitor({ thresholdMs: config.server.block_warn_ms }, { metrics, logger: logger.child({ component: 'loop' }) })
    : undefined
  const events = new EventBus()
  const x = config.execution
  // wheels fetched from federation peers (each checked against its pin's sha256), beside the wheelhouse
  const wheelCache = join(config.data_dir, 'wheels')
  const wheelDirs = [x.python.wheelhouse, wheelCache].filter((d) => d !== '')
  const osIsolation = wallFor(config, env, wheelDirs, logger)
  const memoryBound = memoryBoundFor(config, logger)
  const sandbox = createSandbox({
    workers: x.workers,
    startOnDemand: x.workers_on_demand,
    maxWarmIsolatesPerWorker: x.max_warm_isolates_per_worker,
    maxWarmMbPerWorker: x.max_warm_mb_per_worker,
    maxWarmMbPerTenant: x.max_warm_mb_per_tenant,
    maxLogBytes: x.max_log_bytes,
    queueLimit: x.queue_limit,
    queueLimitPerTenant: x.scheduling.queue_limit_per_tenant,
    maxLongRunningPerTenant: x.scheduling.max_long_running_per_tenant,
    longCallMs: x.scheduling.long_call_ms,
    tenantWeights: x.scheduling.weights,
    killGraceMs: x.kill_grace_ms,
    ...(x.python.wheelhouse ? { pythonWheelhouse: x.python.wheelhouse } : {}),
    pythonWheelCache: wheelCache,
    pythonInterpretersPerWorker: x.python.interpreters_per_worker,
    pythonInterpreterMbPerWorker: x.python.max_interpreter_mb_per_worker,
    pythonInterpreterMbPerTenant: x.python.max_interpreter_mb_per_tenant,
    pythonKillGraceMs: x.python.kill_grace_ms,
    osIsolation,
    memoryBound,
    logger: logger.child({ component: 'sandbox' }),
  })
  const limitsOf = (l: SvcConfig['execution']['defaults']) => ({ timeoutMs: l.timeout_ms, memoryMb: l.memory_mb, cpuMs: l.cpu_ms })
  let shareBase = config.server.share_base
  const engine = createEngine(
    {
      registry: {
        cache: { maxEntries: config.registry.cache_max_entries, ttlMs: config.registry.cache_ttl_ms },
        maxSourceBytes: config.registry.max_source_bytes,
        shareBase: () => shareBase,
      },
      execution: {
        defaults: limitsOf(x.defaults),
        max: limitsOf(x.max),
        resultCache: {
          maxEntries: x.result_cache.max_entries,
          maxBytes: x.result_cache.max_bytes,
          maxResultBytes: x.result_cache.max_result_bytes,
          maxBytesPerTenant: x.result_cache.max_bytes_per_tenant,
        },
        maxResultBytes: x.max_result_bytes,
      },
      auth: authInitOf(config),
      rateLimits: {
        perKey: ruleOf(config.rate_limits.per_key),
        perTenant: ruleOf(config.rate_limits.per_tenant),
        perIpUnauthenticated: ruleOf(config.rate_limits.per_ip_unauthenticated),
      },
      audit: { retentionDays: config.audit.retention_days, sweepIntervalMs: config.audit.sweep_interval_ms, flushMs: config.audit.flush_ms },
      lockfile: {
        pipIndexUrl: config.lockfile.pip_index_url,
        npmRegistryUrl: config.lockfile.npm_registry_url,
        timeoutMs: config.lockfile.timeout_ms,
        deadlineMs: config.lockfile.deadline_ms,
        maxResponseBytes: config.lockfile.max_response_bytes,
        concurrency: config.lockfile.concurrency,
      },
      wheels: { ...(x.python.wheelhouse ? { wheelhouse: x.python.wheelhouse } : {}), cacheDir: wheelCache },
      marketplace: { maxIndexedFunctions: config.marketplace.max_indexed_functions },
    },
    { db, store, sandbox, metrics, events },
  )
  metrics.sandboxTenantsSource.read = () => sandbox.stats().tenants
  let draining = false
  // the caller's address on every door: the connection's, or what a trusted proxy forwarded
  const addresses = createClientAddresses({ trustedProxies: config.server.trusted_proxies })
  const app = createRestApi(
    {
      bodyLimitBytes: config.server.body_limit_bytes,
      metricsAccess: config.server.metrics_access,
      openapi: {
        maxSourceBytes: config.registry.max_source_bytes, maxExpiresDays: config.auth.keys.max_expires_days,
        defaultExpiresDays: config.auth.keys.default_expires_days, version: VERSION,
      },
      ...(config.server.console ? { console: {} } : {}),
      node: { version: VERSION, sandboxWorkers: x.workers, sandboxIsolation: osIsolation.status, sandboxMemoryBound: memoryBound.status, federation: config.federation.enabled },
    },
    {
      engine, logger: logger.child({ component: 'rest' }), isDraining: () => draining, addresses,
      // a federated node serves once it caught up with a member (federation.ready_timeout_ms at most)
      ...(config.federation.enabled ? { isJoining: () => !(federation?.federation.ready ?? false) } : {}),
    },
  )
  const graphqlInit = {
    maxDepth: config.graphql.max_depth,
    maxCost: config.graphql.max_cost,
    maxDocumentBytes: config.graphql.max_document_bytes,
    introspection: config.graphql.introspection,
    bodyLimitBytes: config.server.body_limit_bytes,
  }
  const graphqlLogger = logger.child({ component: 'graphql' })
  const graphql = createGraphqlMiddleware(graphqlInit, { engine, logger: graphqlLogger })
  app.use(graphql)
  const tlsFiles = config.server.tls
  const grpc = config.grpc.enabled
    ? createGrpcServer({
        host: config.grpc.host,
        port: config.grpc.port,
        maxMessageBytes: config.grpc.max_message_bytes,
        shutdownGraceMs: config.server.shutdown_grace_ms,
        tls: tlsFiles.enabled
          ? {
              cert: readFileSync(tlsFiles.cert_file),
              key: readFileSync(tlsFiles.key_file),
              ...(tlsFiles.client_ca_file && { clientCa: readFileSync(tlsFiles.client_ca_file) }),
            }
          : undefined,
      }, { engine, logger, addresses })
    : undefined
  let grpcUrl: string | undefined
  let sockets: Array<{ close(): Promise<void> }> = []
  let server: Server | undefined
  let federation: DaemonFederation | undefined
  let url = ''
  let stopping: Promise<StopReport> | undefined

  /**
   * The stop, every step bounded by the grace: the doors, in-flight requests and the federation get
   * it minus the storage's share; the engine (sandbox, background executions, the audit and
   * execution records' flush, LevelDB's close) the rest. Storage that cannot write by then (a full
   * disk: the group commit retries until space returns) is given up: what it held is counted and
   * logged, and the report says the stop was incomplete.
   */
  async function stopWithin(graceMs: number): Promise<StopReport> {
    const started = Date.now()
    const deadline = started + graceMs
    const doorsBy = deadline - Math.min(STORAGE_SHARE_MS, Math.floor(graceMs / 4))
    const unfinished: string[] = []
    const step = async (name: string, work: Promise<unknown>, by: number): Promise<'done' | 'failed' | 'timeout'> => {
      const ended = await settleBy(work, by)
      if (ended === 'timeout') {
        unfinished.push(name)
        logger.warn({ step: name, grace_ms: graceMs }, `stopping: ${name} did not finish within its share of the shutdown grace`)
      }
      return ended
    }
    draining = true
    logger.info({ grace_ms: graceMs }, 'svc-node stopping')
    // subscribers (/ws, GraphQL over WebSocket and SSE) get node.stopping while their sockets are
    // open; one turn of the event loop lets the subscription streams write it before they close
    engine.announceStopping()
    await new Promise<void>((resolveTurn) => setImmediate(resolveTurn))
    // open streams and sockets would otherwise hold the servers open
    await step('doors', Promise.allSettled([...sockets.map((s) => s.close()), graphql.close(), grpc?.stop()]), doorsBy)
    if (server) {
      const closed = new Promise<void>((r) => server!.close(() => r()))
      server.closeIdleConnections()
      const timer = setTimeout(() => server?.closeAllConnections(), Math.max(0, doorsBy - Date.now()))
      await step('http', closed, doorsBy + CLOSE_AFTER_TIMEOUT_MS)
      clearTimeout(timer)
    }
    const leaving = federation?.stop().catch((err: unknown) => logger.warn({ err }, 'federation stop failed'))
    federation = undefined
    if (leaving) await step('federation', leaving, doorsBy)
    const stopped = await step('engine', engine.stop(), Math.max(deadline, started + MIN_STORAGE_MS))
    const unwritten = { execution_records: 0, statistics: 0, audit_entries: 0, receipts: 0, other: 0 }
    if (stopped !== 'done') {
      // count what waits, give it up, and close LevelDB if it can be done at once
      for (const [name, n] of store.unwritten()) {
        if (name === 'executions') unwritten.execution_records += n
        else if (name === 'function_stats') unwritten.statistics += n
        else if (name === 'audit') unwritten.audit_entries += n
        else if (name === 'receipts' || name === 'receipt_certificates') unwritten.receipts += n
        // a record's usage entry goes with it (tenant-usage.ts)
        else if (name !== 'tenant_usage') unwritten.other += n
      }
      unwritten.audit_entries += engine.auditLog.unwritten()
      const reason = new Error('the node stopped before this could be written')
      engine.auditLog.abandon(reason)
      store.abandonWrites(reason)
      await settleBy(nodeDatabase.close(), Date.now() + CLOSE_AFTER_TIMEOUT_MS)
      logger.error({ unwritten, unfinished, storage: nodeDatabase.storage, grace_ms: graceMs },
        `stop incomplete: ${unwritten.execution_records} execution records, ${unwritten.audit_entries} audit entries and ${unwritten.statistics} ` +
        `usage statistics could not be written within the shutdown grace (${graceMs} ms${nodeDatabase.storage.condition === 'disk_full' ? ', the disk is full' : ''}); they are lost`)
    }
    loopMonitor?.stop()
    // the workers are gone: their cgroups with them, then the node's own
    await settleBy(memoryBound.close().catch((err: unknown) => logger.warn({ err }, 'removing the sandbox cgroups failed')), Date.now() + CLOSE_AFTER_TIMEOUT_MS)
    const report: StopReport = { complete: stopped === 'done', unfinished, unwritten, ms: Date.now() - started }
    logger.info({ ms: report.ms, complete: report.complete }, 'svc-node stopped')
    return report
  }

  return {
    engine,
    get url() {
      return url
    },
    get grpcAddress() {
      return grpcUrl
    },
    async start() {
      loopMonitor?.start()
      await engine.start()
      const usage = store.usageLoaded
      if (usage) {
        storageLogger.info({ tenant_usage: usage }, usage.from === 'scan'
          ? `tenant storage: ${usage.entries} usage entries of ${usage.accounts} tenants summed in ${usage.ms} ms`
          : `tenant storage: the totals of ${usage.accounts} tenants taken from the last clean stop`)
      }
      // every execution's receipt is signed with the node's libp2p key (docs/receipts.md)
      engine.useReceiptSigner(await loadNodeReceiptSigner(config.federation, config.data_dir))
      nodeDatabase.watchStorage()
      const keyShown = await announceAdminKey(engine, config, { env, logger, announce })
      const tls = config.server.tls
      server = tls.enabled
        ? createTlsServer({
            cert: readFileSync(tls.cert_file),
            key: readFileSync(tls.key_file),
            ...(tls.client_ca_file && { ca: readFileSync(tls.client_ca_file), requestCert: true, rejectUnauthorized: false }),
          }, app.callback())
        : createServer(app.callback())
      server.keepAliveTimeout = 5_000
      sockets = [
        attachGraphqlWs(server, graphqlInit, { engine, logger: graphqlLogger, addresses }),
        attachEventSocket(server, {
          maxConnectionsPerTenant: config.ws.max_connections_per_tenant,
          maxMessagesPerSecond: config.ws.max_messages_per_second,
          maxBufferedBytes: config.ws.max_buffered_bytes,
          maxPayloadBytes: config.ws.max_payload_bytes,
        }, { engine, logger: logger.child({ component: 'ws' }), addresses }),
      ]
      // registered last: an upgrade to any other path is refused rather than left hanging
      server.on('upgrade', (req, socket) => {
        const path = (req.url ?? '').split('?')[0]
        if (path !== '/graphql' && path !== '/ws') socket.destroy()
      })
      await new Promise<void>((resolveListen, reject) => {
        server!.once('error', reject)
        server!.listen(config.server.port, config.server.host, () => {
          server!.off('error', reject)
          resolveListen()
        })
      })
      const address = server.address() as AddressInfo
      const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
      url = `${tls.enabled ? 'https' : 'http'}://${host}:${address.port}`
      if (shareBase === '') shareBase = `${url}/api/v1/functions`
      if (grpc) {
        // gRPC health says what /readyz says: NOT_SERVING until the federation caught up
        if (config.federation.enabled) grpc.setServing(false)
        const { port } = await grpc.start()
        grpcUrl = `${config.grpc.host}:${port}`
      }
      federation = await startDaemonFederation(config.federation, {
        engine, logger: logger.child({ component: 'federation' }), metrics: engine.metrics, dataDir: config.data_dir, endpoint: url, wheelDirs,
        capabilities: nodeCapabilities({ sandboxWorkers: config.execution.workers, grpc: grpc !== undefined }),
      })
      federation?.federation.onReady((reason) => {
        if (draining) return
        grpc?.setServing(true)
        logger.info({ reason }, 'federation ready: serving')
      })
      if (config.server.console) announceConsole(url, keyShown, engine.authMode, announce, logger)
      // every door listens: node.started is the lifecycle event each new system subscriber gets first
      engine.announceStarted({ version: VERSION })
      logger.info({ url, grpc: grpcUrl ?? null, data_dir: config.data_dir, peer_id: federation?.peerId ?? null, p2p: federation?.multiaddrs ?? [] }, 'svc-node listening')
    },
    stop() {
      stopping ??= stopWithin(config.server.shutdown_grace_ms)
      return stopping
    },
  }
}

/** Prints where the operator console is, beside the one-time admin key when one was just shown. */
function announceConsole(url: string, keyShown: boolean, mode: Engine['authMode'], announce: ((text: string) => void) | undefined, logger: Logger): void {
  if (!isConsoleBuilt()) {
    logger.warn('the operator console is not built (run npm run build); /console/ answers 404')
    return
  }
  const how = mode === 'none' ? 'local mode: no sign-in' : keyShown ? 'sign in with the ADMIN_API_KEY above' : 'sign in with an API key'
  const text = `svc-node console: ${url}${CONSOLE_PATH}  (${how})\n`
  if (announce) announce(text)
  else process.stdout.write(text)
}

const ruleOf = (r: { points: number; window_s: number }) => ({ points: r.points, windowSeconds: r.window_s })

function authInitOf(config: Readonly<SvcConfig>): EngineAuthInit {
  const a = config.auth
  return {
    mode: a.provider,
    defaultTenant: a.default_tenant,
    keys: { defaultExpiresDays: a.keys.default_expires_days, maxExpiresDays: a.keys.max_expires_days },
    anonymous: a.anonymous.enabled ? { tenant: a.anonymous.tenant, roles: [...a.anonymous.roles] } : undefined,
    mtls: a.mtls.enabled ? { roles: [...a.mtls.roles] } : undefined,
    jwt: a.jwt.enabled
      ? {
          jwksUrl: a.jwt.jwks_url || undefined,
          publicKeyPem: a.jwt.public_key_file ? readFileSync(a.jwt.public_key_file, 'utf8') : undefined,
          issuer: a.jwt.issuer,
          audience: a.jwt.audience,
          algorithms: [...a.jwt.algorithms],
          tenantClaim: a.jwt.tenant_claim,
          rolesClaim: a.jwt.roles_claim,
          scopeClaim: a.jwt.scope_claim,
          userClaim: a.jwt.user_claim,
          clockToleranceSeconds: a.jwt.clock_tolerance_s,
        }
      : undefined,
    oauthIntrospection: a.oauth_introspection.enabled
      ? {
          endpoint: a.oauth_introspection.endpoint,
          clientId: a.oauth_introspection.client_id,
          clientSecret: a.oauth_introspection.client_secret || readFileSync(a.oauth_introspection.client_secret_file, 'utf8').trim(),
          cacheTtlMs: a.oauth_introspection.cache_ttl_s * 1000,
          cacheMaxEntries: a.oauth_introspection.cache_max_entries,
          timeoutMs: a.oauth_introspection.timeout_ms,
          tenantClaim: a.oauth_introspection.tenant_claim,
          rolesClaim: a.oauth_introspection.roles_claim,
          scopeClaim: a.oauth_introspection.scope_claim,
          userClaim: a.oauth_introspection.user_claim,
          clockToleranceSeconds: a.oauth_introspection.clock_tolerance_s,
        }
      : undefined,
  }
}
