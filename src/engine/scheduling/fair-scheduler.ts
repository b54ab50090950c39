import { SvcError } from '../../core/errors.js'

/**
 * Settings of the fair scheduler. An *account* is a root tenant: every call is charged to one, and
 * a tenant's child namespaces count against their root (`ExecuteJob.account`).
 */
export interface FairSchedulerInit {
  /** workers the scheduler hands calls to */
  slots: number
  /** calls waiting at most, over all accounts */
  queueLimit: number
  /** calls one account may have waiting at most */
  queueLimitPerAccount: number
  /**
   * Workers one account may hold at once with long calls (see `longCallMs`). 0: all workers but
   * one (at least one), so a worker is always left for the other accounts.
   */
  maxLongRunningPerAccount: number
  /**
   * A call is long when the calls of its function recently held a worker this long or longer (or
   * nothing is known of its function yet). Short calls may take every idle worker: each gives its
   * worker back within milliseconds.
   */
  longCallMs: number
  /** relative shares (default 1): an account of weight 2 is served twice the worker time of one of weight 1 */
  weights?: Readonly<Record<string, number>>
}

export const FAIR_SCHEDULER_DEFAULTS = {
  queueLimitPerAccount: 64,
  maxLongRunningPerAccount: 0,
  longCallMs: 50,
} as const

/** Why a call was refused (the `reason` label of `svc_sandbox_tenant_refused_total`). */
export type RefusalReason =
  /** the account had `queueLimitPerAccount` calls waiting */
  | 'tenant_queue_full'
  /** the shared queue was full and this account held the longest queue */
  | 'queue_share'
  /** a waiting call of the account holding the longest queue, refused to make room for another account's call */
  | 'pushed_out'

/** A call handed to a worker: give it back with `finish` when the worker answered. */
export interface Dispatch<T> {
  readonly item: T
  readonly account: string
  /** the function's key whose service times estimate the call */
  readonly kind: string
  /** worker time the call was expected to take when dispatched, in ms */
  readonly estimateMs: number
  readonly long: boolean
}

/** What the scheduler knows of one account (for metrics and node info). */
export interface AccountSchedulingStats {
  account: string
  queued: number
  running: number
  /** worker time its finished calls held, in ms, since start */
  servedMs: number
  refused: Partial<Record<RefusalReason, number>>
}

interface Waiting<T> {
  item: T
  kind: string
}

interface AccountState<T> {
  name: string
  weight: number
  queue: Array<Waiting<T>>
  running: number
  longRunning: number
  /** virtual time: worker time served to it over its weight (charged estimates, then actuals) */
  vt: number
  servedMs: number
  refused: Partial<Record<RefusalReason, number>>
}

/** service-time estimates kept, by function key */
const MAX_ESTIMATES = 4096
/** accounts kept without anything waiting or running (their counters for metrics) */
const MAX_IDLE_ACCOUNTS = 4096

/**
 * Fair admission and ordering of sandbox calls between accounts (tenants), for a pool of
 * identical workers.
 *
 * - **Order**: start-time fair queueing. Each account has a virtual time, the worker time it was
 *   served over its weight: charged with the call's estimate when it is dispatched and corrected
 *   with the worker time it really held when it finishes. The next call goes to the eligible
 *   account with the smallest virtual time (its calls in arrival order). An account that becomes
 *   active starts no lower than the virtual time of the last call dispatched: idle time banks no
 *   credit.
 * - **Caps**: a call is *long* when its function's recent calls held a worker `longCallMs` or more
 *   (an estimate per function: a moving average that rises at once with a longer call and falls by
 *   an eighth of the difference with a shorter one; a function not seen yet counts as long). An
 *   account may hold at most `maxLongRunningPerAccount` workers with long calls, so a worker stays
 *   free for the other accounts whatever one account sends; short calls may use every idle worker.
 * - **Queue limits**: an account with `queueLimitPerAccount` calls waiting is refused (1005, its own
 *   limit). When the shared queue (`queueLimit`) is full, the account holding the longest queue
 *   gives way: its newest waiting call is refused to make room, or, when it is the caller's own
 *   account, the new call is refused. No account is ever refused because another filled the queue.
 */
