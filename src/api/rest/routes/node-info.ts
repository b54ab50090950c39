import { PROTOCOL_VERSION } from '../../../core/protocol-version.js'
import type { Engine } from '../../../engine/index.js'
import type { MemoryBoundStatus, OsIsolationStatus } from '../../../engine/sandbox/index.js'
import { defineRoute, type RestRoute } from '../operation.js'
import { readinessOf, type NodeState } from './system.js'
import { nodeAboutSchema } from './response-schemas.js'

/** What `GET /api/v1/node/info` states about the node. */
export interface NodeInfoInit {
  version: string
  /** sandbox worker processes (config execution.workers) */
  sandboxWorkers: number
  /** the OS wall around the sandbox workers (execution.os_isolation) */
  sandboxIsolation?: OsIsolationStatus
  /** the sandbox workers' memory bound and cgroups (execution.worker_memory_mb, execution.cgroups) */
  sandboxMemoryBound?: MemoryBoundStatus
  /** federation.enabled */
  federation: boolean
}

/**
 * `GET /api/v1/node/info`: version (the package's, and the protocol's: service-spec §9), uptime, readiness, how callers authenticate (the console reads
 * it to know whether to ask for a key), sandbox workers and whether the node is a federation
 * member. Public like /healthz and /readyz, and like them metered, not audited: it names no
 * tenant, key or function.
 */
export function nodeInfoRoutes(engine: Engine, init: NodeInfoInit | undefined, c: NodeState): RestRoute<never, unknown>[] {
  return [
    defineRoute({
      method: 'get', path: '/api/v1/node/info', operation: 'system.node_info', access: 'public',
      summary: 'Version, uptime, readiness, auth mode, sandbox workers with their OS wall and memory bound, federation on/off (no credentials needed)',
      responses: { 200: nodeAboutSchema },
      errors: [],
      async handle(_principal, ctx) {
        const { ready, status } = readinessOf(engine, c)
        const lifecycle = engine.events.lifecycle
        ctx.set('Cache-Control', 'no-store')
        return {
          name: 'svc-node' as const,
          version: init?.version ?? '0.0.0',
          protocol_version: PROTOCOL_VERSION,
          status,
          ready,
          started_at: lifecycle?.type === 'node.started' ? lifecycle.timestamp : null,
          uptime_s: Math.round(process.uptime()),
          auth_mode: engine.authMode,
          sandbox: {
            workers: init?.sandboxWorkers ?? null,
            os_isolation: osIsolationOf(init?.sandboxIsolation),
            memory_bound: memoryBoundOf(init?.sandboxMemoryBound),
          },
          federation: { enabled: init?.federation ?? engine.federation.port !== undefined },
        }
      },
    }),
  ]
}

/** Which sandbox layers are up, for operators: the OS wall's mechanism, the workers' uid, their network. */
function osIsolationOf(status: OsIsolationStatus | undefined): Record<string, unknown> | null {
  if (status === undefined) return null
  return {
    mode: status.mode,
    layer: status.layer,
    uid: status.uid,
    network: status.network,
    ...(status.reason !== undefined && { reason: status.reason }),
    ...(status.passedOver !== undefined && { passed_over: status.passedOver }),
  }
}

/** The workers' memory bound, for operators: the bound each worker is replaced past, and which cgroup backs it. */
function memoryBoundOf(status: MemoryBoundStatus | undefined): Record<string, unknown> | null {
  if (status === undefined) return null
  return {
    mode: status.mode,
    worker_memory_mb: status.workerMemoryMb,
    cgroup: status.cgroup,
    cgroup_memory_mb: status.cgroupMemoryMb,
    pids_max: status.pidsMax,
    ...(status.reason !== undefined && { reason: status.reason }),
  }
}
