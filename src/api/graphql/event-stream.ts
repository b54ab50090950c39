/**
 * An async iterator over pushed values with a bounded buffer: a subscription's source stream.
 * When the consumer falls `maxQueued` values behind, the oldest are dropped (and counted), so a
 * slow subscriber never holds unbounded memory. `return()` (called by graphql-js and graphql-ws
 * when a subscription completes or its socket closes) detaches the listener exactly once.
 */
export class EventStream<T> implements AsyncIterableIterator<T> {
  private readonly buffer: T[] = []
  private readonly waiting: Array<(result: IteratorResult<T>) => void> = []
  private done = false
  private detach: (() => void) | undefined
  /** values dropped because the consumer was too slow */
  dropped = 0

  constructor(private readonly maxQueued = 256) {}

  /** Connects the stream to its source; `attach` returns the function that disconnects it. */
  static from<T>(attach: (push: (value: T) => void) => () => void, maxQueued?: number): EventStream<T> {
    const stream = new EventStream<T>(maxQueued)
    stream.detach = attach((value) => stream.push(value))
    return stream
  }

  push(value: T): void {
    if (this.done) return
    const waiter = this.waiting.shift()
    if (waiter) {
      waiter({ value, done: false })
      return
    }
    if (this.buffer.length >= this.maxQueued) {
      this.buffer.shift()
      this.dropped++
    }
    this.buffer.push(value)
  }

  next(): Promise<IteratorResult<T>> {
    if (this.buffer.length > 0) return Promise.resolve({ value: this.buffer.shift() as T, done: false })
    if (this.done) return Promise.resolve({ value: undefined, done: true })
    return new Promise((resolve) => this.waiting.push(resolve))
  }

  return(): Promise<IteratorResult<T>> {
    if (!this.done) {
      this.done = true
      this.detach?.()
      this.detach = undefined
      this.buffer.length = 0
      for (const waiter of this.waiting.splice(0)) waiter({ value: undefined, done: true })
    }
    return Promise.resolve({ value: undefined, done: true })
  }

  throw(err?: unknown): Promise<IteratorResult<T>> {
    void this.return()
    return Promise.reject(err instanceof Error ? err : new Error(String(err)))
  }

  [Symbol.asyncIterator](): EventStream<T> {
    return this
  }
}
