import { SvcError } from '../../../core/errors.js'
import { requirePermission, type Engine } from '../../../engine/index.js'
import { CALLER_ERRORS, defineRoute, type RestRoute } from '../operation.js'
import { federationOf } from './federation.js'
import { memberStatusListSchema } from './response-schemas.js'

/**
 * `GET /api/v1/federation/members`: every node this one knows, with its certificate (subject,
 * serial, expiry), when it was last heard from and its catalog digest (asked of each member now)
 * beside this node's, so an operator sees at a glance whether the federation has converged.
 */
export function federationMemberRoutes(engine: Engine): RestRoute<never, unknown>[] {
  return [
    defineRoute({
      method: 'get', path: '/api/v1/federation/members', operation: 'federation.members',
      summary: "Known nodes with certificate, last seen and each member's catalog digest beside this node's (409 federation_disabled without federation)",
      responses: { 200: memberStatusListSchema },
      errors: [...CALLER_ERRORS, 409, 502],
      async handle(principal) {
        requirePermission(principal!, 'rufid.read')
        const port = federationOf(engine)
        if (port.memberStatus === undefined) throw new SvcError('FEDERATION_UNREACHABLE', 'this node cannot report member status')
        const members = await port.memberStatus()
        const own = members.find((m) => m.self)?.catalog?.digest ?? null
        return {
          node_id: port.nodeId,
          digest: own,
          converged: members.filter((m) => m.connected).every((m) => m.catalog?.digest === own),
          members,
        }
      },
    }),
  ]
}
