import type { ExecuteJob, WireOutcome } from './ipc.js'

/** Something a runtime keeps warm per key in the worker's shared warm pool (an isolate, an interpreter…). */
export interface WarmEntry {
  /** the root tenant whose call made it (ExecuteJob.account): warm capacity is shared fairly between accounts */
  readonly account: string
  /** bytes the entry holds in the worker (heap and memory outside it), as of its last call; 0 when unknown */
  memoryBytes(): number
  dispose(): void
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
