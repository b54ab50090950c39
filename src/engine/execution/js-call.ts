import type ivm from 'isolated-vm'
import { SvcError, isSvcError } from '../../core/errors.js'
import { Deadline, DeadlineExceeded, within } from './deadline.js'
import { toWireError, type ExecuteJob, type WireOutcome } from './ipc.js'
import type { CompiledSource } from './js-compile.js'
import { PRELUDE } from './js-prelude.js'
import type { LogLine } from './types.js'

/** How long reading the captured logs may take after the call before they are given up. */
const DRAIN_MS = 40
const MAX_MESSAGE_CHARS = 2_000
const MAX_STACK_CHARS = 8_000
const LOG_LEVELS = new Set<LogLine['level']>(['log', 'info', 'warn', 'error', 'debug'])
const IVM_TIMEOUT = 'Script execution timed out.'

export interface CallResult {
  outcome: WireOutcome
  /** False when the isolate should not be reused (disposed, timed out, unresponsive). */
  reusable: boolean
}

interface Controls {
  invoke: ivm.Reference
  drain: ivm.Reference
}

type Phase = 'setup' | 'load' | 'call'

type Verdict =
  | { status: 'success'; resultJson?: string }
  | { status: 'error' | 'timeout'; error: SvcError }

/**
 * Runs one call of a compiled function in a fresh context of `isolate`: installs the prelude,
 * runs the source, looks the function up, invokes it under the wall-time budget and collects
 * logs, CPU time and heap use. Never throws; every failure becomes an outcome.
 */
export async function runCall(isolate: ivm.Isolate, compiled: CompiledSource, job: ExecuteJob): Promise<CallResult> {
  const deadline = new Deadline(job.limits.timeoutMs)
  const cpuAtStart = isolate.cpuTime
  const handles: Array<{ release(): void }> = []
  let context: ivm.Context | undefined
  let controls: Controls | undefined
  let phase: Phase = 'setup'
  let verdict: Verdict
  try {
    context = await deadline.guard(isolate.createContext())
    controls = await installPrelude(context, job.maxLogBytes, deadline, handles)
    phase = 'load'
    const fn = compiled.mode === 'script'
      ? await loadFromScript(compiled.script, context, job.functionName, deadline, handles)
      : await loadFromModule(isolate, compiled, context, job.functionName, deadline, handles)
    phase = 'call'
    const call = `{"values":${job.argsJson},"missing":${JSON.stringify(job.missingArgs)}}`
    const envelope: unknown = await deadline.guard(
      controls.invoke.apply(undefined, [fn.derefInto(), call], { timeout: deadline.remainingMs(), result: { promise: true } }),
    )
    verdict = readEnvelope(envelope, job.functionName)
  } catch (err) {
    verdict = classify(err, isolate, job, phase)
  }
  const wallTimeMs = deadline.elapsedMs()

  const { logs, memoryBytes, cpuTimeMs, responsive } = await collect(isolate, controls, job.maxLogBytes, cpuAtStart)
  const reusable = verdict.status !== 'timeout' && responsive
  for (const handle of handles) releaseQuietly(handle)
  if (context) releaseQuietly(context)

  if (verdict.status === 'success' && cpuTimeMs > job.limits.cpuMs) {
    verdict = {
      status: 'error',
      error: new SvcError('EXECUTION_FAILED', `the function used ${Math.round(cpuTimeMs)} ms of CPU time, over its limit of ${job.limits.cpuMs} ms`, {
        details: { limit: 'cpu', cpuTimeMs, cpuMs: job.limits.cpuMs },
      }),
    }
  }
  const outcome: WireOutcome = { status: verdict.status, logs, wallTimeMs, cpuTimeMs, memoryBytes }
  if (verdict.status === 'success') {
    if (verdict.resultJson !== undefined) outcome.resultJson = verdict.resultJson
  } else {
    outcome.error = toWireError(verdict.error)
  }
  return { outcome, reusable }
}

interface Measurements {
  logs: LogLine[]
  memoryBytes: number
  cpuTimeMs: number
  /** The isolate still exists and answered the log drain. */
  responsive: boolean
}

/** Logs, heap in use and CPU time after a call; zeros for an isolate that is gone or unresponsive. */
async function collect(isolate: ivm.Isolate, controls: Controls | undefined, maxLogBytes: number, cpuAtStart: bigint): Promise<Measurements> {
  if (isolate.isDisposed) return { logs: [], memoryBytes: 0, cpuTimeMs: 0, responsive: false }
  const logs = controls ? await drainLogs(controls.drain, maxLogBytes) : []
  const cpuTimeMs = cpuSince(isolate, cpuAtStart)
  if (logs === undefined || isolate.isDisposed) return { logs: [], memoryBytes: 0, cpuTimeMs, responsive: false }
  return { logs, memoryBytes: isolate.getHeapStatisticsSync().used_heap_size, cpuTimeMs, responsive: true }
}

