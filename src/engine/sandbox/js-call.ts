import type ivm from 'isolated-vm'
import { SvcError, isSvcError } from '../../core/errors.js'
import type { CallCpu, CpuLimiter } from './cpu-limit.js'
import { Deadline, DeadlineExceeded } from './deadline.js'
import { toWireError, type ExecuteJob, type WireOutcome } from './ipc.js'
import type { CompiledSource } from './js-compile.js'
import { MEMORY_REFUSAL_PREFIX } from './js-memory-guard.js'
import { DETERMINISTIC_EPOCH_MS, DETERMINISTIC_PRELUDE, PRELUDE } from './js-prelude.js'
import type { LogLine } from './types.js'

/** How long reading the captured logs may take after a call that ended without an envelope. */
const DRAIN_MS = 40
const MAX_MESSAGE_CHARS = 2_000
const MAX_STACK_CHARS = 8_000
const LOG_LEVELS = new Set<LogLine['level']>(['log', 'info', 'warn', 'error', 'debug'])
const IVM_TIMEOUT = 'Script execution timed out.'
const PENDING = 'P'

/**
 * One context of an isolate with the prelude installed and the function bound: what a call runs
 * in. A warm instance serves every call of its key (module state persists between them); a fresh
 * one serves one call.
 */
export class JsInstance {
  private released = false

  constructor(
    readonly context: ivm.Context,
    readonly call: ivm.Reference,
    readonly poll: ivm.Reference,
    readonly wait: ivm.Reference,
    readonly drain: ivm.Reference,
    readonly bind: ivm.Reference,
    /** handles the instance keeps alive (a module and its namespace) */
    readonly handles: Array<{ release(): void }>,
    /** the log budget the prelude was installed with */
    readonly maxLogBytes: number,
  ) {}

  release(): void {
    if (this.released) return
    this.released = true
    for (const handle of [this.call, this.poll, this.wait, this.drain, this.bind, ...this.handles]) releaseQuietly(handle)
    releaseQuietly(this.context)
  }
}

/** What a call runs against: the key's isolate, its compiled source and, in warm mode, its instance. */
export interface CallSite {
  isolate: ivm.Isolate
  /** the isolate's memory limit, MB (what the prelude charges memory outside the heap to) */
  memoryMb: number
  compiled: CompiledSource
  /** the warm instance an earlier call of the key left (warm mode only) */
  instance: JsInstance | undefined
  /**
   * A context with the prelude installed beforehand, while the worker was idle, in which no code
   * but the prelude has run: the call uses it instead of making one (when its log budget is the
   * call's) and owns it from then on.
   */
  prepared?: JsInstance | undefined
  /** the CPU limiter and the isolate's slot in it: the call is stopped once it used its CPU limit */
  cpu?: { limiter: CpuLimiter; slot: number }
}

export interface CallResult {
  outcome: WireOutcome
  /** False when the isolate should not be reused (disposed, timed out, unresponsive). */
  reusable: boolean
  /** The instance to keep for the key's next call (warm mode, after a call that left it usable). */
  instance: JsInstance | undefined
}

type Phase = 'setup' | 'load' | 'call'

type Verdict =
  | { status: 'success'; resultJson?: string; logs: LogLine[] }
  | { status: 'error' | 'timeout'; error: SvcError; logs?: LogLine[] }

/**
 * Runs one call. Warm mode (`job.context` `warm`) reuses the site's instance, creating it on the
 * key's first call; fresh mode creates an instance for this call and discards it afterwards.
 * Creating an instance installs the prelude, runs the source and looks the function up; the call
 * itself is one synchronous call into the isolate (plus a poll for a function that returned a
 * promise, and an awaited wait for one that is still pending after its microtasks ran). Every step
 * runs under the call's wall-time budget and, with `site.cpu`, its CPU limit (the isolate is
 * disposed when the call used it up: 1007, `details.limit` `cpu`). Never throws; every failure
 * becomes an outcome.
 */
