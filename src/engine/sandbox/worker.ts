/**
 * Entry point of a sandbox worker process (forked by `worker-process.ts`). It runs one call at a
 * time, dispatching by language family to a runtime, and keeps warm per-key state in one LRU
 * shared by all runtimes, and the sources it was sent by digest. Its only channel is the IPC
 * channel to the supervisor; when that closes, it exits.
 */
import type { LanguageFamily } from '../../core/rufid.js'
import { SvcError } from '../../core/errors.js'
import {
  isSupervisorMessage,
  pythonInterpreterMemoryOf,
  sourceCapacity,
  toWireError,
  type ExecuteJob,
  type WireOutcome,
  type WorkerConfig,
  type WorkerMessage,
} from './ipc.js'
import { boundCallOutput } from './call-output.js'
import { JsRuntime } from './js-runtime.js'
import { workerMemoryBoundFromArgs } from './memory-bound.js'
import { PythonRuntime } from './python-runtime.js'
import type { LanguageRuntime } from './runtime.js'
import { WarmPool } from './warm-pool.js'

/** Exit code when V8 reports an isolate it can no longer control. */
const EXIT_CATASTROPHIC = 70
const EXIT_BAD_CONFIG = 78

function readConfig(): WorkerConfig {
  try {
    const config = JSON.parse(process.argv[2] ?? '') as Partial<WorkerConfig>
    const { maxWarmIsolates, maxWarmBytes, maxWarmBytesPerAccount, maxPythonInterpreters, pythonWheelDirs, maxSourceChars } = config
    const pythonInterpreterMemory = pythonInterpreterMemoryOf(config.pythonInterpreterMemory)
    const count = (n: unknown, min: number): n is number => typeof n === 'number' && Number.isInteger(n) && n >= min
    // JSON has no Infinity: a bound of 0 means none
    const bytes = (n: unknown): n is number => n === undefined || count(n, 0)
    if (count(maxWarmIsolates, 0) && bytes(maxWarmBytes) && bytes(maxWarmBytesPerAccount) && count(maxPythonInterpreters, 1) && count(maxSourceChars, 0) &&
      Array.isArray(pythonWheelDirs) && pythonWheelDirs.every((d) => typeof d === 'string') &&
      (config.pythonInterpreterMemory === undefined || pythonInterpreterMemory !== undefined)) {
      return { maxWarmIsolates, maxWarmBytes, maxWarmBytesPerAccount, maxPythonInterpreters, pythonWheelDirs, maxSourceChars, pythonInterpreterMemory }
    }
  } catch {
    // reported below
  }
  process.stderr.write('sandbox worker: missing or invalid configuration argument\n')
  process.exit(EXIT_BAD_CONFIG)
}

function send(message: WorkerMessage): void {
  process.send?.(message)
}

function shutdown(): void {
  warm.clear()
  for (const r of runtimes.values()) r.dispose?.()
  process.exit(0)
}

function onCatastrophicError(message: string): void {
  process.stderr.write(`sandbox worker ${process.pid}: catastrophic isolate error: ${message}\n`)
  process.exit(EXIT_CATASTROPHIC)
}

function failure(error: SvcError): WireOutcome {
  return { status: 'error', error: toWireError(error), logs: [], wallTimeMs: 0, cpuTimeMs: 0, memoryBytes: 0 }
}

/** Sources by digest, bounded by count and size: calls name a source the worker was sent before. */
class SourceCache {
  private readonly entries = new Map<string, string>()
  private bytes = 0

  constructor(private readonly capacity: number, private readonly maxChars: number) {}

  get(digest: string): string | undefined {
    const source = this.entries.get(digest)
    if (source !== undefined) {
      this.entries.delete(digest)
      this.entries.set(digest, source)
    }
    return source
  }

  put(digest: string, source: string): void {
    const previous = this.entries.get(digest)
    if (previous !== undefined) {
      this.entries.delete(digest)
      this.bytes -= previous.length
    }
    this.entries.set(digest, source)
    this.bytes += source.length
    while (this.entries.size > this.capacity || (this.bytes > this.maxChars && this.entries.size > 0)) {
      const [oldest, text] = this.entries.entries().next().value as [string, string]
      this.entries.delete(oldest)
      this.bytes -= text.length
    }
  }
}

