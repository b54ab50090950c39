import ivm from 'isolated-vm'
import { isSvcError, SvcError } from '../../core/errors.js'
import { CpuLimiter } from './cpu-limit.js'
import { toWireError, type ContextMode, type ExecuteJob, type WireOutcome } from './ipc.js'
import { createInstance, JsInstance, runCall } from './js-call.js'
import { compileJavaScript, toJavaScript, type CompiledSource } from './js-compile.js'
import type { LanguageRuntime, RunHooks, WarmEntry, WarmStore } from './runtime.js'

/**
 * One key's isolate (a key is one function version of one tenant), with the source compiled for
 * it and, in warm mode, the instance (context) its calls run in. Nothing in it is ever used for
 * another key: a different source, context mode or memory limit under the same key gets a new
 * isolate.
 */
class WarmIsolate implements WarmEntry {
  compiled: CompiledSource | undefined
  instance: JsInstance | undefined
  /** a context with the prelude installed while the worker was idle, for the key's next new instance */
  prepared: JsInstance | undefined

  /** The prepared context, if any, handed over to a call (which owns it from then on). */
  takePrepared(): JsInstance | undefined {
    const prepared = this.prepared
    this.prepared = undefined
    return prepared
  }

  constructor(
    readonly isolate: ivm.Isolate,
    /** the isolate's slot in the runtime's CPU limiter */
    readonly slot: number,
    private readonly limiter: CpuLimiter,
    readonly memoryMb: number,
    readonly sourceDigest: string,
    readonly context: ContextMode,
    /** the key it serves (its place in the warm LRU) */
    readonly key: string,
    readonly account: string,
  ) {}

  /** the isolate's memory as of its last call (see `memoryBytes`) */
  lastMemoryBytes = 0

  memoryBytes(): number {
    return this.lastMemoryBytes
  }

  /** Whether this isolate can serve the call: same source, context mode and memory limit, still alive. */
  matches(job: ExecuteJob): boolean {
    return !this.isolate.isDisposed && this.sourceDigest === job.sourceDigest && this.context === contextOf(job) && this.memoryMb === memoryLimitOf(job)
  }

  /** The compiled source (compiled on the key's first call). */
  async compile(language: string, source: string): Promise<CompiledSource> {
    if (this.compiled) return this.compiled
    const js = await toJavaScript(language, source)
    this.compiled = compileJavaScript(this.isolate, js.code, js.filename)
    return this.compiled
  }

  dispose(): void {
    this.instance?.release()
    this.instance = undefined
    this.prepared?.release()
    this.prepared = undefined
    if (this.compiled?.mode === 'script') {
      try {
        this.compiled.script.release()
      } catch {
        // the isolate is gone
      }
    }
    this.compiled = undefined
    if (!this.isolate.isDisposed) this.isolate.dispose()
    this.limiter.forget(this.slot)
  }
}

/**
 * JavaScript and TypeScript in isolated-vm: one isolate per key, kept in the worker's warm LRU.
 * A key's calls run in one warm context by default (module state persists between calls of the
 * function version, as in workerd or Lambda) or, when the function asks for it (manifest
 * `execution.context: "fresh"`), each in a fresh context. A timed-out or out-of-memory isolate is
 * discarded with its context. The runtime keeps one spare isolate, created while the worker is
 * idle and never used before, with a context in which only the prelude has run, so that a key's
 * first call does not wait for an isolate and a context to be made; and, for a key whose calls each
 * get a fresh context, the next call's context is made while the worker is idle after the call.
 */
export class JsRuntime implements LanguageRuntime {
  private spare: { isolate: ivm.Isolate; slot: number; memoryMb: number; prepared: JsInstance | undefined } | undefined
  /** the memory limit and log budget of the spare to make when the worker is idle next */
  private spareWanted: { memoryMb: number; maxLogBytes: number } | undefined
  /** the key (its isolate) whose next call needs a new context: made when the worker is idle next */
  private preparedWanted: { entry: WarmIsolate; maxLogBytes: number } | undefined

  /** stops a call once it used its CPU limit, while it runs */
  private readonly cpu: CpuLimiter

  constructor(
    private readonly warm: WarmStore,
    private readonly onCatastrophicError: (message: string) => void,
    onFault: (message: string) => void = (message) => process.stderr.write(`sandbox worker ${process.pid}: ${message}\n`),
  ) {
    this.cpu = new CpuLimiter(onFault)
  }

