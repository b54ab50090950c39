import { AsyncLocalStorage } from 'node:async_hooks'
import { promiseHooks } from 'node:v8'
import type { SvcMetrics } from '../metrics.js'
import type { OperationCall } from './envelope.js'

/**
 * Event-loop blocks and who caused them (issue 27: one request's synchronous work must not hold
 * every tenant's requests, and when one does, the operator must learn which). The node runs on one
 * thread: while one operation's synchronous code runs, nothing else does, so "which requests were
 * in flight" names the victims, not the culprit. This monitor names the operation whose code ran,
 * at a cost the request path can carry (no per-promise work in the steady state).
 *
 * How:
 * - A heartbeat timer (every `intervalMs`) sees a stall: it fires late by more than `thresholdMs`.
 * - The envelope times the synchronous stretch of each step it starts for an operation (its
 *   decode, its admission, and its handler up to the handler's first `await`: where parsing,
 *   hashing and validation of the caller's input run) and reports a stretch longer than the
 *   threshold with its operation (`noteSync`). A stall covered by such a stretch is blamed on it.
 * - A stall no stretch covers, while no operation was in flight (or had just ended), happened
 *   outside any operation (a timer, the door's own parsing, libp2p).
 * - A stall no stretch covers while operations were in flight was made by code after some
 *   operation's `await`. Naming that one needs the operation's context to follow it across awaits
 *   (an AsyncLocalStorage) and a promise-creation hook: both enable V8's promise hooks, which
 *   doubled the daemon's CPU per request when they were always on (a REST resolve 76–96 → 163–182
 *   µs, bench/cpu-cost.js, 2026-11-28). So they are switched on only then, for `attributionMs`
 *   (60 s) after such a stall: that stall is logged with the operations in flight, and one that
 *   happens again (a hostile tenant repeats itself) is named. In that mode the envelope runs each
 *   operation in `operationContext`, and the hook notes each gap longer than the threshold between
 *   two promise creations with the operation in whose context the first promise after the gap was
 *   made: the code that had blocked continues right after it (returns to its caller, which awaits
 *   the next step).
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
  /** how long context tracking stays on after a stall it was needed for (default 60 000 ms) */
  attributionMs?: number
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
  /** no culprit could be named: the operations that were in flight (`protocol operation (tenant)`) */
  in_flight?: string[]
}

/** A stretch of synchronous code longer than the threshold, and whose it was. */
interface Gap {
  start: number
  end: number
  context: OperationContext | undefined
}

const MAX_GAPS = 16
const MAX_CANDIDATES = 32

/** The monitor the envelope reports to: the event loop is one per process, and so is its monitor. */
const reporting: { to: LoopMonitor | undefined } = { to: undefined }

/**
 * Runs `fn` (an operation's code, from the envelope) as `context`: counted in flight until
 * `operationEnded`, and in its AsyncLocalStorage context while the monitor tracks contexts.
 */
export function runInOperation<T>(context: OperationContext, fn: () => T): T {
  const monitor = reporting.to
  if (monitor === undefined) return fn()
  monitor.inFlight.add(context)
  return monitor.attributing ? operationContext.run(context, fn) : fn()
}

/** The operation `runInOperation` started has ended (settled, either way). */
export function operationEnded(context: OperationContext): void {
  reporting.to?.ended(context)
}

/**
 * The envelope's timing of a synchronous stretch of `context`'s code that began at `startedAt`
 * (performance.now()) and ends now; a stretch longer than the threshold is a block's culprit.
 */
export function noteSync(context: OperationContext, startedAt: number): void {
  const monitor = reporting.to
  if (monitor === undefined) return
  const now = performance.now()
  if (now - startedAt > monitor.thresholdMs) monitor.addGap({ start: startedAt, end: now, context })
}

export class LoopMonitor {
  readonly thresholdMs: number
  private readonly intervalMs: number
  private readonly attributionMs: number
  private timer: NodeJS.Timeout | undefined
  private stopHook: (() => void) | undefined
  private lastBeat = 0
  private lastPromise = 0
  private attributeUntil = 0
  private readonly gaps: Gap[] = []
  /** operations whose code may run now (the envelope adds and removes them) */
  readonly inFlight = new Set<OperationContext>()
  /** operations that ended while the loop was stalled since the last beat (candidates too) */
  private readonly endedLate: OperationContext[] = []
  /** every block seen, newest last (the last 32), for tests and diagnostics */
  readonly recent: LoopBlock[] = []

  constructor(init: LoopMonitorInit, private readonly components: LoopMonitorComponents) {
    this.thresholdMs = init.thresholdMs
    this.intervalMs = init.intervalMs ?? 20
    this.attributionMs = init.attributionMs ?? 60_000
  }

  /** True while operations' contexts are tracked across awaits (after an unattributed stall). */
  get attributing(): boolean {
    return this.stopHook !== undefined
  }

