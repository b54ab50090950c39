/**
 * A sandbox worker's total memory bound (`execution.worker_memory_mb`), checked inside the worker
 * after its calls. Each call is bounded by its own `memory_mb`, but a worker holds many warm
 * isolates and Python interpreters at once, and some memory escapes every per-call count (a native
 * allocation, garbage V8 has not collected yet): the worker's resident memory is the figure that
 * matters to the host. A call that leaves the worker above its bound is answered with the memory
 * error (never success), and the worker exits once it answered: its supervisor replaces it (it
 * knows the exit is coming: the answer says `retiring`), which releases everything it held.
 *
 * Reading the resident size costs a few microseconds, a warm call about fifteen: it is read after
 * every call that ran CHEAP_CALL_MS or longer and at least every READ_EVERY_MS otherwise (a call
 * shorter than a millisecond cannot fault in more than a few MB, and the next read sees it).
 *
 * The cgroup around the worker (cgroups.ts), a little above this bound, stops what this check
 * cannot see in time (a native allocation spike within one call).
 */
import { SvcError } from '../../core/errors.js'
import { toWireError, type WireOutcome } from './ipc.js'

/** Calls at least this long (wall time) are always followed by a read. */
const CHEAP_CALL_MS = 1
/** Otherwise the resident size is read at most this long after the previous read. */
const READ_EVERY_MS = 20

export interface WorkerMemoryBoundInit {
  /** the bound, MB (0 or absent: none) */
  workerMemoryMb?: number
  /** the worker's resident memory, bytes (default: process.memoryUsage.rss) */
  readRss?: () => number
}

/** The bound as the worker applies it after each call. */
export class WorkerMemoryBound {
  private readonly boundBytes: number
  private readonly readRss: () => number
  private lastReadAt = Number.NEGATIVE_INFINITY
  /** the resident size found by the last read, bytes */
  lastRssBytes = 0

  constructor(private readonly init: WorkerMemoryBoundInit) {
    const mb = init.workerMemoryMb ?? 0
    this.boundBytes = Number.isFinite(mb) && mb > 0 ? mb * 2 ** 20 : 0
    this.readRss = init.readRss ?? (() => process.memoryUsage.rss())
  }

  get enabled(): boolean {
    return this.boundBytes > 0
  }

  /**
   * After a call: when the worker is over its bound, turns `outcome` into the memory error (its logs
   * kept), marks it `retiring` and returns true: the worker must exit once the answer is on its way.
   */
  check(outcome: WireOutcome): boolean {
    if (this.boundBytes === 0) return false
    const now = performance.now()
    if (outcome.wallTimeMs < CHEAP_CALL_MS && now - this.lastReadAt < READ_EVERY_MS) return false
    this.lastReadAt = now
    const rss = this.readRss()
    this.lastRssBytes = rss
    if (rss <= this.boundBytes) return false
    const workerMemoryMb = this.init.workerMemoryMb ?? 0
    const error = new SvcError('EXECUTION_FAILED',
      `the sandbox worker passed its memory bound of ${workerMemoryMb} MB (${Math.round(rss / 2 ** 20)} MB resident) after this call; it is replaced`, {
        details: { limit: 'memory', workerMemoryMb, workerRssBytes: rss },
      })
    outcome.status = 'error'
    delete outcome.resultJson
    outcome.error = toWireError(error)
    outcome.retiring = true
    return true
  }

  /**
   * Exits the worker (through `shutdown`) once every message sent so far is written to the
   * supervisor (the answer that says `retiring` among them).
   */
  retire(shutdown: () => void): void {
    if (typeof process.send !== 'function') {
      shutdown()
      return
    }
    // a last message whose callback runs once it, and so everything before it, was written
    process.send({ type: 'retired', rssBytes: this.lastRssBytes }, () => shutdown())
  }
}

/** The bound from the worker's configuration argument (its `workerMemoryMb`; absent or invalid: none). */
export function workerMemoryBoundFromArgs(argv: readonly string[] = process.argv): WorkerMemoryBound {
  let workerMemoryMb = 0
  try {
    const value = (JSON.parse(argv[2] ?? '') as { workerMemoryMb?: unknown }).workerMemoryMb
    if (typeof value === 'number' && Number.isFinite(value) && value > 0) workerMemoryMb = value
  } catch {
    // the worker reports a bad configuration itself
  }
  return new WorkerMemoryBound({ workerMemoryMb })
}
