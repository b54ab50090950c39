import { publishInputSchema, type Engine } from '../../../engine/index.js'
import { BODY_ERRORS, CALLER_ERRORS, defineRoute, rufidOfPath, FUNCTION_ERRORS, type RestRoute } from '../operation.js'
import { metadataBody } from '../presenters.js'
import { bodyOf } from '../request.js'
import { rufidParamSchema, searchQuerySchema, telemetryQuerySchema } from './request-schemas.js'
import { executionAcceptedSchema, publicationSchema, searchSchema, telemetrySchema } from './response-schemas.js'


/** The `/v1` group (service-spec §4.2 with the field names of decisions.md). */
export function v1Routes(engine: Engine): RestRoute<never, unknown>[] {
  return [
    defineRoute({
      method: 'post', path: '/v1/functions', operation: 'rufid.create',
      summary: 'Publish base64 source for a runtime (201; 200 when identical content exists)',
      request: publishInputSchema,
      responses: { 201: publicationSchema, 200: publicationSchema },
      errors: [...CALLER_ERRORS, ...BODY_ERRORS, 409, 422],
      async handle(principal, ctx, call) {
        const r = await engine.publish(principal!, bodyOf(ctx))
        call.rufid = r.rufid
        ctx.status = r.created ? 201 : 200
        return { rufid: r.rufid, rufid_short: r.rufid_short, full_rufid: r.rufid, version: r.version, import_statement: r.import_statement, share_url: r.share_url }
      },
    }),

    defineRoute({
      method: 'post', path: '/v1/functions/:rufid/executions', operation: 'rufid.execute',
      summary: 'Start an asynchronous execution; the body is the input (202, Location: the record)',
      request: {}, requestOptional: true, params: { rufid: rufidParamSchema },
      responses: { 202: executionAcceptedSchema },
      errors: [...CALLER_ERRORS, ...BODY_ERRORS, ...FUNCTION_ERRORS],
      rufidOf: rufidOfPath,
      async handle(principal, ctx) {
        const target = engine.functions.target(principal!, ctx.params.rufid)
        const input = (ctx.request as { body?: unknown }).body
        const record = await engine.executions.submit(principal!, target, input)
        ctx.status = 202
        ctx.set('Location', `/v1/executions/${record.execution_id}`)
        return { execution_id: record.execution_id, rufid_short: record.rufid_short, full_rufid: record.rufid, status: record.status }
      },
    }),

    defineRoute({
      method: 'get', path: '/v1/marketplace/functions/search', operation: 'rufid.search',
      summary: 'Full-text search with facets, within the tenant',
      query: searchQuerySchema,
      responses: { 200: searchSchema },
      errors: [...CALLER_ERRORS, 400],
      async handle(principal, ctx) {
        const result = await engine.marketplace.search(principal!, ctx.state.query)
        return {
          items: result.items.map((listing) => metadataBody(listing)),
          pagination: result.pagination,
          aggregations: result.aggregations,
        }
      },
    }),

    defineRoute({
      method: 'get', path: '/v1/telemetry/functions/:rufid', operation: 'rufid.telemetry',
      summary: 'Latency, error rate and cost over a window',
      query: telemetryQuerySchema, params: { rufid: rufidParamSchema },
      responses: { 200: telemetrySchema },
      errors: [...CALLER_ERRORS, ...FUNCTION_ERRORS],
      rufidOf: rufidOfPath,
      async handle(principal, ctx) {
        const target = engine.functions.target(principal!, ctx.params.rufid)
        return engine.telemetry(principal!, target, ctx.state.query.window ?? '15m')
      },
    }),
  ]
}
