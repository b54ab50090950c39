import type { ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, extname, join } from 'node:path'
import type { Readable } from 'node:stream'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { SvcError } from '../../core/errors.js'
import type { MemoryBound, WorkerCgroup } from './cgroups.js'
import { isWorkerMessage, sourceCapacity, toWireError, type ExecuteJob, type SupervisorMessage, type WireOutcome, type WorkerConfig } from './ipc.js'
import { LruCache } from '../lru.js'
import { launchNodeScript, type OsIsolation } from './os-isolation.js'
import type { SandboxLogger } from './types.js'

/** Time a call may spend before its time-limited part starts (isolate creation, transpiling, compiling). */
const PREPARE_ALLOWANCE_MS = 5_000
/** The same for Python: a worker's first Python call loads Pyodide (~3 s, more on a busy host) and may install wheels. */
const PYTHON_PREPARE_ALLOWANCE_MS = 30_000
const READY_TIMEOUT_MS = 15_000
/** A worker that said it exits for its memory bound is killed if it has not exited by then. */
const RETIRE_GRACE_MS = 5_000
const MAX_FORWARDED_LINE = 2_000

/**
 * The worker entry beside this module, with the same extension: `worker.ts` (loaded through
 * tsx) when running from source, `worker.js` when running from `dist/`.
 */
export function workerEntry(): { path: string; execArgv: string[] } {
  const here = fileURLToPath(import.meta.url)
  const ext = extname(here)
  // No eval or Function(string) in the worker's own realm: a Python function that got hold of a
  // JS object through Pyodide cannot compile host code (isolated-vm isolates are unaffected).
  // A 3 MB JS stack on the main thread (Linux gives it 8 MB) lets CPython's own recursion checks
  // fire before deep Python recursion overflows the stack Pyodide runs on; isolated-vm sets its
  // isolates' stack limits from their own threads.
  const execArgv = ['--no-node-snapshot', '--disallow-code-generation-from-strings', '--stack-size=3000']
  // a daemon started with `node --cpu-prof` (bench/profile.js) profiles its workers too
  execArgv.push(...process.execArgv.filter((a) => a.startsWith('--cpu-prof')))
  if (ext === '.ts' || ext === '.mts') execArgv.push('--import', tsxLoader())
  return { path: join(dirname(here), `worker${ext}`), execArgv }
}

function tsxLoader(): string {
  try {
    return pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
  } catch {
    return 'tsx'
  }
}

export interface WorkerProcessOptions {
  config: WorkerConfig
  killGraceMs: number
  /** the kill grace of Python calls (the interpreter unwinds from its interrupt) */
  pythonKillGraceMs: number
  logger?: SandboxLogger
  /** the OS wall the worker runs behind (none: a plain fork) */
  isolation?: OsIsolation
  /** the worker's total memory bound (checked inside it after each call) and its cgroup, when the node uses cgroups */
  memoryBound?: MemoryBound
  onExit(worker: WorkerProcess, exit: WorkerExit): void
}

export interface WorkerExit {
  code: number | null
  signal: NodeJS.Signals | null
  /** Whether the supervisor asked for it (shutdown, watchdog), or the worker said it would (its memory bound). */
  expected: boolean
  /** The worker's cgroup killed it for its memory limit (the kernel's OOM killer). */
  oomKilled?: boolean
}

export type RunResult =
  | { kind: 'done'; outcome: WireOutcome }
  /** The watchdog killed the worker: no answer within the time limit plus grace. */
  | { kind: 'killed'; started: boolean; elapsedMs: number }
  /** The worker died on its own (OOM abort, crash, external kill). */
  | { kind: 'lost'; started: boolean; reason: string; elapsedMs: number }

interface Running {
  id: number
  job: ExecuteJob
  started: boolean
  startedAt: number
  timeoutMs: number
  killGraceMs: number
  prepareAllowanceMs: number
  watchdog: NodeJS.Timeout
  settle(result: RunResult): void
}

