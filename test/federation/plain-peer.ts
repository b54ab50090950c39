// A plain js-libp2p peer for hostile-peer tests: built here from the libp2p packages alone (no svc
// code), it speaks what any outsider could: identify and ping under the `svc` prefix, gossipsub,
// the Kademlia wire format, and whatever it chooses to answer on `/svc/membership/1.0.0`. It
// records every stream a node opens to it and every gossip message it receives, so a test can
// say what a federation node sent to a peer that never proved membership.
import { noise } from '@chainsafe/libp2p-noise'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { gossipsub, type GossipSub } from '@libp2p/gossipsub'
import { identify } from '@libp2p/identify'
import type { Connection, PrivateKey, Stream, StreamHandler, StreamMuxerFactory } from '@libp2p/interface'
import { peerIdFromMultihash, peerIdFromPrivateKey, peerIdFromString } from '@libp2p/peer-id'
import { ping } from '@libp2p/ping'
import { tcp } from '@libp2p/tcp'
import { lpStream, pbStream } from '@libp2p/utils'
import { yamux } from '@libp2p/yamux'
import { multiaddr } from '@multiformats/multiaddr'
import { createLibp2p, type Libp2p } from 'libp2p'
import * as Digest from 'multiformats/hashes/digest'
// the Kademlia message codec of the kad-dht package (not exported by name: the wire format is public)
import { Message, MessageType } from '../../node_modules/@libp2p/kad-dht/dist/src/message/dht.js'

export { Message as KadMessage, MessageType as KadMessageType }

export const MEMBERSHIP = '/svc/membership/1.0.0'
export const KAD = '/svc/kad/1.0.0'
/** request/response protocols of a federation node (JSON, length-prefixed) */
export const SVC_PROTOCOLS = ['/svc/sync/1.0.0', '/svc/sync-summary/1.0.0', '/svc/code/1.0.0', '/svc/register/1.0.0', '/svc/wheel/1.0.0']
/** what a node may open to a peer whose membership is not proven */
export const OPEN_PROTOCOLS = ['/svc/id/1.0.0', '/svc/id/push/1.0.0', '/svc/ping/1.0.0', MEMBERSHIP]

/**
 * What the peer does when a node asks it to prove membership (the node dials `/svc/membership`,
 * writes its registration, reads the answer):
 * - none: no handler (the protocol is not supported)
 * - hang: reads the node's registration and never answers
 * - garbage: answers with bytes that are not JSON
 * - drip: answers one byte of a plausible message every `dripMs`
 * - oversized: announces a 40 MiB message and streams it
 * - answer: answers with `registration` (as a member would, with whatever certificate it holds)
 */
export type MembershipMode =
  | { kind: 'none' }
  | { kind: 'hang' }
  | { kind: 'garbage' }
  | { kind: 'drip'; dripMs?: number }
  | { kind: 'oversized' }
  | { kind: 'answer'; registration: unknown }

export interface InboundStream {
  protocol: string
  from: string
  at: number
}

export interface PlainPeer {
  node: Libp2p<{ identify: unknown; ping: unknown; pubsub: GossipSub; recorder: unknown }>
  peerId: string
  privateKey: PrivateKey
  /** every stream a remote opened to this peer */
  inbound: InboundStream[]
  /** every gossip message delivered to this peer */
  gossip: Array<{ topic: string; from: string; data: string }>
  /** protocols a remote opened to this peer other than identify, ping and membership */
  gated(): InboundStream[]
  dial(addr: string): Promise<Connection>
  connected(peerId: string): boolean
  /** one length-prefixed JSON request; `answered` false when the stream failed before an answer */
  request(peerId: string, protocol: string, body: unknown, timeoutMs?: number): Promise<Answer<unknown>>
  /** one Kademlia message; `answered` false when no response came */
  kad(peerId: string, message: Partial<Message>, timeoutMs?: number): Promise<Answer<Message>>
  /** sends one Kademlia message that has no response (ADD_PROVIDER) and reports whether the write went through */
  kadSend(peerId: string, message: Partial<Message>, timeoutMs?: number): Promise<Answer<undefined>>
  /** opens a membership exchange itself: sends `claim` (JSON, or raw bytes) and reads the answer */
  claim(peerId: string, claim: unknown, timeoutMs?: number): Promise<Answer<unknown>>
  publish(topic: string, payload: unknown): Promise<void>
  /** whether `peerId` is subscribed to `topic` as this peer's gossipsub sees it */
  subscribed(peerId: string, topic: string): boolean
  stop(): Promise<void>
}

