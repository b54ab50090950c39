import type { Router } from '@koa/router'
import type { RestApiComponents, RestState } from '../app.js'
import { principalOf } from '../app.js'
import { metadataBody } from '../presenters.js'
import { bodyOf, queryInt, queryString } from '../request.js'

/** The `/v1` group (service-spec §4.2 with the field names of decisions.md). */
export function registerV1Routes(router: Router<RestState>, { engine }: RestApiComponents): void {
  router.post('/v1/functions', async (ctx) => {
    ctx.state.operation = 'rufid.create'
    const principal = await principalOf(ctx, engine)
    const r = await engine.publish(principal, bodyOf(ctx))
    ctx.state.rufid = r.rufid
    ctx.status = r.created ? 201 : 200
    ctx.body = { rufid: r.rufid, rufid_short: r.rufid_short, version: r.version, import_statement: r.import_statement, share_url: r.share_url }
  })

  router.post('/v1/functions/:rufid/executions', async (ctx) => {
    ctx.state.operation = 'rufid.execute'
    ctx.state.rufid = ctx.params.rufid
    const principal = await principalOf(ctx, engine)
    const target = engine.functions.target(principal, ctx.params.rufid)
    const input = (ctx.request as { body?: unknown }).body
    const record = await engine.executions.submit(principal, target, input)
    ctx.status = 202
    ctx.set('Location', `/v1/executions/${record.execution_id}`)
    ctx.body = { execution_id: record.execution_id, status: record.status }
  })

  router.get('/v1/marketplace/functions/search', async (ctx) => {
    ctx.state.operation = 'rufid.search'
    const principal = await principalOf(ctx, engine)
    const tags = queryString(ctx.query.tags)
    const result = await engine.marketplace.search(principal, {
      q: queryString(ctx.query.q),
      language: queryString(ctx.query.language),
      author: queryString(ctx.query.author),
      tags: tags === undefined || tags === '' ? undefined : tags.split(','),
      limit: queryInt(ctx.query.limit),
      offset: queryInt(ctx.query.offset),
    })
    ctx.body = {
      items: result.items.map((l) => metadataBody({ ...l, source_code: '' })),
      pagination: result.pagination,
      aggregations: result.aggregations,
    }
  })

  router.get('/v1/telemetry/functions/:rufid', async (ctx) => {
    ctx.state.operation = 'rufid.telemetry'
    ctx.state.rufid = ctx.params.rufid
    const principal = await principalOf(ctx, engine)
    const target = engine.functions.target(principal, ctx.params.rufid)
    ctx.body = await engine.telemetry(principal, target, queryString(ctx.query.window) ?? '15m')
  })
}
