import type { Router } from '@koa/router'
import type { RestApiComponents, RestState } from '../app.js'

/** What the node tells anyone about itself (`GET /api/v1/node/info`, no credentials needed). */
export interface NodeInfoInit {
  version: string
  /** sandbox worker processes (config execution.workers) */
  sandboxWorkers: number
  /** federation.enabled */
  federation: boolean
}

/**
 * `GET /api/v1/node/info`: version, uptime, readiness, how callers authenticate (the console reads
 * it to know whether to ask for a key), sandbox workers and whether the node is a federation
 * member. Public like /healthz and /readyz: it names no tenant, key or function.
 */
export function registerNodeInfoRoutes(router: Router<RestState>, init: NodeInfoInit | undefined, { engine, isDraining }: RestApiComponents): void {
  router.get('/api/v1/node/info', (ctx) => {
    ctx.state.operation = 'system.node_info'
    const draining = isDraining?.() ?? false
    const ready = engine.ready && !draining
    const lifecycle = engine.events.lifecycle
    ctx.set('Cache-Control', 'no-store')
    ctx.body = {
      name: 'svc-node',
      version: init?.version ?? '0.0.0',
      status: ready ? 'ready' : draining ? 'draining' : 'starting',
      ready,
      started_at: lifecycle?.type === 'node.started' ? lifecycle.timestamp : null,
      uptime_s: Math.round(process.uptime()),
      auth_mode: engine.authMode,
      sandbox: { workers: init?.sandboxWorkers ?? null },
      federation: { enabled: init?.federation ?? engine.federation !== undefined },
    }
  })
}
