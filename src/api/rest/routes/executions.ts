import type { Router } from '@koa/router'
import type { RestApiComponents, RestState } from '../app.js'
import { principalOf } from '../app.js'
import { executionRecordBody } from '../presenters.js'

/** Reading execution records (decisions.md "Execution record"). */
export function registerExecutionRoutes(router: Router<RestState>, { engine }: RestApiComponents): void {
  router.get('/v1/executions/:id', async (ctx) => {
    ctx.state.operation = 'execution.read'
    const principal = await principalOf(ctx, engine)
    ctx.body = executionRecordBody(await engine.executions.get(principal, ctx.params.id))
  })

  router.get('/v1/executions/:id/logs', async (ctx) => {
    ctx.state.operation = 'execution.logs'
    const principal = await principalOf(ctx, engine)
    const record = await engine.executions.get(principal, ctx.params.id)
    ctx.body = { execution_id: record.execution_id, status: record.status, logs: record.logs }
  })
}
