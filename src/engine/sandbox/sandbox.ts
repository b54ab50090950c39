import { createHash } from 'node:crypto'
import { SvcError, validationFailed } from '../../core/errors.js'
import { LruCache } from '../lru.js'
import { FAIR_SCHEDULER_DEFAULTS, FairScheduler, type Dispatch } from '../scheduling/fair-scheduler.js'
import type { ExecuteJob, PythonInterpreterMemory } from './ipc.js'
import { failedOutcome, outcomeFromWire } from './outcome.js'
import { prepareRequest } from './prepare-request.js'
import type { Sandbox, SandboxInit, SandboxOutcome, SandboxRequest, SandboxStats } from './types.js'
import { describeExit, WorkerProcess, type RunResult, type WorkerExit } from './worker-process.js'

const DEFAULT_KILL_GRACE_MS = 100
const MIB = 1024 * 1024
const DEFAULT_PYTHON_KILL_GRACE_MS = 1_000
const DEFAULT_PYTHON_INTERPRETERS_PER_WORKER = 4
const DEFAULT_PYTHON_INTERPRETER_MB_PER_WORKER = 2048
const DEFAULT_PYTHON_INTERPRETER_MB_PER_TENANT = 1024
const DEFAULT_MAX_SOURCE_CHARS = 32 * 1024 * 1024
/** Time a stopping worker gets to exit on its own before it is SIGKILLed. */
const SHUTDOWN_GRACE_MS = 1_000
const RESPAWN_BACKOFF_MAX_MS = 5_000
/** Consecutive failed worker starts, with no worker up, after which waiting requests are refused. */
const START_FAILURES_BEFORE_REFUSING = 3

interface QueuedCall {
  job: ExecuteJob
  /** Times the call was handed back because its worker died before starting it. */
  retries: number
  resolve(outcome: SandboxOutcome): void
  reject(err: unknown): void
}

/** A call handed to a worker, as the scheduler knows it. */
type RunningCall = Dispatch<QueuedCall>

/** Creates the supervised worker pool; call `start()` before `execute()`. */
export function createSandbox(init: SandboxInit): Sandbox {
  return new SandboxPool(init)
}

type PoolState = 'new' | 'starting' | 'running' | 'stopping' | 'stopped'

class SandboxPool implements Sandbox {
  private state: PoolState = 'new'
  private starting: Promise<void> | undefined
  private stopping: Promise<void> | undefined
  private readonly workers = new Set<WorkerProcess>()
  /** calls waiting for a worker, per tenant, and which goes next (src/engine/scheduling) */
  private readonly scheduler: FairScheduler<QueuedCall>
  private readonly respawnTimers = new Set<NodeJS.Timeout>()
  private restarts = 0
  private executions = 0
  private nextCallId = 1
  private startFailures = 0
  private readonly killGraceMs: number
  private readonly pythonKillGraceMs: number
  private readonly pythonInterpreters: number
  private readonly pythonInterpreterMemory: PythonInterpreterMemory
  /** the source digest of each recent key, recomputed only when its source or language changes */
  private readonly digests = new LruCache<{ language: string; source: string; digest: string }>(4096, () => undefined)

