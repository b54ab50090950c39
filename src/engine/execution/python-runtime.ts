import { isSvcError, SvcError } from '../../core/errors.js'
import { toWireError, type ExecuteJob, type WireOutcome } from './ipc.js'
import type { LruCache } from './lru.js'
import { PythonInterpreter, type Envelope, type InterpreterRun, type PyHandle } from './python-interpreter.js'
import { lockDigest, readWheels } from './python-wheelhouse.js'
import type { LanguageRuntime, RunHooks, WarmEntry } from './runtime.js'
import type { LogLine } from './types.js'

/** Dependency sets a worker keeps installed (LRU by lockfile digest). */
const MAX_DEPENDENCY_SETS = 16
const MAX_MESSAGE_CHARS = 2_000

/** A key's compiled source: the code object in the worker's interpreter, held from here. */
class PythonWarmEntry implements WarmEntry {
  constructor(
    readonly interpreter: PythonInterpreter,
    readonly source: string,
    readonly code: PyHandle,
  ) {}

  dispose(): void {
    try {
      this.code.destroy()
    } catch {
      // the interpreter is gone
    }
  }
}

/** An installed dependency set, and per tenant the modules its calls have imported from it. */
interface DependencySet {
  site: string
  stashes: Map<string, PyHandle>
}

/**
 * Python in Pyodide: one warm interpreter per worker, loaded on the worker's first Python call
 * (about 3 s) and replaced when it fails or its memory grew too far. Every call runs in fresh
 * globals; the prelude restores the interpreter afterwards (see python-prelude.ts for what is and
 * is not reset between calls). A key's compiled source is kept in the worker's warm LRU.
 * Dependency sets are installed per lockfile digest into their own site directory and put on
 * `sys.path` only for calls of that digest, so two functions pinning different versions of a
 * package each import their own.
 */
export class PythonRuntime implements LanguageRuntime {
  private interpreter: PythonInterpreter | undefined
  private loading: Promise<PythonInterpreter> | undefined
  private sets = new Map<string, DependencySet>()

  constructor(
    private readonly warm: LruCache<WarmEntry>,
    private readonly wheelhouse: string | undefined,
  ) {}

  async execute(job: ExecuteJob, hooks: RunHooks): Promise<WireOutcome> {
    const interpreter = await this.acquireInterpreter()
    let site = ''
    let stash: PyHandle | undefined
    const pins = job.pipPins ?? []
    if (pins.length > 0) {
      try {
        const set = this.installSet(interpreter, lockDigest(pins), pins)
        site = set.site
        // dependency modules stay imported between calls of one tenant, never across tenants
        const tenant = job.key.split('/')[0] ?? ''
        stash = set.stashes.get(tenant)
        if (stash === undefined) {
          stash = interpreter.newStash()
          set.stashes.set(tenant, stash)
        }
      } catch (err) {
        this.releaseIfDead(interpreter)
        return failure(asSvcError(err, 'EXECUTION_FAILED', 'the pinned dependencies could not be installed'))
      }
    }

    const held = this.warm.take(job.key)
    let entry: PythonWarmEntry
    if (held instanceof PythonWarmEntry && held.interpreter === interpreter && held.source === job.source) {
      entry = held
    } else {
      held?.dispose()
      let prepared: ReturnType<PythonInterpreter['prepare']>
      try {
        prepared = interpreter.prepare(job.source)
      } catch (err) {
        this.releaseIfDead(interpreter)
        return failure(asSvcError(err, 'EXECUTION_FAILED', 'the source could not be prepared'))
      }
      if ('syntax' in prepared) {
        return failure(new SvcError('VALIDATION_FAILED', `syntax error in the source: ${prepared.syntax}`, { details: { syntaxError: prepared.syntax } }))
      }
      entry = new PythonWarmEntry(interpreter, job.source, prepared.code)
    }

    hooks.onStarted()
    const run = interpreter.run({
      code: entry.code,
      functionName: job.functionName,
      argsJson: job.argsJson,
      site,
      stash,
      timeoutMs: job.limits.timeoutMs,
      memoryMb: job.limits.memoryMb,
      maxLogBytes: job.maxLogBytes,
    })
    if (interpreter.alive) this.warm.put(job.key, entry)
    else entry.dispose()
    if (!interpreter.alive || interpreter.retiring) this.release(interpreter)
    return outcomeOf(run, job)
  }

