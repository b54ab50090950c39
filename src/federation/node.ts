import { noise } from '@chainsafe/libp2p-noise'
import { bootstrap } from '@libp2p/bootstrap'
import { gossipsub, TopicValidatorResult, type GossipSub, type Message } from '@libp2p/gossipsub'
import { identify } from '@libp2p/identify'
import type { Connection, PeerId, PrivateKey, Stream } from '@libp2p/interface'
import { kadDHT, passthroughMapper, type KadDHT } from '@libp2p/kad-dht'
import { peerIdFromString } from '@libp2p/peer-id'
import { ping } from '@libp2p/ping'
import { tcp } from '@libp2p/tcp'
import { lpStream } from '@libp2p/utils'
import { yamux } from '@libp2p/yamux'
import { multiaddr } from '@multiformats/multiaddr'
import { createLibp2p, type Libp2p } from 'libp2p'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { create as createDigest } from 'multiformats/hashes/digest'
import { sha256 } from 'multiformats/hashes/sha2'
import { CertificateVerifier, MembershipError, type VerifiedMember } from './certificates.js'
import { noopLogger, type FederationLogger } from './logger.js'

export const PROTOCOL_PREFIX = '/svc'
export const MEMBERSHIP_PROTOCOL = '/svc/membership/1.0.0'
export const DHT_PROTOCOL = '/svc/kad/1.0.0'
const MAX_MESSAGE_BYTES = 32 * 1024 * 1024

/** The registration object of service-spec §2.7. */
export interface NodeRegistration {
  node_id: string
  endpoint: string
  capabilities: { languages: string[]; max_concurrent: number; protocols: string[] }
  auth: { certificate: string; public_key: string }
}

export interface FederationMember {
  peerId: string
  registration: NodeRegistration
  certificate: VerifiedMember
  verified_at: string
}

export interface FederationNodeInit {
  privateKey: PrivateKey
  /** multiaddrs to listen on, e.g. `/ip4/127.0.0.1/tcp/0` */
  listen: string[]
  /** multiaddrs to announce instead of the listen addresses (empty: the listen addresses) */
  announce?: string[]
  /** multiaddrs with `/p2p/<peerId>` of peers to connect to at start */
  bootstrap?: string[]
  /** the federation CA certificate (PEM) */
  caCertPem: string
  /** this node's certificate (PEM), issued by the CA for this node's PeerId */
  certPem: string
  /** revoked certificate serials or SHA-256 fingerprints */
  revoked?: string[]
  /** what this node tells others about itself (node_id and auth are filled in) */
  endpoint: string
  capabilities?: Partial<NodeRegistration['capabilities']>
  /** how long a peer that failed membership stays refused (default 30 s) */
  denyMs?: number
  /** gossipsub heartbeat (default 250 ms: the mesh forms fast on a small federation) */
  heartbeatMs?: number
  /** do not refuse to start with a certificate the federation would reject (tests of intruders) */
  skipSelfCheck?: boolean
}

export interface FederationNodeComponents {
  logger?: FederationLogger
  /** called with the member count whenever it changes (svc_federation_nodes_active) */
  onMembersChanged?: (count: number) => void
}

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }
/** A request/response handler for members: gets the decoded request and the member, returns the response. */
export type MemberRequestHandler = (request: unknown, from: FederationMember) => Promise<unknown>
export type GossipHandler = (payload: unknown, origin: FederationMember) => void | Promise<void>

type Services = { identify: ReturnType<ReturnType<typeof identify>>; ping: ReturnType<ReturnType<typeof ping>>; dht: KadDHT; pubsub: GossipSub }

const encode = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value))
const decode = (bytes: { subarray(): Uint8Array }): unknown => JSON.parse(new TextDecoder().decode(bytes.subarray()))

/** A CIDv1 (raw, sha2-256) whose multihash is the given SHA-256 hex digest. */
export function cidOfDigest(digestHex: string): CID {
  if (!/^[0-9a-f]{64}$/.test(digestHex)) throw new Error(`not a SHA-256 hex digest: ${digestHex}`)
  return CID.createV1(raw.code, createDigest(sha256.code, Uint8Array.from(Buffer.from(digestHex, 'hex'))))
}

