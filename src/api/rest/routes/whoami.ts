import type { Router } from '@koa/router'
import { ALL_PERMISSIONS, hasPermission } from '../../../engine/index.js'
import type { RestApiComponents, RestState } from '../app.js'
import { principalOf } from '../app.js'

/**
 * `GET /api/v1/auth/whoami`: who the caller's credential is (tenant, user, how it authenticated,
 * key id) and what it may do. Any valid credential may ask; 401 without one. The console signs in
 * with it and shows only the pages the credential can use.
 */
export function registerWhoamiRoutes(router: Router<RestState>, { engine }: RestApiComponents): void {
  router.get('/api/v1/auth/whoami', async (ctx) => {
    ctx.state.operation = 'auth.whoami'
    const principal = await principalOf(ctx, engine)
    ctx.set('Cache-Control', 'no-store')
    ctx.body = {
      tenant_id: principal.tenant_id,
      user: principal.user,
      method: principal.method,
      key_id: principal.key_id ?? null,
      permissions: ALL_PERMISSIONS.filter((p) => hasPermission(principal, p)),
      admin: hasPermission(principal, 'rufid.admin'),
    }
  })
}
