import { isSvcError, notFound, SvcError, validationFailed } from '../../core/errors.js'
import { receiptDigest, type Receipt } from '../../core/receipt.js'
import { requirePermission } from '../authz.js'
import type { EventBus } from '../events.js'
import { timeOrderedId } from '../ids.js'
import type { SvcMetrics } from '../metrics.js'
import { fullRufidOf, type FunctionRegistry, type FunctionTarget } from '../registry/function-registry.js'
import type { CatalogStore } from '../storage/catalog-store.js'
import type { Reservation } from '../storage/tenant-usage.js'
import type { ExecutionLimits, PipPin, Sandbox, SandboxOutcome } from '../sandbox/index.js'
import { sandboxFamilyOf } from '../sandbox/languages.js'
import { failedOutcome } from '../sandbox/outcome.js'
import type { WheelProvisioner } from './wheel-provisioner.js'
import type { FederationPort } from '../replication/federation-port.js'
import { argumentsOfInput } from './input-binding.js'
import { argumentsDigestOrUndefined, ReceiptIssuer } from './receipt-issuer.js'
import { RESULT_CACHE_DEFAULTS, ResultCache, ResultKeys, type CachedResult, type ResultCacheInit } from './result-cache.js'
import { rootTenantOf, type ExecutionRecord, type ExecutionStatus, type FunctionStats, type FunctionVersion, type Principal } from '../types.js'

/** Per-execution limits (the sandbox's own type). */
export type LimitValues = ExecutionLimits

export interface ExecutionServiceInit {
  /** applied when a function sets none */
  defaults: LimitValues
  /** a function's own limits are capped by these */
  max: LimitValues
  /** the result cache of deterministic functions (default RESULT_CACHE_DEFAULTS) */
  resultCache?: ResultCacheInit
  /**
   * The largest result a call may return (UTF-8 bytes of its JSON): a larger one is 1007 with
   * `details.limit: 'result_size'`, checked in the sandbox worker, and the record keeps the error,
   * not the result. Absent or 0: no limit.
   */
  maxResultBytes?: number
}

/** What the execution service needs of a sandbox (see `engine/sandbox`). */
export type SandboxPort = Pick<Sandbox, 'execute'>

export interface ExecutionServiceComponents {
  registry: FunctionRegistry
  store: CatalogStore
  sandbox: SandboxPort
  metrics: SvcMetrics
  events: EventBus
  /** fetches a Python function's pinned wheels this node lacks from federation peers */
  wheels?: Pick<WheelProvisioner, 'provide'>
  /** signs each finished execution's receipt (absent: a fresh issuer without a signer, no receipts) */
  receipts?: ReceiptIssuer
  /** the federation, when this node is a member: results of deterministic functions among members */
  federation?: () => Pick<FederationPort, 'findResult' | 'offerResult' | 'compareResult' | 'acceptsResult'> | undefined
}

/** How a call runs: its arguments' digest (receipts, the result cache) and whether it is deterministic. */
interface RunOptions {
  argsDigest: string | undefined
  /** a deterministic function: a fresh context with seeded randomness and a fixed clock */
  deterministic: boolean
}

const EXECUTION_ID = /^ex_[0-9A-HJKMNP-TV-Z]{26}$/
/**
 * What a record takes besides its result and logs (ids, times, measurements, the receipt's
 * reference), for the tenant-quota check before a call runs and the space a cached answer sets aside.
 */
const RECORD_OVERHEAD_BYTES = 1024
/** cached answers whose bookkeeping may wait for the event loop's turn at once (a caller that never yields runs it sooner) */
const MAX_BOOKKEEPING_WAITING = 256

/** Runs functions in the sandbox and keeps a record of every run. */
export class ExecutionService {
  private readonly init: ExecutionServiceInit
  private readonly c: ExecutionServiceComponents
  /** usage statistics by `tenant/hash/version`, loaded from the store on first use */
  private readonly stats = new Map<string, FunctionStats>()
  private readonly background = new Set<Promise<void>>()
  readonly receipts: ReceiptIssuer
  /** results of deterministic functions (docs/receipts.md "Deterministic functions") */
  readonly results: ResultCache
  /** deterministic calls being computed here, by result key: a second identical call waits for the first */
  private readonly inflight = new Map<string, Promise<CachedResult | undefined>>()
  /** result keys of recent deterministic calls */
  private readonly keys = new ResultKeys()
  private lookups = { hits: 0, total: 0 }
  private readonly lookupCounters: Partial<Record<'hit' | 'remote_hit' | 'miss', { inc(): void }>> = {}
  /**
   * Cached answers' bookkeeping (usage statistics, the stored record, the `/ws` event) waiting to
   * run: a hit answers first, and this runs right after its answer is written (setImmediate, in
   * the same event-loop turn, before the node reads another request). What reads what it writes
   * (`get`, `usageOf`, `drain`) runs it first (`settle`).
   */
  private readonly bookkeeping: Array<() => void> = []
  private bookkeepingRun: NodeJS.Immediate | undefined