export async function runCall(site: CallSite, job: ExecuteJob): Promise<CallResult> {
  const { isolate } = site
  const deadline = new Deadline(job.limits.timeoutMs)
  const cpu = site.cpu?.limiter ?? new ExactCpu()
  cpu.arm(site.cpu?.slot ?? 0, job.limits.cpuMs, deadline.startedAt)
  let used: CallCpu | undefined
  let endedAt = 0
  /** ends the CPU watch (once), when the call's work in the isolate ended */
  const disarm = (): CallCpu => (used ??= cpu.disarm((endedAt = performance.now())))
  const warm = job.context !== 'fresh'
  let instance = warm ? site.instance : undefined
  if (instance !== undefined) site.prepared?.release() // not needed: the call owns it either way
  let loaded = instance !== undefined
  let phase: Phase = 'setup'
  let verdict: Verdict
  try {
    if (instance === undefined) {
      const prepared = site.prepared?.maxLogBytes === job.maxLogBytes ? site.prepared : undefined
      if (site.prepared !== undefined && prepared === undefined) site.prepared.release()
      instance = prepared ?? createInstance(isolate, job.maxLogBytes, deadline.remainingMs(), site.memoryMb)
      // a deterministic function: seeded Math.random, a fixed clock (after the prelude, which keeps the real clock for log lines)
      if (job.deterministicSeed !== undefined) {
        instance.context.evalClosureSync(DETERMINISTIC_PRELUDE, [job.deterministicSeed, DETERMINISTIC_EPOCH_MS], { timeout: deadline.remainingMs() })
      }
      phase = 'load'
      const fn = site.compiled.mode === 'script'
        ? loadFromScript(site.compiled.script, instance.context, job.functionName, deadline)
        : await loadFromModule(isolate, site.compiled, instance, job.functionName, deadline)
      instance.bind.applySync(undefined, [fn.derefInto()], { timeout: deadline.remainingMs() })
      fn.release()
      loaded = true
    }
    phase = 'call'
    const callJson = `{"values":${job.argsJson},"missing":${JSON.stringify(job.missingArgs)}}`
    let text: unknown = instance.call.applySync(undefined, [callJson], { timeout: deadline.remainingMs() })
    // a promise: its microtasks ran before the call returned, so it has usually settled already
    if (text === PENDING) text = instance.poll.applySync(undefined, [], { timeout: deadline.remainingMs() })
    if (text === PENDING) {
      text = await deadline.guard(
        instance.wait.apply(undefined, [], { timeout: deadline.remainingMs(), result: { promise: true } }) as Promise<unknown>,
      )
    }
    const { stopped, cpuMs } = disarm()
    verdict = stopped ? cpuExceeded(job, cpuMs) : readEnvelope(text, job.functionName, job.maxLogBytes, job.limits.memoryMb)
  } catch (err) {
    const { stopped, cpuMs } = disarm()
    verdict = stopped ? cpuExceeded(job, cpuMs) : classify(err, isolate, job, phase)
  }
  const { stopped, exceeded, cpuMs: cpuTimeMs } = used ?? disarm()
  const wallTimeMs = endedAt - deadline.startedAt
  // a stopped call's isolate is disposed by the terminator (now, or in a moment)
  if (stopped && !isolate.isDisposed) {
    try {
      isolate.dispose()
    } catch {
      // the terminator was first
    }
  }

  let responsive = !isolate.isDisposed
  if (verdict.logs === undefined) {
    const logs = responsive && instance ? drainLogs(instance.drain, job.maxLogBytes) : []
    if (logs === undefined) responsive = false
    verdict.logs = logs ?? []
  }
  let memoryBytes = 0
  if (responsive && !isolate.isDisposed) {
    try {
      // the heap and what the allocator holds outside it (ArrayBuffers, and the charges of Wasm
      // memories, resizable buffers, compiled modules and Intl objects: js-memory-guard.ts)
      const heap = isolate.getHeapStatisticsSync()
      memoryBytes = heap.used_heap_size + heap.externally_allocated_size
    } catch {
      responsive = false
    }
  }
  // past its memory limit, the isolate is discarded with whatever it held
  const overMemory = verdict.status === 'error' && verdict.error.details.limit === 'memory'
  const reusable = verdict.status !== 'timeout' && !overMemory && responsive && !isolate.isDisposed
  // a warm instance survives a call that threw or returned a bad result, not one that failed to load
  const keep = warm && reusable && loaded ? instance : undefined
  if (instance && instance !== keep) instance.release()

  // a call that ended just past its limit, before the watchdog's next look, fails all the same
  if (verdict.status === 'success' && exceeded) verdict = { ...cpuExceeded(job, cpuTimeMs), logs: verdict.logs }
  const outcome: WireOutcome = { status: verdict.status, logs: verdict.logs ?? [], wallTimeMs, cpuTimeMs, memoryBytes }
  if (verdict.status === 'success') {
    if (verdict.resultJson !== undefined) outcome.resultJson = verdict.resultJson
  } else {
    outcome.error = toWireError(verdict.error)
  }
  return { outcome, reusable, instance: keep }
}