/** Supervisor-side handle of one worker process: one call at a time, under a watchdog. */
export class WorkerProcess {
  readonly pid: number
  readonly ready: Promise<void>
  readonly exited: Promise<WorkerExit>
  warmKeys: ReadonlySet<string> = new Set()
  /** scopes (tenants) whose Python interpreter the worker holds, as of its last answer */
  warmScopes: ReadonlySet<string> = new Set()
  executions = 0
  private state: 'starting' | 'ready' | 'exiting' | 'exited' = 'starting'
  private running: Running | undefined
  private expectedExit = false
  private becameReady = false
  private readonly child: ChildProcess
  /** digests of the sources this worker was sent (it keeps as many; a miss is asked back) */
  private readonly sentSources: LruCache<true>
  /** the worker's memory (and pids) cgroup, when the node uses cgroups */
  private readonly cgroup: WorkerCgroup | undefined

  constructor(private readonly options: WorkerProcessOptions) {
    const entry = workerEntry()
    this.sentSources = new LruCache<true>(sourceCapacity(options.config.maxWarmIsolates), () => undefined)
    const bound = options.memoryBound
    const config: WorkerConfig = bound !== undefined && bound.workerMemoryMb > 0 ? { ...options.config, workerMemoryMb: bound.workerMemoryMb } : options.config
    this.cgroup = bound?.cgroupForWorker()
    this.child = launchNodeScript(options.isolation, { ...entry, args: [JSON.stringify(config)] }, this.cgroup?.prefix)
    this.pid = this.child.pid ?? 0
    this.forwardOutput(this.child.stdout, 'stdout')
    this.forwardOutput(this.child.stderr, 'stderr')

    let markExited!: (exit: WorkerExit) => void
    this.exited = new Promise((resolve) => (markExited = resolve))
    let markReady!: () => void
    let failReady!: (err: Error) => void
    this.ready = new Promise<void>((resolve, reject) => {
      markReady = resolve
      failReady = reject
    })
    this.ready.catch(() => undefined)
    const readyTimer = setTimeout(() => {
      failReady(new Error(`sandbox worker ${this.pid} did not become ready within ${READY_TIMEOUT_MS} ms`))
      this.kill()
    }, READY_TIMEOUT_MS)

    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      if (this.state === 'exited') return
      clearTimeout(readyTimer)
      clearTimeout(this.retireTimer)
      const exit: WorkerExit = { code, signal, expected: this.expectedExit }
      // the kernel counts its OOM kills in the cgroup: such a death is the running call's memory error
      if (this.cgroup !== undefined && this.cgroup.oomKills() > 0) exit.oomKilled = true
      this.state = 'exited'
      const running = this.running
      if (running && exit.oomKilled) running.settle({ kind: 'done', outcome: this.oomOutcome(running) })
      else running?.settle({ kind: 'lost', started: running.started, reason: describeExit(exit), elapsedMs: this.elapsed(running) })
      if (exit.oomKilled) options.logger?.warn({ pid: this.pid, cgroup_memory_mb: options.memoryBound?.status.cgroupMemoryMb }, 'sandbox worker killed by its cgroup memory limit')
      const cgroup = this.cgroup
      cgroup?.remove().catch((err: unknown) => options.logger?.warn({ pid: this.pid, err: err instanceof Error ? err.message : String(err) }, 'sandbox worker cgroup not removed'))
      this.child.removeAllListeners('message')
      failReady(new Error(`sandbox worker ${this.pid} exited before it was ready (${describeExit(exit)})`))
      markExited(exit)
      options.onExit(this, exit)
    }
    this.child.once('exit', onExit)
    this.child.on('error', (err) => {
      options.logger?.warn({ pid: this.pid, err: err.message }, 'sandbox worker process error')
      // A process that failed to spawn never emits 'exit'.
      if (this.child.pid === undefined) onExit(null, null)
      else this.kill()
    })
    this.child.on('message', (message: unknown) => {
      if (!isWorkerMessage(message)) return
      if (message.type === 'ready' && this.state === 'starting') {
        clearTimeout(readyTimer)
        this.state = 'ready'
        this.becameReady = true
        markReady()
      } else if (message.type === 'started') this.onStarted(message.id)
      else if (message.type === 'preparing') this.onPreparing(message.id)
      else if (message.type === 'need-source') this.onNeedSource(message.id)
      else if (message.type === 'result') this.onResult(message.id, message.outcome, message.warmKeys, message.warmScopes)
    })
  }

  private retireTimer: NodeJS.Timeout | undefined

  /**
   * The worker answered that it passed its memory bound and exits now: it takes no further call,
   * and its exit is expected (it is killed if it lingers).
   */
  private onRetiring(outcome: WireOutcome): void {
    if (this.state !== 'ready') return
    this.state = 'exiting'
    this.expectedExit = true
    this.options.logger?.warn({ pid: this.pid, worker_memory_mb: this.options.memoryBound?.workerMemoryMb, rss_bytes: outcome.error?.details.workerRssBytes },
      'sandbox worker passed its memory bound; replacing it')
    this.retireTimer = setTimeout(() => this.kill(), RETIRE_GRACE_MS)
  }

  /** The memory error of a call whose worker the cgroup's OOM killer killed. */
  private oomOutcome(running: Running): WireOutcome {
    const bound = this.options.memoryBound?.status
    const error = new SvcError('EXECUTION_FAILED',
      `the sandbox worker running the function was killed by its cgroup memory limit of ${bound?.cgroupMemoryMb ?? '?'} MB; it is replaced`, {
        details: { limit: 'memory', memoryMb: running.job.limits.memoryMb, cgroupMemoryMb: bound?.cgroupMemoryMb ?? null, reason: 'oom_kill' },
      })
    return { status: 'error', error: toWireError(error), logs: [], wallTimeMs: this.elapsed(running), cpuTimeMs: 0, memoryBytes: 0 }
  }

  /** Ready and not running a call. */
  get idle(): boolean {
    return this.state === 'ready' && this.running === undefined
  }

  get alive(): boolean {
    return this.state === 'ready'
  }

  /** Whether the worker ever became ready (a worker that never did failed to start). */
  get wasReady(): boolean {
    return this.becameReady
  }

  get busy(): boolean {
    return this.running !== undefined
  }

  /**
   * Runs one call. Never rejects: a worker that dies or is killed by the watchdog (after
   * `timeoutMs` + kill grace without an answer) yields `killed` or `lost`. The source travels only
   * when this worker was not sent it before. A call of a key the worker holds warm starts at once:
   * its watchdog is armed for the time limit right away (the worker says `preparing` if it must
   * prepare after all); any other call gets the preparation allowance until the worker says
   * `started`.
   */
  run(id: number, job: ExecuteJob): Promise<RunResult> {
    if (!this.idle) throw new Error(`sandbox worker ${this.pid} is not idle`)
    const timeoutMs = job.limits.timeoutMs
    const python = job.family === 'python'
    const warm = this.warmKeys.has(job.key)
    const killGraceMs = python ? this.options.pythonKillGraceMs : this.options.killGraceMs
    const prepareAllowanceMs = python ? PYTHON_PREPARE_ALLOWANCE_MS : PREPARE_ALLOWANCE_MS
    return new Promise<RunResult>((resolve) => {
      const running: Running = {
        id,
        job,
        started: warm,
        startedAt: Date.now(),
        timeoutMs,
        killGraceMs,
        prepareAllowanceMs,
        watchdog: this.arm(timeoutMs + (warm ? killGraceMs : prepareAllowanceMs)),
        settle: (result) => {
          if (this.running !== running) return
          clearTimeout(running.watchdog)
          this.running = undefined
          if (result.kind === 'done') this.executions++
          resolve(result)
        },
      }
      this.running = running
      const sendSource = job.source !== undefined && !this.sentSources.has(job.sourceDigest)
      if (job.source !== undefined) this.sentSources.put(job.sourceDigest, true)
      this.send({ type: 'execute', id, job: sendSource || job.source === undefined ? job : { ...job, source: undefined }, timed: warm })
    })
  }

  /** Asks the worker to exit (disposing its isolates); SIGKILLs it after `graceMs`. */
  async shutdown(graceMs: number): Promise<void> {
    if (this.state === 'exited') return
    this.expectedExit = true
    if (this.state === 'ready') this.send({ type: 'shutdown' })
    this.state = 'exiting'
    let timer: NodeJS.Timeout | undefined
    const forced = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        this.kill()
        resolve()
      }, graceMs)
    })
    await Promise.race([this.exited, forced])
    clearTimeout(timer)
    await this.exited
  }

  /** SIGKILLs the worker; `exited` settles when it is gone. */
  kill(): void {
    this.expectedExit = true
    if (this.state !== 'exited') {
      this.state = 'exiting'
      this.child.kill('SIGKILL')
    }
  }

  private arm(ms: number): NodeJS.Timeout {
    return setTimeout(() => this.onWatchdog(), ms)
  }

  private onPreparing(id: number): void {
    const running = this.running
    if (!running || running.id !== id) return
    running.started = false
    clearTimeout(running.watchdog)
    running.watchdog = this.arm(running.timeoutMs + running.prepareAllowanceMs)
  }

  /** The worker no longer has the call's source: send the call again, with it. */
  private onNeedSource(id: number): void {
    const running = this.running
    if (!running || running.id !== id) return
    if (running.job.source === undefined) {
      running.settle({ kind: 'lost', started: false, reason: 'the worker lacks the source and none was given', elapsedMs: this.elapsed(running) })
      return
    }
    this.sentSources.put(running.job.sourceDigest, true)
    this.send({ type: 'execute', id, job: running.job, timed: running.started })
  }

  private onStarted(id: number): void {
    const running = this.running
    if (!running || running.id !== id || running.started) return
    running.started = true
    running.startedAt = Date.now()
    clearTimeout(running.watchdog)
    running.watchdog = this.arm(running.timeoutMs + running.killGraceMs)
  }

  private onResult(id: number, outcome: WireOutcome, warmKeys: unknown[] | undefined, warmScopes: unknown[] | undefined): void {
    // each list comes only when it changed
    if (warmKeys) this.warmKeys = new Set(warmKeys.filter((k): k is string => typeof k === 'string'))
    if (warmScopes) this.warmScopes = new Set(warmScopes.filter((k): k is string => typeof k === 'string'))
    if (outcome.retiring === true) this.onRetiring(outcome)
    const running = this.running
    if (running && running.id === id) running.settle({ kind: 'done', outcome })
  }

  private onWatchdog(): void {
    const running = this.running
    if (!running) return
    this.options.logger?.warn({ pid: this.pid, timeoutMs: running.timeoutMs }, 'sandbox worker unresponsive; killing it')
    running.settle({ kind: 'killed', started: running.started, elapsedMs: this.elapsed(running) })
    this.kill()
  }

  private elapsed(running = this.running): number {
    return running ? Date.now() - running.startedAt : 0
  }

  private send(message: SupervisorMessage): void {
    try {
      this.child.send(message, (err) => {
        if (err) this.kill()
      })
    } catch {
      this.kill()
    }
  }

  private forwardOutput(stream: Readable | null, name: 'stdout' | 'stderr'): void {
    if (!stream) return
    const logger = this.options.logger
    if (!logger) {
      stream.resume()
      return
    }
    stream.setEncoding('utf8')
    let pending = ''
    stream.on('data', (chunk: string) => {
      pending += chunk
      const lines = pending.split('\n')
      pending = (lines.pop() ?? '').slice(-MAX_FORWARDED_LINE)
      for (const line of lines) {
        if (line.trim() !== '') logger.warn({ pid: this.pid, stream: name, line: line.slice(0, MAX_FORWARDED_LINE) }, 'sandbox worker output')
      }
    })
  }
}

export function describeExit(exit: Pick<WorkerExit, 'code' | 'signal'>): string {
  return exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`
}
