import type { SvcError } from '../../core/errors.js'
import type { MemoryBound, MemoryBoundStatus } from './cgroups.js'
import type { OsIsolation, OsIsolationStatus } from './os-isolation.js'

/** Limits applied to one execution. */
export interface ExecutionLimits {
  /** Wall-clock budget of the call (including awaiting its promise); exceeded → 1004. */
  timeoutMs: number
  /**
   * JavaScript: the isolate's memory, in MB (isolated-vm's minimum of 8 applies): its heap and
   * everything the function allocates outside it (ArrayBuffers, WebAssembly memories charged at their
   * maximum, one at most ¾ of the limit, resizable buffers at their maximum length, compiled Wasm,
   * Intl objects; js-memory-guard.ts). Python: how much the call may grow the interpreter's heap, in
   * MB. Exceeded → 1007, `details.limit` `memory`.
   */
  memoryMb: number
  /**
   * CPU time the call may spend (its worker process's CPU while it runs, never wall time: a call
   * held off the CPU by a busy machine is not failed for it). JavaScript: enforced while the call
   * runs, the call stopped within about the limit + 100 ms of CPU and its isolate discarded;
   * exceeded → 1007, `details.limit` `cpu`.
   */
  cpuMs: number
}

/** One pinned pure-Python package of a function's lockfile (`dependencies.pip`). */
export interface PipPin {
  name: string
  /** An exact version (no range operators). */
  version: string
  /** When given, the wheel's SHA-256 (hex) must match. */
  sha256?: string
}

/** One function call to run in the sandbox. */
export interface SandboxRequest {
  /** Warm-isolate key, e.g. `${tenant}/${rufid_short}/v${version}`; isolates are reused per key. */
  key: string
  /**
   * The isolation scope of the call (its tenant). A Python interpreter is never shared between
   * scopes. Absent: the key's first `/`-separated segment.
   */
  tenant?: string
  /**
   * The tenant the call is charged to for fair scheduling, warm capacity and quotas: the root
   * tenant of `tenant` (child namespaces count against their root). Absent: `tenant`.
   */
  account?: string
  /**
   * A language value of rufid-v1.md §3 the sandbox runs: js-family (`javascript`, `js`,
   * `typescript`, `ts`, …) or python-family (`python`, `python3`, `py`, `python3.<minor>`).
   */
  language: string
  /** Original source text; a script or an ES module that defines `functionName`. */
  source: string
  /**
   * `warm` (default): the key's calls share one instance, so module state persists between calls
   * of the key (never across keys: one isolate, and for Python one interpreter per tenant, per
   * key); `fresh`: every call gets a new context (JavaScript) or new module globals (Python).
   */
  context?: 'warm' | 'fresh'
  /**
   * A function that declared itself deterministic: JavaScript runs in a fresh context whose
   * `Math.random` is a PRNG seeded from `seed` (a hex digest), whose clock (`Date.now`, `new Date()`)
   * stands at DETERMINISTIC_EPOCH_MS, and which has no `WeakRef`/`FinalizationRegistry` (garbage
   * collection timing). Python gets `random` seeded and `time.time` fixed the same way (see
   * python-prelude). Absent: the function sees the real clock and randomness.
   */
  deterministic?: { seed: string }
  /** Name of the function the source defines (or exports; a module's default export is the fallback). */
  functionName: string
  /**
   * Textual signature, e.g. `(a, b)`, `add(a: number, b: number): number`, `(a, b = 2) => number`.
   * Python calls bind arguments to the function's own `inspect.signature` instead.
   */
  signature: string
  /**
   * Named arguments matched to the signature's parameters in order, or a positional array. For
   * Python, named arguments follow Python's rules (defaults, keyword-only, `*args` given as an
   * array, `**kwargs` taking unknown names); an unknown or missing required argument is 1006.
   */
  args: Record<string, unknown> | unknown[]
  limits: ExecutionLimits
  /**
   * The largest result the call may return, in UTF-8 bytes of its JSON text: a larger one is 1007
   * (`details.limit: 'result_size'`) and never leaves the worker. Absent: no limit.
   */
  maxResultBytes?: number
  /**
   * The function's lockfile dependencies. Python functions get exactly the `pip` pins, installed
   * from the node's wheelhouse (`SandboxInit.pythonWheelhouse`) before any of their code runs; a
   * pin the node cannot provide is 1007 naming `name==version`. Ignored for other languages.
   */
  dependencies?: { pip?: PipPin[] }
}

