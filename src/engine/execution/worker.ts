/**
 * Entry point of a sandbox worker process (forked by `worker-process.ts`). It runs one call at a
 * time, dispatching by language family to a runtime, and keeps warm per-key state in one LRU
 * shared by all runtimes. Its only channel is the IPC channel to the supervisor; when that
 * closes, it exits.
 */
import type { LanguageFamily } from '../../core/rufid.js'
import { SvcError } from '../../core/errors.js'
import {
  isSupervisorMessage,
  toWireError,
  type ExecuteJob,
  type WireOutcome,
  type WorkerConfig,
  type WorkerMessage,
} from './ipc.js'
import { JsRuntime } from './js-runtime.js'
import { LruCache } from '../lru.js'
import { PythonRuntime } from './python-runtime.js'
import type { LanguageRuntime, WarmEntry } from './runtime.js'

/** Exit code when V8 reports an isolate it can no longer control. */
const EXIT_CATASTROPHIC = 70
const EXIT_BAD_CONFIG = 78

function readConfig(): WorkerConfig {
  try {
    const config = JSON.parse(process.argv[2] ?? '') as Partial<WorkerConfig>
    const { maxWarmIsolates, maxPythonInterpreters, pythonWheelDirs } = config
    const count = (n: unknown, min: number): n is number => typeof n === 'number' && Number.isInteger(n) && n >= min
    if (count(maxWarmIsolates, 0) && count(maxPythonInterpreters, 1) && Array.isArray(pythonWheelDirs) && pythonWheelDirs.every((d) => typeof d === 'string')) {
      return { maxWarmIsolates, maxPythonInterpreters, pythonWheelDirs }
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
  process.exit(0)
}

function onCatastrophicError(message: string): void {
  process.stderr.write(`sandbox worker ${process.pid}: catastrophic isolate error: ${message}\n`)
  process.exit(EXIT_CATASTROPHIC)
}

function failure(error: SvcError): WireOutcome {
  return { status: 'error', error: toWireError(error), logs: [], wallTimeMs: 0, cpuTimeMs: 0, memoryBytes: 0 }
}

async function execute(id: number, job: ExecuteJob): Promise<void> {
  let outcome: WireOutcome
  if (busy) {
    outcome = failure(new SvcError('INTERNAL_ERROR', 'sandbox worker received a call while busy'))
    sendResult(id, outcome)
    return
  }
  busy = true
  try {
    const runtime = runtimes.get(job.family)
    outcome = runtime
      ? await runtime.execute(job, { onStarted: () => send({ type: 'started', id }) })
      : failure(new SvcError('VALIDATION_FAILED', `no sandbox runtime for language '${job.language}'`))
  } catch (err) {
    outcome = failure(new SvcError('INTERNAL_ERROR', `sandbox worker fault: ${err instanceof Error ? err.message : String(err)}`))
  } finally {
    busy = false
  }
  sendResult(id, outcome)
}

function sendResult(id: number, outcome: WireOutcome): void {
  const warmScopes = [...runtimes.values()].flatMap((r) => r.warmScopes?.() ?? [])
  send({ type: 'result', id, outcome, warmKeys: warm.keys(), warmScopes })
}

if (typeof process.send !== 'function') {
  process.stderr.write('sandbox worker: must be started by the sandbox supervisor (no IPC channel)\n')
  process.exit(EXIT_BAD_CONFIG)
}

const config = readConfig()
const warm = new LruCache<WarmEntry>(config.maxWarmIsolates, (_key, entry) => entry.dispose())
const runtimes = new Map<LanguageFamily, LanguageRuntime>([
  ['js', new JsRuntime(warm, onCatastrophicError)],
  ['python', new PythonRuntime(warm, { wheelDirs: config.pythonWheelDirs, maxInterpreters: config.maxPythonInterpreters })],
])
let busy = false

process.on('message', (message: unknown) => {
  if (!isSupervisorMessage(message)) return
  if (message.type === 'shutdown') shutdown()
  else void execute(message.id, message.job)
})
process.on('disconnect', shutdown)
send({ type: 'ready', pid: process.pid })