/**
 * A new context with the prelude installed (no user code has run in it yet), for an isolate whose
 * memory limit is `memoryMb`.
 */
export function createInstance(isolate: ivm.Isolate, maxLogBytes: number, timeoutMs: number, memoryMb: number): JsInstance {
  const context = isolate.createContextSync()
  const handles: Array<{ release(): void }> = []
  try {
    const install = preludeOf(isolate).runSync(context, { timeout: timeoutMs, reference: true }) as ivm.Reference
    handles.push(install)
    const api = install.applySync(undefined, [maxLogBytes, memoryMb], { timeout: timeoutMs, result: { reference: true } }) as ivm.Reference
    handles.push(api)
    const get = (name: string): ivm.Reference => {
      const ref = api.getSync(name, { reference: true }) as ivm.Reference
      handles.push(ref)
      return ref
    }
    const [bind, call, poll, wait, drain] = ['bind', 'call', 'poll', 'wait', 'drain'].map(get) as [ivm.Reference, ivm.Reference, ivm.Reference, ivm.Reference, ivm.Reference]
    releaseQuietly(api)
    releaseQuietly(install)
    return new JsInstance(context, call, poll, wait, drain, bind, [], maxLogBytes)
  } catch (err) {
    for (const handle of handles) releaseQuietly(handle)
    releaseQuietly(context)
    throw err
  }
}

/** The prelude compiled once per isolate (compiling it took most of a new context's time). */
const preludes = new WeakMap<ivm.Isolate, ivm.Script>()

/** The prelude as a script whose value is a function of ($0, $1), compiled for `isolate` once. */
function preludeOf(isolate: ivm.Isolate): ivm.Script {
  let script = preludes.get(isolate)
  if (script === undefined) {
    script = isolate.compileScriptSync(`(function ($0, $1) {${PRELUDE}})`, { filename: 'svc-prelude.js' })
    preludes.set(isolate, script)
  }
  return script
}

function loadFromScript(script: ivm.Script, context: ivm.Context, name: string, deadline: Deadline): ivm.Reference {
  if (!IDENTIFIER.test(name)) {
    script.runSync(context, { timeout: deadline.remainingMs() })
    throw notDefined(name, 'script')
  }
  // Whatever `name` already denotes before the source runs (a built-in such as `Array`) is not
  // the function: the source must define it.
  let builtin: ivm.Reference | undefined
  try {
    builtin = context.evalClosureSync(`return typeof ${name} === 'function' ? ${name} : undefined`, [], {
      timeout: deadline.remainingMs(),
      result: { reference: true },
    }) as ivm.Reference | undefined
  } catch (err) {
    if (err instanceof Error && err.name === 'SyntaxError') throw notDefined(name, 'script')
    throw err
  }
  try {
    script.runSync(context, { timeout: deadline.remainingMs() })
    const ref = context.evalClosureSync(`return typeof ${name} === 'function' && ${name} !== $0 ? ${name} : undefined`, [builtin?.derefInto()], {
      timeout: deadline.remainingMs(),
      result: { reference: true },
    }) as ivm.Reference | undefined
    if (ref?.typeof !== 'function') {
      if (ref) releaseQuietly(ref)
      throw notDefined(name, 'script')
    }
    return ref
  } finally {
    if (builtin) releaseQuietly(builtin)
  }
}

