import ivm from 'isolated-vm'
import { isSvcError, SvcError } from '../../core/errors.js'
import { toWireError, type ContextMode, type ExecuteJob, type WireOutcome } from './ipc.js'
import { JsInstance, runCall } from './js-call.js'
import { compileJavaScript, toJavaScript, type CompiledSource } from './js-compile.js'
import type { LruCache } from '../lru.js'
import type { LanguageRuntime, RunHooks, WarmEntry } from './runtime.js'

/**
 * One key's isolate (a key is one function version of one tenant), with the source compiled for
 * it and, in warm mode, the instance (context) its calls run in. Nothing in it is ever used for
 * another key: a different source, context mode or memory limit under the same key gets a new
 * isolate.
 */
class WarmIsolate implements WarmEntry {
  compiled: CompiledSource | undefined
  instance: JsInstance | undefined

  constructor(
    readonly isolate: ivm.Isolate,
    readonly memoryMb: number,
    readonly sourceDigest: string,
    readonly context: ContextMode,
  ) {}

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
    if (this.compiled?.mode === 'script') {
      try {
        this.compiled.script.release()
      } catch {
        // the isolate is gone
      }
    }
    this.compiled = undefined
    if (!this.isolate.isDisposed) this.isolate.dispose()
  }
}

/**
 * JavaScript and TypeScript in isolated-vm: one isolate per key, kept in the worker's warm LRU.
 * A key's calls run in one warm context by default (module state persists between calls of the
 * function version, as in workerd or Lambda) or, when the function asks for it (manifest
 * `execution.context: "fresh"`), each in a fresh context. A timed-out or out-of-memory isolate is
 * discarded with its context. The runtime keeps one spare isolate, created while the worker is
 * idle and never used before, so that a key's first call does not wait for an isolate to be made.
 */
export class JsRuntime implements LanguageRuntime {
  private spare: { isolate: ivm.Isolate; memoryMb: number } | undefined
  /** the memory limit of the spare to make when the worker is idle next */
  private spareWanted: number | undefined

  constructor(
    private readonly warm: LruCache<WarmEntry>,
    private readonly onCatastrophicError: (message: string) => void,
  ) {}

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
      const result = await runCall({ isolate: entry.isolate, compiled, instance: entry.instance }, job)
      reusable = result.reusable
      entry.instance = result.instance
      return result.outcome
    } finally {
      if (reusable && !entry.isolate.isDisposed) this.warm.put(job.key, entry)
      else entry.dispose()
    }
  }

  ready(job: ExecuteJob): boolean {
    const held = this.warm.peek(job.key)
    return held instanceof WarmIsolate && held.compiled !== undefined && held.matches(job)
  }

  /** The worker answered its call and has none: make the spare isolate a new key took. */
  idle(): void {
    const memoryMb = this.spareWanted
    this.spareWanted = undefined
    if (memoryMb === undefined || (this.spare?.memoryMb === memoryMb && !this.spare.isolate.isDisposed)) return
    if (this.spare && !this.spare.isolate.isDisposed) this.spare.isolate.dispose()
    this.spare = { isolate: this.newIsolate(memoryMb), memoryMb }
  }

  /** Disposes the spare isolate (the warm LRU disposes the rest). */
  dispose(): void {
    if (this.spare && !this.spare.isolate.isDisposed) this.spare.isolate.dispose()
    this.spare = undefined
  }

  private acquire(job: ExecuteJob): WarmIsolate {
    const held = this.warm.take(job.key)
    if (held instanceof WarmIsolate && held.matches(job)) return held
    held?.dispose()
    const memoryMb = memoryLimitOf(job)
    let isolate: ivm.Isolate
    const spare = this.spare
    if (spare && spare.memoryMb === memoryMb && !spare.isolate.isDisposed) {
      isolate = spare.isolate
      this.spare = undefined
    } else {
      isolate = this.newIsolate(memoryMb)
    }
    // the next new key will likely want one of the same size: made once this call is answered
    this.spareWanted = memoryMb
    return new WarmIsolate(isolate, memoryMb, job.sourceDigest, contextOf(job))
  }

  private newIsolate(memoryMb: number): ivm.Isolate {
    return new ivm.Isolate({ memoryLimit: memoryMb, onCatastrophicError: this.onCatastrophicError })
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
