import { STATUS_CODES, type IncomingMessage, type Server as HttpServer } from 'node:http'
import type { Server as HttpsServer } from 'node:https'
import type { Duplex } from 'node:stream'
import { WebSocketServer, type RawData, type WebSocket } from 'ws'
import type { Logger } from 'pino'
import { parseRufid } from '../../core/rufid.js'
import { type ErrorName, SvcError, validationFailed } from '../../core/errors.js'
import {
  createOperationEnvelope, enveloped, executionEventMatches, publicErrorOf, requirePermission, systemEventVisibleTo,
  type CredentialInput, type Engine, type SubscriptionTarget, type ExecutionEvent, type Principal, type StreamHold, type SystemEvent,
} from '../../engine/index.js'
import { CONNECTION_ADDRESSES, type ClientAddresses } from '../client-address.js'
import { httpCredentialsOf, subprotocolBearerOf } from '../credentials.js'
import { errorBody, httpStatusOf } from '../http-status.js'

/**
 * The WebSocket event manager at `/ws`: real-time execution and system events (service-spec §6).
 *
 * Connecting: `ws[s]://<node>/ws` with `Authorization: Bearer <key>` (and optionally
 * `X-Svc-Namespace`). Browsers cannot set headers on a WebSocket: they offer the subprotocols
 * `svc.events` and `svc.bearer.<base64url of the key>` (`new WebSocket(url, ['svc.events',
 * 'svc.bearer.…'])`, as Kubernetes does), which keeps the key out of URLs; the node answers with
 * `svc.events` only, never echoing the key. `?token=<key>` (and `?namespace=<ns>`) are accepted
 * too — the token then appears in URLs: prefer short-lived keys there and keep it out of proxy logs. A refused upgrade is an HTTP answer with the REST error body:
 * 401 (no/invalid credentials), 403, 429 (rate limited, or the tenant already has
 * `maxConnectionsPerTenant` sockets open; with Retry-After), 503 (shutting down).
 *
 * Protocol, JSON text frames:
 *   client → `{"type":"subscribe","id":"1","channel":"executions","rufid":"<short or full, optional>"}`
 *            `{"type":"subscribe","id":"2","channel":"system"}`
 *            `{"type":"unsubscribe","id":"1"}`    `{"type":"ping"}`
 *   server → `{"type":"subscribed","id":"1","channel":"executions"}` once the subscription is live
 *            `{"type":"event","id":"1","channel":"executions","payload":{…ExecutionEvent…}}`
 *            `{"type":"unsubscribed","id":"1"}`    `{"type":"pong"}`
 *            `{"type":"error","id":"1","code":1006,"name":"VALIDATION_FAILED","message":"…"}`
 *              (`id` when the error answers a message that had one)
 * Event payloads are the engine's events (`engine/events.ts`, snake_case like REST). A connection
 * sees only its tenant's events, plus node-wide system events (`tenant_id: null`). A system
 * subscription first receives the node's lifecycle event (`node.started` with the time the node
 * started serving; `node.stopping` while it drains); `node.stopping` reaches every system
 * subscriber before the node closes the sockets (1001). Each subscribe
 * re-checks the credentials (so a revoked key stops subscribing) and is audited as `events.subscribe`.
 *
 * A connection lives as long as the credential it connected with: when that key is revoked, or
 * the credential expires (an API key's expiry, a JWT's `exp`, a client certificate's notAfter),
 * the node closes it at once with 4401 and the reason `1003 PERMISSION_DENIED: API key revoked`
 * (or `… expired`), delivers no event after, and audits `events.end` with the result `revoked` or
 * `expired` (4401: 4000 + the 401 a new upgrade with that credential gets).
 *
 * Limits per connection:
 * - more than `maxMessagesPerSecond` client messages within one second closes it with 1008 (policy
 *   violation); other connections are unaffected;
 * - a frame larger than `maxPayloadBytes` closes it with 1009 (message too big);
 * - back-pressure: when the socket has more than `maxBufferedBytes` queued unsent (the client reads
 *   too slowly), events are not dropped silently: the connection is closed with 1013 (try again
 *   later) and the client should reconnect and resubscribe;
 * - at most MAX_SUBSCRIPTIONS_PER_CONNECTION subscriptions;
 * - a connection that does not answer pings for one heartbeat interval is terminated.
 */