/**
 * A federation member's libp2p node: TCP, Noise, Yamux, identify, ping, Kademlia DHT (`/svc/kad`),
 * gossipsub (signed). Noise proves a peer's PeerId; membership is proven after connecting by an
 * exchange of registrations over `/svc/membership/1.0.0` whose certificates are checked against
 * the federation CA. A peer that fails is disconnected and refused for a while; only members are
 * answered on member protocols, and gossip is delivered only when its signed origin is a member.
 */
export class FederationNode {
  private readonly init: FederationNodeInit
  private readonly log: FederationLogger
  private readonly verifier: CertificateVerifier
  private readonly membersById = new Map<string, FederationMember>()
  private readonly pending = new Map<string, Promise<FederationMember | undefined>>()
  private readonly denied = new Map<string, number>()
  private readonly gossipHandlers = new Map<string, GossipHandler>()
  private readonly memberListeners = new Set<(event: 'joined' | 'left', member: FederationMember) => void>()
  private libp2p: Libp2p<Services> | undefined
  private starting: Promise<void> | undefined
  readonly peerId: string
  readonly self: NodeRegistration

  constructor(init: FederationNodeInit, private readonly components: FederationNodeComponents = {}) {
    this.init = init
    this.log = components.logger ?? noopLogger
    this.verifier = new CertificateVerifier({ caCertPem: init.caCertPem, revoked: init.revoked ?? [] })
    this.peerId = peerIdFromPublicKeyString(init.privateKey)
    this.self = {
      node_id: this.peerId,
      endpoint: init.endpoint,
      capabilities: {
        languages: init.capabilities?.languages ?? ['python', 'javascript', 'typescript'],
        max_concurrent: init.capabilities?.max_concurrent ?? 4,
        protocols: init.capabilities?.protocols ?? ['rest', 'grpc', 'graphql'],
      },
      auth: { certificate: init.certPem, public_key: Buffer.from(init.privateKey.publicKey.toMultihash().bytes).toString('base64') },
    }
    // our own certificate must be one the federation accepts
    if (!init.skipSelfCheck) this.verifier.verify(init.certPem, this.peerId)
  }

  get started(): boolean {
    return this.libp2p !== undefined
  }

  /** the libp2p node (after start) */
  get p2p(): Libp2p<Services> {
    if (this.libp2p === undefined) throw new Error('federation node is not started')
    return this.libp2p
  }

  /** Verified members currently connected (this node excluded). */
  members(): FederationMember[] {
    return [...this.membersById.values()]
  }

  member(peerId: string): FederationMember | undefined {
    return this.membersById.get(peerId)
  }

  multiaddrs(): string[] {
    return this.p2p.getMultiaddrs().map((ma) => ma.toString())
  }

  onMember(listener: (event: 'joined' | 'left', member: FederationMember) => void): () => void {
    this.memberListeners.add(listener)
    return () => this.memberListeners.delete(listener)
  }

  start(): Promise<void> {
    this.starting ??= this.doStart()
    return this.starting
  }

  private async doStart(): Promise<void> {
    const denied = (peer: PeerId): boolean => this.isDenied(peer.toString())
    const bootstrapList = this.init.bootstrap ?? []
    const node = await createLibp2p({
      privateKey: this.init.privateKey,
      addresses: { listen: this.init.listen, announce: this.init.announce ?? [] },
      transports: [tcp()],
      connectionEncrypters: [noise()],
      streamMuxers: [yamux()],
      connectionGater: {
        denyDialMultiaddr: () => false,
        denyDialPeer: denied,
        denyInboundEncryptedConnection: denied,
        denyOutboundEncryptedConnection: denied,
      },
      peerDiscovery: bootstrapList.length ? [bootstrap({ list: bootstrapList, timeout: 100 })] : [],
      services: {
        identify: identify({ protocolPrefix: 'svc' }),
        ping: ping({ protocolPrefix: 'svc' }),
        dht: kadDHT({
          protocol: DHT_PROTOCOL,
          clientMode: false,
          peerInfoMapper: passthroughMapper,
          allowQueryWithZeroPeers: true,
          logPrefix: 'svc:dht',
          datastorePrefix: '/svc-dht',
        }),
        pubsub: gossipsub({
          globalSignaturePolicy: 'StrictSign',
          allowPublishToZeroTopicPeers: true,
          emitSelf: false,
          heartbeatInterval: this.init.heartbeatMs ?? 250,
          scoreParams: { IPColocationFactorWeight: 0 },
        }),
      },
    })
    this.libp2p = node as unknown as Libp2p<Services>
    node.addEventListener('peer:connect', (evt) => {
      void this.ensureMember(evt.detail.toString()).catch(() => undefined)
    })
    node.addEventListener('peer:disconnect', (evt) => this.dropMember(evt.detail.toString(), 'disconnected'))
    await node.handle(MEMBERSHIP_PROTOCOL, (stream, connection) => this.answerMembership(stream, connection), { runOnLimitedConnection: false })
    await node.start()
    this.log.info({ peer_id: this.peerId, addrs: this.multiaddrs() }, 'federation node started')
    // bootstrap discovery dials on its own, but without waiting: dial the list now as well
    for (const addr of bootstrapList) void this.dial(addr).catch(() => undefined)
  }