  async execute(job: ExecuteJob, hooks: RunHooks): Promise<WireOutcome> {
    const entry = this.acquire(job)
    let reusable = true
    try {
      let compiled: CompiledSource
      try {
        if (job.source === undefined && entry.compiled === undefined) throw new SvcError('INTERNAL_ERROR', 'the sandbox worker has no source for the call')
        compiled = await entry.compile(job.language, job.source ?? '')
      } catch (err) {
        reusable = !entry.isolate.isDisposed
        return failedBeforeStart(err, job)
      }
      hooks.onStarted()
      const needsInstance = contextOf(job) === 'fresh' || entry.instance === undefined
      const result = await runCall({
        isolate: entry.isolate,
        memoryMb: entry.memoryMb,
        compiled,
        instance: entry.instance,
        prepared: needsInstance ? entry.takePrepared() : undefined,
        cpu: { limiter: this.cpu, slot: entry.slot },
      }, job)
      reusable = result.reusable
      entry.instance = result.instance
      entry.lastMemoryBytes = result.outcome.memoryBytes
      return result.outcome
    } finally {
      if (reusable && !entry.isolate.isDisposed) {
        this.warm.put(job.key, entry)
        if (contextOf(job) === 'fresh') this.preparedWanted = { entry, maxLogBytes: job.maxLogBytes }
      } else {
        entry.dispose()
      }
    }
  }

  ready(job: ExecuteJob): boolean {
    const held = this.warm.peek(job.key)
    return held instanceof WarmIsolate && held.compiled !== undefined && held.matches(job)
  }

  /**
   * The worker answered its call and has none: make the spare isolate (with its prepared context)
   * a new key took, and the next context of a key whose calls each get a fresh one.
   */
  idle(): void {
    const wanted = this.preparedWanted
    this.preparedWanted = undefined
    if (wanted !== undefined && wanted.entry.prepared === undefined && !wanted.entry.isolate.isDisposed && this.warm.peek(wanted.entry.key) === wanted.entry) {
      wanted.entry.prepared = prepareQuietly(wanted.entry.isolate, wanted.maxLogBytes, wanted.entry.memoryMb)
    }
    const spareWanted = this.spareWanted
    this.spareWanted = undefined
    if (spareWanted === undefined || (this.spare?.memoryMb === spareWanted.memoryMb && !this.spare.isolate.isDisposed)) return
    this.disposeSpare()
    const { isolate, slot } = this.newIsolate(spareWanted.memoryMb)
    this.spare = { isolate, slot, memoryMb: spareWanted.memoryMb, prepared: prepareQuietly(isolate, spareWanted.maxLogBytes, spareWanted.memoryMb) }
  }

  /** Disposes the spare isolate and the CPU limiter's helpers (the warm LRU disposes the rest). */
  dispose(): void {
    this.disposeSpare()
    this.cpu.dispose()
  }

  private disposeSpare(): void {
    const spare = this.spare
    this.spare = undefined
    if (spare === undefined) return
    spare.prepared?.release()
    if (!spare.isolate.isDisposed) spare.isolate.dispose()
    this.cpu.forget(spare.slot)
  }

  private acquire(job: ExecuteJob): WarmIsolate {
    const held = this.warm.take(job.key)
    if (held instanceof WarmIsolate && held.matches(job)) return held
    held?.dispose()
    const memoryMb = memoryLimitOf(job)
    let made: { isolate: ivm.Isolate; slot: number }
    let prepared: JsInstance | undefined
    const spare = this.spare
    if (spare && spare.memoryMb === memoryMb && !spare.isolate.isDisposed) {
      made = spare
      prepared = spare.prepared
      this.spare = undefined
    } else {
      made = this.newIsolate(memoryMb)
    }
    // the next new key will likely want one of the same size and log budget: made once this call is answered
    this.spareWanted = { memoryMb, maxLogBytes: job.maxLogBytes }
    const entry = new WarmIsolate(made.isolate, made.slot, this.cpu, memoryMb, job.sourceDigest, contextOf(job), job.key, job.account)
    entry.prepared = prepared
    return entry
  }

  /** A new isolate, registered with the CPU limiter. */
  private newIsolate(memoryMb: number): { isolate: ivm.Isolate; slot: number } {
    const isolate = new ivm.Isolate({ memoryLimit: memoryMb, onCatastrophicError: this.onCatastrophicError })
    return { isolate, slot: this.cpu.register(isolate) }
  }
}

/** What making a context and installing the prelude may take while the worker is idle. */
const PREPARE_TIMEOUT_MS = 2_000

/**
 * A new context with the prelude installed, or undefined when it cannot be made (an isolate out of
 * memory, a prelude over time on a starved host): the call then makes its own, as it always could.
 */
function prepareQuietly(isolate: ivm.Isolate, maxLogBytes: number, memoryMb: number): JsInstance | undefined {
  try {
    return createInstance(isolate, maxLogBytes, PREPARE_TIMEOUT_MS, memoryMb)
  } catch {
    return undefined
  }
}

/** isolated-vm's minimum heap limit is 8 MB. */
const memoryLimitOf = (job: ExecuteJob): number => Math.max(8, Math.ceil(job.limits.memoryMb))
const contextOf = (job: ExecuteJob): ContextMode => (job.context === 'fresh' ? 'fresh' : 'warm')

function failedBeforeStart(err: unknown, job: ExecuteJob): WireOutcome {
  const error = isSvcError(err)
    ? err
    : new SvcError('EXECUTION_FAILED', `the source could not be prepared: ${err instanceof Error ? err.message : String(err)}`, {
        details: { language: job.language },
      })
  return { status: 'error', error: toWireError(error), logs: [], wallTimeMs: 0, cpuTimeMs: 0, memoryBytes: 0 }
}
