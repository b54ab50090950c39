import { ALL_PERMISSIONS, hasPermission, type Engine } from '../../../engine/index.js'
import { CALLER_ERRORS, defineRoute, type RestRoute } from '../operation.js'
import { whoamiSchema } from './response-schemas.js'

/**
 * `GET /api/v1/auth/whoami`: who the caller's credential is (tenant, user, how it authenticated,
 * key id) and what it may do, and what its tenant stores on this node against its quota (counted
 * for the root of its namespaces). Any valid credential may ask; 401 without one. The console signs
 * in with it and shows only the pages the credential can use. Audited like every caller read.
 */
export function whoamiRoutes(engine: Engine): RestRoute<never, unknown>[] {
  return [
    defineRoute({
      method: 'get', path: '/api/v1/auth/whoami', operation: 'auth.whoami',
      summary: "The caller's tenant, identity and permissions",
      responses: { 200: whoamiSchema },
      errors: [...CALLER_ERRORS],
      async handle(principal, ctx) {
        const p = principal!
        ctx.set('Cache-Control', 'no-store')
        return {
          tenant_id: p.tenant_id,
          user: p.user,
          method: p.method,
          key_id: p.key_id ?? null,
          permissions: ALL_PERMISSIONS.filter((permission) => hasPermission(p, permission)),
          admin: hasPermission(p, 'rufid.admin'),
          storage: engine.tenantStorage(p),
        }
      },
    }),
  ]
}