/** Settings of the event socket (config `ws.*`). */
export interface EventSocketInit {
  maxConnectionsPerTenant: number
  maxMessagesPerSecond: number
  maxBufferedBytes: number
  maxPayloadBytes: number
  /** ping interval; a connection without a pong since the previous ping is dropped (default 30 s) */
  heartbeatIntervalMs?: number
}

export interface EventSocketComponents {
  engine: Engine
  logger: Logger
  /** the caller's address of an upgrade (trusted proxies); default: the connection's */
  addresses?: ClientAddresses
}

export const EVENT_SOCKET_PATH = '/ws'
/** The subprotocol the node selects when a client offers it (browsers: with `svc.bearer.<base64url>`, read by `api/credentials.ts`, never selected). */
export const EVENTS_SUBPROTOCOL = 'svc.events'
export const MAX_SUBSCRIPTIONS_PER_CONNECTION = 100
const MAX_ID_LENGTH = 128

type Channel = 'executions' | 'system'

interface Subscription {
  channel: Channel
  target?: SubscriptionTarget
  /** false until the subscribe has been admitted (events are not sent before `subscribed`) */
  live: boolean
}

interface Connection {
  ws: WebSocket
  principal: Principal
  credentials: CredentialInput
  /** held while the credential is valid: its revocation or expiry closes the connection (4401) */
  hold: StreamHold | undefined
  subscriptions: Map<string, Subscription>
  windowStartedAt: number
  messagesInWindow: number
  alive: boolean
  closing: boolean
}

/** WebSocket close codes this manager uses. */
const CLOSE = { goingAway: 1001, policyViolation: 1008, tryAgainLater: 1013, credentialEnded: 4401 } as const
/** The close code of a connection whose credential was revoked or expired (4000 + HTTP 401). */
export const CREDENTIAL_ENDED_CLOSE_CODE = CLOSE.credentialEnded

/** The operations of this door: each goes through the envelope (audited and metered, or metered only). */
export const EVENT_SOCKET_OPERATIONS = {
  connect: { name: 'events.connect' },
  subscribe: { name: 'events.subscribe' },
  /** a connection closed for sending too many messages (metered) */
  messageRate: { name: 'events.message', audited: false },
  /** a connection closed for reading too slowly (metered) */
  deliver: { name: 'events.deliver', audited: false },
  /** a connection its credential's revocation or expiry closed (audited: result `revoked` or `expired`) */
  end: { name: 'events.end' },
} as const

/**
 * The client message types and the operation each is (`subscribe` reaches the engine through the
 * envelope; `unsubscribe` and `ping` stay within the connection). The socket dispatches on this.
 */
export const CLIENT_MESSAGES = { subscribe: EVENT_SOCKET_OPERATIONS.subscribe, unsubscribe: undefined, ping: undefined } as const
type ClientMessageType = keyof typeof CLIENT_MESSAGES

/**
 * Serves `/ws` on the node's HTTP(S) server through one `upgrade` listener that leaves other
 * paths' sockets alone. `close()` stops accepting, closes every socket with 1001 and detaches
 * from the event bus.
 */
