import { isSvcError, SvcError } from '../../core/errors.js'
import { toWireError, type ExecuteJob, type WireOutcome } from './ipc.js'
import { PythonInterpreter, type Envelope, type InterpreterRun, type PyHandle } from './python-interpreter.js'
import { lockDigest, readWheels } from './python-wheelhouse.js'
import type { LanguageRuntime, RunHooks, WarmEntry, WarmStore } from './runtime.js'
import type { LogLine } from './types.js'

/** Dependency sets a worker keeps installed (LRU by lockfile digest). */
const MAX_DEPENDENCY_SETS = 16
const MAX_MESSAGE_CHARS = 2_000

/**
 * A key's compiled source (the code object in the worker's interpreter) and, for a warm function,
 * its instance: the dict holding its module globals and function between calls.
 */
class PythonWarmEntry implements WarmEntry {
  instance: PyHandle | undefined

  constructor(
    readonly interpreter: PythonInterpreter,
    readonly sourceDigest: string,
    readonly code: PyHandle,
    readonly account: string,
  ) {}

  /** a code object and a dict: the interpreter's memory is counted per scope, not per entry */
  memoryBytes(): number {
    return 0
  }

  dispose(): void {
    for (const handle of [this.instance, this.code]) {
      try {
        handle?.destroy()
      } catch {
        // the interpreter is gone
      }
    }
    this.instance = undefined
  }
}

/** An installed dependency set, and the modules calls have imported from it (kept between calls). */
interface DependencySet {
  site: string
  stash: PyHandle | undefined
}

/** One scope's (tenant's) interpreter and the dependency sets installed into it. */
interface ScopeInterpreter {
  interpreter: PythonInterpreter
  sets: Map<string, DependencySet>
  /** the warm key whose call the interpreter ran last, and that left it usable (undefined: restore) */
  lastWarmKey: string | undefined
}

export interface PythonRuntimeInit {
  /** directories of wheels pinned dependencies are installed from (the first holding one wins) */
  wheelDirs: readonly string[]
  /** interpreters kept warm, one per scope (LRU) */
  maxInterpreters: number
}

/**
 * Python in Pyodide. Every scope (tenant) gets its own interpreter in the worker: a call can change
 * module-level state of the interpreter in ways no reset undoes (a patched stdlib class, a cached
 * module), so tenants never share one. The worker keeps at most `maxInterpreters` (LRU; an evicted
 * tenant's next call loads a new one, about a second), and one is replaced when it fails or its
 * memory grew too far. Within a tenant's interpreter every call runs in fresh globals and the
 * prelude restores the interpreter afterwards (see python-prelude.py for what is reset). A key's
 * compiled source is kept in the worker's warm LRU. Dependency sets are installed per lockfile
 * digest into their own site directory and put on `sys.path` only for calls of that digest, so two
 * functions pinning different versions of a package each import their own.
 */
export class PythonRuntime implements LanguageRuntime {
  /** by scope, least recently used first */
  private readonly scopes = new Map<string, ScopeInterpreter>()

  constructor(
    private readonly warm: WarmStore,
    private readonly init: PythonRuntimeInit,
  ) {}

  warmScopes(): string[] {
    return [...this.scopes.keys()]
  }

  ready(job: ExecuteJob): boolean {
    const scope = this.scopes.get(job.scope)
    if (!scope?.interpreter.alive) return false
    const held = this.warm.peek(job.key)
    if (!(held instanceof PythonWarmEntry) || held.interpreter !== scope.interpreter || held.sourceDigest !== job.sourceDigest) return false
    const pins = job.pipPins ?? []
    return pins.length === 0 || scope.sets.has(lockDigest(pins))
  }

