import { mkdirSync, readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { createServer as createTlsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join, resolve } from 'node:path'
import type { Logger } from 'pino'
import { createGraphqlMiddleware } from '../api/graphql/http.js'
import { attachGraphqlWs } from '../api/graphql/ws.js'
import { createGrpcServer } from '../api/grpc/server.js'
import { createRestApi } from '../api/rest/app.js'
import { CONSOLE_PATH, isConsoleBuilt } from '../api/rest/console.js'
import { attachEventSocket } from '../api/ws/event-socket.js'
import { createSandbox, resolveOsIsolation, type OsIsolation } from '../engine/sandbox/index.js'
import {
  createCatalogStore, createEngine, createMetrics, EventBus, NodeDatabase, type Engine, type EngineAuthInit, type LevelDatabase,
} from '../engine/index.js'
import { announceAdminKey } from './admin-key.js'
import { catalogLocation, prepareDataDirectory, StartupFailure } from './data-directory.js'
import { startDaemonFederation, type DaemonFederation } from '../federation/daemon-wiring.js'
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
  /** Stops taking requests, lets in-flight ones finish (up to the grace period), closes storage. */
  stop(): Promise<void>
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
    config.data_dir, tls.cert_file, tls.key_file, tls.client_ca_file, config.auth.jwt.public_key_file,
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
  const store = createCatalogStore({ db }, { executionFlushMs: config.execution.record_flush_ms })
  const metrics = createMetrics({ defaultMetrics: true })
  const events = new EventBus()
  const x = config.execution
  // wheels fetched from federation peers (each checked against its pin's sha256), beside the wheelhouse
  const wheelCache = join(config.data_dir, 'wheels')
  const wheelDirs = [x.python.wheelhouse, wheelCache].filter((d) => d !== '')
  const osIsolation = wallFor(config, env, wheelDirs, logger)
  const sandbox = createSandbox({
    workers: x.workers,
    startOnDemand: x.workers_on_demand,
    maxWarmIsolatesPerWorker: x.max_warm_isolates_per_worker,
    maxLogBytes: x.max_log_bytes,
    queueLimit: x.queue_limit,
    killGraceMs: x.kill_grace_ms,
    ...(x.python.wheelhouse ? { pythonWheelhouse: x.python.wheelhouse } : {}),
    pythonWheelCache: wheelCache,
    pythonInterpretersPerWorker: x.python.interpreters_per_worker,
    pythonInterpreterMbPerWorker: x.python.max_interpreter_mb_per_worker,
    pythonInterpreterMbPerTenant: x.python.max_interpreter_mb_per_tenant,
    pythonKillGraceMs: x.python.kill_grace_ms,
    osIsolation,
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
        resultCache: { maxEntries: x.result_cache.max_entries, maxBytes: x.result_cache.max_bytes, maxResultBytes: x.result_cache.max_result_bytes },
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
  let draining = false
  const app = createRestApi(
    {
      bodyLimitBytes: config.server.body_limit_bytes,
      metricsAccess: config.server.metrics_access,
      openapi: { maxSourceBytes: config.registry.max_source_bytes, maxExpiresDays: config.auth.keys.max_expires_days, version: VERSION },
      ...(config.server.console ? { console: {} } : {}),
      node: { version: VERSION, sandboxWorkers: x.workers, sandboxIsolation: osIsolation.status, federation: config.federation.enabled },
    },
    {
      engine, logger: logger.child({ component: 'rest' }), isDraining: () => draining,
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
      }, { engine, logger })
    : undefined
  let grpcUrl: string | undefined
  let sockets: Array<{ close(): Promise<void> }> = []
  let server: Server | undefined
  let federation: DaemonFederation | undefined
  let url = ''

  return {
    engine,
    get url() {
      return url
    },
    get grpcAddress() {
      return grpcUrl
    },
    async start() {
      await engine.start()
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
        attachGraphqlWs(server, graphqlInit, { engine, logger: graphqlLogger }),
        attachEventSocket(server, {
          maxConnectionsPerTenant: config.ws.max_connections_per_tenant,
          maxMessagesPerSecond: config.ws.max_messages_per_second,
          maxBufferedBytes: config.ws.max_buffered_bytes,
          maxPayloadBytes: config.ws.max_payload_bytes,
        }, { engine, logger: logger.child({ component: 'ws' }) }),
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
    async stop() {
      if (draining) return
      draining = true
      logger.info({ grace_ms: config.server.shutdown_grace_ms }, 'svc-node stopping')
      // subscribers (/ws, GraphQL over WebSocket and SSE) get node.stopping while their sockets are
      // open; one turn of the event loop lets the subscription streams write it before they close
      engine.announceStopping()
      await new Promise<void>((resolveTurn) => setImmediate(resolveTurn))
      // open streams and sockets would otherwise hold the servers open
      await Promise.allSettled([...sockets.map((s) => s.close()), graphql.close(), grpc?.stop()])
      if (server) {
        const closed = new Promise<void>((r) => server!.close(() => r()))
        server.closeIdleConnections()
        const timer = setTimeout(() => server?.closeAllConnections(), config.server.shutdown_grace_ms)
        await closed
        clearTimeout(timer)
      }
      await federation?.stop().catch((err: unknown) => logger.warn({ err }, 'federation stop failed'))
      federation = undefined
      await engine.stop()
      logger.info('svc-node stopped')
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
  }
}
