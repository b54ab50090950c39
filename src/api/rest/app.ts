import { Router } from '@koa/router'
import Koa from 'koa'
import type { Logger } from 'pino'
import { SvcError, validationFailed } from '../../core/errors.js'
import { PROTOCOL_VERSION, PROTOCOL_VERSION_HEADER } from '../../core/protocol-version.js'
import type { Engine } from '../../engine/index.js'
import { CONNECTION_ADDRESSES, type ClientAddresses } from '../client-address.js'
import { buildOpenApi, EVENT_SOCKET_PATH, type OpenApiInit } from './openapi.js'
import { createRestEnvelope, registerRoutes, sendError, type RestContext, type RestRoute, type RestState } from './operation.js'
import { authRoutes } from './routes/auth.js'
import { branchRoutes } from './routes/branches.js'
import { executionRoutes } from './routes/executions.js'
import { federationRoutes } from './routes/federation.js'
import { functionRoutes } from './routes/functions.js'
import { systemRoutes } from './routes/system.js'
import { v1Routes } from './routes/v1.js'
import { createConsoleMiddleware, type ConsoleInit } from './console.js'
import { createDirectRoutes, type DirectRoutes } from './direct.js'
import { federationMemberRoutes } from './routes/federation-members.js'
import { functionSourceRoutes } from './routes/function-source.js'
import { nodeInfoRoutes, type NodeInfoInit } from './routes/node-info.js'
import { signatureRoutes } from './routes/signature.js'
import { telemetrySeriesRoutes } from './routes/telemetry-series.js'
import { whoamiRoutes } from './routes/whoami.js'
import { nodeBackupRoutes } from './routes/node-backup.js'

export type { RestContext, RestRoute, RestState } from './operation.js'

export interface RestApiInit {
  /** request bodies above this get 413 and are not read further */
  bodyLimitBytes: number
  /** `/metrics` open to anyone (`public`), to admin credentials (`admin`) or not served (`disabled`) */
  metricsAccess: 'public' | 'admin' | 'disabled'
  /** what `/openapi.json` states about limits and the version */
  openapi?: OpenApiInit
  /** the operator console at `/console/` (and `GET /` → there); absent: not served (404) */
  console?: ConsoleInit
  /** what `GET /api/v1/node/info` states about the node */
  node?: NodeInfoInit
}

export interface RestApiComponents {
  engine: Engine
  logger: Logger
  /** true while the daemon drains before shutdown (readyz answers 503) */
  isDraining?: () => boolean
  /** true while a federated node has not caught up with its federation yet (readyz answers 503 `starting`) */
  isJoining?: () => boolean
  /**
   * the caller's address of a request (`ctx.ip`, which the GraphQL middleware mounted after reads
   * too): the connection's, or what a trusted proxy forwarded; default: the connection's
   */
  addresses?: ClientAddresses
}

const DEFAULT_OPENAPI: OpenApiInit = { maxSourceBytes: 512 * 1024, maxExpiresDays: 3650, version: '0.0.0' }

/** Requests no route takes (404, 405): metered, not audited (scanners would fill the audit log). */
const UNROUTED = { name: 'request.unrouted', audited: false } as const
/** A failure outside any route's envelope (a middleware mounted after the router). */
const FAILED = { name: 'request.failed', audited: false } as const

/**
 * Every route of the REST door, in the order they are matched (branch routes before the function
 * routes: `/api/v1/functions/branches` must not be read as a RUFID). `/openapi.json` describes
 * exactly these.
 */
export function restRoutes(init: RestApiInit, components: RestApiComponents, openapi: () => Record<string, unknown>): RestRoute<never, unknown>[] {
  const { engine } = components
  const o = init.openapi ?? DEFAULT_OPENAPI
  return [
    ...systemRoutes(engine, { metricsAccess: init.metricsAccess }, { isDraining: components.isDraining, isJoining: components.isJoining, openapi }),
    ...branchRoutes(engine, { maxSourceBytes: o.maxSourceBytes }),
    ...functionRoutes(engine, { maxSourceBytes: o.maxSourceBytes }),
    ...executionRoutes(engine),
    ...authRoutes(engine, { maxExpiresDays: o.maxExpiresDays, defaultExpiresDays: o.defaultExpiresDays === undefined ? 90 : o.defaultExpiresDays }),
    ...v1Routes(engine),
    ...federationRoutes(engine),
    // the reads the operator console stands on (clients use them too)
    ...nodeInfoRoutes(engine, init.node, { isDraining: components.isDraining, isJoining: components.isJoining }),
    ...whoamiRoutes(engine),
    ...functionSourceRoutes(engine),
    ...signatureRoutes(),
    ...telemetrySeriesRoutes(engine),
    ...federationMemberRoutes(engine),
    // operator tools
    ...nodeBackupRoutes(engine, init.node),
  ]
}

const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']

/**
 * The methods the routes take at a path (HEAD with GET), as `/openapi.json` describes them: the
 * most literal matching path wins, as in OpenAPI path matching (`/api/v1/functions/branches` takes
 * GET only, although `/api/v1/functions/{rufid}` would match it too). Undefined: no route's path.
 */