async function loadFromModule(
  isolate: ivm.Isolate,
  compiled: Extract<CompiledSource, { mode: 'module' }>,
  instance: JsInstance,
  name: string,
  deadline: Deadline,
): Promise<ivm.Reference> {
  const module = isolate.compileModuleSync(compiled.code, { filename: compiled.filename })
  instance.handles.push(module)
  module.instantiateSync(instance.context, (specifier) => {
    throw new Error(`sandboxed functions cannot import modules (${specifier})`)
  })
  // a module may await at its top level: evaluate is awaited under the budget
  await deadline.guard(module.evaluate({ timeout: deadline.remainingMs() }))
  const namespace = module.namespace
  instance.handles.push(namespace)
  for (const exported of [name, 'default']) {
    const ref = namespace.getSync(exported, { reference: true }) as ivm.Reference | undefined
    if (ref?.typeof === 'function') return ref
    if (ref) releaseQuietly(ref)
  }
  throw notDefined(name, 'module')
}

const IDENTIFIER = /^[\p{ID_Start}$_][\p{ID_Continue}$\u200C\u200D]*$/u

function notDefined(name: string, mode: 'script' | 'module'): SvcError {
  const message = mode === 'script'
    ? `the source does not define a function named '${name}'`
    : `the module exports no function named '${name}' and no default function`
  return new SvcError('VALIDATION_FAILED', message, { details: { functionName: name } })
}

/** The verdict of an envelope (see js-prelude.ts for its forms). */
function readEnvelope(text: unknown, name: string, maxLogBytes: number, memoryMb: number): Verdict {
  if (typeof text === 'string') {
    if (text === 'U') return { status: 'success', logs: [] }
    if (text.charCodeAt(0) === 0x53 /* S */) return { status: 'success', resultJson: text.slice(1), logs: [] }
  }
  const parsed = typeof text === 'string' ? safeParse(text) : undefined
  if (!isRecord(parsed)) {
    return { status: 'error', error: new SvcError('EXECUTION_FAILED', `the call of '${name}' produced no readable result`) }
  }
  const logs = logsOf(parsed, maxLogBytes)
  if (parsed.ok === true) {
    return typeof parsed.json === 'string' ? { status: 'success', resultJson: parsed.json, logs } : { status: 'success', logs }
  }
  const error = isRecord(parsed.error) ? parsed.error : {}
  const errorName = clip(String(error.name ?? 'Error'), 200)
  const errorMessage = clip(String(error.message ?? ''), MAX_MESSAGE_CHARS)
  const details: Record<string, unknown> = { errorName }
  if (typeof error.stack === 'string') details.stack = clip(error.stack, MAX_STACK_CHARS)
  if (parsed.kind === 'threw' && errorName === 'RangeError' && isMemoryRefusal(errorMessage)) {
    return { status: 'error', logs, error: memoryExceeded(memoryMb, errorMessage) }
  }
  if (parsed.kind === 'result') {
    return {
      status: 'error',
      logs,
      error: new SvcError('EXECUTION_FAILED', `the result of '${name}' is not JSON-serialisable: ${errorMessage}`, { details }),
    }
  }
  return { status: 'error', logs, error: new SvcError('EXECUTION_FAILED', `'${name}' threw ${errorName}: ${errorMessage}`, { details }) }
}

/**
 * What an allocation past the memory limit throws inside the isolate: the guard's refusals
 * (js-memory-guard.ts), the allocator's ("Array buffer allocation failed") and V8's for a Wasm
 * memory it cannot reserve or grow.
 */
function isMemoryRefusal(message: string): boolean {
  return message.startsWith(MEMORY_REFUSAL_PREFIX) || message === 'Array buffer allocation failed' ||
    message.endsWith('could not allocate memory') || message.endsWith('Maximum memory size exceeded')
}

/** The memory limit's error (EXECUTION_FAILED, `details.limit` `memory`); `what`: the refusal inside the isolate. */
function memoryExceeded(memoryMb: number, what?: string): SvcError {
  const message = `the function exceeded its memory limit of ${memoryMb} MB`
  return new SvcError('EXECUTION_FAILED', what === undefined ? message : `${message} (${what})`, {
    details: { limit: 'memory', memoryMb },
  })
}