export class FairScheduler<T> {
  private readonly accounts = new Map<string, AccountState<T>>()
  private readonly estimates = new Map<string, number>()
  private queued = 0
  private readonly longCap: number
  /** the virtual time of the last call dispatched (before its charge): where a newly active account starts */
  private virtualNow = 0

  constructor(private readonly init: FairSchedulerInit) {
    for (const field of ['slots', 'queueLimit', 'queueLimitPerAccount', 'maxLongRunningPerAccount'] as const) {
      const v = init[field]
      const min = field === 'slots' ? 1 : 0
      if (!Number.isInteger(v) || v < min) throw new RangeError(`scheduler ${field} must be an integer ≥ ${min}`)
    }
    if (!(init.longCallMs >= 0)) throw new RangeError('scheduler longCallMs must be ≥ 0')
    for (const [account, w] of Object.entries(init.weights ?? {})) {
      if (!(w > 0) || !Number.isFinite(w)) throw new RangeError(`scheduler weight of ${account} must be a positive number`)
    }
    this.longCap = init.maxLongRunningPerAccount > 0 ? init.maxLongRunningPerAccount : Math.max(1, init.slots - 1)
  }

  /** Calls waiting, over all accounts. */
  get size(): number {
    return this.queued
  }

  /** The most workers one account may hold with long calls. */
  get longRunningCap(): number {
    return this.longCap
  }

  /**
   * Queues a call of `account`, of the function `kind` (its key: calls of one function share a
   * service-time estimate). Throws 1005 RATE_LIMITED when the account is over its share; returns the
   * call refused to make room for this one, if any (the caller rejects it with `error`).
   */
  enqueue(account: string, kind: string, item: T): { pushedOut?: { item: T; error: SvcError } } {
    const state = this.activate(account)
    if (state.queue.length >= this.init.queueLimitPerAccount) {
      throw this.refuse(state, 'tenant_queue_full')
    }
    let pushedOut: { item: T; error: SvcError } | undefined
    if (this.queued >= this.init.queueLimit) {
      const longest = this.longestQueue()
      if (longest === undefined || longest === state || longest.queue.length <= state.queue.length) {
        throw this.refuse(state, 'queue_share')
      }
      const victim = longest.queue.pop()!
      this.queued--
      pushedOut = { item: victim.item, error: this.refuse(longest, 'pushed_out') }
      this.forgetIfIdle(longest)
    }
    state.queue.push({ item, kind })
    this.queued++
    return pushedOut === undefined ? {} : { pushedOut }
  }

  /**
   * The next call to hand to an idle worker (marked running), or undefined when nothing waiting may
   * run now (nothing waits, or every waiting account holds its share of long calls).
   */
  next(): Dispatch<T> | undefined {
    let best: AccountState<T> | undefined
    let bestLong = false
    for (const state of this.accounts.values()) {
      const head = state.queue[0]
      if (head === undefined) continue
      const long = this.estimateOf(head.kind) >= this.init.longCallMs
      if (long && state.longRunning >= this.longCap) continue
      if (best === undefined || state.vt < best.vt) {
        best = state
        bestLong = long
      }
    }
    if (best === undefined) return undefined
    const waiting = best.queue.shift()!
    this.queued--
    const estimateMs = this.estimateOf(waiting.kind)
    best.running++
    if (bestLong) best.longRunning++
    if (best.vt > this.virtualNow) this.virtualNow = best.vt
    best.vt += estimateMs / best.weight
    return { item: waiting.item, account: best.name, kind: waiting.kind, estimateMs, long: bestLong }
  }

  /**
   * A dispatched call ended after holding its worker `serviceMs`: the account's charge is
   * corrected and the function's estimate updated with `runMs`, the time the call itself ran
   * (without a cold start's preparation, which its next calls will not pay; default `serviceMs`).
   */
  finish(dispatch: Dispatch<T>, serviceMs: number, runMs = serviceMs): void {
    const served = Number.isFinite(serviceMs) && serviceMs > 0 ? serviceMs : 0
    const state = this.accounts.get(dispatch.account)
    if (state !== undefined) {
      state.running--
      if (dispatch.long) state.longRunning--
      state.vt += (served - dispatch.estimateMs) / state.weight
      state.servedMs += served
    }
    this.learn(dispatch.kind, Number.isFinite(runMs) && runMs > 0 ? Math.min(runMs, served || runMs) : 0)
    if (state !== undefined) this.forgetIfIdle(state)
  }

