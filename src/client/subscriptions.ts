/**
 * Event subscriptions over the node's `/ws` WebSocket (the `ws` package: Node 20 has no
 * WebSocket of its own). One socket per subscription.
 *
 * Protocol (JSON text frames):
 *   client → `{"type":"subscribe","id":"1","channel":"executions","rufid":"<optional>"}`
 *   server → `{"type":"subscribed","id":"1","channel":"executions"}`
 *            `{"type":"event","id":"1","channel":"executions","payload":{…}}`
 *            `{"type":"error","id":"1","code":1006,"name":"…","message":"…"}`
 * Credentials travel in the `Authorization` header of the upgrade request; a refused upgrade is an
 * HTTP answer with the REST error body, turned into the same typed errors as REST answers.
 */
import type { IncomingMessage } from 'node:http'
import WebSocket from 'ws'
import { SvcConnectionError, SvcError, WaitTimeoutError, errorFromResponse, svcError } from './errors.js'
import { withRufidForms } from './fields.js'

export interface SubscribeOptions<E> {
  /** called for every event; when given, events are not queued for iteration */
  onEvent?: (event: E) => void
  /** called once when the subscription ends because of an error (not after `close()`) */
  onError?: (error: SvcError) => void
  /** events queued for iteration beyond this end the subscription with an error; default 10 000 */
  maxQueuedEvents?: number
  /** aborting closes the subscription (or rejects the opening) */
  signal?: AbortSignal
}

export interface SocketInit {
  url: string
  headers: Record<string, string>
  /** bound on opening the socket and getting `subscribed`; 0: none */
  timeoutMs: number
}

interface Waiter<E> {
  resolve: (r: IteratorResult<E>) => void
  reject: (e: unknown) => void
}

const SUBSCRIPTION_ID = '1'

/**
 * A live subscription: async-iterable over its events (`for await (const ev of sub)`), or use
 * `nextEvent()`. The iteration ends when `close()` is called and throws when the node ends the
 * subscription or the connection drops (`SvcError`; reconnect and subscribe again).
 */
export class EventSubscription<E> implements AsyncIterable<E> {
  readonly channel: string
  readonly rufid: string | undefined
  readonly #ws: WebSocket
  readonly #queue: E[] = []
  readonly #waiters: Array<Waiter<E>> = []
  readonly #options: SubscribeOptions<E>
  #failure: SvcError | undefined
  #done = false
  readonly #closed: Promise<void>

