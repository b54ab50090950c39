import type { Router } from '@koa/router'
import { requirePermission } from '../../../engine/index.js'
import type { RestApiComponents, RestApiInit, RestState } from '../app.js'
import { principalOf } from '../app.js'
import { buildOpenApi } from '../openapi.js'

/** Liveness, readiness and Prometheus metrics. */
export function registerSystemRoutes(router: Router<RestState>, init: RestApiInit, { engine, isDraining }: RestApiComponents): void {
  router.get('/healthz', (ctx) => {
    ctx.state.operation = 'system.health'
    ctx.body = { status: 'ok', pid: process.pid, uptime_s: Math.round(process.uptime()) }
  })

  router.get('/readyz', (ctx) => {
    ctx.state.operation = 'system.ready'
    const draining = isDraining?.() ?? false
    const ready = engine.ready && !draining
    ctx.status = ready ? 200 : 503
    ctx.body = { status: ready ? 'ready' : draining ? 'draining' : 'starting' }
  })

  let openapi: Record<string, unknown> | undefined
  router.get('/openapi.json', (ctx) => {
    ctx.state.operation = 'system.openapi'
    openapi ??= buildOpenApi(init.openapi ?? { maxSourceBytes: 512 * 1024, maxExpiresDays: 3650, version: '0.0.0' })
    ctx.body = openapi
  })

  if (init.metricsAccess !== 'disabled') {
    router.get('/metrics', async (ctx) => {
      ctx.state.operation = 'system.metrics'
      if (init.metricsAccess === 'admin') requirePermission(await principalOf(ctx, engine), 'rufid.admin')
      ctx.type = engine.metrics.registry.contentType
      ctx.body = await engine.metrics.registry.metrics()
    })
  }
}