  /** Starts the heartbeat; idempotent. The envelope reports to the monitor started last. */
  start(): void {
    if (this.timer !== undefined) return
    this.lastBeat = this.lastPromise = performance.now()
    reporting.to = this
    this.timer = setInterval(() => this.beat(), this.intervalMs)
    this.timer.unref()
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer)
    this.timer = undefined
    this.stopTracking()
    if (reporting.to === this) reporting.to = undefined
    this.inFlight.clear()
  }

  /** @internal (the envelope, through `operationEnded`) */
  ended(context: OperationContext): void {
    this.inFlight.delete(context)
    // ended right after a stall, before the heartbeat could look: may be the culprit
    if (performance.now() - this.lastBeat > this.intervalMs + this.thresholdMs && this.endedLate.length < MAX_CANDIDATES) this.endedLate.push(context)
  }

  /** @internal (`noteSync` and the promise hook) */
  addGap(gap: Gap): void {
    this.gaps.push(gap)
    if (this.gaps.length > MAX_GAPS) this.gaps.shift()
  }

  private startTracking(): void {
    this.attributeUntil = performance.now() + this.attributionMs
    if (this.stopHook !== undefined) return
    this.lastPromise = performance.now()
    this.stopHook = promiseHooks.onInit(() => this.promiseMade()) as () => void
  }

  private stopTracking(): void {
    this.stopHook?.()
    this.stopHook = undefined
    // no promise hook of ours stays behind: V8 keeps its hooks on while any AsyncLocalStorage is enabled
    operationContext.disable()
  }

  private promiseMade(): void {
    const now = performance.now()
    if (now - this.lastPromise > this.thresholdMs) this.addGap({ start: this.lastPromise, end: now, context: operationContext.getStore() })
    this.lastPromise = now
  }

  private beat(): void {
    const now = performance.now()
    const late = now - this.lastBeat - this.intervalMs
    this.lastBeat = now
    const endedLate = this.endedLate.splice(0)
    if (late <= this.thresholdMs) {
      if (this.attributing && now > this.attributeUntil) this.stopTracking()
      return
    }
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
    if (best?.context !== undefined && overlap >= Math.min(this.thresholdMs, late / 2)) {
      this.report(late, best.context, undefined)
      return
    }
    const candidates = [...this.inFlight, ...endedLate]
    if (candidates.length === 0) {
      // no operation was in flight: nothing of an operation's could have run
      this.report(late, undefined, undefined)
      return
    }
    // code after some operation's await held the loop: track contexts, so that the next such stall is named
    const tracking = this.attributing
    this.startTracking()
    this.report(late, undefined, candidates, !tracking)
  }

  private report(ms: number, context: OperationContext | undefined, candidates: OperationContext[] | undefined, trackingStarted = false): void {
    const call = context?.call
    const block: LoopBlock = {
      ms: Math.round(ms),
      protocol: context?.protocol,
      operation: call?.operation.name,
      tenant_id: call?.principal?.tenant_id,
      rufid: call?.rufid,
    }
    if (candidates !== undefined) block.in_flight = describe(candidates)
    this.recent.push(block)
    if (this.recent.length > 32) this.recent.shift()
    const { metrics, logger } = this.components
    metrics.eventLoopBlocks.inc({ protocol: block.protocol ?? 'none', operation: block.operation ?? (candidates !== undefined ? 'unattributed' : 'none') })
    metrics.eventLoopBlockDuration.observe(ms / 1000)
    const fields = { blocked_ms: block.ms, protocol: block.protocol ?? null, operation: block.operation ?? null, tenant_id: block.tenant_id ?? null, rufid: block.rufid ?? null }
    if (block.operation !== undefined) {
      logger.warn(fields, `event loop blocked ${block.ms} ms by ${block.protocol} ${block.operation}${block.tenant_id !== undefined ? ` of tenant ${block.tenant_id}` : ''}`)
    } else if (block.in_flight !== undefined) {
      logger.warn(
        { ...fields, in_flight: block.in_flight },
        `event loop blocked ${block.ms} ms by code of one of the operations in flight (${block.in_flight.join(', ')})${trackingStarted ? `; the next block is named (operation contexts tracked for ${Math.round(this.attributionMs / 1000)} s)` : ''}`,
      )
    } else {
      logger.warn(fields, `event loop blocked ${block.ms} ms outside any operation`)
    }
  }
}

/** `rest rufid.create (acme)` for each distinct operation and tenant, with a count past one. */
function describe(contexts: OperationContext[]): string[] {
  const counts = new Map<string, number>()
  for (const c of contexts) {
    const tenant = c.call.principal?.tenant_id
    const key = `${c.protocol} ${c.call.operation.name}${tenant !== undefined ? ` (${tenant})` : ''}`
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  return [...counts].slice(0, 8).map(([key, n]) => (n > 1 ? `${key} ×${n}` : key))
}