  constructor(init: ExecutionServiceInit, components: ExecutionServiceComponents) {
    this.init = init
    this.c = components
    this.receipts = components.receipts ?? new ReceiptIssuer()
    this.results = new ResultCache(init.resultCache ?? RESULT_CACHE_DEFAULTS)
  }

  /**
   * Executes a function with named arguments (or a positional array). Resolves with the stored
   * record of a successful run; a failed run is recorded too and then thrown as its SvcError
   * (1004, 1006, 1007) with `details.execution_id`.
   */
  async execute(principal: Principal, target: FunctionTarget, args: unknown): Promise<ExecutionRecord> {
    requirePermission(principal, 'rufid.execute')
    const normalizedArgs = normalizeArguments(args)
    const { fn } = await this.c.registry.resolve(principal, target, 'rufid.execute')
    const record = await this.callOnce(principal, fn, normalizedArgs)
    if (record.status !== 'success') {
      const e = record.error!
      throw new SvcError(e.name as ConstructorParameters<typeof SvcError>[0], e.message, {
        details: { ...e.details, execution_id: record.execution_id, logs: record.logs },
      })
    }
    return record
  }

  /**
   * Starts an execution in the background (the `/v1` asynchronous path): resolves the function
   * (1001/1002/1003 are thrown here), stores a `queued` record and returns it; the record moves to
   * `running` and then to its final status. Read it with `get`. `args` are named arguments or a
   * positional array (as `execute` takes them); with `as: 'input'` they are the function's input,
   * bound by its signature (`argumentsOfInput`: the `/v1` group's body).
   */
  async submit(principal: Principal, target: FunctionTarget, args: unknown, options: { as?: 'arguments' | 'input' } = {}): Promise<ExecutionRecord> {
    requirePermission(principal, 'rufid.execute')
    const named = options.as === 'input' ? undefined : normalizeArguments(args)
    const { fn } = await this.c.registry.resolve(principal, target, 'rufid.execute')
    const normalizedArgs = named ?? argumentsOfInput(fn.signature, args)
    const queued = this.newRecord(principal, fn, timeOrderedId('ex_'), 'queued', new Date().toISOString())
    await this.c.store.putExecution(queued)
    const task = (async () => {
      await this.c.store.putExecution({ ...queued, status: 'running', started_at: new Date().toISOString() })
      // a deterministic function is answered from the result cache (or a member's receipt) like a synchronous call
      await this.callOnce(principal, fn, normalizedArgs, queued.execution_id)
    })().catch(async (err: unknown) => {
      const e = err instanceof SvcError ? err : new SvcError('INTERNAL_ERROR', 'execution could not run')
      // the final status of an accepted execution is stored, even past the tenant's quota (it is small)
      await this.c.store.putExecution({
        ...queued, status: 'error', finished_at: new Date().toISOString(),
        error: { code: e.code, name: e.name, message: e.message, details: e.details },
      }, undefined, undefined, { overQuota: true }).catch(() => undefined)
    })
    this.background.add(task)
    void task.finally(() => this.background.delete(task))
    return queued
  }

  /** Waits for background executions (the sandbox's stop ends the ones still running). */
  async drain(): Promise<void> {
    this.settle()
    await Promise.allSettled([...this.background])
    this.settle()
  }

  /** Runs after the current answer is written (see `bookkeeping`); at once when many wait. */
  private afterAnswer(task: () => void): void {
    this.bookkeeping.push(task)
    if (this.bookkeeping.length >= MAX_BOOKKEEPING_WAITING) this.settle()
    else this.bookkeepingRun ??= setImmediate(() => this.settle())
  }

  /** Runs the cached answers' bookkeeping that waits (see `bookkeeping`). */
  private settle(): void {
    if (this.bookkeepingRun !== undefined) clearImmediate(this.bookkeepingRun)
    this.bookkeepingRun = undefined
    for (const task of this.bookkeeping.splice(0)) task()
  }

