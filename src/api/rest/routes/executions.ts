import type { Engine } from '../../../engine/index.js'
import { CALLER_ERRORS, defineRoute, type RestRoute } from '../operation.js'
import { executionLogsBody, executionRecordBody } from '../presenters.js'
import { executionIdSchema } from './request-schemas.js'
import { executionLogsSchema, executionRecordSchema, receiptSchema } from './response-schemas.js'

/** Reading execution records (decisions.md "Execution record"). */
export function executionRoutes(engine: Engine): RestRoute<never, unknown>[] {
  return [
    defineRoute({
      method: 'get', path: '/v1/executions/:id', operation: 'execution.read',
      summary: 'An execution record (`tenant` is a deprecated alias of `tenant_id`)',
      responses: { 200: executionRecordSchema },
      params: { id: executionIdSchema },
      errors: [...CALLER_ERRORS, 400, 404],
      async handle(principal, ctx) {
        return executionRecordBody(await engine.executions.get(principal!, ctx.params.id!))
      },
    }),

    defineRoute({
      method: 'get', path: '/v1/executions/:id/logs', operation: 'execution.logs',
      summary: 'Console output of an execution',
      responses: { 200: executionLogsSchema },
      params: { id: executionIdSchema },
      errors: [...CALLER_ERRORS, 400, 404],
      async handle(principal, ctx) {
        return executionLogsBody(await engine.executions.get(principal!, ctx.params.id!))
      },
    }),

    defineRoute({
      method: 'get', path: '/v1/executions/:id/receipt', operation: 'execution.receipt',
      summary: 'The signed receipt of a finished execution (docs/receipts.md); 404 while it runs or when it has none',
      responses: { 200: receiptSchema },
      params: { id: executionIdSchema },
      errors: [...CALLER_ERRORS, 400, 404],
      async handle(principal, ctx) {
        return engine.executions.receiptOf(principal!, ctx.params.id!)
      },
    }),
  ]
}
