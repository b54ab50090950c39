import type { Router } from '@koa/router'
import { SvcError } from '../../../core/errors.js'
import { requirePermission, type Engine, type FederationPort } from '../../../engine/index.js'
import type { RestApiComponents, RestState } from '../app.js'
import { principalOf } from '../app.js'
import { bodyOf } from '../request.js'

const federationOf = (engine: Engine): FederationPort => {
  const port = engine.federation
  if (port === undefined) throw new SvcError('FEDERATION_UNREACHABLE', 'this node is not a federation member (federation.enabled is false)')
  return port
}

/**
 * Federation (service-spec §4.6, decisions.md "Federation"): registration and node list,
 * discovery, incremental sync, the catalog digest and recorded conflicts.
 */
export function registerFederationRoutes(router: Router<RestState>, { engine }: RestApiComponents): void {
  // a node registers with its certificate (checked against the federation CA and its node_id)
  router.post('/api/v1/federation/nodes', async (ctx) => {
    ctx.state.operation = 'federation.register'
    const nodes = await federationOf(engine).register(bodyOf(ctx))
    ctx.status = 201
    ctx.body = { nodes }
  })

  router.get('/api/v1/federation/nodes', async (ctx) => {
    ctx.state.operation = 'federation.nodes'
    requirePermission(await principalOf(ctx, engine), 'rufid.read')
    const port = federationOf(engine)
    ctx.body = { node_id: port.nodeId, nodes: port.nodes() }
  })

  router.get('/api/v1/federation/discover/:rufid', async (ctx) => {
    ctx.state.operation = 'federation.discover'
    const principal = await principalOf(ctx, engine)
    requirePermission(principal, 'rufid.read')
    ctx.state.rufid = ctx.params.rufid
    ctx.body = await federationOf(engine).discover(principal, ctx.params.rufid!)
  })

  router.post('/api/v1/federation/sync', async (ctx) => {
    ctx.state.operation = 'federation.sync'
    requirePermission(await principalOf(ctx, engine), 'rufid.admin')
    ctx.body = await federationOf(engine).sync(bodyOf(ctx) as never)
  })

  router.get('/api/v1/federation/catalog/digest', async (ctx) => {
    ctx.state.operation = 'system.federation_digest'
    const { digest, entries } = await engine.replication.digest()
    ctx.body = { digest, entries, vector: engine.replication.versionVector() }
  })

  router.get('/api/v1/federation/conflicts', async (ctx) => {
    ctx.state.operation = 'federation.conflicts'
    const principal = await principalOf(ctx, engine)
    requirePermission(principal, 'rufid.read')
    const admin = principal.permissions.has('rufid.admin')
    ctx.body = { items: await engine.replication.conflicts(admin ? {} : { tenant: principal.tenant_id }) }
  })
}