  async stop(): Promise<void> {
    if (this.starting === undefined) return
    await this.starting.catch(() => undefined)
    this.starting = undefined
    const node = this.libp2p
    this.libp2p = undefined
    this.membersById.clear()
    this.components.onMembersChanged?.(0)
    await node?.stop()
  }

  /** Dials a multiaddr (with `/p2p/<id>`); membership follows on connect. */
  async dial(addr: string): Promise<void> {
    await this.p2p.dial(multiaddr(addr))
  }

  /** Dials a peer by PeerId (addresses from the peer store / DHT). */
  async dialPeer(peerId: string): Promise<void> {
    await this.p2p.dial(peerIdFromString(peerId))
  }

  private isDenied(peerId: string): boolean {
    const until = this.denied.get(peerId)
    if (until === undefined) return false
    if (until < Date.now()) {
      this.denied.delete(peerId)
      return false
    }
    return true
  }

  /**
   * The member behind `peerId`, proving membership first when it has not yet been proven
   * (dialing the peer when needed). Undefined when it is not a member or cannot be reached.
   */
  async ensureMember(peerId: string, timeoutMs = 5_000): Promise<FederationMember | undefined> {
    if (peerId === this.peerId) return undefined
    const known = this.membersById.get(peerId)
    if (known) return known
    if (this.isDenied(peerId) || this.libp2p === undefined) return undefined
    let pending = this.pending.get(peerId)
    if (pending === undefined) {
      pending = this.proveMembership(peerId, timeoutMs).finally(() => this.pending.delete(peerId))
      this.pending.set(peerId, pending)
    }
    return pending
  }

  private async proveMembership(peerId: string, timeoutMs: number): Promise<FederationMember | undefined> {
    const signal = AbortSignal.timeout(timeoutMs)
    let stream: Stream
    try {
      stream = await this.p2p.dialProtocol(peerIdFromString(peerId), MEMBERSHIP_PROTOCOL, { signal })
    } catch (err) {
      // a peer that is not one of us may not even speak the protocol
      if (this.membersById.has(peerId)) return this.membersById.get(peerId)
      this.log.debug({ peer_id: peerId, err }, 'membership exchange failed')
      if ((err as Error).name === 'UnsupportedProtocolError') await this.refuse(peerId, 'no membership protocol')
      return undefined
    }
    try {
      const lp = lpStream(stream, { maxDataLength: MAX_MESSAGE_BYTES })
      await lp.write(encode(this.self), { signal })
      const answer = decode(await lp.read({ signal }))
      await stream.close({ signal }).catch(() => stream.abort(new Error('closing')))
      return await this.admit(peerId, answer)
    } catch (err) {
      stream.abort(err as Error)
      if (this.membersById.has(peerId)) return this.membersById.get(peerId)
      this.log.debug({ peer_id: peerId, err }, 'membership exchange failed')
      return undefined
    }
  }

