import type { Router } from '@koa/router'
import type { RestApiComponents, RestState } from '../app.js'
import { principalOf } from '../app.js'
import { queryInt, queryString } from '../request.js'

/**
 * `GET /v1/telemetry/functions/{rufid}/series?window=1h&buckets=30`: the telemetry of
 * `/v1/telemetry/functions/{rufid}` per bucket of the window (executions, p50/p95/p99, error rate),
 * oldest first, for charts.
 */
export function registerTelemetrySeriesRoutes(router: Router<RestState>, { engine }: RestApiComponents): void {
  router.get('/v1/telemetry/functions/:rufid/series', async (ctx) => {
    ctx.state.operation = 'rufid.telemetry'
    ctx.state.rufid = ctx.params.rufid
    const principal = await principalOf(ctx, engine)
    const target = engine.functions.target(principal, ctx.params.rufid, queryString(ctx.query.version))
    ctx.body = await engine.telemetrySeries(principal, target, queryString(ctx.query.window) ?? '1h', queryInt(ctx.query.buckets) ?? 30)
  })
}
