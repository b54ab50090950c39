import { isSvcError, SvcError } from '../../core/errors.js'
import { toWireError, type ExecuteJob, type PythonInterpreterMemory, type WireOutcome } from './ipc.js'
import { PythonInterpreter, type Envelope, type InterpreterRun, type PyHandle } from './python-interpreter.js'
import { lockDigest, readWheels } from './python-wheelhouse.js'
import type { LanguageRuntime, RunHooks, WarmEntry, WarmStore } from './runtime.js'
import type { LogLine } from './types.js'

/** Dependency sets a worker keeps installed (LRU by lockfile digest). */
const MAX_DEPENDENCY_SETS = 16
const MAX_MESSAGE_CHARS = 2_000
const MIB = 1024 * 1024
/** What a fresh interpreter is taken to hold until one has been loaded and measured. */
const FRESH_INTERPRETER_BYTES = 48 * MIB

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

  /** Hands the handles back to the interpreter, which releases them in its tenant's next call. */
  dispose(): void {
    this.interpreter.release(this.instance)
    this.interpreter.release(this.code)
    this.instance = undefined
  }
}

/** An installed dependency set, and the modules calls have imported from it (kept between calls). */
interface DependencySet {
  site: string
  stash: PyHandle | undefined
}

/** One scope's (namespace's) interpreter and the dependency sets installed into it. */
interface ScopeInterpreter {
  scope: string
  /** the root tenant the scope belongs to (ExecuteJob.account): interpreters are shared out by account */
  account: string
  interpreter: PythonInterpreter
  sets: Map<string, DependencySet>
  /** the warm key whose call the interpreter ran last, and that left it usable (undefined: restore) */
  lastWarmKey: string | undefined
  /** when it last served a call (a counter: larger is more recent) */
  lastUsed: number
  /** warm keys whose entries were made in this interpreter (some may have left the pool since) */
  keys: Set<string>
}

export interface PythonRuntimeInit {
  /** directories of wheels pinned dependencies are installed from (the first holding one wins) */
  wheelDirs: readonly string[]
  /** interpreters kept warm in the worker, one per scope */
  maxInterpreters: number
  /**
   * the interpreters' memory (WebAssembly memory) the worker keeps at most, all of them and one
   * account's, in bytes (0 or absent: no bound)
   */
  memory?: PythonInterpreterMemory | undefined
}

/**
 * Python in Pyodide. Every scope (namespace) gets its own interpreter in the worker: a call can
 * change module-level state of the interpreter in ways no reset undoes (a patched stdlib class, a
 * cached module), so scopes never share one. Within a scope's interpreter every call runs in fresh
 * globals and the prelude restores the interpreter afterwards (see python-prelude.py for what is
 * reset). A key's compiled source is kept in the worker's warm pool. Dependency sets are installed
 * per lockfile digest into their own site directory and put on `sys.path` only for calls of that
 * digest, so two functions pinning different versions of a package each import their own.
 *
 * The interpreters the worker keeps are bounded by count (`maxInterpreters`), by their memory
 * (`memory.perWorkerBytes`) and by the memory of each account's interpreters (`memory.perTenantBytes`;
 * an account is a root tenant, its child namespaces count against it). When a new interpreter
 * needs room, the one evicted is the least recently used of the account that holds the most
 * (interpreters, then memory; counting the one about to be loaded for the account that asks,
 * which loses its own on a tie): one tenant spreading calls over many namespaces evicts its own
 * interpreters, never those of a tenant that holds no more than it. An account past its memory
 * bound loses its own least recently used interpreter (after a call that grew it, or before a new
 * one loads). An interpreter is also replaced when it fails, when its memory grew too far, or when
 * its call had to be interrupted in the worker's own part of the call.
 */
