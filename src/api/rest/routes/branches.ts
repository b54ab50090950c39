import type { Router } from '@koa/router'
import { BranchService, fullRufidOf, requirePermission, type BranchHead, type DeployResult } from '../../../engine/index.js'
import type { RestApiComponents, RestState } from '../app.js'
import { principalOf } from '../app.js'
import { creationBody, executionBody } from '../presenters.js'
import { bodyOf, queryString } from '../request.js'
import { invokeRequestSchema, parseRequest } from './request-schemas.js'

/** A branch head as the REST door shows it (never the key hash). */
function headBody(h: BranchHead): Record<string, unknown> {
  return {
    function_name: h.function_name,
    branch: h.branch,
    version: `v${h.version}`,
    rufid: fullRufidOf(h),
    rufid_short: h.rufid_short,
    created_at: h.created_at,
    updated_at: h.updated_at,
    updated_by: h.updated_by,
  }
}

function deployBody(r: DeployResult): Record<string, unknown> {
  return {
    ...creationBody(r),
    function_name: r.fn.function_name,
    branch: r.branch,
    branch_created: r.branch_created,
    ...(r.branch_key !== undefined ? { branch_key: r.branch_key } : {}),
    moved: r.moved,
    previous_version: r.previous_version === null ? null : `v${r.previous_version}`,
    head: headBody(r.head),
    manifest: r.fn.manifest,
    lockfile: r.fn.lockfile,
  }
}

/**
 * Branch-scoped deploy and invoke (service-spec §4.8, decisions.md "Branches"), the version ledger
 * of a lineage and manifest/lockfile export. Register before the function routes: the static
 * `GET /api/v1/functions/branches` must win over `GET /api/v1/functions/:rufid`.
 */
export function registerBranchRoutes(router: Router<RestState>, { engine }: RestApiComponents): void {
  const { functions, branches } = engine

  router.post('/api/v1/functions/deploy', async (ctx) => {
    ctx.state.operation = 'rufid.deploy'
    const principal = await principalOf(ctx, engine)
    const result = await branches.deploy(principal, bodyOf(ctx))
    ctx.state.rufid = result.rufid
    ctx.status = result.created || result.branch_created ? 201 : 200
    if (result.branch_key !== undefined) ctx.set('Cache-Control', 'no-store')
    ctx.body = deployBody(result)
  })

  router.get('/api/v1/functions/branches', async (ctx) => {
    ctx.state.operation = 'rufid.branch_list'
    const principal = await principalOf(ctx, engine)
    const heads = await branches.heads(principal, queryString(ctx.query.function_name))
    ctx.body = { items: heads.map(headBody) }
  })

  router.post('/api/v1/functions/branches/:branch/invoke', async (ctx) => {
    ctx.state.operation = 'rufid.invoke'
    const principal = await principalOf(ctx, engine)
    requirePermission(principal, 'rufid.execute')
    const body = bodyOf(ctx)
    parseRequest(invokeRequestSchema, body, 'invoke request')
    const { head, record } = await branches.invoke(principal, body.function_name, ctx.params.branch, body.arguments)
    ctx.state.rufid = record.rufid
    ctx.body = { ...executionBody(record), rufid: record.rufid, version: `v${head.version}`, branch: head.branch, function_name: head.function_name }
  })

  router.get('/api/v1/functions/:rufid/versions', async (ctx) => {
    ctx.state.operation = 'rufid.versions'
    ctx.state.rufid = ctx.params.rufid
    const principal = await principalOf(ctx, engine)
    const target = functions.target(principal, ctx.params.rufid)
    const lineage = await functions.lineage(principal, target)
    const heads = await branches.heads(principal, lineage.function_name)
    ctx.body = {
      function_name: lineage.function_name,
      versions: BranchService.withoutKeyHashes(lineage.entries).map((e) => ({
        version: `v${e.version}`,
        rufid: fullRufidOf(e),
        rufid_short: e.rufid_short,
        content_digest: e.content_digest,
        created_at: e.created_at,
        author: e.author,
        ...(e.deleted_at ? { deleted_at: e.deleted_at } : {}),
        manifest_snapshot: e.manifest_snapshot,
        branches: e.branches ?? [],
      })),
      heads: heads.map(headBody),
    }
  })

  router.get('/api/v1/functions/:rufid/export', async (ctx) => {
    ctx.state.operation = 'rufid.export'
    ctx.state.rufid = ctx.params.rufid
    const principal = await principalOf(ctx, engine)
    const target = functions.target(principal, ctx.params.rufid, queryString(ctx.query.version))
    const { fn } = await functions.resolve(principal, target)
    ctx.body = {
      rufid: fullRufidOf(fn),
      version: `v${fn.version}`,
      function_name: fn.function_name,
      manifest: fn.manifest,
      lockfile: fn.lockfile,
      // the files as they were sent (null: not sent as text, or a generated lockfile)
      manifest_text: fn.manifest_text ?? null,
      lockfile_text: fn.lockfile_text ?? null,
    }
  })
}
