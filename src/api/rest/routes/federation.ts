import { SvcError } from '../../../core/errors.js'
import { requirePermission, type Engine, type FederationPort } from '../../../engine/index.js'
import { BODY_ERRORS, CALLER_ERRORS, defineRoute, rufidOfPath, type RestRoute } from '../operation.js'
import { bodyOf } from '../request.js'
import { registrationRequestSchema, syncRequestSchema } from './request-schemas.js'
import {
  catalogDigestSchema, conflictListSchema, discoverySchema, memberListSchema, registrationAnswerSchema, syncBatchSchema,
} from './response-schemas.js'

/**
 * The federation port of the engine. A node without federation answers 409 with 1006 and
 * `details.reason: 'federation_disabled'`: nothing was unreachable (2001, 502 would say a member
 * could not be reached), the node is configured to run alone.
 */
export const federationOf = (engine: Engine): FederationPort => {
  const port = engine.federation.port
  if (port === undefined) {
    throw new SvcError('VALIDATION_FAILED', 'this node is not a federation member (federation.enabled is false)', {
      reason: 'federation_disabled', details: { reason: 'federation_disabled' },
    })
  }
  return port
}

/**
 * Federation (service-spec §4.6, decisions.md "Federation"): registration and node list,
 * discovery, incremental sync, the catalog digest and recorded conflicts.
 */
export function federationRoutes(engine: Engine): RestRoute<never, unknown>[] {
  return [
    defineRoute({
      // a node registers with its certificate (checked against the federation CA and its node_id)
      method: 'post', path: '/api/v1/federation/nodes', operation: 'federation.register', access: 'public',
      summary: 'Register a node by its federation certificate (409 federation_disabled when this node has no federation)',
      request: registrationRequestSchema,
      responses: { 201: registrationAnswerSchema },
      errors: [...BODY_ERRORS, 403, 409, 502],
      async handle(_principal, ctx) {
        const nodes = await federationOf(engine).register(bodyOf(ctx))
        ctx.status = 201
        return { nodes }
      },
    }),

    defineRoute({
      method: 'get', path: '/api/v1/federation/nodes', operation: 'federation.nodes',
      summary: 'Federation members',
      responses: { 200: memberListSchema },
      errors: [...CALLER_ERRORS, 409, 502],
      async handle(principal) {
        requirePermission(principal!, 'rufid.read')
        const port = federationOf(engine)
        return { node_id: port.nodeId, nodes: port.nodes() }
      },
    }),

    defineRoute({
      method: 'get', path: '/api/v1/federation/discover/:rufid', operation: 'federation.discover',
      summary: 'Nodes that provide a RUFID (DHT and catalog)',
      responses: { 200: discoverySchema },
      errors: [...CALLER_ERRORS, 400, 404, 409, 502],
      rufidOf: rufidOfPath,
      async handle(principal, ctx) {
        requirePermission(principal!, 'rufid.read')
        return federationOf(engine).discover(principal!, ctx.params.rufid!)
      },
    }),

    defineRoute({
      method: 'post', path: '/api/v1/federation/sync', operation: 'federation.sync',
      summary: "Incremental sync (operators: admins of the node's admin tenant; it covers every tenant): applies the caller's changes, answers this node's above its vector",
      request: syncRequestSchema,
      responses: { 200: syncBatchSchema },
      errors: [...CALLER_ERRORS, ...BODY_ERRORS, 409, 502],
      async handle(principal, ctx) {
        // a sync batch holds and changes every tenant's catalog: operators only (issue 16's tenancy matrix)
        engine.requireOperator(principal!)
        return federationOf(engine).sync(bodyOf(ctx) as never)
      },
    }),

    defineRoute({
      method: 'get', path: '/api/v1/federation/catalog/digest', operation: 'system.federation_digest', access: 'public',
      summary: 'Digest of the replicated catalog, to compare nodes',
      responses: { 200: catalogDigestSchema },
      errors: [],
      async handle() {
        const { digest, entries } = await engine.replication.digest()
        return { digest, entries, vector: engine.replication.versionVector() }
      },
    }),

    defineRoute({
      method: 'get', path: '/api/v1/federation/conflicts', operation: 'federation.conflicts',
      summary: "Recorded catalog conflicts: the caller's tenant's (operators, admins of the node's admin tenant, see every tenant's)",
      responses: { 200: conflictListSchema },
      errors: [...CALLER_ERRORS],
      async handle(principal) {
        requirePermission(principal!, 'rufid.read')
        // every tenant's conflicts for operators only (the tenancy matrix of issue 16 found any admin saw them)
        const all = engine.isOperator(principal!)
        return { items: await engine.replication.conflicts(all ? {} : { tenant: principal!.tenant_id }) }
      },
    }),
  ]
}
