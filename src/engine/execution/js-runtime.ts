import ivm from 'isolated-vm'
import { isSvcError, SvcError } from '../../core/errors.js'
import { toWireError, type ExecuteJob, type WireOutcome } from './ipc.js'
import { runCall } from './js-call.js'
import { compileJavaScript, toJavaScript, type CompiledSource } from './js-compile.js'
import type { LruCache } from '../lru.js'
import type { LanguageRuntime, RunHooks, WarmEntry } from './runtime.js'

/** One isolate kept warm for a key, with the source compiled for it. */
class WarmIsolate implements WarmEntry {
  readonly isolate: ivm.Isolate
  private compiled: { language: string; source: string; code: CompiledSource } | undefined

  constructor(
    readonly memoryMb: number,
    onCatastrophicError: (message: string) => void,
  ) {
    this.isolate = new ivm.Isolate({ memoryLimit: memoryMb, onCatastrophicError })
  }

  /** The compiled source, from cache when the key's language and source are unchanged. */
  async compile(language: string, source: string): Promise<CompiledSource> {
    const cached = this.compiled
    if (cached && cached.language === language && cached.source === source) return cached.code
    this.releaseCompiled()
    const js = await toJavaScript(language, source)
    const code = await compileJavaScript(this.isolate, js.code, js.filename)
    this.compiled = { language, source, code }
    return code
  }

  dispose(): void {
    this.releaseCompiled()
    if (!this.isolate.isDisposed) this.isolate.dispose()
  }

  private releaseCompiled(): void {
    if (this.compiled?.code.mode === 'script') {
      try {
        this.compiled.code.script.release()
      } catch {
        // the isolate is gone
      }
    }
    this.compiled = undefined
  }
}

/**
 * JavaScript and TypeScript in isolated-vm: one isolate per key (kept in the worker's warm LRU,
 * recreated when disposed or when the memory limit changes), a fresh context per call.
 */
export class JsRuntime implements LanguageRuntime {
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
        compiled = await entry.compile(job.language, job.source)
      } catch (err) {
        reusable = !entry.isolate.isDisposed
        return failedBeforeStart(err, job)
      }
      hooks.onStarted()
      const result = await runCall(entry.isolate, compiled, job)
      reusable = result.reusable
      return result.outcome
    } finally {
      if (reusable && !entry.isolate.isDisposed) this.warm.put(job.key, entry)
      else entry.dispose()
    }
  }

  private acquire(job: ExecuteJob): WarmIsolate {
    const memoryMb = Math.max(8, Math.ceil(job.limits.memoryMb))
    const held = this.warm.take(job.key)
    if (held instanceof WarmIsolate && !held.isolate.isDisposed && held.memoryMb === memoryMb) return held
    held?.dispose()
    return new WarmIsolate(memoryMb, this.onCatastrophicError)
  }
}

function failedBeforeStart(err: unknown, job: ExecuteJob): WireOutcome {
  const error = isSvcError(err)
    ? err
    : new SvcError('EXECUTION_FAILED', `the source could not be prepared: ${err instanceof Error ? err.message : String(err)}`, {
        details: { language: job.language },
      })
  return { status: 'error', error: toWireError(error), logs: [], wallTimeMs: 0, cpuTimeMs: 0, memoryBytes: 0 }
}