export class PythonRuntime implements LanguageRuntime {
  /** by scope */
  private readonly scopes = new Map<string, ScopeInterpreter>()
  private tick = 0
  /** a fresh interpreter's memory, as last measured */
  private freshBytes = FRESH_INTERPRETER_BYTES
  /** interpreters loaded and evicted, for tests and statistics */
  readonly counts = { loaded: 0, evicted: 0 }

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
      scope = await this.acquire(job)
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
        this.releaseIfDone(scope)
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
        this.releaseIfDone(scope)
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
      cpuMs: job.limits.cpuMs,
      memoryMb: job.limits.memoryMb,
      maxLogBytes: job.maxLogBytes,
      instance: warm ? entry.instance : undefined,
      restore: !warm || scope.lastWarmKey !== job.key,
      ...(job.deterministicSeed !== undefined ? { seed: job.deterministicSeed } : {}),
    })
    // the next call of this key may skip the restore only after a call that ended normally
    const kind = run.envelope?.kind
    const normal = run.envelope !== undefined && run.limit === undefined && kind !== 'interrupted' && kind !== 'memory' && kind !== 'load' && kind !== 'missing'
    scope.lastWarmKey = warm && normal ? job.key : undefined
    if (interpreter.alive) {
      this.warm.put(job.key, entry)
      scope.keys.add(job.key)
    } else {
      entry.dispose()
    }
    this.releaseIfDone(scope)
    if (this.scopes.get(scope.scope) === scope) this.enforceBounds(scope)
    return outcomeOf(run, job)
  }

  dispose(): void {
    for (const scope of [...this.scopes.values()]) this.release(scope)
  }

  /** The scope's interpreter (most recently used now), loading one when it has none. */
  private async acquire(job: ExecuteJob): Promise<ScopeInterpreter> {
    const known = this.scopes.get(job.scope)
    if (known?.interpreter.alive) {
      known.lastUsed = ++this.tick
      return known
    }
    if (known) this.release(known)
    // the worker runs one call at a time: no other load is in flight
    this.makeRoom(job.account)
    let interpreter: PythonInterpreter
    try {
      interpreter = await PythonInterpreter.load()
    } catch (err) {
      throw new SvcError('INTERNAL_ERROR', `the Python runtime could not be loaded: ${err instanceof Error ? err.message : String(err)}`)
    }
    this.counts.loaded++
    this.freshBytes = interpreter.heapBytes
    const scope: ScopeInterpreter = {
      scope: job.scope,
      account: job.account,
      interpreter,
      sets: new Map(),
      lastWarmKey: undefined,
      lastUsed: ++this.tick,
      keys: new Set(),
    }
    this.scopes.set(job.scope, scope)
    return scope
  }

  /** Evicts interpreters until one more for `account` fits every bound. */
  private makeRoom(account: string): void {
    const need = this.freshBytes
    const perTenant = this.init.memory?.perTenantBytes ?? 0
    if (perTenant > 0) {
      // the account's own interpreters make room for its new one
      for (;;) {
        const own = this.held(account)
        if (own.count === 0 || own.bytes + need <= perTenant) break
        this.evict(this.leastRecent(account))
      }
    }
    const perWorker = this.init.memory?.perWorkerBytes ?? 0
    for (;;) {
      const total = this.total()
      if (total.count + 1 <= this.init.maxInterpreters && (perWorker === 0 || total.bytes + need <= perWorker)) break
      const victim = this.fairVictim(account, need)
      if (victim === undefined) break
      this.evict(victim)
    }
  }

  /**
   * After a call of `current`: an account past its memory bound loses its own least recently used
   * interpreters, the worker past its bound the fair victims'; `current` itself is replaced after
   * its call only when it alone is past a bound.
   */
  private enforceBounds(current: ScopeInterpreter): void {
    const perTenant = this.init.memory?.perTenantBytes ?? 0
    if (perTenant > 0) {
      for (;;) {
        if (this.held(current.account).bytes <= perTenant) break
        const victim = this.leastRecent(current.account, current)
        if (victim === undefined) {
          this.release(current)
          break
        }
        this.evict(victim)
      }
    }
    const perWorker = this.init.memory?.perWorkerBytes ?? 0
    if (perWorker > 0) {
      for (;;) {
        if (this.total().bytes <= perWorker) break
        const victim = this.fairVictim(current.account, 0, current)
        if (victim === undefined || victim === current) {
          this.release(current)
          break
        }
        this.evict(victim)
      }
    }
  }

  /**
   * The interpreter to evict for `account`: the least recently used of the account that holds the
   * most interpreters (counting one more for `account` when it asks for a new one), then — on a
   * tie — `account` itself, then the one that holds the most memory. `current` (the scope whose
   * call just ran) counts but is chosen only when its account must lose one and has no other.
   */
  private fairVictim(account: string, need: number, current?: ScopeInterpreter): ScopeInterpreter | undefined {
    const holdings = new Map<string, { count: number; bytes: number }>()
    for (const s of this.scopes.values()) {
      const h = holdings.get(s.account) ?? { count: 0, bytes: 0 }
      h.count++
      h.bytes += s.interpreter.heapBytes
      holdings.set(s.account, h)
    }
    let chosen: string | undefined
    let best: number[] = []
    for (const [acct, h] of holdings) {
      const mine = acct === account
      const weight = [h.count + (mine && need > 0 ? 1 : 0), mine ? 1 : 0, h.bytes + (mine ? need : 0)]
      if (chosen === undefined || outweighs(weight, best)) {
        chosen = acct
        best = weight
      }
    }
    if (chosen === undefined) return undefined
    return this.leastRecent(chosen, current) ?? (current?.account === chosen ? current : undefined)
  }

  private leastRecent(account: string, spare?: ScopeInterpreter): ScopeInterpreter | undefined {
    let oldest: ScopeInterpreter | undefined
    for (const s of this.scopes.values()) {
      if (s.account !== account || s === spare) continue
      if (oldest === undefined || s.lastUsed < oldest.lastUsed) oldest = s
    }
    return oldest
  }

  private held(account: string): { count: number; bytes: number } {
    let count = 0
    let bytes = 0
    for (const s of this.scopes.values()) {
      if (s.account !== account) continue
      count++
      bytes += s.interpreter.heapBytes
    }
    return { count, bytes }
  }

  private total(): { count: number; bytes: number } {
    let bytes = 0
    for (const s of this.scopes.values()) bytes += s.interpreter.heapBytes
    return { count: this.scopes.size, bytes }
  }

  private evict(scope: ScopeInterpreter | undefined): void {
    if (scope === undefined) return
    this.counts.evicted++
    this.release(scope)
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
      scope.interpreter.release(evicted.stash)
      scope.interpreter.uninstall(oldest)
    }
    return set
  }

  /** Forgets the scope's interpreter when it failed or is retiring. */
  private releaseIfDone(scope: ScopeInterpreter): void {
    if (!scope.interpreter.alive || scope.interpreter.retiring) this.release(scope)
  }

  /**
   * Forgets a scope's interpreter and the warm entries made in it; its next call loads a new one.
   * No Python runs in the interpreter again (it is dropped whole, see PythonInterpreter.dispose).
   */
  private release(scope: ScopeInterpreter): void {
    if (this.scopes.get(scope.scope) !== scope) return
    this.scopes.delete(scope.scope)
    const interpreter = scope.interpreter
    interpreter.dispose()
    for (const key of scope.keys) {
      const entry = this.warm.peek(key)
      if (entry instanceof PythonWarmEntry && entry.interpreter === interpreter) this.warm.take(key)
    }
  }
}

