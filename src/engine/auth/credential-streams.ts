import { SvcError } from '../../core/errors.js'
import type { Principal } from '../types.js'

/** Why a credential stopped admitting its streams. */
export type CredentialEnd = 'revoked' | 'expired'

/** One open stream held for its credential (see `CredentialStreams.hold`). */
export interface StreamHold {
  /**
   * Whether the stream may still deliver: undefined while the credential is valid. Once the key
   * was revoked or the credential's expiry has passed, this ends the stream at once (its `end`
   * callback runs, if it has not yet) and returns the reason. Doors call it right before each
   * event they deliver, so nothing slips out between a revocation or an expiry and the close.
   */
  check(): SvcError | undefined
  /** The stream ended for another reason (the client left, the node stops): forget it. Idempotent. */
  release(): void
}

export interface CredentialStreamsInit {
  /** the clock expiries are compared with (default `Date.now`) */
  now?: () => number
}

/** The longest delay `setTimeout` takes (about 24.8 days): a later expiry re-arms when it fires. */
const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * The 1003 a stream ends with when its credential ends: reason `unauthenticated` (HTTP 401, gRPC
 * UNAUTHENTICATED), `details.credential` `revoked` or `expired`, and a message naming the credential.
 */
export function credentialEndedError(end: CredentialEnd, principal: Pick<Principal, 'method' | 'key_id'>): SvcError {
  const what = principal.method === 'api_key' ? 'API key' : principal.method === 'jwt' || principal.method === 'oauth' ? 'token' : principal.method === 'mtls' ? 'client certificate' : 'credential'
  return new SvcError('PERMISSION_DENIED', `${what} ${end}`, {
    reason: 'unauthenticated',
    details: { credential: end, ...(principal.key_id === undefined ? {} : { key_id: principal.key_id }) },
  })
}

class Hold implements StreamHold {
  /** position in the expiry heap; -1 when not in it */
  heapIndex = -1
  done = false

  constructor(
    private readonly owner: CredentialStreams,
    readonly principal: Principal,
    readonly expiresAt: number | undefined,
    readonly end: (reason: SvcError) => void,
  ) {}

  check(): SvcError | undefined {
    return this.owner.check(this)
  }

  release(): void {
    this.owner.forget(this)
  }
}

/**
 * The streams open on this node, by credential: every door holds each stream it admits (/ws and
 * graphql-ws connections, GraphQL over SSE responses, gRPC StreamExecutions calls) for as long as
 * the credential that opened it is valid. A revoked key's streams end the moment the key service
 * reports the revocation; a credential with an expiry (an API key's `expires_at`, a JWT's `exp`,
 * a client certificate's notAfter: `Principal.expires_at`) ends its streams when it passes, by one
 * timer armed for the earliest expiry held. Each stream ends exactly once, through the `end`
 * callback its door gave, with `credentialEndedError`. Key ids revoked while the node runs are
 * remembered (a revocation that lands between a stream's admission and its hold still ends it).
 *
 * The timer runs only while a stream with an expiry is held, and is unref'd: the doors release
 * their holds when they close, which leaves nothing running.
 */
export class CredentialStreams {
  private readonly now: () => number
  private readonly byKey = new Map<string, Set<Hold>>()
  private readonly revokedKeys = new Set<string>()
  /** holds with an expiry, a binary min-heap on `expiresAt` (each hold knows its index) */
  private readonly heap: Hold[] = []
  private timer: NodeJS.Timeout | undefined
  private timerAt = Number.POSITIVE_INFINITY
  private held = 0

  constructor(init: CredentialStreamsInit = {}) {
    this.now = init.now ?? Date.now
  }

  /** Streams held now. */
  get size(): number {
    return this.held
  }

  /**
   * Holds one stream of `principal`: `end` is called once, with `credentialEndedError`, when the
   * principal's key is revoked or its credential expires (at once, on a later turn, when that
   * happened already). The door closes the stream there with its own code and delivers nothing
   * after; `release` when the stream ends for any other reason.
   */
  hold(principal: Principal, end: (reason: SvcError) => void): StreamHold {
    const hold = new Hold(this, principal, principal.expires_at, end)
    this.held++
    if (principal.key_id !== undefined) {
      let set = this.byKey.get(principal.key_id)
      if (set === undefined) this.byKey.set(principal.key_id, (set = new Set()))
      set.add(hold)
    }
    if (hold.expiresAt !== undefined) {
      this.heapPush(hold)
      this.arm()
    }
    if (this.endedFor(principal) !== undefined) queueMicrotask(() => void this.check(hold))
    return hold
  }

