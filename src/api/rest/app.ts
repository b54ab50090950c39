import { bodyParser } from '@koa/bodyparser'
import { Router } from '@koa/router'
import Koa from 'koa'
import type { Logger } from 'pino'
import type { TLSSocket } from 'node:tls'
import type { Engine, Principal } from '../../engine/index.js'
import { errorBody, httpStatusOf, restErrorOf } from './errors.js'
import type { OpenApiInit } from './openapi.js'
import { registerFunctionRoutes } from './routes/functions.js'
import { registerAuthRoutes } from './routes/auth.js'
import { registerBranchRoutes } from './routes/branches.js'
import { registerExecutionRoutes } from './routes/executions.js'
import { registerSystemRoutes } from './routes/system.js'
import { registerV1Routes } from './routes/v1.js'
import { registerFederationRoutes } from './routes/federation.js'
import { createConsoleMiddleware, type ConsoleInit } from './console.js'
import { registerNodeInfoRoutes, type NodeInfoInit } from './routes/node-info.js'
import { registerWhoamiRoutes } from './routes/whoami.js'
import { registerFunctionSourceRoutes } from './routes/function-source.js'
import { registerSignatureRoutes } from './routes/signature.js'
import { registerTelemetrySeriesRoutes } from './routes/telemetry-series.js'
import { registerFederationMemberRoutes } from './routes/federation-members.js'
import { registerNodeBackupRoutes } from './routes/node-backup.js'

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
}

export interface RestState {
  principal?: Principal
  /** the audited operation name; `system.*` operations are not audited */
  operation: string
  /** the RUFID the request names, for the audit entry */
  rufid?: string
}

export type RestContext = Koa.ParameterizedContext<RestState>

/**
 * The REST door: decode, call the engine, encode. Koa's `callback()` is a plain request handler,
 * so tests can serve it on a port of their own.
 */
export function createRestApi(init: RestApiInit, components: RestApiComponents): Koa<RestState> {
  const { engine, logger } = components
  const app = new Koa<RestState>({ proxy: false })
  app.silent = true

  app.use(async (ctx, next) => {
    const started = performance.now()
    ctx.state.operation = 'unknown'
    // while draining, each response closes its connection so shutdown need not wait for keep-alive
    if (components.isDraining?.()) ctx.set('Connection', 'close')
    let failure: unknown
    try {
      await next()
      if (ctx.status === 404 && ctx.body === undefined) {
        ctx.status = 404
        ctx.body = { error: { code: 1006, name: 'VALIDATION_FAILED', message: `no route ${ctx.method} ${ctx.path}`, details: {} } }
      }
    } catch (thrown) {
      const err = restErrorOf(thrown)
      failure = err
      ctx.status = httpStatusOf(err)
      // refused before routing (the body parser: 413 too large, 400 malformed JSON): still audited
      if (ctx.state.operation === 'unknown') ctx.state.operation = ctx.status === 413 ? 'request.too_large' : 'request.rejected'
      ctx.body = errorBody(err)
      if (err.retryAfterSeconds !== undefined) ctx.set('Retry-After', String(Math.ceil(err.retryAfterSeconds)))
      engine.metrics.protocolErrors.inc({ protocol: 'rest', code: String(err.code) })
      const level = err.code === 1009 ? 'error' : 'debug'
      logger[level]({ err: err.code === 1009 ? err.cause ?? err : undefined, code: err.code, path: ctx.path }, err.message)
    }
    if (!ctx.state.operation.startsWith('system.') && ctx.state.operation !== 'unknown') {
      // the audit entry is written before the response leaves
      await engine.access.audit({
        operation: ctx.state.operation,
        principal: ctx.state.principal,
        ip: ctx.ip,
        rufid: ctx.state.rufid,
        startedAt: started,
        error: failure,
      }).catch((err: unknown) => logger.error({ err }, 'audit write failed'))
    }
    // the GraphQL door shares this Koa app and records its own metrics
    if (ctx.state.operation === 'system.graphql') return
    const seconds = (performance.now() - started) / 1000
    engine.metrics.protocolRequests.inc({ protocol: 'rest', operation: ctx.state.operation, status: String(ctx.status) })
    engine.metrics.protocolRequestDuration.observe({ protocol: 'rest', operation: ctx.state.operation }, seconds)
  })

  app.use(
    bodyParser({
      enableTypes: ['json'],
      jsonLimit: init.bodyLimitBytes,
      // a body is JSON whatever its Content-Type says (curl -d sends a form type)
      detectJSON: () => true,
      jsonStrict: false,
    }),
  )

  const router = new Router<RestState>()
  registerSystemRoutes(router, init, components)
  // before the function routes: /api/v1/functions/branches must not be read as a RUFID
  registerBranchRoutes(router, components)
  registerFunctionRoutes(router, components)
  registerExecutionRoutes(router, components)
  registerAuthRoutes(router, components)
  registerV1Routes(router, components)
  registerFederationRoutes(router, components)
  registerNodeInfoRoutes(router, init.node, components)
  registerWhoamiRoutes(router, components)
  registerFunctionSourceRoutes(router, components)
  registerSignatureRoutes(router, components)
  registerTelemetrySeriesRoutes(router, components)
  registerFederationMemberRoutes(router, components)
  registerNodeBackupRoutes(router, init, components)
  if (init.console) app.use(createConsoleMiddleware(init.console))
  app.use(router.routes())
  app.use(router.allowedMethods())
  return app
}

/**
 * Authenticates the caller once per request and charges its rate limits (401/403/429 here,
 * before any engine call). `namespace` overrides the X-Svc-Namespace header (native execute body).
 */
export async function principalOf(ctx: RestContext, engine: Engine, namespace?: string): Promise<Principal> {
  if (ctx.state.principal) return ctx.state.principal
  const socket = ctx.req.socket as Partial<TLSSocket>
  const cert = socket.authorized && typeof socket.getPeerCertificate === 'function' ? socket.getPeerCertificate() : undefined
  ctx.state.principal = await engine.access.admit({
    authorization: ctx.get('authorization') || undefined,
    namespace: namespace ?? (ctx.get('x-svc-namespace') || undefined),
    ip: ctx.ip,
    clientCertificate: cert && cert.subject
      ? { subject: Object.entries(cert.subject).map(([k, v]) => `${k}=${String(v)}`).join('\n'), fingerprint256: cert.fingerprint256 }
      : undefined,
  }, (authenticated) => {
    ctx.state.principal = authenticated
  })
  return ctx.state.principal
}