  /** A failed outcome when a pinned wheel stays unavailable (before any code runs), else undefined. */
  private async provideWheels(pins: PipPin[]): Promise<SandboxOutcome | undefined> {
    if (this.c.wheels === undefined) return undefined
    try {
      await this.c.wheels.provide(pins)
      return undefined
    } catch (err) {
      if (!isSvcError(err)) throw err
      return failedOutcome('error', err, 0)
    }
  }

  /**
   * A new record of an execution of `fn`; the caller assigns the other members. (One literal, then
   * assignments: V8 builds `{...base, more}` in its slow path, ~2 µs per member after the spread,
   * which was a sixth of a cached answer's CPU time.)
   */
  private newRecord(principal: Principal, fn: FunctionVersion, execution_id: string, status: ExecutionStatus, started_at: string): ExecutionRecord {
    return {
      execution_id,
      rufid: fullRufidOf(fn),
      rufid_short: fn.rufid_short,
      version: fn.version,
      tenant_id: fn.tenant_id,
      function_name: fn.function_name,
      language: fn.language.toLowerCase(),
      status,
      started_at,
      logs: [],
      user: principal.user,
    }
  }

  /** One call, synchronous or queued: a deterministic function's through the result cache, any other's run here. */
  private callOnce(principal: Principal, fn: FunctionVersion, args: Record<string, unknown> | unknown[], id?: string): Promise<ExecutionRecord> {
    if (isDeterministic(fn)) return this.executeDeterministic(principal, fn, args, id)
    return this.run(principal, fn, args, id, { argsDigest: argumentsDigestOrUndefined(args), deterministic: false })
  }

  /**
   * A deterministic function's call: answered from this node's result cache, else from a member's
   * verified receipt (federation), else run here (in a deterministic sandbox context) and its result
   * and receipt kept and offered to the federation. Identical calls in flight here run once.
   */
  private async executeDeterministic(principal: Principal, fn: FunctionVersion, args: Record<string, unknown> | unknown[], id?: string): Promise<ExecutionRecord> {
    const keyed = this.keys.of(fn.tenant_id, fn.content_digest, this.receipts.lockfileDigestOf(fn), args)
    // arguments without a canonical form cannot be keyed: run, uncached
    if (keyed === undefined) return this.run(principal, fn, args, id, { argsDigest: undefined, deterministic: true })
    const { fields, key } = keyed
    const argsDigest = fields.arguments_digest
    const started = performance.now()
    const started_at = new Date().toISOString()
    // no await unless a call is in flight: `await undefined` yields, and identical calls that
    // arrived together each found no call in flight and ran
    const stored = this.trustedEntry(this.results.get(key))
    const pending = stored === undefined ? this.inflight.get(key) : undefined
    const held = stored ?? (pending === undefined ? undefined : await pending.catch(() => undefined))
    if (held !== undefined) return this.answerFromCache(principal, fn, held, 'hit', started, started_at, id)

    let settle!: (entry: CachedResult | undefined) => void
    this.inflight.set(key, new Promise((r) => { settle = r }))
    try {
      const federation = this.c.federation?.()
      const found = federation?.findResult ? await federation.findResult({ ...fields, key, rufid: fullRufidOf(fn), args }).catch(() => undefined) : undefined
      // a member's result larger than this node keeps is not answered from: the call runs here (and fails the same way)
      const remote = found !== undefined && this.admitsResult(found.resultBytes) ? found : undefined
      if (remote !== undefined && !remote.reexecute) {
        const entry: CachedResult = { ...fields, result: remote.result, resultBytes: remote.resultBytes, receipts: remote.receipts, source: 'remote' }
        this.results.put(key, entry, rootTenantOf(principal))
        settle(entry)
        return await this.answerFromCache(principal, fn, entry, 'remote_hit', started, started_at, id)
      }
      this.countLookup('miss')
      const record = await this.run(principal, fn, args, id, { argsDigest, deterministic: true })
      if (record.status === 'success') {
        const resultBytes = JSON.stringify(record.result ?? null).length
        const entry: CachedResult = { ...fields, result: record.result ?? null, resultBytes, receipts: record.receipt ? [record.receipt] : [], source: 'local' }
        if (this.results.admits(resultBytes)) {
          this.results.put(key, entry, rootTenantOf(principal))
          settle(entry)
          if (record.receipt) federation?.offerResult?.(key, entry)
        }
        if (remote !== undefined && record.receipt) federation?.compareResult?.(remote, record.receipt)
      }
      return record
    } finally {
      this.inflight.delete(key)
      settle(undefined)
    }
  }

