import type { AbstractBatchOperation, AbstractSublevel } from 'abstract-level'
import type { LevelDatabase } from './catalog-store.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type JsonSublevel = AbstractSublevel<LevelDatabase, any, string, any>

/** One queued put (or, with `del`, a deletion of the key). */
export interface QueuedPut {
  sublevel: JsonSublevel
  key: string
  value: unknown
  /** deletes the key instead (retention): a reader sees the stored value until the batch is written */
  del?: true
  /**
   * `value` as its stored JSON text, when the caller encoded it already (to measure it): written as
   * it is instead of being encoded again. It must be `JSON.stringify(value)`.
   */
  encoded?: string
}

export interface GroupCommitInit {
  /**
   * The longest a queued put waits before its batch is written (ms). 0 turns queueing off: every
   * `write` is one batch, awaited by its caller.
   */
  flushMs: number
  /** A batch is written at once when this many puts wait. */
  maxBatch?: number
  /**
   * Puts allowed to wait at once; beyond it, `write` waits for the batch (back-pressure when the
   * disk falls behind), so what a crash can lose stays bounded.
   */
  maxPending?: number
}

const DEFAULT_MAX_BATCH = 512
const DEFAULT_MAX_PENDING = 4096
const RETRY_MS = 50

/**
 * Group commit for records that may be acknowledged before they reach LevelDB (execution records,
 * usage statistics, audit entries): puts wait in memory for at most `flushMs` and are written
 * together, one LevelDB batch (not synced, as these records always were) at a time and in order.
 * A queued put is visible to `peek` at once, so a reader sees its own writes; a range reader calls
 * `flush` first. A later put of the same key replaces a queued one. What a crash of the process
 * can lose is what waits here: the puts of the last `flushMs` (and the batch being written), never
 * more than `maxPending`. A batch that fails is kept and retried while the database is open.
 */
export class GroupCommit {
  private pending = new Map<string, QueuedPut>()
  private inflight: Map<string, QueuedPut> | undefined
  private timer: NodeJS.Timeout | undefined
  /** settles when the batch being written (and every earlier one) is written */
  private writing: Promise<void> = Promise.resolve()
  /** resolves when the pending puts have been written (created on demand) */
  private next: { promise: Promise<void>; resolve(): void; reject(err: unknown): void } | undefined
  private readonly encodables = new WeakMap<JsonSublevel, boolean>()
  private readonly maxBatch: number
  private readonly maxPending: number
  /** the error of the last failed batch, until a batch succeeds */
  lastError: unknown
  /** set by `abandon`: nothing is written any more */
  private abandoned: Error | undefined

  constructor(private readonly init: GroupCommitInit, private readonly c: { db: LevelDatabase }) {
    this.maxBatch = init.maxBatch ?? DEFAULT_MAX_BATCH
    this.maxPending = init.maxPending ?? DEFAULT_MAX_PENDING
  }

  /** Whether a sublevel's puts can be encoded here: a sublevel of this database with utf8 keys and JSON values. */
  private encodable(sublevel: JsonSublevel): boolean {
    let known = this.encodables.get(sublevel)
    if (known === undefined) {
      const s = sublevel as unknown as Encodings
      known = s.db === this.c.db && s.keyEncoding().commonName === 'utf8' && s.valueEncoding().commonName === 'json'
      this.encodables.set(sublevel, known)
    }
    return known
  }

  /** Puts waiting to be written (not counting the batch being written). */
  get size(): number {
    return this.pending.size
  }

  /**
   * Queues puts to be written in one batch with others. Resolves at once when they may wait (the
   * caller can answer), or when they are written (queueing off, or too many waiting).
   */
  write(puts: QueuedPut[]): Promise<void> {
    if (this.abandoned !== undefined) return Promise.reject(this.abandoned)
    for (const put of puts) this.pending.set(slotOf(put.sublevel, put.key), put)
    if (this.init.flushMs <= 0 || this.pending.size >= this.maxPending) return this.flush()
    if (this.pending.size >= this.maxBatch) void this.flush().catch(() => undefined)
    else this.timer ??= setTimeout(() => void this.flush().catch(() => undefined), this.init.flushMs)
    return Promise.resolve()
  }

  /** The queued (or being written) value of a key, if any (undefined for a queued deletion). */
  peek(sublevel: JsonSublevel, key: string): unknown {
    const slot = slotOf(sublevel, key)
    const put = this.pending.get(slot) ?? this.inflight?.get(slot)
    return put?.del === true ? undefined : put?.value
  }