async function execute(id: number, job: ExecuteJob, timed: boolean): Promise<void> {
  const received = performance.now()
  let outcome: WireOutcome
  if (busy) {
    outcome = failure(new SvcError('INTERNAL_ERROR', 'sandbox worker received a call while busy'))
    sendResult(id, outcome, received)
    return
  }
  const runtime = runtimes.get(job.family)
  if (runtime === undefined) {
    sendResult(id, failure(new SvcError('VALIDATION_FAILED', `no sandbox runtime for language '${job.language}'`)), received)
    return
  }
  if (job.source !== undefined) sources.put(job.sourceDigest, job.source)
  else job.source = sources.get(job.sourceDigest)
  const ready = runtime.ready(job)
  if (job.source === undefined && !ready) {
    send({ type: 'need-source', id })
    return
  }
  busy = true
  try {
    // the supervisor's watchdog allows for preparation unless it took the call as warm
    if (!ready && timed) send({ type: 'preparing', id })
    outcome = await runtime.execute(job, { onStarted: ready ? noop : () => send({ type: 'started', id }) })
  } catch (err) {
    outcome = failure(new SvcError('INTERNAL_ERROR', `sandbox worker fault: ${err instanceof Error ? err.message : String(err)}`))
  } finally {
    busy = false
  }
  // the worker's total memory bound: a call that leaves it past the bound gets the memory error, and
  // the worker exits once it answered
  const retire = memoryBound.check(outcome)
  // the result's size and the logs' stored size are bounded before anything crosses the pipe
  sendResult(id, boundCallOutput(outcome, job), received)
  if (retire) {
    memoryBound.retire(shutdown)
    return
  }
  // the answer is on its way: a runtime may prepare for the next call now (unless one arrived)
  setImmediate(() => {
    if (!busy) for (const r of runtimes.values()) r.idle?.()
  })
}

const noop = (): void => undefined
let sentKeys: ReadonlySet<string> = new Set()
let sentScopes = ''

function sendResult(id: number, outcome: WireOutcome, received: number): void {
  outcome.workerMs = performance.now() - received
  const message: Extract<WorkerMessage, { type: 'result' }> = { type: 'result', id, outcome }
  // the warm keys and scopes travel only when they changed since the previous answer
  const keys = warm.keys()
  if (keys.length !== sentKeys.size || keys.some((k) => !sentKeys.has(k))) {
    sentKeys = new Set(keys)
    message.warmKeys = keys
  }
  const scopes = [...runtimes.values()].flatMap((r) => r.warmScopes?.() ?? [])
  const scopesText = scopes.join('\n')
  if (scopesText !== sentScopes) {
    sentScopes = scopesText
    message.warmScopes = scopes
  }
  send(message)
}

if (typeof process.send !== 'function') {
  process.stderr.write('sandbox worker: must be started by the sandbox supervisor (no IPC channel)\n')
  process.exit(EXIT_BAD_CONFIG)
}

const config = readConfig()
const memoryBound = workerMemoryBoundFromArgs()
const warm = new WarmPool({
  maxEntries: config.maxWarmIsolates,
  maxBytes: config.maxWarmBytes || Infinity,
  maxBytesPerAccount: config.maxWarmBytesPerAccount || Infinity,
})
const sources = new SourceCache(sourceCapacity(config.maxWarmIsolates), config.maxSourceChars)
const runtimes = new Map<LanguageFamily, LanguageRuntime>([
  ['js', new JsRuntime(warm, onCatastrophicError)],
  ['python', new PythonRuntime(warm, { wheelDirs: config.pythonWheelDirs, maxInterpreters: config.maxPythonInterpreters, memory: config.pythonInterpreterMemory })],
])
let busy = false

process.on('message', (message: unknown) => {
  if (!isSupervisorMessage(message)) return
  if (message.type === 'shutdown') shutdown()
  else void execute(message.id, message.job, message.timed === true)
})
process.on('disconnect', shutdown)
send({ type: 'ready', pid: process.pid })
