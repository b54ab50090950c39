import type { ExecuteJob, WireOutcome } from './ipc.js'

/** Something a runtime keeps warm per key in the worker's shared warm pool (an isolate, an interpreter…). */
export interface WarmEntry {
  /** the root tenant whose call made it (ExecuteJob.account): warm capacity is shared fairly between accounts */
  readonly account: string
  /** bytes the entry holds in the worker (heap and memory outside it), as of its last call; 0 when unknown */
  memoryBytes(): number
  dispose(): void
}

/** The worker's warm state, as a runtime uses it: take an entry for a call, put it back after. */
export interface WarmStore {
  /** the entry of a key, without taking it */
  peek(key: string): WarmEntry | undefined
  /** removes and returns the entry (the caller owns it until it puts it back) */
  take(key: string): WarmEntry | undefined
  /** keeps the entry as the most recently used of its account, weighed by its `memoryBytes()` */
  put(key: string, entry: WarmEntry): void
  keys(): string[]
}

export interface RunHooks {
  /** Called once preparation is over and the time-limited part of the call begins. */
  onStarted(): void
}

/**
 * Runs calls for one language family inside a worker process. A runtime resolves every failure
 * the function causes as an outcome; it throws only on its own faults.
 */
export interface LanguageRuntime {
  execute(job: ExecuteJob, hooks: RunHooks): Promise<WireOutcome>
  /**
   * Whether the call can start at once, without its source: the runtime holds the key's source
   * (by `sourceDigest`) compiled and, for Python, the scope's interpreter and dependencies.
   */
  ready(job: ExecuteJob): boolean
  /** The worker answered and has no call: a runtime may prepare for the next one. */
  idle?(): void
  /** Releases what the runtime holds outside the warm LRU (the worker is exiting). */
  dispose?(): void
  /** Scopes (tenants) this runtime holds warm state for, beyond per-key entries (Python interpreters). */
  warmScopes?(): string[]
}
