import { AsyncLocalStorage } from 'node:async_hooks'
import { promiseHooks } from 'node:v8'
import type { SvcMetrics } from '../metrics.js'
import type { OperationCall } from './envelope.js'

/**
 * Event-loop blocks and who caused them (issue 27: one request's synchronous work must not hold
 * every tenant's requests, and when one does, the operator must learn which). The node runs on one
 * thread: while one operation's synchronous code runs, nothing else does, so "which requests were
 * in flight" names the victims, not the culprit. This monitor names the operation whose code ran.
 *
 * How:
 * - The envelope runs every operation in `operationContext` (an AsyncLocalStorage holding its
 *   call), so the operation's continuations carry it across awaits.
 * - A heartbeat timer (every `intervalMs`) sees a stall: it fires late by more than `thresholdMs`.
 * - The culprit: code creates promises all the time, and a long synchronous stretch creates none.
 *   A promise-creation hook (one clock read per promise) notes each gap longer than the threshold
 *   between two promise creations, and the operation in whose context the first promise after the
 *   gap was made: the code that had blocked continues right after it (returns to its caller, which
 *   awaits the next step). A stall the heartbeat saw is matched with the gap that covers it; a
 *   stall with no such gap (a callback that blocked and made no promise after it) is `unattributed`.
 *
 * Each block counts in `svc_event_loop_blocks_total{protocol,operation}` and
 * `svc_event_loop_block_seconds`, and is logged as a warning naming the protocol, the operation,
 * the tenant (when the caller was admitted), the RUFID it named, and how long the loop was held.
 * The lag itself is prom-client's default `nodejs_eventloop_lag_*` gauges.
 */
export interface LoopMonitorInit {
  /** a stall longer than this is a block (config `server.block_warn_ms`, default 100) */
  thresholdMs: number
  /** heartbeat period (default 20 ms) */
  intervalMs?: number
}

export interface LoopMonitorLogger {
  warn(obj: object, msg: string): void
}

export interface LoopMonitorComponents {
  metrics: Pick<SvcMetrics, 'eventLoopBlocks' | 'eventLoopBlockDuration'>
  logger: LoopMonitorLogger
}

/** What runs an operation: its call and the door's protocol (rest, graphql, grpc, ws). */
export interface OperationContext {
  readonly protocol: string
  readonly call: OperationCall
}

/** The operation whose code is running (set by the envelope around every operation it runs). */
export const operationContext = new AsyncLocalStorage<OperationContext>()

/** One block the monitor saw. */
export interface LoopBlock {
  /** how long the loop was held, in ms (the heartbeat's lateness) */
  ms: number
  /** the culprit, when known */
  protocol: string | undefined
  operation: string | undefined
  tenant_id: string | undefined
  rufid: string | null | undefined
}

/** A gap between two promise creations longer than the threshold, and the context after it. */
interface Gap {
  start: number
  end: number
  context: OperationContext | undefined
}

const MAX_GAPS = 16

export class LoopMonitor {
  private readonly thresholdMs: number
  private readonly intervalMs: number
  private timer: NodeJS.Timeout | undefined
  private stopHook: (() => void) | undefined
  private lastBeat = 0
  private lastPromise = 0
  private readonly gaps: Gap[] = []
  /** every block seen, newest last (the last 32), for tests and diagnostics */
  readonly recent: LoopBlock[] = []

  constructor(init: LoopMonitorInit, private readonly components: LoopMonitorComponents) {
    this.thresholdMs = init.thresholdMs
    this.intervalMs = init.intervalMs ?? 20
  }

  /** Starts the heartbeat and the promise hook; idempotent. */
  start(): void {
    if (this.timer !== undefined) return
    this.lastBeat = this.lastPromise = performance.now()
    this.stopHook = promiseHooks.onInit(() => this.promiseMade()) as () => void
    this.timer = setInterval(() => this.beat(), this.intervalMs)
    this.timer.unref()
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer)
    this.timer = undefined
    this.stopHook?.()
    this.stopHook = undefined
  }

  private promiseMade(): void {
    const now = performance.now()
    if (now - this.lastPromise > this.thresholdMs) {
      this.gaps.push({ start: this.lastPromise, end: now, context: operationContext.getStore() })
      if (this.gaps.length > MAX_GAPS) this.gaps.shift()
    }
    this.lastPromise = now
  }

  private beat(): void {
    const now = performance.now()
    const late = now - this.lastBeat - this.intervalMs
    this.lastBeat = now
    if (late <= this.thresholdMs) return
    // the stall: from when this beat was due to when it ran; the gap that covers most of it
    const due = now - late
    let best: Gap | undefined
    let overlap = 0
    for (const gap of this.gaps) {
      const o = Math.min(gap.end, now) - Math.max(gap.start, due)
      if (o > overlap) {
        overlap = o
        best = gap
      }
    }
    this.gaps.length = 0
    this.report(late, overlap >= Math.min(this.thresholdMs, late / 2) ? best?.context : undefined, best !== undefined)
  }

  private report(ms: number, context: OperationContext | undefined, sawGap: boolean): void {
    const call = context?.call
    const block: LoopBlock = {
      ms: Math.round(ms),
      protocol: context?.protocol,
      operation: call?.operation.name,
      tenant_id: call?.principal?.tenant_id,
      rufid: call?.rufid,
    }
    this.recent.push(block)
    if (this.recent.length > 32) this.recent.shift()
    const { metrics, logger } = this.components
    metrics.eventLoopBlocks.inc({ protocol: block.protocol ?? 'none', operation: block.operation ?? (sawGap ? 'none' : 'unattributed') })
    metrics.eventLoopBlockDuration.observe(ms / 1000)
    logger.warn(
      { blocked_ms: block.ms, protocol: block.protocol ?? null, operation: block.operation ?? null, tenant_id: block.tenant_id ?? null, rufid: block.rufid ?? null },
      block.operation !== undefined
        ? `event loop blocked ${block.ms} ms by ${block.protocol} ${block.operation}${block.tenant_id !== undefined ? ` of tenant ${block.tenant_id}` : ''}`
        : `event loop blocked ${block.ms} ms outside any operation`,
    )
  }
}