export function attachEventSocket(
  server: HttpServer | HttpsServer,
  init: EventSocketInit,
  components: EventSocketComponents,
): { close(): Promise<void> } {
  const { engine } = components
  const addresses = components.addresses ?? CONNECTION_ADDRESSES
  const logger = components.logger.child({ component: 'event-socket' })
  const wss = new WebSocketServer({
    noServer: true, maxPayload: init.maxPayloadBytes, clientTracking: false,
    // the bearer subprotocol is never selected (never echoed): only svc.events, when offered
    handleProtocols: (offered) => (offered.has(EVENTS_SUBPROTOCOL) ? EVENTS_SUBPROTOCOL : false),
  })
  const byTenant = new Map<string, Set<Connection>>()
  /** sockets per tenant, counted from the moment an upgrade is accepted until its TCP socket closes */
  const reserved = new Map<string, number>()
  let closed = false

  const envelope = createOperationEnvelope<CredentialInput>({
    protocol: 'ws',
    credentialsOf: (credentials) => credentials,
    ipOf: (credentials) => credentials.ip,
    statusOf: (error) => (error === undefined ? 'success' : 'error'),
  }, { engine, logger })
  /** Records a transport refusal that is not an engine operation (metered only). */
  const meterRefusal = (operation: typeof EVENT_SOCKET_OPERATIONS.messageRate | typeof EVENT_SOCKET_OPERATIONS.deliver, ip: string, error: SvcError): void => {
    envelope.finish(envelope.open(operation, ip), error)
  }

  // ---- connecting ----------------------------------------------------------------------------

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const url = new URL(req.url ?? '/', 'http://localhost')
    if (url.pathname !== EVENT_SOCKET_PATH) return
    socket.on('error', () => undefined)
    admitUpgrade(req, socket, head, url).catch((err: unknown) => {
      logger.error({ err }, 'event socket upgrade failed')
      socket.destroy()
    })
  }

  const admitUpgrade = enveloped(async (req: IncomingMessage, socket: Duplex, head: Buffer, url: URL): Promise<void> => {
    const credentials = credentialsOf(req, url, addresses.ofRequest(req))
    const call = envelope.open(EVENT_SOCKET_OPERATIONS.connect, credentials.ip)
    let principal: Principal
    try {
      const malformed = blankParameterOf(url)
      if (malformed !== undefined) throw malformed
      principal = await envelope.admit(call, credentials)
      if (closed) throw new SvcError('SERVICE_UNAVAILABLE', 'the node is shutting down')
      const open = reserved.get(principal.tenant_id) ?? 0
      if (open >= init.maxConnectionsPerTenant) {
        throw new SvcError('RATE_LIMITED', `tenant ${principal.tenant_id} already has ${open} event sockets open`, {
          details: { limit: init.maxConnectionsPerTenant }, retryAfterSeconds: 5,
        })
      }
    } catch (err) {
      rejectUpgrade(socket, (await envelope.complete(call, err))!)
      return
    }
    await envelope.complete(call)
    if (!socket.readable || !socket.writable) {
      socket.destroy()
      return
    }
    const tenant = principal.tenant_id
    reserved.set(tenant, (reserved.get(tenant) ?? 0) + 1)
    socket.once('close', () => {
      const n = (reserved.get(tenant) ?? 1) - 1
      if (n <= 0) reserved.delete(tenant)
      else reserved.set(tenant, n)
    })
    wss.handleUpgrade(req, socket, head, (ws) => accept(ws, principal, credentials))
  }, EVENT_SOCKET_OPERATIONS.connect)

  function accept(ws: WebSocket, principal: Principal, credentials: CredentialInput): void {
    const conn: Connection = {
      ws, principal, credentials,
      hold: undefined,
      subscriptions: new Map(),
      windowStartedAt: performance.now(),
      messagesInWindow: 0,
      alive: true,
      closing: false,
    }
    let peers = byTenant.get(principal.tenant_id)
    if (!peers) byTenant.set(principal.tenant_id, (peers = new Set()))
    peers.add(conn)
    ws.on('pong', () => (conn.alive = true))
    ws.on('error', (err) => logger.debug({ err }, 'event socket error'))
    ws.on('close', () => {
      conn.closing = true
      conn.hold?.release()
      conn.subscriptions.clear()
      const set = byTenant.get(principal.tenant_id)
      set?.delete(conn)
      if (set?.size === 0) byTenant.delete(principal.tenant_id)
    })
    ws.on('message', (data, isBinary) => onMessage(conn, data, isBinary))
    if (closed) return closeConnection(conn, CLOSE.goingAway, 'server shutting down')
    // the connection lasts as long as its credential: revoked or expired, it closes (4401)
    const lifetime = envelope.open(EVENT_SOCKET_OPERATIONS.end, credentials.ip)
    lifetime.principal = principal
    conn.hold = envelope.hold(lifetime, (reason) => closeConnection(conn, CLOSE.credentialEnded, closeReasonOf(reason)))
  }

  // ---- client messages ------------------------------------------------------------------------

  function onMessage(conn: Connection, data: RawData, isBinary: boolean): void {
    if (conn.closing) return
    const now = performance.now()
    if (now - conn.windowStartedAt >= 1000) {
      conn.windowStartedAt = now
      conn.messagesInWindow = 0
    }
    if (++conn.messagesInWindow > init.maxMessagesPerSecond) {
      meterRefusal(EVENT_SOCKET_OPERATIONS.messageRate, conn.credentials.ip, new SvcError('RATE_LIMITED', 'message rate exceeded'))
      closeConnection(conn, CLOSE.policyViolation, `more than ${init.maxMessagesPerSecond} messages per second`)
      return
    }
    if (isBinary) {
      sendError(conn, undefined, validationFailed('binary frames are not supported; send JSON text frames'))
      return
    }
    let message: unknown
    try {
      message = JSON.parse(rawText(data))
    } catch {
      sendError(conn, undefined, validationFailed('a message must be a JSON object'))
      return
    }
    if (message === null || typeof message !== 'object' || Array.isArray(message)) {
      sendError(conn, undefined, validationFailed('a message must be a JSON object'))
      return
    }
    const m = message as Record<string, unknown>
    const handle = typeof m.type === 'string' && Object.hasOwn(CLIENT_MESSAGES, m.type) ? messageHandlers[m.type as ClientMessageType] : undefined
    if (handle === undefined) {
      const id = typeof m.id === 'string' ? m.id : undefined
      sendError(conn, id, validationFailed(`unknown message type ${JSON.stringify(m.type)}; expected ${Object.keys(CLIENT_MESSAGES).join(', ')}`))
      return
    }
    handle(conn, m)
  }

  /** One handler per client message type of CLIENT_MESSAGES (the compiler checks none is missing). */
  const messageHandlers: Record<ClientMessageType, (conn: Connection, m: Record<string, unknown>) => void> = {
    subscribe: (conn, m) => void subscribe(conn, m),
    unsubscribe(conn, m) {
      const id = typeof m.id === 'string' ? m.id : undefined
      if (id === undefined || !conn.subscriptions.delete(id)) {
        sendError(conn, id, validationFailed(`no subscription with id ${JSON.stringify(m.id)}`))
        return
      }
      send(conn, { type: 'unsubscribed', id })
    },
    ping(conn, m) {
      send(conn, typeof m.id === 'string' ? { type: 'pong', id: m.id } : { type: 'pong' })
    },
  }

  const subscribe = enveloped(async (conn: Connection, m: Record<string, unknown>): Promise<void> => {
    const id = m.id
    if (typeof id !== 'string' || id === '' || id.length > MAX_ID_LENGTH) {
      sendError(conn, undefined, validationFailed(`subscribe needs an id: a string of 1–${MAX_ID_LENGTH} characters`))
      return
    }
    if (m.channel !== 'executions' && m.channel !== 'system') {
      sendError(conn, id, validationFailed('channel must be "executions" or "system"'))
      return
    }
    if (conn.subscriptions.has(id)) {
      sendError(conn, id, validationFailed(`subscription id ${id} is already in use`))
      return
    }
    if (conn.subscriptions.size >= MAX_SUBSCRIPTIONS_PER_CONNECTION) {
      sendError(conn, id, validationFailed(`at most ${MAX_SUBSCRIPTIONS_PER_CONNECTION} subscriptions per connection`))
      return
    }
    const channel: Channel = m.channel
    const sub: Subscription = { channel, live: false }
    conn.subscriptions.set(id, sub)
    const call = envelope.open(EVENT_SOCKET_OPERATIONS.subscribe, conn.credentials.ip)
    if (typeof m.rufid === 'string') call.rufid = m.rufid
    try {
      // each subscribe re-checks the credentials (revoked keys) and charges the rate limits
      const principal = await envelope.admit(call, conn.credentials)
      if (principal.tenant_id !== conn.principal.tenant_id) throw new SvcError('PERMISSION_DENIED', 'credentials changed tenant')
      requirePermission(principal, 'rufid.read')
      if (channel === 'executions' && m.rufid !== undefined && m.rufid !== null) {
        sub.target = engine.functions.target(principal, m.rufid)
      } else if (channel === 'system' && m.rufid !== undefined) {
        throw validationFailed('the system channel takes no rufid')
      }
    } catch (err) {
      const e = (await envelope.complete(call, err))!
      if (conn.subscriptions.get(id) === sub) conn.subscriptions.delete(id)
      sendError(conn, id, e)
      return
    }
    await envelope.complete(call)
    // unsubscribed (or closed) while being admitted
    if (conn.subscriptions.get(id) !== sub) return
    sub.live = true
    send(conn, { type: 'subscribed', id, channel })
    // the node's lifecycle event (node.started, or node.stopping while it drains) comes first
    const lifecycle = engine.events.lifecycle
    if (channel === 'system' && lifecycle) deliver(conn, { type: 'event', id, channel: 'system', payload: systemEventPayload(lifecycle) })
  }, EVENT_SOCKET_OPERATIONS.subscribe)

  // ---- events ----------------------------------------------------------------------------------

  const onExecution = (event: ExecutionEvent): void => {
    const conns = byTenant.get(event.tenant_id)
    if (conns === undefined) return
    // presented once per event, whatever the number of subscribers
    let payload: ReturnType<typeof executionEventPayload> | undefined
    for (const conn of conns) {
      for (const [id, sub] of conn.subscriptions) {
        if (sub.live && sub.channel === 'executions' && executionEventMatches(event, conn.principal.tenant_id, sub.target)) {
          deliver(conn, { type: 'event', id, channel: 'executions', payload: (payload ??= executionEventPayload(event)) })
        }
      }
    }
  }
  const onSystem = (event: SystemEvent): void => {
    const targets = event.tenant_id === null ? [...byTenant.values()].flatMap((s) => [...s]) : [...(byTenant.get(event.tenant_id) ?? [])]
    let payload: ReturnType<typeof systemEventPayload> | undefined
    for (const conn of targets) {
      if (!systemEventVisibleTo(event, conn.principal.tenant_id)) continue
      for (const [id, sub] of conn.subscriptions) {
        if (sub.live && sub.channel === 'system') deliver(conn, { type: 'event', id, channel: 'system', payload: (payload ??= systemEventPayload(event)) })
      }
    }
  }
  engine.events.on('execution', onExecution)
  engine.events.on('system', onSystem)

  /**
   * Sends an event unless the connection's credential ended (then it is closed, 4401) or the
   * client has fallen behind (then it is closed, 1013).
   */
  function deliver(conn: Connection, frame: Record<string, unknown>): void {
    if (conn.closing) return
    if (conn.hold?.check() !== undefined) return
    if (conn.ws.bufferedAmount > init.maxBufferedBytes) {
      logger.warn({ tenant: conn.principal.tenant_id, buffered: conn.ws.bufferedAmount }, 'event socket client too slow; closing it')
      meterRefusal(EVENT_SOCKET_OPERATIONS.deliver, conn.credentials.ip, new SvcError('RATE_LIMITED', 'slow consumer'))
      closeConnection(conn, CLOSE.tryAgainLater, 'client too slow: send buffer limit exceeded')
      return
    }
    send(conn, frame)
  }

  function send(conn: Connection, frame: Record<string, unknown>): void {
    if (conn.closing || conn.ws.readyState !== conn.ws.OPEN) return
    conn.ws.send(JSON.stringify(frame))
  }

  function sendError(conn: Connection, id: string | undefined, thrown: SvcError): void {
    const err = publicErrorOf(thrown)
    send(conn, {
      type: 'error',
      ...(id === undefined ? {} : { id }),
      code: err.code,
      name: err.name satisfies ErrorName,
      message: err.message,
    })
  }

  function closeConnection(conn: Connection, code: number, reason: string): void {
    if (conn.closing) return
    conn.closing = true
    conn.subscriptions.clear()
    conn.ws.close(code, reason)
  }

  // ---- liveness and shutdown -----------------------------------------------------------------

  const heartbeat = setInterval(() => {
    for (const set of byTenant.values()) {
      for (const conn of set) {
        if (!conn.alive) {
          conn.ws.terminate()
          continue
        }
        conn.alive = false
        conn.ws.ping()
      }
    }
  }, init.heartbeatIntervalMs ?? 30_000)
  heartbeat.unref()

  server.on('upgrade', onUpgrade)

  let closing: Promise<void> | undefined
  return {
    close() {
      closing ??= (async () => {
        closed = true
        server.off('upgrade', onUpgrade)
        clearInterval(heartbeat)
        engine.events.off('execution', onExecution)
        engine.events.off('system', onSystem)
        const all = [...byTenant.values()].flatMap((s) => [...s])
        await Promise.all(all.map((conn) => new Promise<void>((resolve) => {
          if (conn.ws.readyState === conn.ws.CLOSED) return resolve()
          const timer = setTimeout(() => conn.ws.terminate(), 2000)
          conn.ws.once('close', () => {
            clearTimeout(timer)
            resolve()
          })
          closeConnection(conn, CLOSE.goingAway, 'server shutting down')
        })))
        await new Promise<void>((resolve) => wss.close(() => resolve()))
      })()
      return closing
    },
  }
}

