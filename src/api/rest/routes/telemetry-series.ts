import type { Engine } from '../../../engine/index.js'
import { CALLER_ERRORS, defineRoute, FUNCTION_ERRORS, rufidOfPath, type RestRoute } from '../operation.js'
import { rufidParamSchema, telemetrySeriesQuerySchema } from './request-schemas.js'
import { telemetrySeriesSchema } from './response-schemas.js'

/**
 * `GET /v1/telemetry/functions/{rufid}/series?window=1h&buckets=30`: the telemetry of
 * `/v1/telemetry/functions/{rufid}` per bucket of the window (executions, p50/p95/p99, error rate),
 * oldest first, for charts. Audited as `rufid.telemetry`, like the window totals.
 */
export function telemetrySeriesRoutes(engine: Engine): RestRoute<never, unknown>[] {
  return [
    defineRoute({
      method: 'get', path: '/v1/telemetry/functions/:rufid/series', operation: 'rufid.telemetry',
      summary: 'Telemetry per bucket of a window (buckets 1–240, default 30; window default 1h), oldest first',
      query: telemetrySeriesQuerySchema, params: { rufid: rufidParamSchema },
      responses: { 200: telemetrySeriesSchema },
      errors: [...CALLER_ERRORS, ...FUNCTION_ERRORS],
      rufidOf: rufidOfPath,
      async handle(principal, ctx) {
        const { window, buckets, version } = ctx.state.query
        const target = engine.functions.target(principal!, ctx.params.rufid, version)
        return engine.telemetrySeries(principal!, target, window ?? '1h', buckets ?? 30)
      },
    }),
  ]
}