  constructor(private readonly init: SandboxInit) {
    for (const field of ['workers', 'maxWarmIsolatesPerWorker', 'maxLogBytes', 'queueLimit'] as const) {
      const value = init[field]
      const min = field === 'workers' ? 1 : 0
      if (!Number.isInteger(value) || value < min) throw validationFailed(`sandbox ${field} must be an integer ≥ ${min}`)
    }
    this.killGraceMs = init.killGraceMs ?? DEFAULT_KILL_GRACE_MS
    this.pythonKillGraceMs = init.pythonKillGraceMs ?? DEFAULT_PYTHON_KILL_GRACE_MS
    for (const [field, value] of [['killGraceMs', this.killGraceMs], ['pythonKillGraceMs', this.pythonKillGraceMs]] as const) {
      if (!Number.isFinite(value) || value < 0) throw validationFailed(`sandbox ${field} must be ≥ 0`)
    }
    const sourceChars = init.maxSourceCharsPerWorker
    if (sourceChars !== undefined && (!Number.isInteger(sourceChars) || sourceChars < 0)) throw validationFailed('sandbox maxSourceCharsPerWorker must be an integer ≥ 0')
    this.scheduler = new FairScheduler<QueuedCall>({
      slots: init.workers,
      queueLimit: init.queueLimit,
      queueLimitPerAccount: init.queueLimitPerTenant ?? FAIR_SCHEDULER_DEFAULTS.queueLimitPerAccount,
      maxLongRunningPerAccount: init.maxLongRunningPerTenant ?? FAIR_SCHEDULER_DEFAULTS.maxLongRunningPerAccount,
      longCallMs: init.longCallMs ?? FAIR_SCHEDULER_DEFAULTS.longCallMs,
      ...(init.tenantWeights !== undefined ? { weights: init.tenantWeights } : {}),
    })
    this.pythonInterpreters = init.pythonInterpretersPerWorker ?? DEFAULT_PYTHON_INTERPRETERS_PER_WORKER
    if (!Number.isInteger(this.pythonInterpreters) || this.pythonInterpreters < 1) throw validationFailed('sandbox pythonInterpretersPerWorker must be an integer ≥ 1')
    this.pythonInterpreterMemory = {
      perWorkerBytes: megabytes(init, 'pythonInterpreterMbPerWorker', DEFAULT_PYTHON_INTERPRETER_MB_PER_WORKER),
      perTenantBytes: megabytes(init, 'pythonInterpreterMbPerTenant', DEFAULT_PYTHON_INTERPRETER_MB_PER_TENANT),
    }
    for (const field of ['pythonWheelhouse', 'pythonWheelCache'] as const) {
      const dir = init[field]
      if (dir !== undefined && (typeof dir !== 'string' || dir === '')) throw validationFailed(`sandbox ${field} must be a non-empty path`)
    }
  }

  start(): Promise<void> {
    if (this.state === 'running') return Promise.resolve()
    if (this.state === 'starting' && this.starting) return this.starting
    if (this.state === 'stopping' && this.stopping) return this.stopping.then(() => this.start())
    this.state = 'starting'
    this.startFailures = 0
    this.starting = this.launch().finally(() => {
      this.starting = undefined
    })
    return this.starting
  }

  async stop(): Promise<void> {
    if (this.state === 'new' || this.state === 'stopped') {
      this.state = 'stopped'
      return
    }
    if (this.state === 'stopping' && this.stopping) return this.stopping
    this.state = 'stopping'
    this.stopping = this.halt().finally(() => {
      this.stopping = undefined
    })
    return this.stopping
  }

  async execute(req: SandboxRequest): Promise<SandboxOutcome> {
    if (this.state !== 'running') throw unavailable(`the sandbox is ${this.state === 'new' ? 'not started' : this.state}`)
    const prepared = prepareRequest(req, this.init.maxLogBytes, (r) => this.sourceDigest(r))
    if (!prepared.ok) return failedOutcome('error', prepared.error, 0)
    const { job } = prepared
    return new Promise<SandboxOutcome>((resolve, reject) => {
      // throws 1005 when the call's tenant is over its share of the queue; may refuse a waiting
      // call of the tenant holding the most of it to make room
      const { pushedOut } = this.scheduler.enqueue(job.account, job.key, { job, retries: 0, resolve, reject })
      pushedOut?.item.reject(pushedOut.error)
      this.spawnOnDemand()
      this.pump()
    })
  }

  /** SHA-256 of the language and source of a request: how a worker that has the source names it. */
  private sourceDigest(req: SandboxRequest): string {
    const known = this.digests.peek(req.key)
    if (known && known.source === req.source && known.language === req.language) return known.digest
    const digest = createHash('sha256').update(req.language).update('\0').update(req.source).digest('hex')
    this.digests.put(req.key, { language: req.language, source: req.source, digest })
    return digest
  }

  stats(): SandboxStats {
    const perWorker = [...this.workers].filter((w) => w.alive).map((w) => ({
      pid: w.pid,
      busy: w.busy,
      warmIsolates: w.warmKeys.size,
      executions: w.executions,
    }))
    return {
      running: this.state === 'running',
      workers: this.init.workers,
      readyWorkers: perWorker.length,
      busyWorkers: perWorker.filter((w) => w.busy).length,
      queued: this.scheduler.size,
      tenants: this.scheduler.stats().map((t) => ({ tenant: t.account, queued: t.queued, running: t.running, servedMs: t.servedMs, refused: t.refused })),
      maxLongRunningPerTenant: this.scheduler.longRunningCap,
      warmIsolates: perWorker.reduce((n, w) => n + w.warmIsolates, 0),
      restarts: this.restarts,
      executions: this.executions,
      perWorker,
      osIsolation: this.init.osIsolation?.status ?? { mode: 'off', layer: 'none', uid: null, network: 'host', reason: 'no OS wall configured' },
      memoryBound: this.init.memoryBound?.status ?? { mode: 'off', workerMemoryMb: 0, cgroup: 'none', cgroupMemoryMb: null, pidsMax: null, reason: 'no worker memory bound configured' },
    }
  }

