import type { Engine } from '../../../engine/index.js'
import { CALLER_ERRORS, defineRoute, FUNCTION_ERRORS, rufidOfPath, type RestRoute } from '../operation.js'
import { sourceBody } from '../presenters.js'
import { rufidParamSchema, versionQuerySchema } from './request-schemas.js'
import { functionSourceSchema } from './response-schemas.js'

/**
 * `GET /api/v1/functions/{rufid}/source`: the source code of a version (the newest live one without
 * `version`), with what a reader needs beside it (signature, digest, each client's import
 * statement). Needs rufid.read, like resolve; a node that lacks the code (replicated metadata)
 * fetches it from a member first, digest-checked.
 */
export function functionSourceRoutes(engine: Engine): RestRoute<never, unknown>[] {
  return [
    defineRoute({
      method: 'get', path: '/api/v1/functions/:rufid/source', operation: 'rufid.source',
      summary: 'Source code of a version (the newest live one without version), with its signature, digest and import statements',
      query: versionQuerySchema, params: { rufid: rufidParamSchema },
      responses: { 200: functionSourceSchema },
      errors: [...CALLER_ERRORS, ...FUNCTION_ERRORS],
      rufidOf: rufidOfPath,
      async handle(principal, ctx) {
        const target = engine.functions.target(principal!, ctx.params.rufid, ctx.state.query.version)
        const { fn } = await engine.functions.resolve(principal!, target)
        return sourceBody(fn)
      },
    }),
  ]
}
