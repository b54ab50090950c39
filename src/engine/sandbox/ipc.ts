/**
 * Messages between the supervisor and its worker processes. They travel over the child-process
 * IPC channel with JSON serialisation, so every field is plain JSON; the function's result
 * travels as the JSON text the isolate produced.
 *
 * A call's source is sent to a worker once: later calls name it by `sourceDigest` only, and a
 * worker that no longer has it answers `need-source`, upon which the supervisor sends the call
 * again with the source. A worker that must prepare a call (compile the source, load an
 * interpreter) says `started` when the time-limited part begins (and `preparing` at once, when
 * the supervisor took it for a call that starts at once); a call it can start at once sends
 * neither.
 */
import { ERROR_CODES, SvcError, type ErrorName } from '../../core/errors.js'
import type { LanguageFamily } from '../../core/rufid.js'
import type { ExecutionLimits, LogLine, PipPin } from './types.js'

/**
 * Whether a key's calls share one warm context (module state persists between calls of the
 * function version) or each get a fresh one.
 */
export type ContextMode = 'warm' | 'fresh'

/** One call, ready to run: arguments are already bound to positions. */
export interface ExecuteJob {
  key: string
  /** the isolation scope (tenant): Python interpreters are per scope */
  scope: string
  /** the root tenant the call is charged to (fair scheduling, warm capacity): child namespaces count against it */
  account: string
  language: string
  family: LanguageFamily
  /** The source text; absent when the supervisor sent it to this worker before (see `sourceDigest`). */
  source?: string
  /** SHA-256 (hex) of the language and the source text: names the source between supervisor and worker. */
  sourceDigest: string
  /** JavaScript: warm (default) or fresh context per call. Python: warm keeps the module's globals between calls. */
  context: ContextMode
  /** a deterministic call (always `fresh`): seeded randomness and a fixed clock (SandboxRequest.deterministic) */
  deterministicSeed?: string
  functionName: string
  /**
   * JSON of the positional argument array. Python (family `python`): JSON of the arguments as
   * given (a named object or a positional array), bound in the worker.
   */
  argsJson: string
  /** Positions whose value is `undefined` (JSON cannot carry it). */
  missingArgs: number[]
  limits: ExecutionLimits
  maxLogBytes: number
  /** The largest result JSON (UTF-8 bytes) the worker sends back; absent: no limit (see call-output.ts). */
  maxResultBytes?: number
  /** Python: the checked, sorted `pip` pins of the function's lockfile (absent or empty: none). */
  pipPins?: PipPin[]
}

export interface WireError {
  name: ErrorName
  message: string
  details: Record<string, unknown>
}

export interface WireOutcome {
  status: 'success' | 'error' | 'timeout'
  /** JSON text of the result; absent when the function returned `undefined`. */
  resultJson?: string
  error?: WireError
  logs: LogLine[]
  wallTimeMs: number
  cpuTimeMs: number
  memoryBytes: number
  /** Time the worker spent on the call, from receiving it to answering. */
  workerMs?: number
  /**
   * The worker passed its total memory bound with this call (the call's outcome is the memory
   * error) and exits once it answered: no further call may be sent to it.
   */
  retiring?: boolean
}

/**
 * How many sources a worker keeps by digest (the supervisor remembers the same number of digests
 * it sent the worker): two per warm entry it may hold, plus a few.
 */
export const sourceCapacity = (maxWarmIsolates: number): number => maxWarmIsolates * 2 + 16

/** Configuration a worker receives as its single command-line argument (JSON). */
export interface WorkerConfig {
  /** warm entries (isolates, compiled Python sources) kept at most, over all tenants */
  maxWarmIsolates: number
  /** their memory at most, over all tenants (0 or absent: no bound but the count) */
  maxWarmBytes?: number
  /** the memory one tenant's warm entries may hold at most (0 or absent: no bound of its own) */
  maxWarmBytesPerAccount?: number
  /** Python interpreters kept warm, one per scope (LRU). */
  maxPythonInterpreters: number
  /** Directories of wheels pinned Python dependencies are installed from, the first holding one wins. */
  pythonWheelDirs: string[]
  /** Source text (UTF-16 code units) the worker keeps by digest, at most. */
  maxSourceChars: number
  /** The worker's total memory bound, MB (memory-bound.ts; absent: none). */
  workerMemoryMb?: number
  /** Memory bounds of the worker's Python interpreters (absent: none). */
  pythonInterpreterMemory?: PythonInterpreterMemory
}

/**
 * Memory bounds of a worker's Python interpreters, in bytes of WebAssembly memory (0: no bound):
 * all of them, and those of one account (SandboxInit.pythonInterpreterMbPerWorker/PerTenant).
 */
export interface PythonInterpreterMemory {
  perWorkerBytes: number
  perTenantBytes: number
}

/** The bounds as a worker read them from its configuration; undefined when absent or malformed. */
export function pythonInterpreterMemoryOf(value: unknown): PythonInterpreterMemory | undefined {
  if (!isObject(value)) return undefined
  const { perWorkerBytes, perTenantBytes } = value
  const bytes = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0
  return bytes(perWorkerBytes) && bytes(perTenantBytes) ? { perWorkerBytes, perTenantBytes } : undefined
}

export type SupervisorMessage =
  /**
   * `timed`: the supervisor armed its watchdog for the time limit already (it holds the key warm),
   * so a worker that must prepare after all says `preparing` first
   */
  | { type: 'execute'; id: number; job: ExecuteJob; timed: boolean }
  | { type: 'shutdown' }

export type WorkerMessage =
  | { type: 'ready'; pid: number }
  /** The worker lacks the source of execution `id`: send the call again with it. */
  | { type: 'need-source'; id: number }
  /** Execution `id` needs preparation first (compiling, loading an interpreter). */
  | { type: 'preparing'; id: number }
  /** The time-limited part of execution `id` begins (preparation such as transpiling is done). */
  | { type: 'started'; id: number }
  /**
   * `warmKeys`: the keys the worker holds warm; `warmScopes`: the scopes (tenants) whose Python
   * interpreter it holds. Each is sent only when it changed since the worker's previous answer.
   */
  | { type: 'result'; id: number; outcome: WireOutcome; warmKeys?: string[]; warmScopes?: string[] }
  /** The worker's last message before it exits for its memory bound (after a `retiring` answer). */
  | { type: 'retired'; rssBytes: number }

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null

export function isWorkerMessage(m: unknown): m is WorkerMessage {
  if (!isObject(m)) return false
  switch (m.type) {
    case 'ready':
      return typeof m.pid === 'number'
    case 'started':
    case 'preparing':
    case 'need-source':
      return typeof m.id === 'number'
    case 'retired':
      return typeof m.rssBytes === 'number'
    case 'result':
      return typeof m.id === 'number' && isObject(m.outcome) &&
        (m.warmKeys === undefined || Array.isArray(m.warmKeys)) && (m.warmScopes === undefined || Array.isArray(m.warmScopes))
    default:
      return false
  }
}

export function isSupervisorMessage(m: unknown): m is SupervisorMessage {
  if (!isObject(m)) return false
  if (m.type === 'shutdown') return true
  return m.type === 'execute' && typeof m.id === 'number' && isObject(m.job)
}

export function toWireError(err: SvcError): WireError {
  return { name: err.name, message: err.message, details: err.details }
}

export function fromWireError(wire: WireError): SvcError {
  const name: ErrorName = wire.name in ERROR_CODES ? wire.name : 'INTERNAL_ERROR'
  return new SvcError(name, String(wire.message), { details: isObject(wire.details) ? wire.details : {} })
}