/** The CPU limit's error (EXECUTION_FAILED, `details.limit` `cpu`). */
function cpuExceeded(job: ExecuteJob, usedMs: number): Extract<Verdict, { status: 'error' | 'timeout' }> {
  return {
    status: 'error',
    error: new SvcError('EXECUTION_FAILED', `the function used ${Math.round(usedMs)} ms of CPU time, over its CPU limit of ${job.limits.cpuMs} ms`, {
      details: { limit: 'cpu', cpuTimeMs: usedMs, cpuMs: job.limits.cpuMs },
    }),
  }
}

function classify(err: unknown, isolate: ivm.Isolate, job: ExecuteJob, phase: Phase): Verdict {
  if (err instanceof DeadlineExceeded || (err instanceof Error && err.message === IVM_TIMEOUT)) {
    return {
      status: 'timeout',
      error: new SvcError('EXECUTION_TIMEOUT', `the function did not finish within ${job.limits.timeoutMs} ms`, {
        details: { limit: 'time', timeoutMs: job.limits.timeoutMs },
      }),
    }
  }
  if (isolate.isDisposed) return { status: 'error', error: memoryExceeded(job.limits.memoryMb) }
  if (isSvcError(err)) return { status: 'error', error: err }
  const what = clip(err instanceof Error ? `${err.name}: ${err.message}` : String(err), MAX_MESSAGE_CHARS)
  if (phase === 'load') {
    return { status: 'error', error: new SvcError('EXECUTION_FAILED', `the source threw while loading: ${what}`) }
  }
  if (phase === 'call') {
    // The function's own throws come back in the envelope; what reaches here is, e.g., an
    // unhandled promise rejection inside the isolate.
    return { status: 'error', error: new SvcError('EXECUTION_FAILED', `the function failed: ${what}`) }
  }
  return { status: 'error', error: new SvcError('INTERNAL_ERROR', `sandbox failure: ${what}`) }
}

/** Reads the captured console lines; `undefined` when the isolate does not answer in time. */
function drainLogs(drain: ivm.Reference, maxLogBytes: number): LogLine[] | undefined {
  let text: unknown
  try {
    text = drain.applySync(undefined, [], { timeout: DRAIN_MS })
  } catch {
    return undefined
  }
  if (typeof text !== 'string') return undefined
  const parsed = safeParse(text)
  return isRecord(parsed) ? logsOf(parsed, maxLogBytes) : []
}

function logsOf(parsed: Record<string, unknown>, maxLogBytes: number): LogLine[] {
  const logs: LogLine[] = []
  for (const line of Array.isArray(parsed.lines) ? (parsed.lines as unknown[]) : []) {
    if (!Array.isArray(line)) continue
    const [level, message, at] = line as unknown[]
    if (typeof message !== 'string' || !LOG_LEVELS.has(level as LogLine['level'])) continue
    logs.push({ level: level as LogLine['level'], message, at: isoTime(at) })
  }
  if (parsed.truncated === true) {
    logs.push({ level: 'warn', message: `[logs truncated: output exceeded ${maxLogBytes} bytes]`, at: new Date().toISOString() })
  }
  return logs
}

/** A call's CPU measured exactly, without a limiter (see CpuLimiter): two readings of the process's CPU. */
class ExactCpu {
  private from: NodeJS.CpuUsage = { user: 0, system: 0 }
  private limitMs = 0

  arm(_slot: number, limitMs: number): void {
    this.limitMs = limitMs
    this.from = process.cpuUsage()
  }

  disarm(): CallCpu {
    const used = process.cpuUsage(this.from)
    const cpuMs = (used.user + used.system) / 1000
    return { cpuMs, stopped: false, exceeded: cpuMs > this.limitMs }
  }
}

function isoTime(epochMs: unknown): string {
  const date = new Date(typeof epochMs === 'number' ? epochMs : Date.now())
  return Number.isNaN(date.getTime()) ? new Date().toISOString() : date.toISOString()
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function clip(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max)}…` : s
}

function releaseQuietly(handle: { release(): void }): void {
  try {
    handle.release()
  } catch {
    // already released, or the isolate is gone
  }
}