  private async answerMembership(stream: Stream, connection: Connection): Promise<void> {
    const peerId = connection.remotePeer.toString()
    const signal = AbortSignal.timeout(10_000)
    try {
      const lp = lpStream(stream, { maxDataLength: MAX_MESSAGE_BYTES })
      const claim = decode(await lp.read({ signal }))
      const member = await this.admit(peerId, claim)
      if (member === undefined) {
        stream.abort(new Error('not a federation member'))
        return
      }
      await lp.write(encode(this.self), { signal })
      await stream.close({ signal })
    } catch (err) {
      stream.abort(err as Error)
    }
  }

  /** Checks a registration claimed by `peerId` (whose identity Noise proved) and admits or refuses the peer. */
  private async admit(peerId: string, claim: unknown): Promise<FederationMember | undefined> {
    const registration = claim as Partial<NodeRegistration> | null
    try {
      if (registration === null || typeof registration !== 'object' || typeof registration.auth?.certificate !== 'string') {
        throw new MembershipError('malformed', 'no certificate in the registration')
      }
      if (registration.node_id !== peerId) throw new MembershipError('peer_id_mismatch', `registration names ${String(registration.node_id)}, connection is ${peerId}`)
      const certificate = this.verifier.verify(registration.auth.certificate, peerId)
      const known = this.membersById.get(peerId)
      if (known) return known
      const member: FederationMember = { peerId, registration: registration as NodeRegistration, certificate, verified_at: new Date().toISOString() }
      this.membersById.set(peerId, member)
      this.components.onMembersChanged?.(this.membersById.size)
      this.log.info({ peer_id: peerId, endpoint: member.registration.endpoint }, 'federation member joined')
      for (const l of this.memberListeners) l('joined', member)
      return member
    } catch (err) {
      const failure = err instanceof MembershipError ? err.failure : 'malformed'
      await this.refuse(peerId, `${failure}: ${(err as Error).message}`)
      return undefined
    }
  }

  /** Disconnects a non-member and refuses it for `denyMs`. */
  private async refuse(peerId: string, why: string): Promise<void> {
    this.log.warn({ peer_id: peerId, reason: why }, 'peer is not a federation member: disconnected')
    this.denied.set(peerId, Date.now() + (this.init.denyMs ?? 30_000))
    this.dropMember(peerId, why)
    await this.libp2p?.hangUp(peerIdFromString(peerId)).catch(() => undefined)
  }

  private dropMember(peerId: string, why: string): void {
    const member = this.membersById.get(peerId)
    if (member === undefined) return
    if (why === 'disconnected' && this.libp2p && this.libp2p.getConnections(peerIdFromString(peerId)).length > 0) return
    this.membersById.delete(peerId)
    this.components.onMembersChanged?.(this.membersById.size)
    this.log.info({ peer_id: peerId, reason: why }, 'federation member left')
    for (const l of this.memberListeners) l('left', member)
  }

  /** Serves a JSON request/response protocol to members only. */
  async handleMembers(protocol: string, handler: MemberRequestHandler): Promise<void> {
    await this.p2p.handle(protocol, async (stream, connection) => {
      const signal = AbortSignal.timeout(30_000)
      try {
        const member = await this.ensureMember(connection.remotePeer.toString())
        if (member === undefined) {
          stream.abort(new Error('not a federation member'))
          return
        }
        const lp = lpStream(stream, { maxDataLength: MAX_MESSAGE_BYTES })
        const request = decode(await lp.read({ signal }))
        let response: unknown
        try {
          response = { ok: await handler(request, member) }
        } catch (err) {
          const e = err as { code?: unknown; name?: string; message?: string; details?: unknown }
          response = { error: { code: e.code ?? null, name: e.name ?? 'Error', message: e.message ?? String(err), details: e.details ?? {} } }
        }
        await lp.write(encode(response), { signal })
        await stream.close({ signal })
      } catch (err) {
        stream.abort(err as Error)
      }
    }, { runOnLimitedConnection: false })
  }