  /**
   * The puts not written yet (waiting, and the batch being written; deletions aside), counted by sublevel name
   * (`executions`, `function_stats`, `audit`, …): what a stop that cannot write would lose.
   */
  unwritten(): Map<string, number> {
    const counts = new Map<string, number>()
    const count = (slots: Map<string, QueuedPut> | undefined): void => {
      for (const put of slots?.values() ?? []) {
        if (put.del === true) continue
        const name = sublevelNameOf(put.sublevel)
        counts.set(name, (counts.get(name) ?? 0) + 1)
      }
    }
    count(this.pending)
    count(this.inflight)
    return counts
  }

  /**
   * Gives up on what waits (a stop whose time is up, on a disk that refuses writes): no retry is
   * scheduled any more, waiting `flush` promises and later `write`s reject with `reason`. The
   * batch being written, if any, still settles on its own. Count `unwritten()` first.
   */
  abandon(reason: Error): void {
    this.abandoned = reason
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
    this.pending = new Map()
    const waiting = this.next
    this.next = undefined
    waiting?.reject(reason)
  }

  /** Writes what waits now; resolves when it (and everything queued before) is written. */
  flush(): Promise<void> {
    if (this.abandoned !== undefined) return Promise.reject(this.abandoned)
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
    if (this.pending.size === 0) return this.writing
    this.next ??= deferred()
    const done = this.next.promise
    // one batch at a time, in order: the next starts when the one being written is done
    this.writing = this.writing.then(() => this.writeBatch(), () => this.writeBatch())
    return done
  }

  private async writeBatch(): Promise<void> {
    const batch = this.pending
    const waiting = this.next
    if (batch.size === 0 || waiting === undefined) return
    this.pending = new Map()
    this.next = undefined
    this.inflight = batch
    try {
      const writer = this.c.db as Partial<EncodedWriter>
      const puts = [...batch.values()]
      if (typeof writer.writeEncoded === 'function' && puts.every(({ sublevel }) => this.encodable(sublevel))) {
        // keys prefixed and values encoded here, as the sublevels would (utf8 keys, JSON values)
        await writer.writeEncoded(puts.map(({ sublevel, key, value, encoded, del }) => (del === true
          ? { key: prefixOf(sublevel) + key, del }
          : { key: prefixOf(sublevel) + key, value: encoded ?? JSON.stringify(value) })), false)
      } else {
        const ops = puts.map(({ sublevel, key, value, del }) => (del === true ? { type: 'del', sublevel, key } : { type: 'put', sublevel, key, value }))
        await this.c.db.batch(ops as unknown as Array<AbstractBatchOperation<LevelDatabase, string, unknown>>, { sync: false } as object)
      }
      this.lastError = undefined
      waiting.resolve()
    } catch (err) {
      this.lastError = err
      // keep the batch unless a newer put of the same key replaced it, and try again later
      if (this.abandoned !== undefined) {
        waiting.reject(this.abandoned)
        return
      }
      for (const [slot, put] of batch) if (!this.pending.has(slot)) this.pending.set(slot, put)
      if (this.c.db.status === 'open') {
        this.next ??= waiting
        if (this.next !== waiting) this.next.promise.then(waiting.resolve, waiting.reject)
        this.timer ??= setTimeout(() => void this.flush().catch(() => undefined), RETRY_MS)
      } else {
        waiting.reject(err)
      }
    } finally {
      this.inflight = undefined
    }
  }
}

/** A sublevel's prefix (`!name!`, its parents' included): the prefix and the key are the key in the database. */
const prefixOf = (sublevel: JsonSublevel): string => (sublevel as unknown as { prefix: string }).prefix

/** A sublevel's own name (its prefix `!a!!b!` without the marks: the last name, `b`). */
const sublevelNameOf = (sublevel: JsonSublevel): string => {
  const names = prefixOf(sublevel).split('!').filter((n) => n !== '')
  return names[names.length - 1] ?? ''
}

/** The prefix and the key name one slot. */
const slotOf = (sublevel: JsonSublevel, key: string): string => `${prefixOf(sublevel)}${key}`

/** A database that takes puts already encoded (NodeDatabase.writeEncoded). */
interface EncodedWriter {
  writeEncoded(puts: ReadonlyArray<{ key: string; value: string } | { key: string; del: true }>, sync: boolean): Promise<void>
}

interface Encodings {
  keyEncoding(): { commonName: string }
  valueEncoding(): { commonName: string }
  db: unknown
}

function deferred(): { promise: Promise<void>; resolve(): void; reject(err: unknown): void } {
  let resolve!: () => void
  let reject!: (err: unknown) => void
  const promise = new Promise<void>((res, rej) => {
    resolve = res
    reject = rej
  })
  promise.catch(() => undefined)
  return { promise, resolve, reject }
}
