import { BranchService, createInputSchema, fullRufidOf, requirePermission, type Engine } from '../../../engine/index.js'
import { BODY_ERRORS, CALLER_ERRORS, defineRoute, rufidOfPath, EXECUTION_ERRORS, FUNCTION_ERRORS, type RestRoute } from '../operation.js'
import { branchHeadBody, deploymentBody, executionBody, exportBody } from '../presenters.js'
import { bodyOf } from '../request.js'
import {
  branchFields, branchNameSchema, branchQuerySchema, invokeRequestSchema, parseRequest, rufidParamSchema, versionQuerySchema,
} from './request-schemas.js'
import { branchListSchema, deploymentSchema, exportSchema, invocationSchema, versionLedgerSchema } from './response-schemas.js'


/**
 * Branch-scoped deploy and invoke (service-spec §4.8, decisions.md "Branches"), the version ledger
 * of a lineage and manifest/lockfile export. Listed before the function routes: the static
 * `GET /api/v1/functions/branches` must win over `GET /api/v1/functions/:rufid`.
 */
export function branchRoutes(engine: Engine, init: { maxSourceBytes: number }): RestRoute<never, unknown>[] {
  const { functions, branches } = engine
  return [
    defineRoute({
      method: 'post', path: '/api/v1/functions/deploy', operation: 'rufid.deploy',
      summary: 'Publish a function and point a branch at it (201 when something was created); a new branch gets a key, shown once',
      request: createInputSchema({ maxSourceBytes: init.maxSourceBytes }).extend(branchFields).meta({ id: 'DeployRequest' }),
      responses: { 201: deploymentSchema, 200: deploymentSchema },
      errors: [...CALLER_ERRORS, ...BODY_ERRORS, 409, 422],
      async handle(principal, ctx, call) {
        const result = await branches.deploy(principal!, bodyOf(ctx))
        call.rufid = result.rufid
        ctx.status = result.created || result.branch_created ? 201 : 200
        if (result.branch_key !== undefined) ctx.set('Cache-Control', 'no-store')
        return deploymentBody(result)
      },
    }),

    defineRoute({
      method: 'get', path: '/api/v1/functions/branches', operation: 'rufid.branch_list',
      summary: 'Branch heads of the tenant, or of one lineage',
      query: branchQuerySchema,
      responses: { 200: branchListSchema },
      errors: [...CALLER_ERRORS, 400],
      async handle(principal, ctx) {
        const heads = await branches.heads(principal!, ctx.state.query.function_name)
        return { items: heads.map(branchHeadBody) }
      },
    }),

    defineRoute({
      method: 'post', path: '/api/v1/functions/branches/:branch/invoke', operation: 'rufid.invoke',
      summary: 'Run the version a branch head points at',
      request: invokeRequestSchema, params: { branch: branchNameSchema },
      responses: { 200: invocationSchema },
      errors: [...CALLER_ERRORS, ...BODY_ERRORS, ...FUNCTION_ERRORS, ...EXECUTION_ERRORS],
      async handle(principal, ctx, call) {
        requirePermission(principal!, 'rufid.execute')
        const body = bodyOf(ctx)
        parseRequest(invokeRequestSchema, body, 'invoke request')
        const { head, record } = await branches.invoke(principal!, body.function_name, ctx.params.branch, body.arguments)
        call.rufid = record.rufid
        return { ...executionBody(record), rufid: record.rufid, version: `v${head.version}`, branch: head.branch, function_name: head.function_name }
      },
    }),

    defineRoute({
      method: 'get', path: '/api/v1/functions/:rufid/versions', operation: 'rufid.versions',
      summary: 'The version ledger of the lineage of a RUFID, with its branch heads',
      params: { rufid: rufidParamSchema },
      responses: { 200: versionLedgerSchema },
      errors: [...CALLER_ERRORS, ...FUNCTION_ERRORS],
      rufidOf: rufidOfPath,
      async handle(principal, ctx) {
        const target = functions.target(principal!, ctx.params.rufid)
        const lineage = await functions.lineage(principal!, target)
        const heads = await branches.heads(principal!, lineage.function_name)
        return {
          function_name: lineage.function_name,
          versions: BranchService.withoutKeyHashes(lineage.entries).map((e) => {
            const full = fullRufidOf(e)
            return {
              version: `v${e.version}`,
              rufid: full,
              rufid_short: e.rufid_short,
              full_rufid: full,
              content_digest: e.content_digest,
              created_at: e.created_at,
              author: e.author,
              ...(e.deleted_at ? { deleted_at: e.deleted_at } : {}),
              manifest_snapshot: e.manifest_snapshot,
              branches: e.branches ?? [],
            }
          }),
          heads: heads.map(branchHeadBody),
        }
      },
    }),

    defineRoute({
      method: 'get', path: '/api/v1/functions/:rufid/export', operation: 'rufid.export',
      summary: 'Manifest and lockfile of a version, as published',
      query: versionQuerySchema, params: { rufid: rufidParamSchema },
      responses: { 200: exportSchema },
      errors: [...CALLER_ERRORS, ...FUNCTION_ERRORS],
      rufidOf: rufidOfPath,
      async handle(principal, ctx) {
        const target = functions.target(principal!, ctx.params.rufid, ctx.state.query.version)
        const { fn } = await functions.resolve(principal!, target)
        return exportBody(fn)
      },
    }),
  ]
}
