import { requirePermission, type Engine } from '../../../engine/index.js'
import { CALLER_ERRORS, defineRoute, type RestRoute } from '../operation.js'
import { healthSchema, readinessSchema } from './response-schemas.js'

export interface SystemRoutesInit {
  /** `/metrics` open to anyone (`public`), to admin credentials (`admin`) or not served (`disabled`) */
  metricsAccess: 'public' | 'admin' | 'disabled'
}

/** What the daemon tells the doors about its state beside the engine's: draining before shutdown, still joining its federation. */
export interface NodeState {
  isDraining?: (() => boolean) | undefined
  /** a federated node that has not caught up with a member yet (federation.ready_timeout_ms at most) */
  isJoining?: (() => boolean) | undefined
}

/**
 * Whether the node serves (readyz, node info): once started and, when federated, caught up with
 * its federation; not while it drains before shutdown.
 */
export function readinessOf(engine: Engine, state: NodeState): { ready: boolean; status: 'ready' | 'starting' | 'draining' } {
  const draining = state.isDraining?.() ?? false
  const ready = engine.ready && !draining && !(state.isJoining?.() ?? false)
  return { ready, status: ready ? 'ready' : draining ? 'draining' : 'starting' }
}

/** Liveness, readiness, Prometheus metrics and this API's document (metered, not audited). */
export function systemRoutes(
  engine: Engine,
  init: SystemRoutesInit,
  c: NodeState & { openapi: () => Record<string, unknown> },
): RestRoute<never, unknown>[] {
  const routes: RestRoute<never, unknown>[] = [
    defineRoute({
      method: 'get', path: '/healthz', operation: 'system.health', access: 'public',
      summary: 'Liveness',
      responses: { 200: healthSchema },
      errors: [],
      async handle() {
        return { status: 'ok' as const, pid: process.pid, uptime_s: Math.round(process.uptime()) }
      },
    }),

    defineRoute({
      method: 'get', path: '/readyz', operation: 'system.ready', access: 'public',
      summary: 'Readiness (503 while starting or draining)',
      responses: { 200: readinessSchema, 503: readinessSchema },
      errors: [],
      async handle(_principal, ctx) {
        const { ready, status } = readinessOf(engine, c)
        ctx.status = ready ? 200 : 503
        return { status }
      },
    }),

    defineRoute({
      method: 'get', path: '/openapi.json', operation: 'system.openapi', access: 'public',
      summary: 'This document',
      responses: { 200: { contentType: 'application/json', schema: { type: 'object', description: 'an OpenAPI 3.1 document' } } },
      errors: [],
      async handle() {
        return c.openapi()
      },
    }),
  ]
  if (init.metricsAccess !== 'disabled') {
    const admin = init.metricsAccess === 'admin'
    routes.push(defineRoute({
      method: 'get', path: '/metrics', operation: 'system.metrics', access: admin ? 'caller' : 'public',
      summary: 'Prometheus metrics (server.metrics_access: public, admin credentials, or not served)',
      responses: { 200: { contentType: 'text/plain; version=0.0.4', schema: { type: 'string' } } },
      errors: admin ? [...CALLER_ERRORS] : [],
      async handle(principal, ctx) {
        if (admin) requirePermission(principal!, 'rufid.admin')
        ctx.type = engine.metrics.registry.contentType
        return engine.metrics.registry.metrics()
      },
    }))
  }
  return routes
}