  /** The reason `principal`'s credential admits nothing any more (revoked while the node runs, or expired), or undefined. */
  endedFor(principal: Principal): SvcError | undefined {
    if (principal.key_id !== undefined && this.revokedKeys.has(principal.key_id)) return credentialEndedError('revoked', principal)
    if (principal.expires_at !== undefined && principal.expires_at <= this.now()) return credentialEndedError('expired', principal)
    return undefined
  }

  /** A key was revoked (or deleted): every stream it holds ends now. */
  revokeKey(keyId: string): void {
    this.revokedKeys.add(keyId)
    const set = this.byKey.get(keyId)
    if (set === undefined) return
    for (const hold of [...set]) this.endHold(hold, credentialEndedError('revoked', hold.principal))
  }

  /** Ends every stream whose credential expired by now; re-arms the timer for the next expiry. */
  expireDue(): void {
    const now = this.now()
    for (let top = this.heap[0]; top !== undefined && top.expiresAt! <= now; top = this.heap[0]) {
      this.endHold(top, credentialEndedError('expired', top.principal))
    }
    this.arm()
  }

  /** @internal `StreamHold.check` */
  check(hold: Hold): SvcError | undefined {
    if (hold.done) return this.endedFor(hold.principal)
    const reason = this.endedFor(hold.principal)
    if (reason !== undefined) this.endHold(hold, reason)
    return reason
  }

  /** @internal `StreamHold.release` */
  forget(hold: Hold): void {
    if (hold.done) return
    hold.done = true
    this.held--
    const key = hold.principal.key_id
    if (key !== undefined) {
      const set = this.byKey.get(key)
      set?.delete(hold)
      if (set?.size === 0) this.byKey.delete(key)
    }
    if (hold.heapIndex !== -1) {
      this.heapRemove(hold)
      if (this.heap.length === 0) this.disarm()
    }
  }

  private endHold(hold: Hold, reason: SvcError): void {
    if (hold.done) return
    this.forget(hold)
    try {
      hold.end(reason)
    } catch (err) {
      // a door's end callback must not throw; one that does must not keep the other streams open
      process.emitWarning(err instanceof Error ? err : new Error(String(err)), { code: 'SVC_STREAM_END_FAILED' })
    }
  }

  private arm(): void {
    const next = this.heap[0]?.expiresAt
    if (next === undefined) return this.disarm()
    if (this.timer !== undefined && this.timerAt === next) return
    this.disarm()
    this.timerAt = next
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.timerAt = Number.POSITIVE_INFINITY
      this.expireDue()
    }, Math.min(MAX_TIMER_MS, Math.max(0, next - this.now())))
    this.timer.unref()
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    this.timerAt = Number.POSITIVE_INFINITY
  }

  // ---- the expiry heap --------------------------------------------------------------------------

  private heapPush(hold: Hold): void {
    hold.heapIndex = this.heap.length
    this.heap.push(hold)
    this.siftUp(hold.heapIndex)
  }

  private heapRemove(hold: Hold): void {
    const i = hold.heapIndex
    const last = this.heap.pop()!
    hold.heapIndex = -1
    if (last === hold) return
    this.heap[i] = last
    last.heapIndex = i
    this.siftUp(i)
    this.siftDown(last.heapIndex)
  }

  private siftUp(i: number): void {
    const heap = this.heap
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (heap[parent]!.expiresAt! <= heap[i]!.expiresAt!) return
      this.swap(i, parent)
      i = parent
    }
  }

  private siftDown(i: number): void {
    const heap = this.heap
    for (;;) {
      const left = 2 * i + 1
      const right = left + 1
      let least = i
      if (left < heap.length && heap[left]!.expiresAt! < heap[least]!.expiresAt!) least = left
      if (right < heap.length && heap[right]!.expiresAt! < heap[least]!.expiresAt!) least = right
      if (least === i) return
      this.swap(i, least)
      i = least
    }
  }

  private swap(a: number, b: number): void {
    const heap = this.heap
    const x = heap[a]!
    const y = heap[b]!
    heap[a] = y
    heap[b] = x
    x.heapIndex = b
    y.heapIndex = a
  }
}