/** An execution event as `/ws` sends it: the engine's event plus `full_rufid` (its `rufid` is the full RUFID too). */
export function executionEventPayload(e: ExecutionEvent): ExecutionEvent & { full_rufid: string } {
  return { ...e, full_rufid: e.rufid }
}

/** A system event as `/ws` sends it: plus `rufid_short` and `full_rufid` (null when it names no function). */
export function systemEventPayload(e: SystemEvent): SystemEvent & { rufid_short: string | null; full_rufid: string | null } {
  return { ...e, rufid_short: e.rufid === null ? null : parseRufid(e.rufid).short, full_rufid: e.rufid }
}

function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8')
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8')
  return Buffer.from(data).toString('utf8')
}

/** A value with something in it: not empty, not only ASCII whitespace (the REST door's rule for query values). */
const NOT_BLANK = /[^\t\n\v\f\r ]/

/**
 * 1006 for `?token=` or `?namespace=` empty, blank or given twice: never read as absent (an empty
 * namespace would have been the key's own tenant), as on every route of the node.
 */
function blankParameterOf(url: URL): SvcError | undefined {
  for (const name of ['token', 'namespace']) {
    const values = url.searchParams.getAll(name)
    if (values.length === 0) continue
    if (values.length > 1) return validationFailed(`query parameter ${name} is given ${values.length} times; give it once`, [{ pointer: `/${name}`, message: 'given more than once' }])
    if (!NOT_BLANK.test(values[0]!)) {
      return validationFailed(`query parameter ${name} is ${values[0] === '' ? 'empty' : 'blank'}: give a value, or leave the parameter out`, [{ pointer: `/${name}`, message: 'empty or blank' }])
    }
  }
  return undefined
}