  /** Whether a result of this size (its JSON's bytes) is within `maxResultBytes`. */
  private admitsResult(resultBytes: number): boolean {
    const max = this.init.maxResultBytes
    return max === undefined || max <= 0 || resultBytes <= max
  }

  /** A stored entry this node answers from: its own or accepted results; an offered one only under its trust policy. */
  private trustedEntry(entry: CachedResult | undefined): CachedResult | undefined {
    if (entry === undefined) return undefined
    if (!this.admitsResult(entry.resultBytes)) return undefined
    if (entry.source !== 'offered') return entry
    return this.c.federation?.()?.acceptsResult?.(entry) === true ? entry : undefined
  }

  private countLookup(result: 'hit' | 'remote_hit' | 'miss'): void {
    // the labelled counter, looked up once (prom-client hashes the labels on every `inc(labels)`)
    const counter = (this.lookupCounters[result] ??= this.c.metrics.resultCacheLookups.labels({ result }))
    counter.inc()
    this.lookups.total++
    if (result !== 'miss') this.lookups.hits++
    this.c.metrics.resultCacheHitsRatio.set(this.lookups.hits / this.lookups.total)
  }

  /**
   * An answer from a stored result: a new execution record (`cached: true`) with the stored result
   * and the receipt of the execution that computed it, unchanged; nothing runs.
   */
  private answerFromCache(principal: Principal, fn: FunctionVersion, entry: CachedResult, how: 'hit' | 'remote_hit', started: number, started_at: string, id?: string): ExecutionRecord | Promise<ExecutionRecord> {
    // synchronous once the function's statistics are loaded (no promise for the caller to await)
    const stats = this.stats.get(statsKey(fn))
    if (stats === undefined) return this.loadStats(fn).then(() => this.answerFromCache(principal, fn, entry, how, started, started_at, id))
    const { store } = this.c
    // with group commit on, the record is acknowledged before it is written anyway: the answer
    // goes first and the bookkeeping right after it (a fifth of a hit's time on the request's
    // path, measured); refused now, as `putExecution` would, when the node cannot write
    const answerFirst = store.executionsQueued
    // answered before its record is stored: the record's space is set aside now (1005 tenant_quota
    // when it does not fit), so that the answers given meanwhile count it
    let reservation: Reservation | undefined
    if (answerFirst) {
      store.assertExecutionsWritable()
      reservation = store.reserveExecution(fn.tenant_id, entry.resultBytes + RECORD_OVERHEAD_BYTES)
    }
    this.countLookup(how)
    const receipt = entry.receipts[0] ?? null
    const record = this.newRecord(principal, fn, id ?? timeOrderedId('ex_'), 'success', started_at)
    record.finished_at = new Date().toISOString()
    record.execution_time_ms = round3(performance.now() - started)
    record.cpu_time_ms = 0
    record.memory_bytes = 0
    record.result = entry.result
    record.receipt = receipt
    record.cached = true
    record.cache_source = how === 'hit' && entry.source === 'local' ? 'local' : 'remote'
    // a receipt received from a member is digested once per entry, not once per hit (the record
    // refers to it by this digest; the event carries it)
    if (receipt !== null) entry.receiptDigest ??= receiptDigest(receipt)
    const digest = entry.receiptDigest
    const keep = (): Promise<void> => store.putExecution(record, this.recordUsage(record, stats), digest, reservation === undefined ? {} : { reservation })
    if (!answerFirst) {
      return keep().then(() => {
        this.publish(fn, record, digest)
        return record
      })
    }
    this.afterAnswer(() => {
      // rejects only when the disk filled since the check above: that record is lost, as the
      // ones waiting in the group commit would be
      keep().catch(() => undefined)
      this.publish(fn, record, digest)
    })
    return record
  }

  /** `digest`: the receipt's digest when the caller knows it (else computed: once per receipt signed here). */
  private publish(fn: FunctionVersion, record: ExecutionRecord, digest?: string): void {
    this.c.events.publishExecution({
      execution_id: record.execution_id,
      rufid: record.rufid,
      rufid_short: fn.rufid_short,
      version: `v${fn.version}`,
      tenant_id: fn.tenant_id,
      function_name: fn.function_name,
      status: record.status,
      execution_time_ms: record.execution_time_ms ?? 0,
      error_code: record.error?.code ?? null,
      timestamp: record.finished_at!,
      receipt_digest: record.receipt ? (digest ?? receiptDigest(record.receipt)) : null,
      cached: record.cached === true,
    })
  }

