import { bodyParser } from '@koa/bodyparser'
import { Router } from '@koa/router'
import Koa from 'koa'
import type { Logger } from 'pino'
import type { Authenticator, Engine, Principal } from '../../engine/index.js'
import { errorBody, httpStatusOf, restErrorOf } from './errors.js'
import { registerFunctionRoutes } from './routes/functions.js'
import { registerExecutionRoutes } from './routes/executions.js'
import { registerSystemRoutes } from './routes/system.js'

export interface RestApiInit {
  /** request bodies above this get 413 and are not read further */
  bodyLimitBytes: number
  /** `/metrics` open to anyone (`public`) or not served (`disabled`) */
  metricsAccess: 'public' | 'disabled'
}

export interface RestApiComponents {
  engine: Engine
  authenticator: Authenticator
  logger: Logger
  /** true while the daemon drains before shutdown (readyz answers 503) */
  isDraining?: () => boolean
}

export interface RestState {
  principal?: Principal
  operation: string
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
    try {
      await next()
      if (ctx.status === 404 && ctx.body === undefined) {
        ctx.status = 404
        ctx.body = { error: { code: 1006, name: 'VALIDATION_FAILED', message: `no route ${ctx.method} ${ctx.path}`, details: {} } }
      }
    } catch (thrown) {
      const err = restErrorOf(thrown)
      ctx.status = httpStatusOf(err)
      ctx.body = errorBody(err)
      if (err.retryAfterSeconds !== undefined) ctx.set('Retry-After', String(Math.ceil(err.retryAfterSeconds)))
      engine.metrics.protocolErrors.inc({ protocol: 'rest', code: String(err.code) })
      const level = err.code === 1009 ? 'error' : 'debug'
      logger[level]({ err: err.code === 1009 ? err.cause ?? err : undefined, code: err.code, path: ctx.path }, err.message)
    }
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
  registerFunctionRoutes(router, components)
  registerExecutionRoutes(router, components)
  app.use(router.routes())
  app.use(router.allowedMethods())
  return app
}

/** Resolves the caller once per request (authentication happens here, before any engine call). */
export async function principalOf(ctx: RestContext, authenticator: Authenticator): Promise<Principal> {
  if (ctx.state.principal) return ctx.state.principal
  const principal = await authenticator.authenticate({
    authorization: ctx.get('authorization') || undefined,
    namespace: ctx.get('x-svc-namespace') || undefined,
    ip: ctx.ip,
  })
  ctx.state.principal = principal
  return principal
}
