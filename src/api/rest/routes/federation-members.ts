import type { Router } from '@koa/router'
import { SvcError } from '../../../core/errors.js'
import { requirePermission } from '../../../engine/index.js'
import type { RestApiComponents, RestState } from '../app.js'
import { principalOf } from '../app.js'

/**
 * `GET /api/v1/federation/members`: every node this one knows, with its certificate (subject,
 * serial, expiry), when it was last heard from and its catalog digest (asked of each member now)
 * beside this node's, so an operator sees at a glance whether the federation has converged.
 */
export function registerFederationMemberRoutes(router: Router<RestState>, { engine }: RestApiComponents): void {
  router.get('/api/v1/federation/members', async (ctx) => {
    ctx.state.operation = 'federation.members'
    requirePermission(await principalOf(ctx, engine), 'rufid.read')
    const port = engine.federation
    if (port?.memberStatus === undefined) throw new SvcError('FEDERATION_UNREACHABLE', 'this node is not a federation member (federation.enabled is false)')
    const members = await port.memberStatus()
    const own = members.find((m) => m.self)?.catalog?.digest ?? null
    ctx.body = {
      node_id: port.nodeId,
      digest: own,
      converged: members.filter((m) => m.connected).every((m) => m.catalog?.digest === own),
      members,
    }
  })
}