  /**
   * A dispatched call is handed back without having run (its worker died before starting it): it
   * goes back to the head of its account's queue and the charge is undone.
   */
  requeue(dispatch: Dispatch<T>): void {
    const state = this.activate(dispatch.account)
    state.running--
    if (dispatch.long) state.longRunning--
    state.vt -= dispatch.estimateMs / state.weight
    state.queue.unshift({ item: dispatch.item, kind: dispatch.kind })
    this.queued++
  }

  /** Removes and returns every waiting call (the pool is stopping or cannot start workers). */
  drain(): T[] {
    const out: T[] = []
    for (const state of [...this.accounts.values()]) {
      for (const waiting of state.queue.splice(0)) out.push(waiting.item)
      this.forgetIfIdle(state)
    }
    this.queued = 0
    return out
  }

  stats(): AccountSchedulingStats[] {
    return [...this.accounts.values()].map((s) => ({
      account: s.name, queued: s.queue.length, running: s.running, servedMs: s.servedMs, refused: { ...s.refused },
    }))
  }

  /** The estimate of a call of `kind`, in ms (a kind not seen yet counts as long). */
  estimateOf(kind: string): number {
    return this.estimates.get(kind) ?? this.init.longCallMs
  }

  private learn(kind: string, serviceMs: number): void {
    const known = this.estimates.get(kind)
    // up at once with a longer call, down by an eighth of the difference with a shorter one: a
    // function that was slow once stays long for a while, so alternating cannot hide its long calls
    const next = known === undefined || serviceMs >= known ? serviceMs : known + (serviceMs - known) / 8
    this.estimates.delete(kind)
    this.estimates.set(kind, next)
    if (this.estimates.size > MAX_ESTIMATES) this.estimates.delete(this.estimates.keys().next().value as string)
  }

  /** The account's state; an account that was idle starts at the smallest virtual time of the active ones. */
  private activate(account: string): AccountState<T> {
    let state = this.accounts.get(account)
    if (state === undefined) {
      state = { name: account, weight: this.init.weights?.[account] ?? 1, queue: [], running: 0, longRunning: 0, vt: 0, servedMs: 0, refused: {} }
      this.accounts.set(account, state)
    } else {
      // most recently used last: the idle accounts forgotten first are the oldest
      this.accounts.delete(account)
      this.accounts.set(account, state)
    }
    if (state.queue.length === 0 && state.running === 0 && state.vt < this.virtualNow) state.vt = this.virtualNow
    return state
  }

  private longestQueue(): AccountState<T> | undefined {
    let longest: AccountState<T> | undefined
    for (const s of this.accounts.values()) if (s.queue.length > 0 && (longest === undefined || s.queue.length > longest.queue.length)) longest = s
    return longest
  }

  private refuse(state: AccountState<T>, reason: RefusalReason): SvcError {
    state.refused[reason] = (state.refused[reason] ?? 0) + 1
    const message = reason === 'tenant_queue_full'
      ? `tenant ${state.name} has ${this.init.queueLimitPerAccount} calls waiting for the sandbox, its limit; retry later`
      : reason === 'queue_share'
        ? `the sandbox queue is full and no tenant holds more of it than tenant ${state.name}; retry later`
        : `this call waited for the sandbox and was refused to make room for another tenant's call: tenant ${state.name} held the most of the queue; retry later`
    return new SvcError('RATE_LIMITED', message, {
      retryAfterSeconds: 1,
      details: { reason, tenant: state.name, limit: reason === 'tenant_queue_full' ? this.init.queueLimitPerAccount : this.init.queueLimit },
    })
  }

  /** Drops the state of accounts with nothing waiting or running beyond MAX_IDLE_ACCOUNTS (oldest first). */
  private forgetIfIdle(state: AccountState<T>): void {
    if (state.queue.length > 0 || state.running > 0 || this.accounts.size <= MAX_IDLE_ACCOUNTS) return
    for (const s of this.accounts.values()) {
      if (this.accounts.size <= MAX_IDLE_ACCOUNTS) break
      if (s.queue.length === 0 && s.running === 0) this.accounts.delete(s.name)
    }
  }
}
