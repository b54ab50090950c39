import type { SvcError } from '../../core/errors.js'

/** Limits applied to one execution. */
export interface ExecutionLimits {
  /** Wall-clock budget of the call (including awaiting its promise); exceeded → 1004. */
  timeoutMs: number
  /** Heap limit of the isolate, in MB (isolated-vm's minimum of 8 applies); exceeded → 1007. */
  memoryMb: number
  /** CPU time the isolate may spend on the call; checked after the call, exceeded → 1007. */
  cpuMs: number
}

/** One function call to run in the sandbox. */
export interface SandboxRequest {
  /** Warm-isolate key, e.g. `${tenant}/${rufid_short}/v${version}`; isolates are reused per key. */
  key: string
  /** A js-family language value of rufid-v1.md §3 (`javascript`, `js`, `typescript`, `ts`, …). */
  language: string
  /** Original source text; a script or an ES module that defines `functionName`. */
  source: string
  /** Name of the function the source defines (or exports; a module's default export is the fallback). */
  functionName: string
  /** Textual signature, e.g. `(a, b)`, `add(a: number, b: number): number`, `(a, b = 2) => number`. */
  signature: string
  /** Named arguments matched to the signature's parameters in order, or a positional array. */
  args: Record<string, unknown> | unknown[]
  limits: ExecutionLimits
}

/** One line of console output captured inside the isolate. */
export interface LogLine {
  level: 'log' | 'info' | 'warn' | 'error' | 'debug'
  message: string
  /** ISO-8601 time the line was written. */
  at: string
}

/** What became of one execution. */
export interface SandboxOutcome {
  status: 'success' | 'error' | 'timeout'
  /** The function's JSON result on success (absent when it returned `undefined`). */
  result?: unknown
  /**
   * Set on `error` and `timeout`: EXECUTION_TIMEOUT (1004); EXECUTION_FAILED (1007) when the
   * function threw, returned a non-JSON value, exceeded memory or CPU, or its worker crashed;
   * VALIDATION_FAILED (1006) for a source that does not compile, a missing function or bad arguments.
   */
  error?: SvcError
  /** Captured console output, capped at `maxLogBytes`; a final `warn` line marks truncation. */
  logs: LogLine[]
  wallTimeMs: number
  cpuTimeMs: number
  /** Isolate heap in use after the call (0 when unknown, e.g. after the isolate was lost). */
  memoryBytes: number
  /** Worker process that ran the call (0 when the request never reached a worker). */
  workerPid: number
}

/** State of one worker process, as seen by the supervisor. */
export interface SandboxWorkerStats {
  pid: number
  busy: boolean
  warmIsolates: number
  executions: number
}

export interface SandboxStats {
  running: boolean
  /** Configured pool size. */
  workers: number
  /** Workers that are up and accepting work. */
  readyWorkers: number
  busyWorkers: number
  queued: number
  /** Warm isolates over all workers. */
  warmIsolates: number
  /** Workers replaced after dying (crash, OOM, watchdog kill). */
  restarts: number
  /** Executions completed since start. */
  executions: number
  perWorker: SandboxWorkerStats[]
}

/** A supervised pool of worker processes running functions in isolates. */
export interface Sandbox {
  /** Starts the workers; resolves when all are ready. Idempotent. */
  start(): Promise<void>
  /** Kills the workers and rejects queued and running requests with SERVICE_UNAVAILABLE. */
  stop(): Promise<void>
  /**
   * Runs one function call. Resolves with an outcome for anything the function or its inputs
   * cause; throws SERVICE_UNAVAILABLE when the pool is not running or the queue is full and
   * VALIDATION_FAILED for a request that cannot be attempted (malformed, unsupported language).
   */
  execute(req: SandboxRequest): Promise<SandboxOutcome>
  stats(): SandboxStats
}

export interface SandboxLogger {
  info(o: object, msg?: string): void
  warn(o: object, msg?: string): void
  error(o: object, msg?: string): void
}

export interface SandboxInit {
  /** Number of worker processes. */
  workers: number
  /** Warm isolates each worker keeps (LRU); evicted isolates are disposed. */
  maxWarmIsolatesPerWorker: number
  /** Cap on captured console output per execution, in UTF-8 bytes. */
  maxLogBytes: number
  /** Requests that may wait for a worker; beyond it `execute` throws SERVICE_UNAVAILABLE. */
  queueLimit: number
  /** Extra time after `timeoutMs` before an unresponsive worker is SIGKILLed (default 100). */
  killGraceMs?: number
  logger?: SandboxLogger
}