  private async launch(): Promise<void> {
    if (this.init.startOnDemand) {
      // the first execute() spawns the workers (spawnOnDemand)
      this.state = 'running'
      this.init.logger?.info({ workers: this.init.workers }, 'sandbox started (workers start on the first execution)')
      return
    }
    const spawned = Array.from({ length: this.init.workers }, () => this.spawn())
    try {
      await Promise.all(spawned.map((w) => w.ready))
    } catch (err) {
      if (this.state !== 'starting') throw unavailable('the sandbox was stopped while starting')
      await this.halt()
      throw new SvcError('SERVICE_UNAVAILABLE', 'sandbox workers failed to start', { cause: err })
    }
    if (this.state !== 'starting') throw unavailable('the sandbox was stopped while starting')
    this.state = 'running'
    this.init.logger?.info({ workers: spawned.map((w) => w.pid) }, 'sandbox started')
    this.pump()
  }

  private async halt(): Promise<void> {
    this.state = 'stopping'
    for (const timer of this.respawnTimers) clearTimeout(timer)
    this.respawnTimers.clear()
    for (const call of this.scheduler.drain()) call.reject(unavailable('the sandbox stopped'))
    await Promise.all([...this.workers].map((w) => w.shutdown(SHUTDOWN_GRACE_MS)))
    this.workers.clear()
    this.state = 'stopped'
    this.init.logger?.info({}, 'sandbox stopped')
  }

  private spawn(): WorkerProcess {
    const worker = new WorkerProcess({
      config: {
        maxWarmIsolates: this.init.maxWarmIsolatesPerWorker,
        maxWarmBytes: Math.round((this.init.maxWarmMbPerWorker ?? 0) * MIB),
        maxWarmBytesPerAccount: Math.round((this.init.maxWarmMbPerTenant ?? 0) * MIB),
        maxPythonInterpreters: this.pythonInterpreters,
        pythonInterpreterMemory: this.pythonInterpreterMemory,
        pythonWheelDirs: [this.init.pythonWheelhouse, this.init.pythonWheelCache].filter((d): d is string => d !== undefined),
        maxSourceChars: this.init.maxSourceCharsPerWorker ?? DEFAULT_MAX_SOURCE_CHARS,
      },
      killGraceMs: this.killGraceMs,
      pythonKillGraceMs: this.pythonKillGraceMs,
      logger: this.init.logger,
      ...(this.init.osIsolation && { isolation: this.init.osIsolation }),
      ...(this.init.memoryBound && { memoryBound: this.init.memoryBound }),
      onExit: (w, exit) => this.onWorkerExit(w, exit),
    })
    this.workers.add(worker)
    return worker
  }

  private onWorkerExit(worker: WorkerProcess, exit: WorkerExit): void {
    this.workers.delete(worker)
    if (this.state !== 'running' && this.state !== 'starting') return
    const level = exit.expected ? 'info' : 'warn'
    this.init.logger?.[level]({ pid: worker.pid, exit: describeExit(exit) }, 'sandbox worker exited; replacing it')
    let delay = 0
    if (!worker.wasReady) {
      this.startFailures++
      delay = Math.min(RESPAWN_BACKOFF_MAX_MS, 100 * 2 ** (this.startFailures - 1))
      if (this.startFailures >= START_FAILURES_BEFORE_REFUSING && !this.hasLiveWorker()) {
        for (const call of this.scheduler.drain()) call.reject(unavailable('sandbox workers are failing to start', 5))
      }
    }
    this.restarts++
    const timer = setTimeout(() => {
      this.respawnTimers.delete(timer)
      if (this.state === 'running' || this.state === 'starting') this.respawn()
    }, delay)
    this.respawnTimers.add(timer)
  }

