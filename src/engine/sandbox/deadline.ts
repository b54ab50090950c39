import { performance } from 'node:perf_hooks'

/** Raised when a call's wall-time budget runs out before an isolate operation settles. */
export class DeadlineExceeded extends Error {
  constructor() {
    super('deadline exceeded')
    this.name = 'DeadlineExceeded'
  }
}

/** A wall-time budget shared by the successive isolate operations of one call. */
export class Deadline {
  /** when the budget started (performance.now()) */
  readonly startedAt = performance.now()
  private readonly endsAt: number

  constructor(budgetMs: number) {
    this.endsAt = this.startedAt + budgetMs
  }

  elapsedMs(): number {
    return performance.now() - this.startedAt
  }

  /** Whole milliseconds left (at least 1), for isolated-vm's `timeout` option; throws when none are left. */
  remainingMs(): number {
    const left = this.endsAt - performance.now()
    if (left <= 0) throw new DeadlineExceeded()
    return Math.max(1, Math.ceil(left))
  }

  /**
   * Settles like `operation`, or rejects with DeadlineExceeded when the budget runs out first
   * (e.g. a promise that never settles). A late rejection of `operation` is absorbed.
   */
  guard<T>(operation: Promise<T>): Promise<T> {
    operation.catch(() => undefined)
    let timer: NodeJS.Timeout | undefined
    const expiry = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new DeadlineExceeded()), Math.max(0, this.endsAt - performance.now()))
    })
    return Promise.race([operation, expiry]).finally(() => clearTimeout(timer))
  }
}

/** Settles like `operation` or resolves `undefined` after `ms`; a late rejection is absorbed. */
export async function within<T>(operation: Promise<T>, ms: number): Promise<T | undefined> {
  operation.catch(() => undefined)
  let timer: NodeJS.Timeout | undefined
  const expiry = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms)
  })
  try {
    return await Promise.race([operation, expiry])
  } finally {
    clearTimeout(timer)
  }
}