  async execute(job: ExecuteJob, hooks: RunHooks): Promise<WireOutcome> {
    let scope: ScopeInterpreter
    try {
      scope = await this.acquire(job.scope)
    } catch (err) {
      return failure(asSvcError(err, 'EXECUTION_FAILED', 'the Python runtime could not be loaded'))
    }
    const interpreter = scope.interpreter
    let site = ''
    let stash: PyHandle | undefined
    const pins = job.pipPins ?? []
    if (pins.length > 0) {
      try {
        const set = this.installSet(scope, lockDigest(pins), pins)
        site = set.site
        set.stash ??= interpreter.newDict()
        stash = set.stash
      } catch (err) {
        this.releaseIfDead(job.scope, interpreter)
        return failure(asSvcError(err, 'EXECUTION_FAILED', 'the pinned dependencies could not be installed'))
      }
    }

    const held = this.warm.take(job.key)
    let entry: PythonWarmEntry
    if (held instanceof PythonWarmEntry && held.interpreter === interpreter && held.sourceDigest === job.sourceDigest) {
      entry = held
    } else {
      held?.dispose()
      if (job.source === undefined) return failure(new SvcError('INTERNAL_ERROR', 'the sandbox worker has no source for the call'))
      let prepared: ReturnType<PythonInterpreter['prepare']>
      try {
        prepared = interpreter.prepare(job.source)
      } catch (err) {
        this.releaseIfDead(job.scope, interpreter)
        return failure(asSvcError(err, 'EXECUTION_FAILED', 'the source could not be prepared'))
      }
      if ('syntax' in prepared) {
        return failure(new SvcError('VALIDATION_FAILED', `syntax error in the source: ${prepared.syntax}`, { details: { syntaxError: prepared.syntax } }))
      }
      entry = new PythonWarmEntry(interpreter, job.sourceDigest, prepared.code, job.account)
    }

    hooks.onStarted()
    const warm = job.context !== 'fresh'
    if (warm) entry.instance ??= interpreter.newDict()
    const run = interpreter.run({
      code: entry.code,
      functionName: job.functionName,
      argsJson: job.argsJson,
      site,
      stash,
      timeoutMs: job.limits.timeoutMs,
      memoryMb: job.limits.memoryMb,
      maxLogBytes: job.maxLogBytes,
      instance: warm ? entry.instance : undefined,
      restore: !warm || scope.lastWarmKey !== job.key,
      ...(job.deterministicSeed !== undefined ? { seed: job.deterministicSeed } : {}),
    })
    // the next call of this key may skip the restore only after a call that ended normally
    const kind = run.envelope?.kind
    scope.lastWarmKey = warm && run.envelope !== undefined && kind !== 'timeout' && kind !== 'memory' && kind !== 'load' && kind !== 'missing' ? job.key : undefined
    if (interpreter.alive) this.warm.put(job.key, entry)
    else entry.dispose()
    if (!interpreter.alive || interpreter.retiring) this.release(job.scope, interpreter)
    return outcomeOf(run, job)
  }

  /** The scope's interpreter (most recently used now), loading one when it has none. */
  private async acquire(scopeName: string): Promise<ScopeInterpreter> {
    const known = this.scopes.get(scopeName)
    if (known?.interpreter.alive) {
      this.scopes.delete(scopeName)
      this.scopes.set(scopeName, known)
      return known
    }
    if (known) this.release(scopeName, known.interpreter)
    // the worker runs one call at a time: no other load is in flight
    while (this.scopes.size >= this.init.maxInterpreters) {
      const [oldest, evicted] = this.scopes.entries().next().value as [string, ScopeInterpreter]
      this.release(oldest, evicted.interpreter)
    }
    let interpreter: PythonInterpreter
    try {
      interpreter = await PythonInterpreter.load()
    } catch (err) {
      throw new SvcError('INTERNAL_ERROR', `the Python runtime could not be loaded: ${err instanceof Error ? err.message : String(err)}`)
    }
    const scope: ScopeInterpreter = { interpreter, sets: new Map(), lastWarmKey: undefined }
    this.scopes.set(scopeName, scope)
    return scope
  }

  /** Installs the set for `digest` into the scope's interpreter unless it is there (most recently used last). */
  private installSet(scope: ScopeInterpreter, digest: string, pins: NonNullable<ExecuteJob['pipPins']>): DependencySet {
    const known = scope.sets.get(digest)
    if (known !== undefined) {
      scope.sets.delete(digest)
      scope.sets.set(digest, known)
      return known
    }
    const wheels = readWheels(this.init.wheelDirs, pins)
    let site: string
    try {
      site = scope.interpreter.install(digest, wheels)
    } catch (err) {
      const what = err instanceof Error ? lastLine(err.message) : String(err)
      throw new SvcError('EXECUTION_FAILED', `the pinned packages ${pins.map((p) => `${p.name}==${p.version}`).join(', ')} could not be installed: ${what}`, {
        details: { reason: 'dependency_install_failed' },
      })
    }
    const set: DependencySet = { site, stash: undefined }
    scope.sets.set(digest, set)
    while (scope.sets.size > MAX_DEPENDENCY_SETS) {
      const [oldest, evicted] = scope.sets.entries().next().value as [string, DependencySet]
      scope.sets.delete(oldest)
      evicted.stash?.destroy()
      scope.interpreter.uninstall(oldest)
    }
    return set
  }

  private releaseIfDead(scopeName: string, interpreter: PythonInterpreter): void {
    if (!interpreter.alive) this.release(scopeName, interpreter)
  }

  /** Forgets a scope's interpreter (and the warm entries that belong to it); its next call loads a new one. */
  private release(scopeName: string, interpreter: PythonInterpreter): void {
    if (this.scopes.get(scopeName)?.interpreter !== interpreter) return
    for (const key of this.warm.keys()) {
      const entry = this.warm.take(key)
      if (entry instanceof PythonWarmEntry && entry.interpreter === interpreter) {
        entry.dispose()
        continue
      }
      if (entry !== undefined) this.warm.put(key, entry)
    }
    interpreter.dispose()
    this.scopes.delete(scopeName)
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