/** One line of console output captured inside the isolate (Python: stdout → `log`, stderr → `error`). */
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
  /**
   * Captured console output, capped at `maxLogBytes`, counted as the lines' JSON (what a record
   * stores: level, message and time of each line); a final `warn` line marks truncation.
   */
  logs: LogLine[]
  wallTimeMs: number
  cpuTimeMs: number
  /**
   * Memory the call's isolate holds after the call: its heap and what it holds outside it
   * (ArrayBuffers, WebAssembly memories, Intl objects: js-memory-guard.ts); 0 when unknown, e.g.
   * after the isolate was lost.
   */
  memoryBytes: number
  /** Worker process that ran the call (0 when the request never reached a worker). */
  workerPid: number
  /** Time the worker spent on the call, from receiving it to answering (the rest was queueing and IPC). */
  workerMs?: number
}

/** State of one worker process, as seen by the supervisor. */
export interface SandboxWorkerStats {
  pid: number
  busy: boolean
  warmIsolates: number
  executions: number
}

/** What the sandbox's scheduler knows of one tenant. */
export interface SandboxTenantStats {
  tenant: string
  queued: number
  running: number
  /** worker time its finished calls held since start, in ms */
  servedMs: number
  /** calls refused, by reason (see `RefusalReason` in src/engine/scheduling/fair-scheduler.ts) */
  refused: Partial<Record<'tenant_queue_full' | 'queue_share' | 'pushed_out', number>>
}

export interface SandboxStats {
  running: boolean
  /** Configured pool size. */
  workers: number
  /** Workers that are up and accepting work. */
  readyWorkers: number
  busyWorkers: number
  /** calls waiting for a worker, over all tenants */
  queued: number
  /** per tenant (root tenant: child namespaces count against it) that has or had calls */
  tenants: SandboxTenantStats[]
  /** the most workers one tenant may hold with long calls */
  maxLongRunningPerTenant: number
  /** Warm isolates over all workers. */
  warmIsolates: number
  /** Workers replaced after dying (crash, OOM, watchdog kill). */
  restarts: number
  /** Executions completed since start. */
  executions: number
  perWorker: SandboxWorkerStats[]
  /** The OS wall the workers run behind. */
  osIsolation: OsIsolationStatus
  /** The workers' total memory bound and the cgroups that back it. */
  memoryBound: MemoryBoundStatus
}