  /** @internal created by `SvcClient.subscribeExecutions` / `subscribeSystem` */
  constructor(ws: WebSocket, channel: string, rufid: string | undefined, options: SubscribeOptions<E>) {
    this.#ws = ws
    this.channel = channel
    this.rufid = rufid
    this.#options = options
    this.#closed = new Promise((resolve) => {
      if (ws.readyState === WebSocket.CLOSED) resolve()
      else ws.once('close', () => resolve())
    })
  }

  /** @internal */
  push(event: E): void {
    if (this.#done) return
    if (this.#options.onEvent) {
      try {
        this.#options.onEvent(event)
      } catch {
        // a throwing listener must not break the subscription
      }
      return
    }
    const waiter = this.#waiters.shift()
    if (waiter) return waiter.resolve({ value: event, done: false })
    if (this.#queue.length >= (this.#options.maxQueuedEvents ?? 10_000)) {
      this.fail(new SvcError({
        code: null, name: 'SUBSCRIPTION_OVERFLOW',
        message: `more than ${this.#options.maxQueuedEvents ?? 10_000} events queued unread; subscription closed`,
      }))
      this.#ws.close(1000)
      return
    }
    this.#queue.push(event)
  }

  /** @internal ends the subscription with an error (already-queued events are still delivered first) */
  fail(error: SvcError): void {
    if (this.#done) return
    this.#done = true
    this.#failure = error
    for (const w of this.#waiters.splice(0)) w.reject(error)
    try {
      this.#options.onError?.(error)
    } catch {
      // ignored
    }
  }

  /** The next event; rejects when the subscription failed, or after `timeoutMs` if given. */
  nextEvent(timeoutMs?: number): Promise<E> {
    return new Promise<E>((resolve, reject) => {
      const queued = this.#queue.shift()
      if (queued !== undefined) return resolve(queued)
      if (this.#failure) return reject(this.#failure)
      if (this.#done) return reject(new SvcError({ code: null, name: 'SUBSCRIPTION_CLOSED', message: 'the subscription is closed' }))
      let timer: NodeJS.Timeout | undefined
      const waiter: Waiter<E> = {
        resolve: (r) => {
          if (timer) clearTimeout(timer)
          if (r.done) reject(new SvcError({ code: null, name: 'SUBSCRIPTION_CLOSED', message: 'the subscription is closed' }))
          else resolve(r.value)
        },
        reject: (e) => {
          if (timer) clearTimeout(timer)
          reject(e)
        },
      }
      this.#waiters.push(waiter)
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          const i = this.#waiters.indexOf(waiter)
          if (i !== -1) this.#waiters.splice(i, 1)
          reject(new WaitTimeoutError(`no ${this.channel} event within ${timeoutMs} ms`, { channel: this.channel }))
        }, timeoutMs)
      }
    })
  }

  [Symbol.asyncIterator](): AsyncIterator<E> {
    return {
      next: () => {
        const queued = this.#queue.shift()
        if (queued !== undefined) return Promise.resolve({ value: queued, done: false })
        if (this.#failure) return Promise.reject(this.#failure)
        if (this.#done) return Promise.resolve({ value: undefined, done: true })
        return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }))
      },
      return: async () => {
        await this.close()
        return { value: undefined, done: true }
      },
    }
  }

  /** Ends the subscription and closes its socket; resolves once the socket is closed. */
  async close(): Promise<void> {
    if (!this.#done) {
      this.#done = true
      for (const w of this.#waiters.splice(0)) w.resolve({ value: undefined, done: true })
    }
    if (this.#ws.readyState === WebSocket.CONNECTING) this.#ws.terminate()
    else if (this.#ws.readyState === WebSocket.OPEN) this.#ws.close(1000)
    const timer = setTimeout(() => this.#ws.terminate(), 2000)
    await this.#closed
    clearTimeout(timer)
  }

  /** @internal */
  get done(): boolean {
    return this.#done
  }
}

interface ServerMessage {
  type?: unknown
  id?: unknown
  channel?: unknown
  payload?: unknown
  code?: unknown
  name?: unknown
  message?: unknown
  details?: unknown
}

function messageError(msg: ServerMessage): SvcError {
  const code = typeof msg.code === 'number' ? msg.code : null
  return svcError(code, {
    name: typeof msg.name === 'string' ? msg.name : undefined,
    message: typeof msg.message === 'string' ? msg.message : 'the node refused the subscription',
    details: msg.details && typeof msg.details === 'object' ? (msg.details as Record<string, unknown>) : {},
  })
}

/** Opens a socket, subscribes, and resolves once the node answered `subscribed`. */
export function openSubscription<E>(
  init: SocketInit,
  subscribe: { channel: 'executions' | 'system'; rufid?: string },
  options: SubscribeOptions<E>,
): Promise<EventSubscription<E>> {
  return new Promise((resolve, reject) => {
    if (options.signal?.aborted) return reject(options.signal.reason)
    const ws = new WebSocket(init.url, { headers: init.headers, handshakeTimeout: init.timeoutMs > 0 ? init.timeoutMs : undefined })
    const sub = new EventSubscription<E>(ws, subscribe.channel, subscribe.rufid, options)
    let settled = false
    let timer: NodeJS.Timeout | undefined
    const settle = (err?: unknown): void => {
      if (settled) return
      settled = true
      if (timer) clearTimeout(timer)
      if (err === undefined) return resolve(sub)
      void sub.close()
      reject(err)
    }
    if (init.timeoutMs > 0) {
      timer = setTimeout(() => settle(new SvcConnectionError(
        `${init.url}: no subscription confirmed within ${init.timeoutMs} ms`,
        { name: 'REQUEST_TIMEOUT', details: { url: init.url, timeout_ms: init.timeoutMs } },
      )), init.timeoutMs)
    }
    const onAbort = (): void => {
      if (!settled) settle(options.signal!.reason)
      else void sub.close()
    }
    options.signal?.addEventListener('abort', onAbort, { once: true })

    ws.on('unexpected-response', (_req, res: IncomingMessage) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const retryAfter = res.headers['retry-after']
        settle(errorFromResponse(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'), Array.isArray(retryAfter) ? retryAfter[0] : retryAfter))
        ws.terminate()
      })
      res.on('error', () => settle(new SvcConnectionError(`${init.url}: the upgrade was refused (HTTP ${res.statusCode})`)))
    })
    ws.on('error', (err) => {
      const e = new SvcConnectionError(`cannot reach ${init.url}: ${(err as NodeJS.ErrnoException).code ?? err.message}`, {
        details: { url: init.url }, cause: err,
      })
      if (!settled) settle(e)
      else sub.fail(e)
    })
    ws.on('open', () => {
      const message: Record<string, string> = { type: 'subscribe', id: SUBSCRIPTION_ID, channel: subscribe.channel }
      if (subscribe.rufid !== undefined) message.rufid = subscribe.rufid
      ws.send(JSON.stringify(message))
    })
    ws.on('message', (data, isBinary) => {
      if (isBinary) return
      let msg: ServerMessage
      try {
        msg = JSON.parse(data.toString()) as ServerMessage
      } catch {
        return
      }
      if (msg.id !== undefined && msg.id !== SUBSCRIPTION_ID) return
      switch (msg.type) {
        case 'subscribed':
          settle()
          return
        case 'event':
          if (!settled) settle() // a node that sends events without confirming first
          sub.push(withRufidForms(msg.payload) as E)
          return
        case 'error': {
          const e = messageError(msg)
          if (!settled) settle(e)
          else {
            sub.fail(e)
            ws.close(1000)
          }
          return
        }
        case 'unsubscribed':
          if (settled) void sub.close()
          return
        default:
          return
      }
    })
    ws.on('close', (code, reason) => {
      options.signal?.removeEventListener('abort', onAbort)
      const e = new SvcConnectionError(`the node closed the event socket (${code}${reason.length ? ` ${reason.toString()}` : ''})`, {
        name: 'SUBSCRIPTION_CLOSED', details: { close_code: code, reason: reason.toString() },
      })
      if (!settled) settle(e)
      else if (!sub.done) sub.fail(e)
    })
  })
}