export function methodsByPath(routes: readonly RestRoute<never, unknown>[]): (path: string) => string[] | undefined {
  const compiled = routes.map((route) => ({
    params: (route.path.match(/:\w+/g) ?? []).length,
    method: route.method.toUpperCase(),
    pattern: new RegExp(`^${route.path.split(/:\w+/).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[^/]+')}$`),
  }))
  return (path) => {
    let best: { params: number; methods: Set<string> } | undefined
    for (const route of compiled) {
      if (!route.pattern.test(path)) continue
      if (best === undefined || route.params < best.params) best = { params: route.params, methods: new Set() }
      if (route.params > best.params) continue
      best.methods.add(route.method)
      if (route.method === 'GET') best.methods.add('HEAD')
    }
    return best && METHOD_ORDER.filter((m) => best.methods.has(m))
  }
}

/**
 * The REST door's Koa app, whose `callback()` answers the direct routes (execute, resolve) before
 * Koa (see `direct.ts`) and hands every other request to Koa.
 */
class RestApp extends Koa<RestState> {
  direct: DirectRoutes | undefined

  override callback(): ReturnType<Koa['callback']> {
    const koa = super.callback()
    const direct = this.direct
    return (req, res) => {
      // every HTTP answer (REST, GraphQL, the console) names the protocol version (service-spec §9)
      res.setHeader(PROTOCOL_VERSION_HEADER, PROTOCOL_VERSION)
      if (direct !== undefined && !('stream' in req) && !('stream' in res) && direct.serve(req, res)) return Promise.resolve()
      return koa(req, res)
    }
  }
}

/**
 * The REST door: each route decodes, runs its one engine call through the operation envelope
 * (admit, audit, meter, map errors) and encodes. Koa's `callback()` is a plain request handler,
 * so tests can serve it on a port of their own. Other HTTP doors (GraphQL) mount after it and
 * answer the paths no route takes.
 */
export function createRestApi(init: RestApiInit, components: RestApiComponents): Koa<RestState> {
  const { engine, logger } = components
  const app = new RestApp({ proxy: false })
  app.silent = true
  const envelope = createRestEnvelope({ bodyLimitBytes: init.bodyLimitBytes }, { engine, logger })
  const addresses = components.addresses ?? CONNECTION_ADDRESSES
  /** the methods the document gives a path (set once the routes exist, before any request) */
  let allowedAt: (path: string) => string[] | undefined = () => undefined

  app.use(async (ctx, next) => {
    // Koa's own proxy handling stays off: only server.trusted_proxies decide (api/client-address.ts)
    if (addresses.trustsProxies) ctx.request.ip = addresses.ofRequest(ctx.req)
    // while draining, each response closes its connection so shutdown need not wait for keep-alive
    if (components.isDraining?.()) ctx.set('Connection', 'close')
    // a method the document does not give this path is 405 before any route sees it (the
    // {rufid} route would otherwise read `GET /api/v1/functions/create` as the RUFID `create`)
    const allowed = ctx.method === 'OPTIONS' ? undefined : allowedAt(ctx.path)
    const undeclared = allowed !== undefined && !allowed.includes(ctx.method)
    try {
      if (undeclared) {
        ctx.set('Allow', allowed.join(', '))
        ctx.status = 405
      } else {
        await next()
      }
    } catch (thrown) {
      const call = envelope.open(FAILED, ctx.ip)
      sendError(ctx, envelope.finish(call, thrown)!)
      return
    }
    // `Allow` (an OPTIONS answer, a 405) names what the document says the path takes
    if (ctx.response.get('Allow') !== '') {
      const documented = allowedAt(ctx.path)
      if (documented !== undefined) ctx.set('Allow', documented.join(', '))
    }
    const state = ctx.state as Partial<RestState>
    const routed = state.route !== undefined || state.served === true
    if (routed || ctx.body !== undefined || ctx.respond === false) return
    // no route took the request: 404, or 405 with `Allow` when the path exists with other methods
    // (a method the router does not know at all, TRACE or QUERY, too: the router says 501); the
    // WebSocket upgrade path asked without an upgrade is 426 with `Upgrade: websocket`
    let status = ctx.status === 405 || (ctx.status === 501 && ctx.response.get('Allow') !== '') ? 405 : 404
    if (status === 404 && ctx.path === EVENT_SOCKET_PATH) {
      status = ctx.method === 'GET' || ctx.method === 'HEAD' ? 426 : 405
      if (status === 426) ctx.set('Upgrade', 'websocket')
      else ctx.set('Allow', 'GET')
    }
    if (status === 404) ctx.remove('Allow')
    const err = status === 404
      ? validationFailed(`no route ${ctx.method} ${ctx.path}`)
      : status === 426
        ? validationFailed(`${ctx.path} is a WebSocket: upgrade the connection (Connection: Upgrade, Upgrade: websocket)`)
        : validationFailed(`${ctx.method} is not allowed on ${ctx.path} (allowed: ${ctx.response.get('Allow')})`)
    const call = envelope.open(UNROUTED, ctx.ip)
    call.status = String(status)
    sendError(ctx as unknown as RestContext, envelope.finish(call, err) as SvcError)
    ctx.status = status
  })

  let document: Record<string, unknown> | undefined
  const routes: RestRoute<never, unknown>[] = restRoutes(init, components, () => (document ??= buildOpenApi(init.openapi ?? DEFAULT_OPENAPI, routes)))
  allowedAt = methodsByPath(routes)
  const router = new Router<RestState>()
  app.direct = createDirectRoutes(registerRoutes(router, envelope, routes), { envelope, isDraining: components.isDraining, addresses })
  // the console's static files (`/`, `/console/…`): metered, not audited (files, not operations)
  if (init.console) app.use(createConsoleMiddleware(init.console, { envelope }))
  app.use(router.routes())
  app.use(router.allowedMethods())
  return app
}
