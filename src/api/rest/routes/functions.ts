import { createInputSchema, fullRufidOf, type Engine } from '../../../engine/index.js'
import { BODY_ERRORS, CALLER_ERRORS, defineRoute, rufidOfBody, rufidOfPath, EXECUTION_ERRORS, FUNCTION_ERRORS, type RestRoute } from '../operation.js'
import { creationBody, executionBody, metadataBody, resolutionBody } from '../presenters.js'
import { bodyOf } from '../request.js'
import { executeRequestSchema, listQuerySchema, parseRequest, resolveRequestSchema, rufidParamSchema, versionQuerySchema } from './request-schemas.js'
import {
  creationSchema, deletionSchema, executionSchema, functionListSchema, metadataSchema, resolutionSchema,
} from './response-schemas.js'

const rufidParam = { rufid: rufidParamSchema }

/** The core group, service-spec §4.1, plus listing, metadata and deletion (§4.7 left them open). */
export function functionRoutes(engine: Engine, init: { maxSourceBytes: number }): RestRoute<never, unknown>[] {
  const { functions, executions } = engine
  return [
    defineRoute({
      method: 'post', path: '/api/v1/functions/create', operation: 'rufid.create',
      summary: 'Create a function: 201, or 200 with `created: false` when identical content exists',
      request: createInputSchema({ maxSourceBytes: init.maxSourceBytes }).meta({ id: 'CreateFunctionRequest' }),
      responses: { 201: creationSchema, 200: creationSchema },
      errors: [...CALLER_ERRORS, ...BODY_ERRORS, 409, 422],
      async handle(principal, ctx, call) {
        const result = await functions.create(principal!, bodyOf(ctx))
        call.rufid = result.rufid
        ctx.status = result.created ? 201 : 200
        return creationBody(result)
      },
    }),

    defineRoute({
      method: 'post', path: '/api/v1/functions/resolve', operation: 'rufid.resolve',
      summary: 'Resolve a RUFID (through the cache) to its version, manifest and lockfile',
      request: resolveRequestSchema,
      responses: { 200: resolutionSchema },
      errors: [...CALLER_ERRORS, ...BODY_ERRORS, ...FUNCTION_ERRORS],
      rufidOf: rufidOfBody,
      direct: true,
      async handle(principal, ctx) {
        const body = bodyOf(ctx)
        // a malformed RUFID or version is 1001 (target), any other problem of the body 1006
        const target = functions.target(principal!, body.rufid, body.version)
        parseRequest(resolveRequestSchema, body, 'resolve request')
        return resolutionBody(await functions.resolve(principal!, target))
      },
    }),

    defineRoute({
      method: 'post', path: '/api/v1/functions/:rufid/execute', operation: 'rufid.execute',
      summary: 'Execute a function with named (an object) or positional (an array) arguments',
      request: executeRequestSchema, requestOptional: true, params: rufidParam,
      responses: { 200: executionSchema },
      errors: [...CALLER_ERRORS, ...BODY_ERRORS, ...FUNCTION_ERRORS, ...EXECUTION_ERRORS],
      rufidOf: rufidOfPath,
      direct: true,
      async handle(principal, ctx) {
        const body = bodyOf(ctx)
        const target = functions.target(principal!, ctx.params.rufid, body.version)
        parseRequest(executeRequestSchema, body, 'execute request')
        return executionBody(await executions.execute(principal!, target, body.arguments))
      },
    }),

    defineRoute({
      method: 'get', path: '/api/v1/functions', operation: 'rufid.list',
      summary: 'The newest live version of each function of the tenant, newest first',
      query: listQuerySchema,
      responses: { 200: functionListSchema },
      errors: [...CALLER_ERRORS, 400],
      async handle(principal, ctx) {
        const page = await functions.list(principal!, ctx.state.query)
        return { items: page.items.map((fn) => metadataBody(fn)), pagination: page.pagination }
      },
    }),

    defineRoute({
      method: 'get', path: '/api/v1/functions/:rufid', operation: 'rufid.read',
      summary: 'Function metadata with usage metrics',
      query: versionQuerySchema, params: rufidParam,
      responses: { 200: metadataSchema },
      errors: [...CALLER_ERRORS, ...FUNCTION_ERRORS],
      rufidOf: rufidOfPath,
      async handle(principal, ctx) {
        const target = functions.target(principal!, ctx.params.rufid, ctx.state.query.version)
        const { fn } = await functions.resolve(principal!, target)
        return metadataBody(fn, await executions.usageOf(fn))
      },
    }),

    defineRoute({
      method: 'delete', path: '/api/v1/functions/:rufid', operation: 'rufid.delete',
      summary: 'Delete (tombstone) a version, or every live version of a hash',
      query: versionQuerySchema, params: rufidParam,
      responses: { 200: deletionSchema },
      errors: [...CALLER_ERRORS, ...FUNCTION_ERRORS],
      rufidOf: rufidOfPath,
      async handle(principal, ctx) {
        const target = functions.target(principal!, ctx.params.rufid, ctx.state.query.version)
        const deleted = await functions.delete(principal!, target)
        return { deleted: deleted.map(fullRufidOf) }
      },
    }),
  ]
}
