import type { Connection, Stream } from '@libp2p/interface'
import { peerIdFromString } from '@libp2p/peer-id'
import { lpStream } from '@libp2p/utils'
import { noopLogger, type FederationLogger } from './logger.js'
import { decodeMessage, encodeMessage, errorAnswer, MAX_MESSAGE_BYTES, type FederationNode, type MemberRequestHandler } from './node.js'

/**
 * A JSON request/response protocol over one long-lived stream per member, for requests on the
 * hot path (a remote hit of a deterministic result). The one-stream-per-request form
 * (`FederationNode.request`) opens a Yamux stream, negotiates the protocol with
 * multistream-select and closes the stream for every request: on loopback that is ~3 ms of a
 * ~0.5 ms exchange. Here a member's stream is opened (and negotiated) at the first request and
 * kept while the member is one; each request is one frame each way:
 *
 *   → {id, body}                      (id: an integer, unique among the stream's open requests)
 *   ← {id, ok: answer} | {id, error: {code, name, message, details}}
 *
 * Requests are pipelined (answers matched by id); a member answers a stream's requests in order.
 * Members only, like every other protocol: the membership gate refuses the stream of a peer that
 * is not a member, and the serving side checks membership again on every request (a member
 * refused or gone since the stream opened gets its stream aborted). A member that does not speak
 * the session protocol (an older build) is asked one stream per request on `fallback`, which
 * this node keeps serving. A request that gets no answer in time aborts the stream (a stalled
 * member does not keep a wedged stream): the next request opens a new one.
 */
export interface MemberSessionsInit {
  /** the session protocol */
  protocol: string
  /** the one-stream-per-request protocol of the same requests (older members) */
  fallback: string
  /** largest frame read, either way (default `MAX_MESSAGE_BYTES`, as `FederationNode.request`) */
  maxMessageBytes?: number
}

export interface MemberSessionsComponents {
  node: Pick<FederationNode, 'p2p' | 'member' | 'requireMember' | 'onMember' | 'request'>
  logger?: FederationLogger
}

/** session streams a member may hold open to this node at once (one is used; a few allow a reconnect race) */
const MAX_INBOUND_SESSIONS = 4
/** how long the serving side waits to write one answer */
const WRITE_TIMEOUT_MS = 30_000

interface Frame { id?: unknown; body?: unknown; ok?: unknown; error?: ReturnType<typeof errorAnswer> }

export class MemberSessions {
  private readonly sessions = new Map<string, Session>()
  /** members that do not speak the session protocol: asked on `fallback` until they leave */
  private readonly legacy = new Set<string>()
  private readonly log: FederationLogger
  private readonly maxBytes: number
  private unsubscribe: (() => void) | undefined

  constructor(private readonly init: MemberSessionsInit, private readonly c: MemberSessionsComponents) {
    this.log = c.logger ?? noopLogger
    this.maxBytes = init.maxMessageBytes ?? MAX_MESSAGE_BYTES
  }

  /** Serves the session protocol with `handler` (the same handler the fallback protocol has). */
  async start(handler: MemberRequestHandler): Promise<void> {
    await this.c.node.p2p.handle(this.init.protocol, (stream, connection) => this.serve(stream, connection, handler), {
      runOnLimitedConnection: false, maxInboundStreams: MAX_INBOUND_SESSIONS,
    })
    this.unsubscribe = this.c.node.onMember((event, member) => {
      if (event !== 'left') return
      this.legacy.delete(member.peerId)
      this.sessions.get(member.peerId)?.close(new Error(`${member.peerId} left the federation`))
    })
  }

  async stop(): Promise<void> {
    this.unsubscribe?.()
    this.unsubscribe = undefined
    for (const session of [...this.sessions.values()]) session.close(new Error('stopping'))
    try {
      await this.c.node.p2p.unhandle(this.init.protocol)
    } catch {
      // the node stopped first: it serves nothing any more
    }
  }

  /** Sends one request to a member and returns its answer; throws on a refusal, an error answer or no answer in time. */
  async request(peerId: string, body: unknown, timeoutMs: number): Promise<unknown> {
    if (!this.legacy.has(peerId)) {
      let session = this.sessions.get(peerId)
      if (session === undefined || session.closed) {
        session = new Session((signal) => this.open(peerId, signal), this.maxBytes, () => {
          if (this.sessions.get(peerId) === session) this.sessions.delete(peerId)
        })
        this.sessions.set(peerId, session)
      }
      try {
        return await session.request(body, timeoutMs)
      } catch (err) {
        if ((err as Error).name !== 'UnsupportedProtocolError') throw err
        this.log.debug({ peer_id: peerId }, `member does not speak ${this.init.protocol}: asked on ${this.init.fallback}`)
        this.legacy.add(peerId)
      }
    }
    return this.c.node.request(peerId, this.init.fallback, body, timeoutMs)
  }