  private async acquireInterpreter(): Promise<PythonInterpreter> {
    if (this.interpreter?.alive) return this.interpreter
    this.loading ??= PythonInterpreter.load().then(
      (loaded) => {
        this.interpreter = loaded
        this.sets = new Map()
        this.loading = undefined
        return loaded
      },
      (err: unknown) => {
        this.loading = undefined
        throw new SvcError('INTERNAL_ERROR', `the Python runtime could not be loaded: ${err instanceof Error ? err.message : String(err)}`)
      },
    )
    return this.loading
  }

  /** Installs the set for `digest` unless it is already there (most recently used last). */
  private installSet(interpreter: PythonInterpreter, digest: string, pins: NonNullable<ExecuteJob['pipPins']>): DependencySet {
    const known = this.sets.get(digest)
    if (known !== undefined) {
      this.sets.delete(digest)
      this.sets.set(digest, known)
      return known
    }
    const wheels = readWheels(this.wheelhouse, pins)
    let site: string
    try {
      site = interpreter.install(digest, wheels)
    } catch (err) {
      const what = err instanceof Error ? lastLine(err.message) : String(err)
      throw new SvcError('EXECUTION_FAILED', `the pinned packages ${pins.map((p) => `${p.name}==${p.version}`).join(', ')} could not be installed: ${what}`, {
        details: { reason: 'dependency_install_failed' },
      })
    }
    const set: DependencySet = { site, stashes: new Map() }
    this.sets.set(digest, set)
    while (this.sets.size > MAX_DEPENDENCY_SETS) {
      const [oldest, evicted] = this.sets.entries().next().value as [string, DependencySet]
      this.sets.delete(oldest)
      for (const handle of evicted.stashes.values()) handle.destroy()
      interpreter.uninstall(oldest)
    }
    return set
  }

  private releaseIfDead(interpreter: PythonInterpreter): void {
    if (!interpreter.alive) this.release(interpreter)
  }

  /** Forgets the interpreter (and the warm entries that belong to it); the next call loads a new one. */
  private release(interpreter: PythonInterpreter): void {
    if (this.interpreter !== interpreter) return
    for (const key of this.warm.keys()) {
      const entry = this.warm.take(key)
      if (entry instanceof PythonWarmEntry && entry.interpreter === interpreter) continue
      if (entry !== undefined) this.warm.put(key, entry)
    }
    interpreter.dispose()
    this.interpreter = undefined
    this.sets = new Map()
  }
}

function outcomeOf(run: InterpreterRun, job: ExecuteJob): WireOutcome {
  const base = { wallTimeMs: run.wallTimeMs, cpuTimeMs: run.cpuTimeMs, memoryBytes: run.memoryBytes }
  const envelope = run.envelope
  if (envelope === undefined) {
    const fault = clip(lastLine(run.fault ?? 'unknown failure'))
    const message = /call stack/i.test(fault)
      ? 'the function overflowed the interpreter stack (recursion or nesting too deep)'
      : `the Python interpreter failed while running the function: ${fault}`
    const error = new SvcError('EXECUTION_FAILED', message, { details: { reason: 'interpreter_failed', fault } })
    return { status: 'error', error: toWireError(error), logs: rawLines(run, job.maxLogBytes, 0), ...base }
  }
  const logs = collectLogs(envelope, run, job.maxLogBytes)
  if (envelope.ok) {
    if (run.cpuTimeMs > job.limits.cpuMs) {
      const error = new SvcError('EXECUTION_FAILED', `the function used ${Math.round(run.cpuTimeMs)} ms of CPU time, over its limit of ${job.limits.cpuMs} ms`, {
        details: { limit: 'cpu', cpuTimeMs: run.cpuTimeMs, cpuMs: job.limits.cpuMs },
      })
      return { status: 'error', error: toWireError(error), logs, ...base }
    }
    const outcome: WireOutcome = { status: 'success', logs, ...base }
    if (typeof envelope.json === 'string') outcome.resultJson = envelope.json
    return outcome
  }
  const error = errorOf(envelope, job)
  return { status: error.name === 'EXECUTION_TIMEOUT' ? 'timeout' : 'error', error: toWireError(error), logs, ...base }
}