  private async run(principal: Principal, fn: FunctionVersion, args: Record<string, unknown> | unknown[], id: string | undefined, options: RunOptions): Promise<ExecutionRecord> {
    const execution_id = id ?? timeOrderedId('ex_')
    const started_at = new Date().toISOString()
    const language = fn.language.toLowerCase()
    const pins = pipPinsOf(fn)
    const limits = this.limitsFor(fn)
    // its record is stored after it ran: a tenant at its storage quota is refused before (1005 tenant_quota)
    this.c.store.assertTenantCanStore(fn.tenant_id, RECORD_OVERHEAD_BYTES)
    const refused = pins.length > 0 ? await this.provideWheels(pins) : undefined
    const outcome = refused ?? await this.c.sandbox.execute({
      key: `${fn.tenant_id}/${fn.rufid_short}/v${fn.version}`,
      tenant: fn.tenant_id,
      account: rootTenantOf(principal),
      language: fn.language,
      source: fn.source_code,
      // a deterministic function never sees state an earlier call left
      context: options.deterministic ? 'fresh' : contextModeOf(fn),
      functionName: fn.function_name,
      signature: fn.signature,
      args,
      limits,
      ...(this.init.maxResultBytes !== undefined && this.init.maxResultBytes > 0 ? { maxResultBytes: this.init.maxResultBytes } : {}),
      // the lockfile's exact pip pins (Python installs exactly these from the node's wheelhouse)
      dependencies: { pip: pins },
      ...(options.deterministic ? { deterministic: { seed: options.argsDigest ?? fn.content_digest } } : {}),
    })
    const status: ExecutionStatus = outcome.status
    const record = this.newRecord(principal, fn, execution_id, status, started_at)
    record.finished_at = new Date().toISOString()
    record.execution_time_ms = round3(outcome.wallTimeMs)
    record.cpu_time_ms = round3(outcome.cpuTimeMs)
    record.memory_bytes = outcome.memoryBytes
    record.logs = outcome.logs
    if (status === 'success') {
      record.result = outcome.result === undefined ? null : outcome.result
    } else {
      const err = outcome.error ?? new SvcError('EXECUTION_FAILED', 'execution failed')
      record.error = { code: err.code, name: err.name, message: err.message, details: err.details }
    }
    record.receipt = await this.receipts.issue(record, fn, options.argsDigest, limits).catch(() => null)
    const stats = this.stats.get(statsKey(fn)) ?? await this.loadStats(fn)
    let refusal: SvcError | undefined
    try {
      // group-committed: readable at once, written within the store's flush period (see CatalogStore)
      await this.c.store.putExecution(record, this.recordUsage(record, stats))
    } catch (err) {
      if (!isTenantQuotaRefusal(err)) throw err
      // the record (its result, its logs) would take the tenant past its quota: what is stored is
      // the refusal, small, so that no call runs unrecorded
      refusal = new SvcError(err.name, err.message, { details: { ...err.details, execution_id }, retryAfterSeconds: err.retryAfterSeconds })
      if (record.status === 'success') stats.success_count--
      refusedRecord(record, refusal)
      await this.c.store.putExecution(record, { ...stats }, undefined, { overQuota: true })
    }
    this.c.metrics.functionExecutions.inc({ language, status: record.status })
    this.c.metrics.functionExecutionDuration.observe({ language }, outcome.wallTimeMs / 1000)
    if (record.error) this.c.metrics.functionErrors.inc({ code: String(record.error.code) })
    this.publish(fn, record)
    if (refusal !== undefined) throw refusal
    return record
  }

  /** A stored execution of the principal's tenant; 1011 (`resource: execution`) for unknown ids and other tenants' runs. */
  async get(principal: Principal, executionId: unknown): Promise<ExecutionRecord> {
    requirePermission(principal, 'rufid.read')
    this.settle()
    if (typeof executionId !== 'string' || !EXECUTION_ID.test(executionId)) {
      throw validationFailed(`malformed execution id ${JSON.stringify(executionId)}`)
    }
    const record = await this.c.store.getExecution(executionId)
    if (record === undefined || record.tenant_id !== principal.tenant_id) {
      throw notFound('execution', `execution ${executionId} does not exist`, { execution_id: executionId })
    }
    return record
  }

