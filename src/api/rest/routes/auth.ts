import type { Router } from '@koa/router'
import type { RestApiComponents, RestState } from '../app.js'
import { principalOf } from '../app.js'
import { executionBody } from '../presenters.js'
import { bodyOf, queryInt, queryString } from '../request.js'

/** API keys, the audit log and the native/test-mode group (service-spec §4.3). */
export function registerAuthRoutes(router: Router<RestState>, { engine }: RestApiComponents): void {
  router.post('/api/v1/auth/v2/api-keys', async (ctx) => {
    ctx.state.operation = 'auth.key_mint'
    const principal = await principalOf(ctx, engine)
    const minted = await engine.keys.mint(principal, bodyOf(ctx))
    ctx.status = 201
    ctx.set('Cache-Control', 'no-store')
    ctx.body = { api_key: minted.api_key, key_id: minted.key_id, name: minted.name, tenant_id: minted.tenant_id, scopes: minted.scopes, expires_at: minted.expires_at }
  })

  router.get('/api/v1/auth/v2/api-keys', async (ctx) => {
    ctx.state.operation = 'auth.key_list'
    const principal = await principalOf(ctx, engine)
    ctx.body = { items: await engine.keys.list(principal) }
  })

  router.delete('/api/v1/auth/v2/api-keys/:keyId', async (ctx) => {
    ctx.state.operation = 'auth.key_revoke'
    const principal = await principalOf(ctx, engine)
    const revoked = await engine.keys.revoke(principal, ctx.params.keyId)
    ctx.body = { key_id: revoked.key_id, revoked_at: revoked.revoked_at }
  })

  router.get('/api/v1/audit', async (ctx) => {
    ctx.state.operation = 'audit.read'
    const principal = await principalOf(ctx, engine)
    const q = ctx.query
    // who may read which tenant's entries is the engine's rule (AuditLog.readAs)
    ctx.body = await engine.auditLog.readAs(principal, {
      from: queryString(q.from),
      to: queryString(q.to),
      tenant: queryString(q.tenant),
      operation: queryString(q.operation),
      rufid: queryString(q.rufid),
      limit: queryInt(q.limit),
      cursor: queryString(q.cursor),
    })
  })

  router.post('/api/v1/execution/execute', async (ctx) => {
    ctx.state.operation = 'rufid.execute'
    const body = bodyOf(ctx)
    ctx.state.rufid = typeof body.rufid === 'string' ? body.rufid : undefined
    const namespace = typeof body.namespace === 'string' && body.namespace !== '' ? body.namespace : undefined
    const principal = await principalOf(ctx, engine, ctx.get('x-svc-namespace') || namespace)
    const { record, registered, total_time_ms } = await engine.nativeExecute(principal, body)
    ctx.body = {
      ...executionBody(record),
      rufid: record.rufid,
      registered,
      timing: {
        execution_time_ms: record.execution_time_ms ?? 0,
        cpu_time_ms: record.cpu_time_ms ?? 0,
        total_time_ms: Math.round(total_time_ms * 1000) / 1000,
      },
    }
  })
}
