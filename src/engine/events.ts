import { EventEmitter } from 'node:events'

/** Emitted once per finished execution; every subscription channel reads these from one bus. */
export interface ExecutionEvent {
  execution_id: string
  rufid: string
  rufid_short: string
  version: string
  tenant_id: string
  function_name: string
  status: string
  execution_time_ms: number
  error_code: number | null
  timestamp: string
  /** SHA-256 hex of the receipt's signed bytes (docs/receipts.md §4); null when it has none */
  receipt_digest: string | null
  /** true when the result came from the result cache (the receipt is the computing execution's) */
  cached: boolean
}

export type SystemEventType =
  | 'function.created'
  | 'function.deleted'
  | 'node.started'
  | 'node.stopping'
  | 'peer.joined'
  | 'peer.left'

export interface SystemEvent {
  type: SystemEventType
  /** set for tenant-scoped events; node-wide events have none */
  tenant_id: string | null
  rufid: string | null
  message: string
  timestamp: string
  data: Record<string, unknown>
}

/** A subscription's filter: one hash, optionally one version of it (a full RUFID pins the version). */
export interface SubscriptionTarget {
  short: string
  version?: number
}

/**
 * Whether an execution event belongs to a subscription of `tenant` (undefined `target`: every
 * function of the tenant). The one rule every subscription channel applies (GraphQL, gRPC, /ws).
 */
export function executionEventMatches(event: ExecutionEvent, tenant: string, target: SubscriptionTarget | undefined): boolean {
  if (event.tenant_id !== tenant) return false
  if (target === undefined) return true
  return event.rufid_short === target.short && (target.version === undefined || event.version === `v${target.version}`)
}

/** Whether a system event reaches a subscriber of `tenant`: its tenant's events and node-wide ones. */
export function systemEventVisibleTo(event: SystemEvent, tenant: string): boolean {
  return event.tenant_id === null || event.tenant_id === tenant
}

interface EventMap {
  execution: [ExecutionEvent]
  system: [SystemEvent]
}

/** The engine's one event bus. Listeners must not throw; slow consumers buffer on their own side. */
export class EventBus extends EventEmitter<EventMap> {
  #lifecycle: SystemEvent | undefined

  constructor() {
    super({ captureRejections: false })
    this.setMaxListeners(0)
  }

  /**
   * The node's latest lifecycle event (`node.started` or `node.stopping`), undefined before the node
   * announced it serves. Each system-event channel sends it first to a new subscriber: nobody can
   * be subscribed when a node starts, so this is how a client learns that (and when) it did.
   */
  get lifecycle(): SystemEvent | undefined {
    return this.#lifecycle
  }

  publishExecution(event: ExecutionEvent): void {
    this.emit('execution', event)
  }

  publishSystem(event: Omit<SystemEvent, 'timestamp' | 'data'> & { data?: Record<string, unknown> }): void {
    const published: SystemEvent = { ...event, data: event.data ?? {}, timestamp: new Date().toISOString() }
    if (published.type === 'node.started' || published.type === 'node.stopping') this.#lifecycle = published
    this.emit('system', published)
  }
}