  /** Sends one JSON request to a member and returns its response; throws on a refusal or an error answer. */
  async request(peerId: string, protocol: string, body: unknown, timeoutMs = 10_000): Promise<unknown> {
    const member = await this.ensureMember(peerId, timeoutMs)
    if (member === undefined) throw new Error(`${peerId} is not a reachable federation member`)
    const signal = AbortSignal.timeout(timeoutMs)
    const stream = await this.p2p.dialProtocol(peerIdFromString(peerId), protocol, { signal })
    try {
      const lp = lpStream(stream, { maxDataLength: MAX_MESSAGE_BYTES })
      await lp.write(encode(body), { signal })
      const answer = decode(await lp.read({ signal })) as { ok?: unknown; error?: { name: string; message: string; code: unknown; details: unknown } }
      await stream.close({ signal }).catch(() => undefined)
      if (answer.error) throw Object.assign(new Error(answer.error.message), { remote: answer.error })
      return answer.ok
    } catch (err) {
      stream.abort(err as Error)
      throw err
    }
  }

  /** Subscribes to a gossip topic; only messages whose signed origin is a member reach `handler`. */
  subscribe(topic: string, handler: GossipHandler): void {
    const pubsub = this.p2p.services.pubsub
    this.gossipHandlers.set(topic, handler)
    pubsub.topicValidators.set(topic, async (_relay: PeerId, message: Message) => {
      if (message.type !== 'signed') return TopicValidatorResult.Reject
      const member = await this.ensureMember(message.from.toString(), 3_000)
      return member === undefined ? TopicValidatorResult.Reject : TopicValidatorResult.Accept
    })
    if (this.gossipHandlers.size === 1) {
      pubsub.addEventListener('message', (evt) => {
        const message = evt.detail
        if (message.type !== 'signed') return
        const h = this.gossipHandlers.get(message.topic)
        const origin = this.membersById.get(message.from.toString())
        if (h === undefined || origin === undefined) return
        let payload: unknown
        try {
          payload = JSON.parse(new TextDecoder().decode(message.data))
        } catch {
          return
        }
        Promise.resolve(h(payload, origin)).catch((err: unknown) => this.log.warn({ err, topic: message.topic }, 'gossip handler failed'))
      })
    }
    pubsub.subscribe(topic)
  }

  /** Publishes a JSON payload (signed by this node) on a topic. */
  async publish(topic: string, payload: unknown): Promise<void> {
    await this.p2p.services.pubsub.publish(topic, encode(payload))
  }

  /** Announces this node as a provider of the content with `digestHex` (DHT provider record). */
  async provide(digestHex: string, timeoutMs = 10_000): Promise<void> {
    await this.p2p.contentRouting.provide(cidOfDigest(digestHex), { signal: AbortSignal.timeout(timeoutMs) })
  }

  /**
   * Members that announced `digestHex`, yielded as the DHT query finds them (so a caller can try
   * the first one at once); records of non-members are ignored. Ends after `max` members or
   * `timeoutMs`, whichever comes first.
   */
  async *providers(digestHex: string, options: { timeoutMs?: number; max?: number } = {}): AsyncGenerator<FederationMember> {
    const seen = new Set<string>()
    let yielded = 0
    const controller = new AbortController()
    const signal = AbortSignal.any([controller.signal, AbortSignal.timeout(options.timeoutMs ?? 3_000)])
    try {
      for await (const provider of this.p2p.contentRouting.findProviders(cidOfDigest(digestHex), { signal })) {
        const id = provider.id.toString()
        if (id === this.peerId || seen.has(id)) continue
        seen.add(id)
        if (provider.multiaddrs.length) await this.p2p.peerStore.merge(provider.id, { multiaddrs: provider.multiaddrs }).catch(() => undefined)
        const member = await this.ensureMember(id, 3_000)
        if (member === undefined) continue
        yield member
        if (++yielded >= (options.max ?? 20)) break
      }
    } catch (err) {
      if (!signal.aborted) this.log.debug({ err }, 'provider lookup failed')
    } finally {
      controller.abort() // a caller that stopped early ends the DHT query too
    }
  }

  /** Every member that announced `digestHex` (see `providers`). */
  async findProviders(digestHex: string, options: { timeoutMs?: number; max?: number } = {}): Promise<FederationMember[]> {
    const out: FederationMember[] = []
    for await (const member of this.providers(digestHex, options)) out.push(member)
    return out
  }
}

function peerIdFromPublicKeyString(privateKey: PrivateKey): string {
  return peerIdFromString(privateKey.publicKey.toCID().toString()).toString()
}

export function createFederationNode(init: FederationNodeInit, components: FederationNodeComponents = {}): FederationNode {
  return new FederationNode(init, components)
}