function errorOf(envelope: Envelope, job: ExecuteJob): SvcError {
  const name = job.functionName
  const e = envelope.error ?? {}
  const errorName = clip(String(e.name ?? 'Exception'), 200)
  const message = clip(String(e.message ?? ''))
  const details: Record<string, unknown> = { errorName }
  if (typeof e.stack === 'string' && e.stack !== '') details.stack = e.stack
  switch (envelope.kind) {
    case 'timeout':
      return new SvcError('EXECUTION_TIMEOUT', `the function did not finish within ${job.limits.timeoutMs} ms`, {
        details: { limit: 'time', timeoutMs: job.limits.timeoutMs },
      })
    case 'memory':
      return new SvcError('EXECUTION_FAILED', `the function exceeded its memory limit of ${job.limits.memoryMb} MB`, {
        details: { limit: 'memory', memoryMb: job.limits.memoryMb, ...details },
      })
    case 'missing':
      return new SvcError('VALIDATION_FAILED', message || `the source does not define a function named '${name}'`, {
        details: { functionName: name },
      })
    case 'args':
      return new SvcError('VALIDATION_FAILED', message, { details: { ...(e.details ?? {}) } })
    case 'result':
      return new SvcError('EXECUTION_FAILED', `the result of '${name}' is not JSON-serialisable: ${message}`, { details })
    case 'load':
      return new SvcError('EXECUTION_FAILED', `the source raised ${errorName} while loading: ${message}`, { details })
    case 'unsupported':
      return new SvcError('EXECUTION_FAILED', `'${name}' cannot run: ${message}`, { details })
    case 'threw':
      return new SvcError('EXECUTION_FAILED', `'${name}' raised ${errorName}: ${message}`, { details })
    default:
      return new SvcError('INTERNAL_ERROR', `sandbox failure: ${message || 'the Python call produced no readable result'}`)
  }
}

function collectLogs(envelope: Envelope, run: InterpreterRun, maxLogBytes: number): LogLine[] {
  const logs: LogLine[] = []
  for (const line of Array.isArray(envelope.lines) ? envelope.lines : []) {
    const [level, message, at] = line
    if ((level === 'log' || level === 'error') && typeof message === 'string') logs.push({ level, message, at: isoTime(at) })
  }
  let truncated = envelope.truncated === true
  if (!truncated) {
    const extra = rawLines(run, maxLogBytes, envelope.used)
    logs.push(...extra)
    truncated = extra.truncated
  }
  if (truncated) {
    logs.push({ level: 'warn', message: `[logs truncated: output exceeded ${maxLogBytes} bytes]`, at: new Date().toISOString() })
  }
  return logs
}

/** Lines written to the file descriptors directly, within what is left of the log budget. */
function rawLines(run: InterpreterRun, maxLogBytes: number, used: number): LogLine[] & { truncated: boolean } {
  const out = [] as unknown as LogLine[] & { truncated: boolean }
  out.truncated = false
  const at = new Date().toISOString()
  let budget = maxLogBytes - used
  for (const { level, text } of run.raw) {
    const size = Buffer.byteLength(text) + 1
    if (size > budget) {
      out.truncated = true
      break
    }
    budget -= size
    out.push({ level, message: text, at })
  }
  return out
}

function failure(error: SvcError): WireOutcome {
  return { status: 'error', error: toWireError(error), logs: [], wallTimeMs: 0, cpuTimeMs: 0, memoryBytes: 0 }
}

function asSvcError(err: unknown, name: 'EXECUTION_FAILED', fallback: string): SvcError {
  if (isSvcError(err)) return err
  return new SvcError(name, `${fallback}: ${clip(lastLine(err instanceof Error ? err.message : String(err)))}`)
}

function lastLine(text: string): string {
  const lines = text.trim().split('\n')
  return lines[lines.length - 1] ?? text
}

function isoTime(epochMs: unknown): string {
  const date = new Date(typeof epochMs === 'number' ? epochMs : Date.now())
  return Number.isNaN(date.getTime()) ? new Date().toISOString() : date.toISOString()
}

function clip(s: string, max = MAX_MESSAGE_CHARS): string {
  return s.length > max ? `${s.slice(0, max)}…` : s
}