export interface Answer<T> {
  answered: boolean
  value?: T
  error?: string
}

const json = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value))

/** Wraps every handler the peer registers so each inbound stream is recorded first. */
function recorder(inbound: InboundStream[]) {
  return (components: { registrar: { handle(protocol: string, handler: StreamHandler, options?: object): Promise<void> } }) => {
    const registrar = components.registrar
    const handle = registrar.handle.bind(registrar)
    registrar.handle = (protocol, handler, options) => handle(protocol, (stream: Stream, connection: Connection) => {
      inbound.push({ protocol, from: connection.remotePeer.toString(), at: Date.now() })
      return handler(stream, connection)
    }, options)
    return {}
  }
}

/**
 * A muxer that lets every stream the remote opens wait `delayMs` before this peer negotiates its
 * protocol: a peer stalling the checks a node runs on it (identify, membership) while its own
 * streams go out at once.
 */
function slowToTakeStreams<C>(factory: (components: C) => StreamMuxerFactory, delayMs: number) {
  return (components: C): StreamMuxerFactory => {
    const inner = factory(components)
    return {
      protocol: inner.protocol,
      createStreamMuxer(maConn) {
        const muxer = inner.createStreamMuxer(maConn)
        const add = muxer.addEventListener.bind(muxer) as (type: string, listener: (evt: Event) => void, options?: unknown) => void
        ;(muxer as unknown as { addEventListener: typeof add }).addEventListener = (type, listener, options) => {
          if (type !== 'stream') return add(type, listener, options)
          return add('stream', (evt) => setTimeout(() => listener(evt), delayMs), options)
        }
        return muxer
      },
    }
  }
}

async function answerMembership(mode: MembershipMode, stream: Stream): Promise<void> {
  const lp = lpStream(stream, { maxDataLength: 1024 * 1024 })
  await lp.read().catch(() => undefined) // the node's registration
  switch (mode.kind) {
    case 'hang':
      return // never answers (the stream stays open until the node gives up)
    case 'garbage':
      await lp.write(new TextEncoder().encode('\u0000\u0001 this is not json {{{'))
      return
    case 'drip': {
      const body = json({ node_id: 'x'.repeat(200) })
      stream.send(Uint8Array.of(body.length & 0x7f | 0x80, body.length >> 7)) // varint length
      for (const byte of body) {
        await new Promise((r) => setTimeout(r, mode.dripMs ?? 500))
        if (stream.status !== 'open') return
        stream.send(Uint8Array.of(byte))
      }
      return
    }
    case 'oversized': {
      const size = 40 * 1024 * 1024
      const varint: number[] = []
      for (let n = size; ; n = Math.floor(n / 128)) {
        if (n < 128) {
          varint.push(n)
          break
        }
        varint.push(n % 128 | 0x80)
      }
      stream.send(Uint8Array.from(varint))
      const chunk = new Uint8Array(64 * 1024).fill(0x7b)
      for (let sent = 0; sent < size && stream.status === 'open'; sent += chunk.length) {
        if (!stream.send(chunk)) await stream.onDrain().catch(() => undefined)
      }
      return
    }
    case 'answer':
      await lp.write(json(mode.registration))
      await stream.close().catch(() => undefined)
      return
    case 'none':
      return
  }
}

