import type { Router } from '@koa/router'
import type { RestApiComponents, RestState } from '../app.js'
import { principalOf } from '../app.js'
import { bodyOf, queryInt, queryString } from '../request.js'
import { fullRufidOf } from '../../../engine/index.js'
import { creationBody, executionBody, metadataBody, resolutionBody } from '../presenters.js'
import { executeRequestSchema, parseRequest, resolveRequestSchema } from './request-schemas.js'

/** The core group, service-spec §4.1, plus listing, metadata and deletion (§4.7 left them open). */
export function registerFunctionRoutes(router: Router<RestState>, { engine }: RestApiComponents): void {
  const { functions, executions } = engine

  router.post('/api/v1/functions/create', async (ctx) => {
    ctx.state.operation = 'rufid.create'
    const principal = await principalOf(ctx, engine)
    const result = await functions.create(principal, bodyOf(ctx))
    ctx.state.rufid = result.rufid
    ctx.status = result.created ? 201 : 200
    ctx.body = creationBody(result)
  })

  router.post('/api/v1/functions/resolve', async (ctx) => {
    ctx.state.operation = 'rufid.resolve'
    const principal = await principalOf(ctx, engine)
    const body = bodyOf(ctx)
    ctx.state.rufid = typeof body.rufid === 'string' ? body.rufid : undefined
    // a malformed RUFID or version is 1001 (target), any other problem of the body 1006
    const target = functions.target(principal, body.rufid, body.version)
    parseRequest(resolveRequestSchema, body, 'resolve request')
    ctx.body = resolutionBody(await functions.resolve(principal, target))
  })

  router.post('/api/v1/functions/:rufid/execute', async (ctx) => {
    ctx.state.operation = 'rufid.execute'
    ctx.state.rufid = ctx.params.rufid
    const principal = await principalOf(ctx, engine)
    const body = bodyOf(ctx)
    const target = functions.target(principal, ctx.params.rufid, body.version)
    parseRequest(executeRequestSchema, body, 'execute request')
    ctx.body = executionBody(await executions.execute(principal, target, body.arguments))
  })

  router.get('/api/v1/functions', async (ctx) => {
    ctx.state.operation = 'rufid.list'
    const principal = await principalOf(ctx, engine)
    const tags = ctx.query.tags
    const page = await functions.list(principal, {
      search: queryString(ctx.query.search),
      tags: tags === undefined ? undefined : (Array.isArray(tags) ? tags : tags.split(',')),
      limit: queryInt(ctx.query.limit),
      offset: queryInt(ctx.query.offset),
    })
    ctx.body = { items: page.items.map((fn) => metadataBody(fn)), pagination: page.pagination }
  })

  router.get('/api/v1/functions/:rufid', async (ctx) => {
    ctx.state.operation = 'rufid.read'
    ctx.state.rufid = ctx.params.rufid
    const principal = await principalOf(ctx, engine)
    const target = functions.target(principal, ctx.params.rufid, queryString(ctx.query.version))
    const { fn } = await functions.resolve(principal, target)
    ctx.body = metadataBody(fn, await executions.usageOf(fn))
  })

  router.delete('/api/v1/functions/:rufid', async (ctx) => {
    ctx.state.operation = 'rufid.delete'
    ctx.state.rufid = ctx.params.rufid
    const principal = await principalOf(ctx, engine)
    const target = functions.target(principal, ctx.params.rufid, queryString(ctx.query.version))
    const deleted = await functions.delete(principal, target)
    ctx.body = { deleted: deleted.map(fullRufidOf) }
  })
}