async function installPrelude(
  context: ivm.Context,
  maxLogBytes: number,
  deadline: Deadline,
  handles: Array<{ release(): void }>,
): Promise<Controls> {
  const api = await deadline.guard(
    context.evalClosure(PRELUDE, [maxLogBytes], { timeout: deadline.remainingMs(), result: { reference: true } }),
  )
  handles.push(api)
  const invoke = api.getSync('invoke', { reference: true })
  const drain = api.getSync('drain', { reference: true })
  handles.push(invoke, drain)
  return { invoke, drain }
}

async function loadFromScript(
  script: ivm.Script,
  context: ivm.Context,
  name: string,
  deadline: Deadline,
  handles: Array<{ release(): void }>,
): Promise<ivm.Reference> {
  if (!IDENTIFIER.test(name)) {
    await deadline.guard(script.run(context, { timeout: deadline.remainingMs() }))
    throw notDefined(name, 'script')
  }
  // Whatever `name` already denotes before the source runs (a built-in such as `Array`) is not
  // the function: the source must define it.
  const lookup = `return typeof ${name} === 'function' && ${name} !== $0 ? ${name} : undefined`
  let builtin: ivm.Reference | undefined
  try {
    builtin = await deadline.guard(
      context.evalClosure(`return typeof ${name} === 'function' ? ${name} : undefined`, [], {
        timeout: deadline.remainingMs(),
        result: { reference: true },
      }),
    )
  } catch (err) {
    if (err instanceof Error && err.name === 'SyntaxError') throw notDefined(name, 'script')
    throw err
  }
  if (builtin) handles.push(builtin)
  await deadline.guard(script.run(context, { timeout: deadline.remainingMs() }))
  const ref = await deadline.guard(
    context.evalClosure(lookup, [builtin?.derefInto()], { timeout: deadline.remainingMs(), result: { reference: true } }),
  )
  if (ref) handles.push(ref)
  if (ref?.typeof !== 'function') throw notDefined(name, 'script')
  return ref
}

async function loadFromModule(
  isolate: ivm.Isolate,
  compiled: Extract<CompiledSource, { mode: 'module' }>,
  context: ivm.Context,
  name: string,
  deadline: Deadline,
  handles: Array<{ release(): void }>,
): Promise<ivm.Reference> {
  const module = await deadline.guard(isolate.compileModule(compiled.code, { filename: compiled.filename }))
  handles.push(module)
  await deadline.guard(
    module.instantiate(context, (specifier) => {
      throw new Error(`sandboxed functions cannot import modules (${specifier})`)
    }),
  )
  await deadline.guard(module.evaluate({ timeout: deadline.remainingMs() }))
  const namespace = module.namespace
  handles.push(namespace)
  for (const exported of [name, 'default']) {
    const ref = await deadline.guard(namespace.get(exported, { reference: true }))
    if (ref) handles.push(ref)
    if (ref?.typeof === 'function') return ref
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

function readEnvelope(envelope: unknown, name: string): Verdict {
  const parsed = typeof envelope === 'string' ? safeParse(envelope) : undefined
  if (!isRecord(parsed)) {
    return { status: 'error', error: new SvcError('EXECUTION_FAILED', `the call of '${name}' produced no readable result`) }
  }
  if (parsed.ok === true) {
    return typeof parsed.json === 'string' ? { status: 'success', resultJson: parsed.json } : { status: 'success' }
  }
  const error = isRecord(parsed.error) ? parsed.error : {}
  const errorName = clip(String(error.name ?? 'Error'), 200)
  const errorMessage = clip(String(error.message ?? ''), MAX_MESSAGE_CHARS)
  const details: Record<string, unknown> = { errorName }
  if (typeof error.stack === 'string') details.stack = clip(error.stack, MAX_STACK_CHARS)
  if (parsed.kind === 'result') {
    return {
      status: 'error',
      error: new SvcError('EXECUTION_FAILED', `the result of '${name}' is not JSON-serialisable: ${errorMessage}`, { details }),
    }
  }
  return { status: 'error', error: new SvcError('EXECUTION_FAILED', `'${name}' threw ${errorName}: ${errorMessage}`, { details }) }
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
  if (isolate.isDisposed) {
    return {
      status: 'error',
      error: new SvcError('EXECUTION_FAILED', `the function exceeded its memory limit of ${job.limits.memoryMb} MB`, {
        details: { limit: 'memory', memoryMb: job.limits.memoryMb },
      }),
    }
  }
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
async function drainLogs(drain: ivm.Reference, maxLogBytes: number): Promise<LogLine[] | undefined> {
  let text: unknown
  try {
    text = await within(drain.apply(undefined, [], { timeout: DRAIN_MS }), DRAIN_MS + 10)
  } catch {
    return undefined
  }
  if (typeof text !== 'string') return undefined
  const parsed = safeParse(text)
  if (!isRecord(parsed) || !Array.isArray(parsed.lines)) return []
  const logs: LogLine[] = []
  for (const line of parsed.lines as unknown[]) {
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

/** CPU time the isolate spent since `start` (isolated-vm counts bigint nanoseconds). */
function cpuSince(isolate: ivm.Isolate, start: bigint): number {
  try {
    return Number(isolate.cpuTime - start) / 1e6
  } catch {
    return 0
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