/** Starts a plain peer on loopback. Protocols it "serves" (kad, sync, …) only record streams, then reset them. */
export async function startPlainPeer(options: {
  membership: MembershipMode
  privateKey?: PrivateKey
  topics?: string[]
  /** let every stream a remote opens wait this long before negotiating it (see slowToTakeStreams) */
  slowToTakeStreamsMs?: number
}): Promise<PlainPeer> {
  const privateKey = options.privateKey ?? await generateKeyPair('Ed25519')
  const inbound: InboundStream[] = []
  const gossip: PlainPeer['gossip'] = []
  const node = await createLibp2p({
    privateKey,
    addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [options.slowToTakeStreamsMs ? slowToTakeStreams(yamux(), options.slowToTakeStreamsMs) : yamux()],
    services: {
      recorder: recorder(inbound),
      identify: identify({ protocolPrefix: 'svc' }),
      ping: ping({ protocolPrefix: 'svc' }),
      pubsub: gossipsub({ globalSignaturePolicy: 'StrictSign', allowPublishToZeroTopicPeers: true, emitSelf: false, heartbeatInterval: 250 }),
    },
  }) as unknown as PlainPeer['node']
  // recorded (by the recorder) and reset at once: this peer serves nothing
  const refuse: StreamHandler = (stream) => stream.abort(new Error('a plain peer serves nothing'))
  for (const protocol of [KAD, ...SVC_PROTOCOLS]) await node.handle(protocol, refuse)
  if (options.membership.kind !== 'none') {
    const mode = options.membership
    await node.handle(MEMBERSHIP, (stream) => {
      void answerMembership(mode, stream).catch(() => undefined)
    })
  }
  await node.start()
  node.services.pubsub.addEventListener('message', (evt) => {
    const m = evt.detail
    gossip.push({ topic: m.topic, from: m.type === 'signed' ? m.from.toString() : '', data: new TextDecoder().decode(m.data) })
  })
  for (const topic of options.topics ?? []) node.services.pubsub.subscribe(topic)
  const peerId = peerIdFromPrivateKey(privateKey).toString()

  const withTimeout = async <T>(timeoutMs: number, run: (signal: AbortSignal) => Promise<T>): Promise<Answer<T>> => {
    const signal = AbortSignal.timeout(timeoutMs)
    try {
      return { answered: true, value: await run(signal) }
    } catch (err) {
      return { answered: false, error: `${(err as Error).name}: ${(err as Error).message}` }
    }
  }

  /** one Kademlia message on a new stream; its response when `answered` is asked for */
  const kadExchange = async (id: string, message: Partial<Message>, answered: boolean, signal: AbortSignal): Promise<Message> => {
    const stream = await node.dialProtocol(peerIdFromString(id), KAD, { signal })
    const pb = pbStream(stream).pb(Message)
    await pb.write({ closer: [], providers: [], ...message } as Message, { signal })
    const answer = answered ? await pb.read({ signal }) : ({} as Message)
    await stream.close({ signal }).catch((err: unknown) => {
      if (!answered) throw err
    })
    return answer
  }

  return {
    node,
    peerId,
    privateKey,
    inbound,
    gossip,
    gated: () => inbound.filter((s) => !OPEN_PROTOCOLS.includes(s.protocol)),
    dial: (addr) => node.dial(multiaddr(addr)),
    connected: (id) => node.getConnections(peerIdFromString(id)).some((c) => c.status === 'open'),
    request: (id, protocol, body, timeoutMs = 3_000) => withTimeout(timeoutMs, async (signal) => {
      const stream = await node.dialProtocol(peerIdFromString(id), protocol, { signal })
      const lp = lpStream(stream, { maxDataLength: 64 * 1024 * 1024 })
      await lp.write(json(body), { signal })
      const answer = JSON.parse(new TextDecoder().decode((await lp.read({ signal })).subarray())) as unknown
      await stream.close({ signal }).catch(() => undefined)
      return answer
    }),
    kad: (id, message, timeoutMs = 3_000) => withTimeout(timeoutMs, (signal) => kadExchange(id, message, true, signal)),
    kadSend: (id, message, timeoutMs = 3_000) => withTimeout(timeoutMs, async (signal) => {
      await kadExchange(id, message, false, signal)
      return undefined
    }),
    claim: (id, claim, timeoutMs = 3_000) => withTimeout(timeoutMs, async (signal) => {
      const stream = await node.dialProtocol(peerIdFromString(id), MEMBERSHIP, { signal })
      const lp = lpStream(stream, { maxDataLength: 1024 * 1024 })
      await lp.write(claim instanceof Uint8Array ? claim : json(claim), { signal })
      const answer = JSON.parse(new TextDecoder().decode((await lp.read({ signal })).subarray())) as unknown
      await stream.close({ signal }).catch(() => undefined)
      return answer
    }),
    subscribed: (id, topic) => node.services.pubsub.getSubscribers(topic).some((p) => p.toString() === id),
    publish: async (topic, payload) => {
      await node.services.pubsub.publish(topic, json(payload))
    },
    stop: async () => {
      await node.stop()
    },
  }
}

/** For a witness: which peers a node's Kademlia answer lists (closer peers and providers). */
export function peersIn(message: Message | undefined): { closer: string[]; providers: string[] } {
  const ids = (list: Array<{ id: Uint8Array }> | undefined): string[] => (list ?? []).map((p) => peerIdFromMultihash(Digest.decode(p.id)).toString())
  return { closer: ids(message?.closer), providers: ids(message?.providers) }
}
