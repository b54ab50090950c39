import type { EventBus } from './events.js'
import { ExecutionService, type ExecutionServiceInit, type SandboxPort } from './executions/execution-service.js'
import type { SvcMetrics } from './metrics.js'
import { FunctionRegistry, type FunctionRegistryInit } from './registry/function-registry.js'
import type { CatalogStore } from './storage/catalog-store.js'

export interface EngineInit {
  registry: FunctionRegistryInit
  execution: ExecutionServiceInit
}

export interface EngineComponents {
  store: CatalogStore
  sandbox: SandboxPort & { start(): Promise<void>; stop(): Promise<void> }
  metrics: SvcMetrics
  events: EventBus
}

/**
 * The engine: everything svc-node does, with no knowledge of any protocol. Adapters call
 * `functions` and `executions` with a Principal they resolved from credentials.
 */
export interface Engine {
  readonly functions: FunctionRegistry
  readonly executions: ExecutionService
  readonly events: EventBus
  readonly metrics: SvcMetrics
  /** true between a successful start() and stop() */
  readonly ready: boolean
  start(): Promise<void>
  stop(): Promise<void>
}

export function createEngine(init: EngineInit, components: EngineComponents): Engine {
  const { store, sandbox, metrics, events } = components
  const functions = new FunctionRegistry(init.registry, { store, metrics, events })
  const executions = new ExecutionService(init.execution, { registry: functions, store, sandbox, metrics, events })
  let ready = false
  let starting: Promise<void> | undefined
  return {
    functions,
    executions,
    events,
    metrics,
    get ready() {
      return ready && store.isOpen
    },
    start() {
      starting ??= (async () => {
        await store.start()
        await sandbox.start()
        ready = true
        events.publishSystem({ type: 'node.started', tenant_id: null, rufid: null, message: 'engine started' })
      })()
      return starting
    },
    async stop() {
      if (starting === undefined) return
      await starting.catch(() => undefined)
      starting = undefined
      if (ready) events.publishSystem({ type: 'node.stopping', tenant_id: null, rufid: null, message: 'engine stopping' })
      ready = false
      await sandbox.stop()
      await store.stop()
    },
  }
}