  /** open sessions to members (for tests and metrics) */
  get size(): number {
    return this.sessions.size
  }

  private async open(peerId: string, signal: AbortSignal): Promise<Stream> {
    await this.c.node.requireMember(peerId)
    return this.c.node.p2p.dialProtocol(peerIdFromString(peerId), this.init.protocol, { signal })
  }

  /** One member's session stream: its frames answered in order, while the peer is a member. */
  private async serve(stream: Stream, connection: Connection, handler: MemberRequestHandler): Promise<void> {
    const peerId = connection.remotePeer.toString()
    const lp = lpStream(stream, { maxDataLength: this.maxBytes })
    try {
      for (;;) {
        const frame = decodeMessage(await lp.read()) as Frame | null
        const id = frame?.id
        if (frame === null || typeof frame !== 'object' || typeof id !== 'number' || !Number.isSafeInteger(id)) {
          throw new Error('a session frame is {id: integer, body}')
        }
        // checked per request: the gate let the stream open, membership may have ended since
        const member = this.c.node.member(peerId)
        if (member === undefined) throw new Error(`${peerId} is no longer a federation member`)
        let answer: Frame
        try {
          answer = { id, ok: await handler(frame.body, member) }
        } catch (err) {
          answer = { id, error: errorAnswer(err) }
        }
        await lp.write(encodeMessage(answer), { signal: AbortSignal.timeout(WRITE_TIMEOUT_MS) })
      }
    } catch (err) {
      // the asker closed its session (or broke the protocol, or left): the stream goes
      stream.abort(err as Error)
    }
  }
}

interface Pending {
  resolve(frame: Frame): void
  reject(err: unknown): void
}

/** The asking side of one member's stream. */
class Session {
  private stream: Stream | undefined
  private opening: Promise<ReturnType<typeof lpStream>> | undefined
  private readonly pending = new Map<number, Pending>()
  private nextId = 0
  /** writes go out one frame after the other */
  private writes: Promise<unknown> = Promise.resolve()
  closed = false

  constructor(
    private readonly openStream: (signal: AbortSignal) => Promise<Stream>,
    private readonly maxBytes: number,
    private readonly onClosed: () => void,
  ) {}

  async request(body: unknown, timeoutMs: number): Promise<unknown> {
    const signal = AbortSignal.timeout(timeoutMs)
    const lp = await (this.opening ??= this.connect(signal))
    if (this.closed) throw new Error('the member session closed')
    const id = ++this.nextId
    const answered = new Promise<Frame>((resolve, reject) => this.pending.set(id, { resolve, reject }))
    answered.catch(() => undefined) // rejected while the frame is still being written: awaited below
    // no answer in time: this stream is not trusted to carry the next request
    const onTimeout = (): void => this.close(new Error(`no answer within ${timeoutMs} ms`))
    signal.addEventListener('abort', onTimeout, { once: true })
    try {
      const written = this.writes.then(() => lp.write(encodeMessage({ id, body }), { signal }))
      this.writes = written.catch(() => undefined)
      await written
      const frame = await answered
      if (frame.error !== undefined) throw Object.assign(new Error(frame.error.message), { remote: frame.error })
      return frame.ok
    } catch (err) {
      if (!this.closed && !(err as { remote?: unknown }).remote) this.close(err)
      throw err
    } finally {
      signal.removeEventListener('abort', onTimeout)
      this.pending.delete(id)
    }
  }

  /** Aborts the stream and fails every open request; the next request opens a new session. */
  close(err: unknown): void {
    if (this.closed) return
    this.closed = true
    this.stream?.abort(err instanceof Error ? err : new Error(String(err)))
    for (const p of this.pending.values()) p.reject(err)
    this.pending.clear()
    this.onClosed()
  }

  private async connect(signal: AbortSignal): Promise<ReturnType<typeof lpStream>> {
    try {
      const stream = await this.openStream(signal)
      if (this.closed) {
        stream.abort(new Error('the member session closed'))
        throw new Error('the member session closed')
      }
      this.stream = stream
      const lp = lpStream(stream, { maxDataLength: this.maxBytes })
      void this.readAnswers(lp)
      return lp
    } catch (err) {
      this.close(err)
      throw err
    }
  }

  private async readAnswers(lp: ReturnType<typeof lpStream>): Promise<void> {
    try {
      for (;;) {
        const frame = decodeMessage(await lp.read()) as Frame | null
        const pending = typeof frame?.id === 'number' ? this.pending.get(frame.id) : undefined
        if (pending === undefined) throw new Error('the member answered a request it was not sent')
        this.pending.delete(frame!.id as number)
        pending.resolve(frame!)
      }
    } catch (err) {
      this.close(err)
    }
  }
}