/**
 * The headers, else the `svc.bearer.` subprotocol, else `?token=` and `?namespace=` (browsers
 * cannot set headers on a WebSocket): read by the doors' one credential reader.
 */
function credentialsOf(req: IncomingMessage, url: URL, ip: string): CredentialInput {
  const token = url.searchParams.get('token')
  return httpCredentialsOf(req, ip, {
    authorization: subprotocolBearerOf(req) ?? (token ? `Bearer ${token}` : undefined),
    namespace: url.searchParams.get('namespace') || undefined,
    preferGiven: false,
  })
}

/** A close reason of at most 123 bytes: `1003 PERMISSION_DENIED: API key revoked`. */
function closeReasonOf(err: SvcError): string {
  let reason = `${err.code} ${err.name}: ${err.code === 1009 ? 'internal error' : err.message}`
  while (Buffer.byteLength(reason) > 123) reason = reason.slice(0, -1)
  return reason
}

/** Answers a refused upgrade with an HTTP response carrying the REST error body, then closes. */
function rejectUpgrade(socket: Duplex, err: SvcError): void {
  if (!socket.writable) {
    socket.destroy()
    return
  }
  const status = httpStatusOf(err)
  const body = JSON.stringify(errorBody(publicErrorOf(err)))
  const headers = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...(status === 401 ? ['WWW-Authenticate: Bearer'] : []),
    ...(err.retryAfterSeconds !== undefined ? [`Retry-After: ${Math.ceil(err.retryAfterSeconds)}`] : []),
  ]
  socket.end(`${headers.join('\r\n')}\r\n\r\n${body}`)
}