/** Whether weight `a` is greater than `b`, compared element by element. */
function outweighs(a: readonly number[], b: readonly number[]): boolean {
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number
    const y = b[i] ?? -1
    if (x !== y) return x > y
  }
  return false
}

function outcomeOf(run: InterpreterRun, job: ExecuteJob): WireOutcome {
  const base = { wallTimeMs: run.wallTimeMs, cpuTimeMs: run.cpuTimeMs, memoryBytes: run.memoryBytes }
  const envelope = run.envelope
  const logs = envelope === undefined ? rawLines(run, job.maxLogBytes, 0) : collectLogs(envelope, run, job.maxLogBytes)
  // a call stopped at a limit (or that ran past one) ends with that limit's error, whatever it returned
  let limit = run.limit
  if (limit === undefined && !run.abandoned && envelope !== undefined) {
    if (run.wallTimeMs > job.limits.timeoutMs) limit = 'time'
    else if (run.cpuTimeMs > job.limits.cpuMs) limit = 'cpu'
  }
  if (limit !== undefined || run.abandoned) {
    const error = limitError(limit ?? 'time', run, job)
    return { status: error.name === 'EXECUTION_TIMEOUT' ? 'timeout' : 'error', error: toWireError(error), logs, ...base }
  }
  if (envelope === undefined) {
    const fault = clip(lastLine(run.fault ?? 'unknown failure'))
    const message = /call stack/i.test(fault)
      ? 'the function overflowed the interpreter stack (recursion or nesting too deep)'
      : `the Python interpreter failed while running the function: ${fault}`
    const error = new SvcError('EXECUTION_FAILED', message, { details: { reason: 'interpreter_failed', fault } })
    return { status: 'error', error: toWireError(error), logs, ...base }
  }
  if (envelope.ok) {
    const outcome: WireOutcome = { status: 'success', logs, ...base }
    if (typeof envelope.json === 'string') outcome.resultJson = envelope.json
    return outcome
  }
  const error = errorOf(envelope, job)
  return { status: 'error', error: toWireError(error), logs, ...base }
}

/** The error of a call stopped at (or run past) its wall-time limit (1004) or its CPU-time limit (1007). */
function limitError(limit: 'time' | 'cpu', run: InterpreterRun, job: ExecuteJob): SvcError {
  const discarded = run.abandoned === true
  const after = discarded ? '; it kept running after it was interrupted, so its interpreter was discarded' : ''
  const extra = discarded ? { interpreterDiscarded: true } : {}
  if (limit === 'cpu') {
    return new SvcError('EXECUTION_FAILED', `the function used ${Math.round(run.cpuTimeMs)} ms of CPU time, over its CPU limit of ${job.limits.cpuMs} ms${after}`, {
      details: { limit: 'cpu', cpuTimeMs: run.cpuTimeMs, cpuMs: job.limits.cpuMs, ...extra },
    })
  }
  return new SvcError('EXECUTION_TIMEOUT', `the function did not finish within ${job.limits.timeoutMs} ms${after}`, {
    details: { limit: 'time', timeoutMs: job.limits.timeoutMs, ...extra },
  })
}

function errorOf(envelope: Envelope, job: ExecuteJob): SvcError {
  const name = job.functionName
  const e = envelope.error ?? {}
  const errorName = clip(String(e.name ?? 'Exception'), 200)
  const message = clip(String(e.message ?? ''))
  const details: Record<string, unknown> = { errorName }
  if (typeof e.stack === 'string' && e.stack !== '') details.stack = e.stack
  switch (envelope.kind) {
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
    case 'interrupted':
      // 'interrupted' without a limit: the function raised KeyboardInterrupt itself
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
