import { mintRequestSchema, type Engine } from '../../../engine/index.js'
import { BODY_ERRORS, CALLER_ERRORS, defineRoute, EXECUTION_ERRORS, rufidOfBody, FUNCTION_ERRORS, type RestRoute } from '../operation.js'
import { executionBody } from '../presenters.js'
import { bodyOf } from '../request.js'
import { auditQuerySchema, nativeExecuteRequestSchema } from './request-schemas.js'
import { auditPageSchema, keyListSchema, keyRevocationSchema, mintedKeySchema, nativeExecutionSchema } from './response-schemas.js'

/** API keys, the audit log and the native/test-mode group (service-spec §4.3). */
export function authRoutes(engine: Engine, init: { maxExpiresDays: number; defaultExpiresDays: number | null }): RestRoute<never, unknown>[] {
  const mint = mintRequestSchema({ defaultExpiresDays: init.defaultExpiresDays, maxExpiresDays: init.maxExpiresDays })
  // while keys of this node expire, `expires_days: null` (never) is refused (1006): the document
  // allows null only on a node whose auth.keys.default_expires_days is null
  const mintRequest = init.defaultExpiresDays === null ? mint : mint.extend({
    expires_days: mint.shape.expires_days.unwrap().unwrap().optional()
      .describe(`days until the key expires, 1 to ${init.maxExpiresDays} (default ${init.defaultExpiresDays})`),
  })
  return [
    defineRoute({
      method: 'post', path: '/api/v1/auth/v2/api-keys', operation: 'auth.key_mint',
      summary: 'Mint an API key (admin); the key is shown once',
      request: mintRequest.meta({ id: 'ApiKeyRequest' }),
      responses: { 201: mintedKeySchema },
      errors: [...CALLER_ERRORS, ...BODY_ERRORS],
      async handle(principal, ctx) {
        const minted = await engine.keys.mint(principal!, bodyOf(ctx))
        ctx.status = 201
        ctx.set('Cache-Control', 'no-store')
        return { api_key: minted.api_key, key_id: minted.key_id, name: minted.name, tenant_id: minted.tenant_id, scopes: minted.scopes, expires_at: minted.expires_at }
      },
    }),

    defineRoute({
      method: 'get', path: '/api/v1/auth/v2/api-keys', operation: 'auth.key_list',
      summary: "The tenant's API keys without secrets (admin)",
      responses: { 200: keyListSchema },
      errors: [...CALLER_ERRORS],
      async handle(principal) {
        return { items: await engine.keys.list(principal!) }
      },
    }),

    defineRoute({
      method: 'delete', path: '/api/v1/auth/v2/api-keys/:keyId', operation: 'auth.key_revoke',
      summary: "Revoke an API key (admin); a tenant's last active admin key is refused (403, 1003 last_admin_key): mint its successor first",
      responses: { 200: keyRevocationSchema },
      errors: [...CALLER_ERRORS, 404],
      async handle(principal, ctx) {
        const revoked = await engine.keys.revoke(principal!, ctx.params.keyId!)
        return { key_id: revoked.key_id, revoked_at: revoked.revoked_at }
      },
    }),

    defineRoute({
      method: 'get', path: '/api/v1/audit', operation: 'audit.read',
      summary: 'Audit entries: an admin reads its tenant, an operator (admin of the admin tenant) any',
      query: auditQuerySchema,
      responses: { 200: auditPageSchema },
      errors: [...CALLER_ERRORS, 400],
      async handle(principal, ctx) {
        // who may read which tenant's entries is the engine's rule (AuditLog.readAs)
        return engine.auditLog.readAs(principal!, ctx.state.query)
      },
    }),

    defineRoute({
      method: 'post', path: '/api/v1/execution/execute', operation: 'rufid.execute',
      summary: 'Native test-mode execution (service-spec §4.3): registers the function from source_code when the RUFID is unknown',
      request: nativeExecuteRequestSchema,
      responses: { 200: nativeExecutionSchema },
      errors: [...CALLER_ERRORS, ...BODY_ERRORS, ...FUNCTION_ERRORS, ...EXECUTION_ERRORS],
      rufidOf: rufidOfBody,
      namespaceOf: (ctx) => {
        const namespace = bodyOf(ctx).namespace
        return typeof namespace === 'string' && namespace !== '' ? namespace : undefined
      },
      async handle(principal, ctx, call) {
        // a registration is part of the execute, audited as a create by the caller (decisions.md)
        const { record, registered, total_time_ms } = await engine.nativeExecute(principal!, bodyOf(ctx), {
          registered: (rufid) => (call.performed ??= []).push({ operation: 'rufid.create', rufid }),
        })
        return {
          ...executionBody(record),
          rufid: record.rufid,
          registered,
          timing: {
            execution_time_ms: record.execution_time_ms ?? 0,
            cpu_time_ms: record.cpu_time_ms ?? 0,
            total_time_ms: Math.round(total_time_ms * 1000) / 1000,
          },
        }
      },
    }),
  ]
}