  /** The receipt of a stored execution of the principal's tenant; 1011 (`resource: receipt`) when the execution has none (yet). */
  async receiptOf(principal: Principal, executionId: unknown): Promise<Receipt> {
    const record = await this.get(principal, executionId)
    if (!record.receipt) {
      throw notFound('receipt', `execution ${record.execution_id} has no receipt${record.status === 'queued' || record.status === 'running' ? ' yet (it has not finished)' : ''}`, {
        execution_id: record.execution_id,
        status: record.status,
      })
    }
    return record.receipt
  }

  private async loadStats(fn: FunctionVersion): Promise<FunctionStats> {
    const key = statsKey(fn)
    let stats = this.stats.get(key)
    if (stats === undefined) {
      const stored = await this.c.store.getStats(fn.tenant_id, fn.rufid_short, fn.version)
      // another execution may have loaded it while we waited
      stats = this.stats.get(key) ?? stored ?? { usage_count: 0, success_count: 0, total_execution_time_ms: 0 }
      this.stats.set(key, stats)
    }
    return stats
  }

  private recordUsage(record: ExecutionRecord, stats: FunctionStats): FunctionStats {
    stats.usage_count++
    if (record.status === 'success') stats.success_count++
    stats.total_execution_time_ms += record.execution_time_ms ?? 0
    return { ...stats }
  }

  /** service-spec §2.2 `metrics` of one function version. */
  async usageOf(fn: FunctionVersion): Promise<{ usage_count: number; avg_execution_time_ms: number; success_rate: number }> {
    this.settle()
    const s = await this.loadStats(fn)
    return {
      usage_count: s.usage_count,
      avg_execution_time_ms: s.usage_count === 0 ? 0 : round3(s.total_execution_time_ms / s.usage_count),
      success_rate: s.usage_count === 0 ? 0 : s.success_count / s.usage_count,
    }
  }

  limitsFor(fn: FunctionVersion): LimitValues {
    const { defaults, max } = this.init
    const pick = (own: number | undefined, d: number, m: number): number => Math.min(own ?? d, m)
    return {
      timeoutMs: pick(fn.limits.timeout_ms, defaults.timeoutMs, max.timeoutMs),
      memoryMb: pick(fn.limits.memory_mb, defaults.memoryMb, max.memoryMb),
      cpuMs: pick(fn.limits.cpu_ms, defaults.cpuMs, max.cpuMs),
    }
  }
}

/** A write refused because the tenant is at its storage quota (tenant-usage.ts). */
function isTenantQuotaRefusal(err: unknown): err is SvcError {
  return isSvcError(err) && err.code === 1005 && err.details.reason === 'tenant_quota'
}

/** Turns a record into the small one stored for a call refused for the quota: the error, without result, logs or receipt. */
function refusedRecord(record: ExecutionRecord, refusal: SvcError): void {
  record.status = 'error'
  delete record.result
  record.logs = []
  record.receipt = null
  record.error = { code: refusal.code, name: refusal.name, message: refusal.message, details: refusal.details }
}

/** Named arguments (a JSON object) or a positional array; absent means no arguments. */
function normalizeArguments(args: unknown): Record<string, unknown> | unknown[] {
  if (args === undefined || args === null) return {}
  if (Array.isArray(args)) return args
  if (typeof args === 'object' && [Object.prototype, null].includes(Object.getPrototypeOf(args))) return args as Record<string, unknown>
  throw validationFailed('arguments must be an object of named arguments or an array', [
    { pointer: '/arguments', message: 'must be an object or an array' },
  ])
}

/** The manifest's `deterministic: true` (svc-node extension): same content, lockfile and arguments, same result. */
export function isDeterministic(fn: FunctionVersion): boolean {
  return (fn.manifest as { deterministic?: unknown } | null)?.deterministic === true
}

/** The manifest's `execution.context` (svc-node extension): `warm` unless the function asks for `fresh`. */
export function contextModeOf(fn: FunctionVersion): 'warm' | 'fresh' {
  const execution = (fn.manifest as { execution?: { context?: unknown } } | null)?.execution
  return execution?.context === 'fresh' ? 'fresh' : 'warm'
}

function pipPinsOf(fn: FunctionVersion): PipPin[] {
  if (sandboxFamilyOf(fn.language) !== 'python') return []
  const deps = (fn.lockfile as { dependencies?: { pip?: unknown } } | null)?.dependencies
  return Array.isArray(deps?.pip) ? (deps.pip as PipPin[]) : []
}

const statsKey = (fn: FunctionVersion): string => `${fn.tenant_id}/${fn.rufid_short}/v${fn.version}`
const round3 = (n: number): number => Math.round(n * 1000) / 1000
