/**
 * Messages between the supervisor and its worker processes. They travel over the child-process
 * IPC channel with JSON serialisation, so every field is plain JSON; the function's result
 * travels as the JSON text the isolate produced.
 */
import { ERROR_CODES, SvcError, type ErrorName } from '../../core/errors.js'
import type { LanguageFamily } from '../../core/rufid.js'
import type { ExecutionLimits, LogLine, PipPin } from './types.js'

/** One call, ready to run: arguments are already bound to positions. */
export interface ExecuteJob {
  key: string
  /** the isolation scope (tenant): Python interpreters are per scope */
  scope: string
  language: string
  family: LanguageFamily
  source: string
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
}

/** Configuration a worker receives as its single command-line argument (JSON). */
export interface WorkerConfig {
  maxWarmIsolates: number
  /** Python interpreters kept warm, one per scope (LRU). */
  maxPythonInterpreters: number
  /** Directories of wheels pinned Python dependencies are installed from, the first holding one wins. */
  pythonWheelDirs: string[]
}

export type SupervisorMessage =
  | { type: 'execute'; id: number; job: ExecuteJob }
  | { type: 'shutdown' }

export type WorkerMessage =
  | { type: 'ready'; pid: number }
  /** The time-limited part of execution `id` begins (preparation such as transpiling is done). */
  | { type: 'started'; id: number }
  /** `warmScopes`: the scopes (tenants) whose Python interpreter the worker holds */
  | { type: 'result'; id: number; outcome: WireOutcome; warmKeys: string[]; warmScopes: string[] }

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null

export function isWorkerMessage(m: unknown): m is WorkerMessage {
  if (!isObject(m)) return false
  switch (m.type) {
    case 'ready':
      return typeof m.pid === 'number'
    case 'started':
      return typeof m.id === 'number'
    case 'result':
      return typeof m.id === 'number' && isObject(m.outcome) && Array.isArray(m.warmKeys) && Array.isArray(m.warmScopes)
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