/** A supervised pool of worker processes running functions in isolates. */
export interface Sandbox {
  /** Starts the workers; resolves when all are ready. Idempotent. */
  start(): Promise<void>
  /** Kills the workers and rejects queued and running requests with SERVICE_UNAVAILABLE. */
  stop(): Promise<void>
  /**
   * Runs one function call. Resolves with an outcome for anything the function or its inputs
   * cause; throws SERVICE_UNAVAILABLE when the pool is not running, RATE_LIMITED when the call's
   * tenant is over its share of the queue, and VALIDATION_FAILED for a request that cannot be
   * attempted (malformed, unsupported language).
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
  /**
   * Start the workers on the first execution instead of in `start()` (default false). An idle node
   * then costs no worker processes (about 50 MB each) and starts faster; its first execution waits
   * for the workers to start (a few hundred ms). For many nodes on one machine (cluster.sh).
   */
  startOnDemand?: boolean
  /**
   * Warm isolates (and compiled Python sources) each worker keeps; evicted ones are disposed. The
   * room is shared fairly between tenants: past a bound, the least recently used entry of the
   * tenant holding the most goes (src/engine/sandbox/warm-pool.ts).
   */
  maxWarmIsolatesPerWorker: number
  /** The memory of a worker's warm isolates at most, over all tenants (MB; 0 or absent: the count only). */
  maxWarmMbPerWorker?: number
  /** The memory one tenant's warm isolates may hold in one worker (MB; 0 or absent: only the shared bounds). */
  maxWarmMbPerTenant?: number
  /**
   * Cap on captured console output per execution, in UTF-8 bytes: of the messages as they are
   * written, and of the lines' JSON as a record stores them (call-output.ts).
   */
  maxLogBytes: number
  /**
   * Calls that may wait for a worker, over all tenants. When it is reached, the tenant holding the
   * most waiting calls gives way (its newest waiting call, or the new call when it is its own, is
   * refused with 1005): no tenant is refused because another filled the queue.
   */
  queueLimit: number
  /** Calls one tenant may have waiting (default 64); beyond it its calls are refused with 1005. */
  queueLimitPerTenant?: number
  /**
   * Workers one tenant may hold at once with long calls (default 0: all but one, at least one), so
   * that a worker stays free for the other tenants. A call is long when its function's recent calls
   * held a worker `longCallMs` or more, or nothing is known of it yet.
   */
  maxLongRunningPerTenant?: number
  /** What makes a call long (default 50 ms), see `maxLongRunningPerTenant`. */
  longCallMs?: number
  /** Relative shares of worker time by tenant (default 1 each). */
  tenantWeights?: Readonly<Record<string, number>>
  /**
   * Source text (UTF-16 code units) each worker keeps by digest, so that calls need not carry it
   * (default 32 Mi). A worker without a call's source asks the supervisor for it.
   */
  maxSourceCharsPerWorker?: number
  /** Extra time after `timeoutMs` before an unresponsive worker is SIGKILLed (default 100). */
  killGraceMs?: number
  /**
   * Directory of pure-Python wheels (`<name>-<version>-py3-none-any.whl`) that pinned Python
   * dependencies are installed from. Unset: Python functions with pins fail with 1007.
   */
  pythonWheelhouse?: string
  /**
   * Directory of wheels this node fetched from federation peers (each verified against its pin's
   * sha256), read after the wheelhouse.
   */
  pythonWheelCache?: string
  /**
   * Python interpreters a worker keeps warm, one per scope (namespace; default 4), shared out
   * between accounts (see pythonInterpreterMbPerWorker). Scopes never share an interpreter: a
   * scope's first Python call on a worker loads one (about a second).
   */
  pythonInterpretersPerWorker?: number
  /**
   * Extra time after `timeoutMs` before a worker running Python is SIGKILLed (default 1000): the
   * interpreter is interrupted at the deadline and needs a moment to unwind; killing it costs a
   * fresh interpreter for every tenant the worker held.
   */
  pythonKillGraceMs?: number
  /**
   * The WebAssembly memory of the Python interpreters a worker keeps, in MB, at most: all of them
   * (default 2048) and those of one account, a root tenant with its child namespaces (default
   * 1024); 0: no bound. Beyond them the least recently used interpreter of the account holding
   * the most is evicted (python-runtime.ts).
   */
  pythonInterpreterMbPerWorker?: number
  pythonInterpreterMbPerTenant?: number
  /** The OS wall around each worker (`resolveOsIsolation`); unset: plain worker processes. */
  osIsolation?: OsIsolation
  /**
   * Each worker's total memory bound and its cgroup (`resolveMemoryBound`): a worker past the bound
   * after a call answers that call with the memory error and is replaced. Unset: no bound.
   */
  memoryBound?: MemoryBound
  logger?: SandboxLogger
}
