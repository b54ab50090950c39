import { mkdirSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { ClassicLevel } from 'classic-level'
import type { Logger } from 'pino'
import { createRestApi } from '../api/rest/app.js'
import { createSandbox } from '../engine/execution/index.js'
import {
  createCatalogStore, createEngine, createLocalAuthenticator, createMetrics, EventBus, type Engine, type LevelDatabase,
} from '../engine/index.js'
import type { SvcConfig } from './config.js'

export interface Daemon {
  readonly engine: Engine
  /** base URL of the REST door, e.g. http://127.0.0.1:8080 */
  readonly url: string
  start(): Promise<void>
  /** Stops taking requests, lets in-flight ones finish (up to the grace period), closes storage. */
  stop(): Promise<void>
}

export interface DaemonComponents {
  logger: Logger
}

/** The composition root: config → components → start/stop in order. */
export function createDaemon(config: Readonly<SvcConfig>, { logger }: DaemonComponents): Daemon {
  mkdirSync(config.data_dir, { recursive: true, mode: 0o700 })
  const db = new ClassicLevel<string, unknown>(join(config.data_dir, 'catalog'), { valueEncoding: 'json' }) as unknown as LevelDatabase
  const store = createCatalogStore({ db })
  const metrics = createMetrics({ defaultMetrics: true })
  const events = new EventBus()
  const x = config.execution
  const sandbox = createSandbox({
    workers: x.workers,
    maxWarmIsolatesPerWorker: x.max_warm_isolates_per_worker,
    maxLogBytes: x.max_log_bytes,
    queueLimit: x.queue_limit,
    killGraceMs: x.kill_grace_ms,
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
      execution: { defaults: limitsOf(x.defaults), max: limitsOf(x.max) },
    },
    { store, sandbox, metrics, events },
  )
  const authenticator = createLocalAuthenticator({ defaultTenant: config.auth.default_tenant })
  let draining = false
  const app = createRestApi(
    { bodyLimitBytes: config.server.body_limit_bytes, metricsAccess: config.server.metrics_access },
    { engine, authenticator, logger: logger.child({ component: 'rest' }), isDraining: () => draining },
  )
  let server: Server | undefined
  let url = ''

  return {
    engine,
    get url() {
      return url
    },
    async start() {
      await engine.start()
      server = createServer(app.callback())
      server.keepAliveTimeout = 5_000
      await new Promise<void>((resolveListen, reject) => {
        server!.once('error', reject)
        server!.listen(config.server.port, config.server.host, () => {
          server!.off('error', reject)
          resolveListen()
        })
      })
      const address = server.address() as AddressInfo
      const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
      url = `http://${host}:${address.port}`
      if (shareBase === '') shareBase = `${url}/api/v1/functions`
      logger.info({ url, data_dir: config.data_dir, pid: process.pid }, 'svc-node listening')
    },
    async stop() {
      if (draining) return
      draining = true
      logger.info({ grace_ms: config.server.shutdown_grace_ms }, 'svc-node stopping')
      if (server) {
        const closed = new Promise<void>((r) => server!.close(() => r()))
        server.closeIdleConnections()
        const timer = setTimeout(() => server?.closeAllConnections(), config.server.shutdown_grace_ms)
        await closed
        clearTimeout(timer)
      }
      await engine.stop()
      logger.info('svc-node stopped')
    },
  }
}