  /** With `startOnDemand`, the first call starts the pool (a failed start is retried by onWorkerExit). */
  private spawnOnDemand(): void {
    if (!this.init.startOnDemand || this.workers.size > 0 || this.respawnTimers.size > 0) return
    for (let i = 0; i < this.init.workers; i++) this.respawn()
  }

  private respawn(): void {
    const worker = this.spawn()
    worker.ready.then(
      () => {
        this.startFailures = 0
        this.pump()
      },
      () => undefined,
    )
  }

  private hasLiveWorker(): boolean {
    for (const w of this.workers) if (w.alive) return true
    return false
  }

  /**
   * Hands waiting calls to idle workers in the order the fair scheduler gives (tenant by tenant,
   * by worker time served; a tenant's long calls capped so a worker stays free for the others),
   * each to the idle worker that holds its key warm if any; a Python call otherwise prefers a worker
   * that holds its tenant's interpreter, then one with room for another interpreter (loading one
   * costs about a second; evicting one costs its tenant that).
   */
  private pump(): void {
    if (this.state !== 'running') return
    while (this.scheduler.size > 0) {
      const idle = [...this.workers].filter((w) => w.idle)
      if (idle.length === 0) return
      const running = this.scheduler.next()
      if (running === undefined) return
      const { job } = running.item
      const python = job.family === 'python'
      const fewest = (ws: WorkerProcess[], size: (w: WorkerProcess) => number): WorkerProcess =>
        ws.reduce((best, w) => (size(w) < size(best) ? w : best))
      const worker =
        idle.find((w) => w.warmKeys.has(job.key)) ??
        (python ? idle.find((w) => w.warmScopes.has(job.scope)) ?? fewest(idle, (w) => w.warmScopes.size) : undefined) ??
        fewest(idle, (w) => w.warmKeys.size)
      void this.dispatch(worker, running)
    }
  }

  private async dispatch(worker: WorkerProcess, running: RunningCall): Promise<void> {
    const call = running.item
    const result = await worker.run(this.nextCallId++, call.job)
    if (result.kind === 'done') {
      this.executions++
      // charged the worker time the call held; its function's estimate learns how long it ran
      this.scheduler.finish(running, result.outcome.workerMs ?? result.outcome.wallTimeMs, result.outcome.wallTimeMs)
      call.resolve(outcomeFromWire(result.outcome, worker.pid))
    } else if (this.state !== 'running') {
      this.scheduler.finish(running, result.elapsedMs)
      call.reject(unavailable('the sandbox stopped'))
    } else if (result.kind === 'lost' && !result.started && call.retries === 0) {
      call.retries++
      this.scheduler.requeue(running)
    } else {
      this.executions++
      this.scheduler.finish(running, result.elapsedMs)
      call.resolve(lostOutcome(result, call.job, worker.pid))
    }
    this.pump()
  }
}

function lostOutcome(result: Exclude<RunResult, { kind: 'done' }>, job: ExecuteJob, pid: number): SandboxOutcome {
  if (result.kind === 'killed') {
    const error = new SvcError('EXECUTION_TIMEOUT', `the function did not finish within ${job.limits.timeoutMs} ms; its worker was killed`, {
      details: { limit: 'time', timeoutMs: job.limits.timeoutMs },
    })
    return failedOutcome('timeout', error, pid, result.elapsedMs)
  }
  const error = new SvcError('EXECUTION_FAILED', `the sandbox worker running the function died (${result.reason})`, {
    details: { reason: result.reason, memoryMb: job.limits.memoryMb },
  })
  return failedOutcome('error', error, pid, result.elapsedMs)
}

/** A size in MB from the sandbox's settings (0: no bound), in bytes; throws VALIDATION_FAILED when it is not an integer ≥ 0. */
function megabytes(init: SandboxInit, field: 'pythonInterpreterMbPerWorker' | 'pythonInterpreterMbPerTenant', fallback: number): number {
  const mb = init[field] ?? fallback
  if (!Number.isSafeInteger(mb) || mb < 0) throw validationFailed(`sandbox ${field} must be an integer ≥ 0`)
  return mb * 1024 * 1024
}

function unavailable(message: string, retryAfterSeconds?: number): SvcError {
  return new SvcError('SERVICE_UNAVAILABLE', message, retryAfterSeconds === undefined ? {} : { retryAfterSeconds })
}
