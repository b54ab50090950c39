import { noise } from '@chainsafe/libp2p-noise'
import { bootstrap } from '@libp2p/bootstrap'
import { gossipsub, TopicValidatorResult, type GossipSub, type Message } from '@libp2p/gossipsub'
import { identify } from '@libp2p/identify'
import type { PeerId, PeerInfo, PrivateKey } from '@libp2p/interface'
import { kadDHT, type KadDHT } from '@libp2p/kad-dht'
import { peerIdFromString } from '@libp2p/peer-id'
import { ping } from '@libp2p/ping'
import { tcp } from '@libp2p/tcp'
import { lpStream } from '@libp2p/utils'
import { yamux } from '@libp2p/yamux'
import { multiaddr } from '@multiformats/multiaddr'
import { createLibp2p, type Libp2p } from 'libp2p'
import { createHash } from 'node:crypto'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { create as createDigest } from 'multiformats/hashes/digest'
import { sha256 } from 'multiformats/hashes/sha2'
import type { MembershipRefusalReason } from '../engine/metrics.js'
import { SANDBOX_LANGUAGES } from '../engine/sandbox/languages.js'
import { CertificateVerifier } from './certificates.js'
import { kadDhtBatchWriter, type KadDhtBatchWriter } from './kad-dht-internals.js'
import { noopLogger, type FederationLogger } from './logger.js'
import { MemberKeeper, type MemberKeeperInit } from './member-keeper.js'
import { membershipGate, type MembershipGate } from './membership-gate.js'
import { holdSmallWindowUpdates } from './yamux-window.js'
import { Membership, MEMBERSHIP_PROTOCOL, type FederationMember, type MembershipRefusal, type NodeRegistration } from './membership.js'

export const PROTOCOL_PREFIX = '/svc'
export const DHT_PROTOCOL = '/svc/kad/1.0.0'
export const IDENTIFY_PROTOCOLS = ['/svc/id/1.0.0', '/svc/id/push/1.0.0']
export const PING_PROTOCOL = '/svc/ping/1.0.0'
/** what a peer may use before it is a member: identify, ping and the membership exchange */
export const OPEN_PROTOCOLS = [...IDENTIFY_PROTOCOLS, PING_PROTOCOL, MEMBERSHIP_PROTOCOL]
export const MAX_MESSAGE_BYTES = 32 * 1024 * 1024
/** members a node asks for their provider records of a key it holds none of, in a federation of at most k nodes (`providers`) */
const ASKED_WITHIN_K = 3
/** the kad-dht peer-store tag of routing-table peers (@libp2p/kad-dht KAD_PEER_TAG_NAME) */
const KAD_PEER_TAG = 'kad-peer'

export { MEMBERSHIP_PROTOCOL, type FederationMember, type MembershipRefusal, type NodeRegistration }

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
  /**
   * What this node can do (service-spec §2.7): the daemon declares `nodeCapabilities` of its
   * configuration. Absent: no language and no protocol, one call at a time (how a member reads a
   * registration that declares none).
   */
  capabilities?: NodeRegistration['capabilities']
  /** a peer has this long from its membership exchange's start to a verified certificate (default 5 s) */
  membershipTimeoutMs?: number
  /** how long a refused peer stays refused (default 30 s) */
  denyMs?: number
  /** at most this many refused peers are remembered (default 10,000) */
  maxDenied?: number
  /**
   * gossipsub heartbeat (default 1 s, gossipsub's own): mesh maintenance and lazy gossip (IHAVE)
   * run once per heartbeat, for every topic and peer, whether anything is published or not
   */
  heartbeatMs?: number
  /**
   * gossipsub mesh degree D (default `DEFAULT_GOSSIP_MESH_DEGREE`; gossipsub's own is 6). The
   * publisher sends a change to every connected member (flood publish); the mesh forwards it to
   * members not connected to the publisher, and is redundancy for those that are. Every member
   * receives about D + 1 copies of every change, each read, decrypted, decoded and dropped as a
   * duplicate but one. The other degrees follow from D (`meshDegrees`)
   */
  gossipMeshDegree?: number
  /**
   * libp2p pings every connection this often over its own stream (default 30 s; libp2p's default is
   * 10 s): a closed connection is noticed by TCP and yamux at once, the ping finds a silent one
   */
  connectionPingIntervalMs?: number
  /** do not refuse to start with a certificate the federation would reject (tests of intruders) */
  skipSelfCheck?: boolean
  /** inbound connections accepted per second from one remote host (default 25; libp2p's own default is 5) */
  inboundConnectionsPerHostPerSecond?: number
  /** how the node keeps its members (member-keeper.ts; the bootstrap list is `bootstrap`); false: no redials, no presence */
  memberKeeper?: Omit<MemberKeeperInit, 'bootstrap'> | false
  /**
   * `provideMany` sends a batch of provider records straight to every member, one stream each and
   * no DHT walk, while the federation (this node included) has at most this many nodes (default:
   * kad-dht's k, 20); past it, or with 0, each record is made by a DHT walk (`provide`)
   */
  providerBatchMaxNodes?: number
}

/** How `provideMany` made a batch of provider records. */
export interface ProvideManyResult {
  /** members: one stream per connected member, no walk; walk: `provide` (a DHT walk) per digest */
  path: 'members' | 'walk'
  /** the digests whose records were made (all of them, unless every member or every walk failed) */
  announced: string[]
  /** members path: members that took the whole batch, and those that did not */
  reached: number
  failed: number
}

export interface FederationNodeComponents {
  logger?: FederationLogger
  /** called with the member count whenever it changes (svc_federation_nodes_active) */
  onMembersChanged?: (count: number) => void
  /** called once per refused peer (audit entry, svc_federation_membership_refusals_total) */
  onRefused?: (refusal: MembershipRefusal) => void
}

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }
/** A request/response handler for members: gets the decoded request and the member, returns the response. */
export type MemberRequestHandler = (request: unknown, from: FederationMember) => Promise<unknown>
export type GossipHandler = (payload: unknown, origin: FederationMember) => void | Promise<void>
/**
 * Checks a gossip payload before it is delivered or forwarded: `accept`, `reject` (dropped, not
 * forwarded), or a refusal of the member that published it.
 */
export type GossipValidator = (payload: unknown, publisher: FederationMember) => Promise<GossipVerdict> | GossipVerdict
/**
 * accept: delivered and forwarded; reject: dropped, and gossipsub scores down the peer it came from;
 * ignore: dropped without a penalty (a genuine member's message this node does not want, e.g. too
 * frequent); refuse: dropped and its publisher refused membership
 */
export type GossipVerdict = 'accept' | 'reject' | 'ignore' | { refuse: MembershipRefusalReason; detail: string }

type Services = { gate: MembershipGate; identify: ReturnType<ReturnType<typeof identify>>; ping: ReturnType<ReturnType<typeof ping>>; dht: KadDHT; pubsub: GossipSub }

/** A member request or answer as it travels (one length-prefixed frame of JSON). */
export const encodeMessage = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value))
export const decodeMessage = (bytes: { subarray(): Uint8Array }): unknown => JSON.parse(new TextDecoder().decode(bytes.subarray()))

/** The error answer a member sends for a request its handler threw on (its code, name, message, details). */
export function errorAnswer(err: unknown): { code: unknown; name: string; message: string; details: unknown } {
  const e = err as { code?: unknown; name?: string; message?: string; details?: unknown }
  return { code: e.code ?? null, name: e.name ?? 'Error', message: e.message ?? String(err), details: e.details ?? {} }
}

/** A CIDv1 (raw, sha2-256) whose multihash is the given SHA-256 hex digest. */
export function cidOfDigest(digestHex: string): CID {
  if (!/^[0-9a-f]{64}$/.test(digestHex)) throw new Error(`not a SHA-256 hex digest: ${digestHex}`)
  return CID.createV1(raw.code, createDigest(sha256.code, Uint8Array.from(Buffer.from(digestHex, 'hex'))))
}

/**
 * A federation member's libp2p node: TCP, Noise, Yamux, identify, ping, Kademlia DHT (`/svc/kad`),
 * gossipsub (signed). Noise proves a peer's PeerId; membership is proven after connecting by an
 * exchange of registrations whose certificates are checked against the federation CA
 * (membership.ts). Until a peer is a member it gets identify, ping and that exchange, and nothing
 * else: the membership gate (membership-gate.ts, the first service) holds every other stream,
 * both ways, and every topology notification, until the exchange is verified, and aborts them
 * when it is refused. The DHT lists and keeps members only, and gossip is delivered only when its
 * signed publisher is a member.
 */
export class FederationNode {
  private readonly init: FederationNodeInit
  private readonly log: FederationLogger
  private readonly membership: Membership
  /**
   * Members that left (their connection closed) and have not come back, oldest first: kad-dht keeps
   * them in its routing table until it evicts them, and they must not make the federation look
   * larger than it is (`withinK`).
   */
  private readonly departed = new Set<string>()
  private readonly gossipHandlers = new Map<string, GossipHandler>()
  /** whether this libp2p node's gossip reaches `gossipHandlers` (one listener per libp2p node) */
  private listeningToGossip = false
  private libp2p: Libp2p<Services> | undefined
  private starting: Promise<void> | undefined
  private keeper: MemberKeeper | undefined
  /** kad-dht's internals for provideMany, found once per libp2p node */
  private batchWriterOnce: Promise<KadDhtBatchWriter | undefined> | undefined
  readonly peerId: string
  readonly self: NodeRegistration

  constructor(init: FederationNodeInit, private readonly components: FederationNodeComponents = {}) {
    this.init = init
    this.log = components.logger ?? noopLogger
    const verifier = new CertificateVerifier({ caCertPem: init.caCertPem, revoked: init.revoked ?? [] })
    this.peerId = peerIdFromPublicKeyString(init.privateKey)
    this.self = {
      node_id: this.peerId,
      endpoint: init.endpoint,
      capabilities: init.capabilities ?? { languages: [], max_concurrent: 1, protocols: [] },
      auth: { certificate: init.certPem, public_key: Buffer.from(init.privateKey.publicKey.toMultihash().bytes).toString('base64') },
    }
    // our own certificate must be one the federation accepts
    if (!init.skipSelfCheck) verifier.verify(init.certPem, this.peerId)
    this.membership = new Membership({
      self: this.self,
      verifier,
      timeoutMs: init.membershipTimeoutMs ?? 5_000,
      backoffMs: init.denyMs ?? 30_000,
      maxDenied: init.maxDenied ?? 10_000,
    }, { logger: this.log, onRefused: components.onRefused, onMembersChanged: components.onMembersChanged })
    this.membership.onMember((event, member) => {
      this.departed.delete(member.peerId)
      if (event === 'left') {
        this.departed.add(member.peerId)
        if (this.departed.size > MAX_DEPARTED) this.departed.delete(this.departed.values().next().value!)
      }
    })
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
    return this.membership.members()
  }

  member(peerId: string): FederationMember | undefined {
    return this.membership.member(peerId)
  }

  multiaddrs(): string[] {
    return this.p2p.getMultiaddrs().map((ma) => ma.toString())
  }

  onMember(listener: (event: 'joined' | 'left', member: FederationMember) => void): () => void {
    return this.membership.onMember(listener)
  }

  /** Whether `peerId` was refused and is still within its back-off. */
  isDenied(peerId: string): boolean {
    return this.membership.isDenied(peerId)
  }

  /** Refuses a peer (a member that forged a change, say): disconnected, denied for the back-off, reported. */
  refuse(peerId: string, reason: MembershipRefusalReason, detail: string): Promise<void> {
    return this.membership.refuse(peerId, reason, detail)
  }

  /**
   * The DHT routing table, split by whether each peer proved membership (see
   * `Membership.wasVerified`): `others` is 0 unless a non-member got in.
   */
  routingTable(): { verified: string[]; others: string[] } {
    const table = (this.libp2p?.services.dht as unknown as { routingTable?: { kb?: { toIterable?(): Iterable<{ peerId: PeerId }> } } } | undefined)?.routingTable
    const out = { verified: [] as string[], others: [] as string[] }
    for (const { peerId } of table?.kb?.toIterable?.() ?? []) {
      const id = peerId.toString()
      ;(this.membership.wasVerified(id) ? out.verified : out.others).push(id)
    }
    return out
  }

  start(): Promise<void> {
    this.starting ??= this.doStart()
    return this.starting
  }

  private async doStart(): Promise<void> {
    const denied = (peer: PeerId): boolean => this.membership.isDenied(peer.toString())
    const bootstrapList = this.init.bootstrap ?? []
    const membership = this.membership
    // the DHT hears of, keeps and tells others of members only (and of itself)
    const membersOnly = (info: PeerInfo): PeerInfo =>
      info.id.toString() === this.peerId || membership.wasVerified(info.id.toString()) ? info : { ...info, multiaddrs: [] }
    // a window update once half a stream's window is consumed, not after every frame (yamux-window.ts)
    holdSmallWindowUpdates(this.log)
    const node = await createLibp2p({
      privateKey: this.init.privateKey,
      addresses: { listen: this.init.listen, announce: this.init.announce ?? [] },
      transports: [tcp()],
      connectionEncrypters: [noise()],
      streamMuxers: [yamux()],
      // libp2p pings every connection (every 10 s by its default) and aborts it when a ping is not
      // answered within an adaptive timeout of at least 5 s. On a loaded machine (20 daemons on 2
      // cores) a member that is merely slow then loses every connection, again and again. Our ping
      // protocol (the default is /ipfs/ping, which a node here does not serve), and at least 30 s to
      // answer. Every ping is a new stream both ways (multistream-select, and a peer-store write per
      // stream on each side): with a connection to every member, the 10 s pings were the largest
      // source of streams on an idle member, so every 30 s by default: a silent connection is found
      // within 90 s (TCP and yamux notice a closed one at once)
      connectionMonitor: { protocolPrefix: 'svc', pingInterval: this.init.connectionPingIntervalMs ?? 30_000, pingTimeout: { minTimeout: 30_000, maxTimeout: 60_000 } },
      // libp2p accepts 5 inbound connections per second per remote host and 10 upgrading at once:
      // every member of a federation on one machine (or behind one NAT) is one host, and after a
      // restart or a network blip they all dial at once; refused dials back off for up to 60 s
      connectionManager: { inboundConnectionThreshold: this.init.inboundConnectionsPerHostPerSecond ?? 25, maxIncomingPendingConnections: 64 },
      connectionGater: {
        denyDialMultiaddr: () => false,
        denyDialPeer: denied,
        denyInboundEncryptedConnection: denied,
        denyOutboundEncryptedConnection: denied,
      },
      peerDiscovery: bootstrapList.length ? [bootstrap({ list: bootstrapList, timeout: 100 })] : [],
      services: {
        // first: it wraps the registrar before any other service registers a handler or topology
        gate: membershipGate({ openProtocols: OPEN_PROTOCOLS, admit: (peer) => membership.admit(peer) }),
        identify: identify({ protocolPrefix: 'svc' }),
        ping: ping({ protocolPrefix: 'svc' }),
        dht: kadDHT({
          protocol: DHT_PROTOCOL,
          clientMode: false,
          peerInfoMapper: membersOnly,
          allowQueryWithZeroPeers: true,
          logPrefix: 'svc:dht',
          datastorePrefix: '/svc-dht',
        }),
        pubsub: gossipsub({
          globalSignaturePolicy: 'StrictSign',
          allowPublishToZeroTopicPeers: true,
          emitSelf: false,
          // the publisher sends its own message to every peer subscribed to the topic (not only its
          // mesh): a member's change reaches every connected member in one hop; the mesh (D=3, 2–6
          // by default, see `gossipMeshDegree`) forwards it to the rest
          floodPublish: true,
          ...meshDegrees(this.init.gossipMeshDegree ?? DEFAULT_GOSSIP_MESH_DEGREE),
          heartbeatInterval: this.init.heartbeatMs ?? 1_000,
          // A message arrives once from the publisher and again from mesh peers forwarding it.
          // gossipsub checks a copy's signature before it looks the message up among those seen,
          // unless a fast id finds it first: a hash of every field, signature included, so only a
          // byte-identical copy is taken for the one seen (a forged copy has another id, is checked
          // and rejected, and cannot hide the genuine message)
          fastMsgIdFn: fastMessageId,
          scoreParams: { IPColocationFactorWeight: 0 },
        }),
      },
    })
    this.libp2p = node as unknown as Libp2p<Services>
    membership.attach(node as unknown as Libp2p, (peer) => this.forgetInDht(peer))
    node.addEventListener('peer:connect', (evt) => {
      void membership.ensure(evt.detail.toString()).catch(() => undefined)
    })
    node.addEventListener('peer:disconnect', (evt) => membership.drop(evt.detail.toString(), 'disconnected'))
    await node.handle(MEMBERSHIP_PROTOCOL, (stream, connection) => membership.answer(stream, connection), { runOnLimitedConnection: false, maxInboundStreams: 4 })
    await node.start()
    this.log.info({ peer_id: this.peerId, addrs: this.multiaddrs() }, 'federation node started')
    // bootstrap discovery dials on its own, but without waiting: dial the list now as well
    for (const addr of bootstrapList) void this.dial(addr).catch(() => undefined)
    // and the keeper dials again whatever did not become a member (or stops being one)
    if (this.init.memberKeeper !== false) {
      this.keeper = new MemberKeeper({ bootstrap: bootstrapList, ...this.init.memberKeeper }, { node: this, logger: this.log })
      this.keeper.start()
    }
  }

  /** A refused peer leaves the DHT routing table and loses its routing-table tag in the peer store. */
  private async forgetInDht(peer: PeerId): Promise<void> {
    const node = this.libp2p
    if (node === undefined) return
    const table = (node.services.dht as unknown as { routingTable?: { remove?(peer: PeerId): Promise<void> } }).routingTable
    await table?.remove?.(peer).catch(() => undefined)
    if (await node.peerStore.has(peer)) await node.peerStore.merge(peer, { tags: { [KAD_PEER_TAG]: undefined } })
  }

  async stop(): Promise<void> {
    if (this.starting === undefined) return
    await this.starting.catch(() => undefined)
    this.starting = undefined
    this.keeper?.stop()
    this.keeper = undefined
    const node = this.libp2p
    this.libp2p = undefined
    this.batchWriterOnce = undefined
    this.listeningToGossip = false
    this.membership.detach()
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

  /**
   * The member behind `peerId`, proving membership first when it has not yet been proven
   * (dialing the peer when needed). Undefined when it is not a member or cannot be reached.
   */
  ensureMember(peerId: string): Promise<FederationMember | undefined> {
    return this.membership.ensure(peerId)
  }

  /** Serves a JSON request/response protocol to members only (the gate lets no one else open it). */
  async handleMembers(protocol: string, handler: MemberRequestHandler): Promise<void> {
    await this.p2p.handle(protocol, async (stream, connection) => {
      const signal = AbortSignal.timeout(30_000)
      try {
        const member = this.membership.member(connection.remotePeer.toString())
        if (member === undefined) {
          stream.abort(new Error('not a federation member'))
          return
        }
        const lp = lpStream(stream, { maxDataLength: MAX_MESSAGE_BYTES })
        const request = decodeMessage(await lp.read({ signal }))
        let response: unknown
        try {
          response = { ok: await handler(request, member) }
        } catch (err) {
          response = { error: errorAnswer(err) }
        }
        await lp.write(encodeMessage(response), { signal })
        await stream.close({ signal })
      } catch (err) {
        stream.abort(err as Error)
      }
    }, { runOnLimitedConnection: false })
  }

  /** Stops serving a protocol `handleMembers` served (a stopped node serves nothing). */
  async unhandle(protocol: string): Promise<void> {
    if (this.libp2p !== undefined) await this.libp2p.unhandle(protocol)
  }

  /** The member `peerId` (dialled and verified first if need be); throws when it is not a reachable member. */
  async requireMember(peerId: string): Promise<FederationMember> {
    const member = await this.ensureMember(peerId)
    if (member === undefined) throw new Error(`${peerId} is not a reachable federation member`)
    return member
  }

  /** Sends one JSON request to a member and returns its response; throws on a refusal or an error answer. */
  async request(peerId: string, protocol: string, body: unknown, timeoutMs = 10_000): Promise<unknown> {
    await this.requireMember(peerId)
    const signal = AbortSignal.timeout(timeoutMs)
    const stream = await this.p2p.dialProtocol(peerIdFromString(peerId), protocol, { signal })
    try {
      const lp = lpStream(stream, { maxDataLength: MAX_MESSAGE_BYTES })
      await lp.write(encodeMessage(body), { signal })
      const answer = decodeMessage(await lp.read({ signal })) as { ok?: unknown; error?: { name: string; message: string; code: unknown; details: unknown } }
      await stream.close({ signal }).catch(() => undefined)
      if (answer.error) throw Object.assign(new Error(answer.error.message), { remote: answer.error })
      return answer.ok
    } catch (err) {
      stream.abort(err as Error)
      throw err
    }
  }

  /**
   * Subscribes to a gossip topic. A message is delivered to `handler` (and forwarded to other
   * members) only when its signed publisher is a member and `validate` accepts it; a publisher
   * `validate` refuses is refused membership (publishing what is not JSON on a topic is refused
   * as malformed).
   *
   * `addressesOf`, for a topic whose messages carry their publisher's addresses (presence): when
   * the publisher is not a member yet, the addresses it signed are added to the peer store before
   * its membership is proven, so that the dial goes to them. Without them libp2p looks the peer up
   * in the DHT (a FIND_NODE walk to every member): when a fresh node joined, every member did that
   * walk on its first announcement (207 FIND_NODE requests across 19 members, measured).
   */
  subscribe(topic: string, handler: GossipHandler, validate?: GossipValidator, addressesOf?: (payload: unknown) => readonly string[]): void {
    const pubsub = this.p2p.services.pubsub
    this.gossipHandlers.set(topic, handler)
    pubsub.topicValidators.set(topic, async (_relay: PeerId, message: Message) => {
      if (message.type !== 'signed') return TopicValidatorResult.Reject
      const publisher = message.from.toString()
      if (addressesOf !== undefined && this.membership.member(publisher) === undefined) await this.learnAddresses(message.from, message.data, addressesOf)
      const member = await this.ensureMember(publisher)
      if (member === undefined) return TopicValidatorResult.Reject
      if (validate === undefined) return TopicValidatorResult.Accept
      let payload: unknown
      try {
        payload = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(message.data))
      } catch {
        void this.refuse(publisher, 'malformed', `published a message on ${topic} that is not JSON`)
        return TopicValidatorResult.Reject
      }
      const verdict = await validate(payload, member)
      if (verdict === 'accept') return TopicValidatorResult.Accept
      if (verdict === 'ignore') return TopicValidatorResult.Ignore
      if (verdict !== 'reject') void this.refuse(publisher, verdict.refuse, verdict.detail)
      return TopicValidatorResult.Reject
    })
    if (!this.listeningToGossip) {
      this.listeningToGossip = true
      pubsub.addEventListener('message', (evt) => {
        const message = evt.detail
        if (message.type !== 'signed') return
        const h = this.gossipHandlers.get(message.topic)
        const origin = this.membership.member(message.from.toString())
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

  /** The addresses `peer` announces in `data` (for `subscribe`'s `addressesOf`), added to the peer store; a malformed one is skipped. */
  private async learnAddresses(peer: PeerId, data: Uint8Array, addressesOf: (payload: unknown) => readonly string[]): Promise<void> {
    let payload: unknown
    try {
      payload = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(data))
    } catch {
      return
    }
    const id = peer.toString()
    const addrs = []
    for (const a of addressesOf(payload).slice(0, MAX_LEARNT_ADDRESSES)) {
      if (typeof a !== 'string') continue
      const at = a.indexOf('/p2p/')
      if (at >= 0 && a.slice(at + 5) !== id) continue // another peer's address
      try {
        addrs.push(multiaddr(at >= 0 ? a.slice(0, at) : a))
      } catch {
        // not a multiaddr
      }
    }
    if (addrs.length > 0) await this.p2p.peerStore.merge(peer, { multiaddrs: addrs }).catch(() => undefined)
  }

  /** Stops delivering a topic `subscribe` delivered (its validator goes with it). */
  unsubscribe(topic: string): void {
    this.gossipHandlers.delete(topic)
    const pubsub = this.libp2p?.services.pubsub
    if (pubsub === undefined) return
    pubsub.topicValidators.delete(topic)
    pubsub.unsubscribe(topic)
  }

  /** Publishes a JSON payload (signed by this node) on a topic. */
  async publish(topic: string, payload: unknown): Promise<void> {
    await this.p2p.services.pubsub.publish(topic, encodeMessage(payload))
  }

  /** Announces this node as a provider of the content with `digestHex` (DHT provider record, by a DHT walk). */
  async provide(digestHex: string, timeoutMs = 10_000): Promise<void> {
    await this.p2p.contentRouting.provide(cidOfDigest(digestHex), { signal: AbortSignal.timeout(timeoutMs) })
  }

  /**
   * Announces this node as a provider of every digest in `digests`, as `provide` would, at a
   * fraction of the cost while the federation is small. While it has at most k nodes (kad-dht's
   * bucket size, 20; `providerBatchMaxNodes`), the k closest peers to any key are all its members:
   * the DHT walk `provide` starts with (FIND_NODE) finds nothing new, and then `provide` opens a
   * stream per member for each record. Here: this node's own record of each (kad-dht's reprovider
   * refreshes those), then ONE stream per connected member carrying every ADD_PROVIDER message of
   * the batch (kad-dht's own messages; kad-dht-internals.ts) and a PING whose echo confirms them,
   * all members at once. The size is judged by the larger of the connected members and the
   * verified peers in the DHT routing table, so a node not yet connected to every member of a
   * larger federation does not take the short path. Past k nodes, or when kad-dht's internals are
   * not what the adapter knows (an upgrade), each digest is announced by `provide`, one at a time.
   * `timeoutMs` bounds each member's stream (members path) or each walk.
   */
  async provideMany(digests: readonly string[], timeoutMs = 10_000): Promise<ProvideManyResult> {
    const unique = [...new Set(digests)]
    const cids = unique.map(cidOfDigest) // a malformed digest throws before anything is sent
    const writer = await this.batchWriter()
    const members = this.members()
    if (writer === undefined || unique.length === 0 || !this.withinK(writer)) return this.provideByWalks(unique, timeoutMs)
    const node = this.p2p
    for (const cid of cids) await writer.recordSelf(cid, node.peerId)
    const provider = { id: node.peerId, multiaddrs: node.getMultiaddrs() }
    let reached = 0
    let failed = 0
    await Promise.all(members.map(async (member) => {
      const signal = AbortSignal.timeout(timeoutMs)
      let stream: Awaited<ReturnType<typeof node.dialProtocol>> | undefined
      try {
        stream = await node.dialProtocol(peerIdFromString(member.peerId), DHT_PROTOCOL, { signal })
        await writer.writeRecords(stream, cids, provider, { signal })
        reached++
      } catch (err) {
        failed++
        stream?.abort(err as Error)
        this.log.debug({ err, peer_id: member.peerId, records: cids.length }, 'provider records not delivered to a member')
      }
    }))
    // every member failed: the records are in this node's store only (the reprovider will retry
    // within a day); say so, so the caller may try again sooner
    const announced = members.length > 0 && reached === 0 ? [] : unique
    return { path: 'members', announced, reached, failed }
  }

  private async provideByWalks(digests: readonly string[], timeoutMs: number): Promise<ProvideManyResult> {
    const announced: string[] = []
    for (const digest of digests) {
      try {
        await this.provide(digest, timeoutMs)
        announced.push(digest)
      } catch (err) {
        this.log.debug({ err, digest }, 'provide failed')
      }
    }
    return { path: 'walk', announced, reached: 0, failed: 0 }
  }

  /**
   * Whether the federation has at most k nodes (`providerBatchMaxNodes`, else kad-dht's bucket
   * size): then the k closest peers to any key are all its members. Judged by the larger of the
   * connected members and the verified peers in the DHT routing table, so a node not yet connected
   * to every member of a larger federation does not count it small; members that left and have not
   * come back are not counted (a federation of k nodes where one leaves and another joins would
   * count k + 1 until kad-dht evicted the one that left: walks, for every lookup and record, at the
   * size where they find nothing new).
   */
  private withinK(writer: KadDhtBatchWriter): boolean {
    const maxNodes = this.init.providerBatchMaxNodes ?? writer.k
    const inTable = this.routingTable().verified.filter((id) => !this.departed.has(id)).length
    return Math.max(this.members().length, inTable) + 1 <= maxNodes
  }

  /** kad-dht's internals for `provideMany` (undefined when the adapter does not recognise them, or batches are off) */
  private batchWriter(): Promise<KadDhtBatchWriter | undefined> {
    if (this.init.providerBatchMaxNodes === 0) return Promise.resolve(undefined)
    this.batchWriterOnce ??= kadDhtBatchWriter(this.p2p.services.dht).then((w) => {
      if (w === undefined) this.log.warn({}, 'kad-dht internals not recognised: provider records are made one DHT walk each')
      return w
    })
    return this.batchWriterOnce
  }

  /**
   * Members that announced `digestHex`, yielded as the DHT query finds them (so a caller can try
   * the first one at once); records of non-members are ignored. Ends after `max` members or
   * `timeoutMs`, whichever comes first.
   *
   * While the federation has at most k nodes, the records this node holds answer, when they name
   * a member: every provider record went to every member (`provideMany`), so a walk would ask
   * every member for what this node already has. That walk (kad-dht's GET_PROVIDERS to every
   * member, a stream each) cost about 0.7 CPU-s across 20 loopback nodes per lookup, measured
   * (docs/federation-scale.md). A node without such a record (it restarted: kad-dht keeps records
   * in memory; it joined after the announcement; or the record has not reached it yet) asks
   * `ASKED_WITHIN_K` members for theirs, one GET_PROVIDERS each, and keeps what names a member:
   * a walk did the same with every member, and handled every closer peer each answered (a routing
   * table update and a peer-store write per peer per answer: the largest part of the event-loop
   * stalls of 300 ms-1 s traced on members under churn, docs/federation-scale.md). Past k nodes,
   * or without kad-dht's internals, it walks.
   */
  async *providers(digestHex: string, options: { timeoutMs?: number; max?: number } = {}): AsyncGenerator<FederationMember> {
    const seen = new Set<string>()
    let yielded = 0
    const writer = await this.batchWriter()
    if (writer !== undefined && this.withinK(writer)) {
      const stored = await writer.storedProviders(cidOfDigest(digestHex)).catch(() => [])
      const members: FederationMember[] = []
      for (const id of stored.map(String)) {
        if (id === this.peerId || seen.has(id)) continue
        seen.add(id)
        const member = this.member(id)
        if (member !== undefined) members.push(member)
      }
      if (members.length > 0) {
        yield* members.slice(0, options.max ?? 20)
        return
      }
      seen.clear()
      yield* this.askMembersForRecords(writer, digestHex, options)
      return
    }
    const controller = new AbortController()
    const signal = AbortSignal.any([controller.signal, AbortSignal.timeout(options.timeoutMs ?? 3_000)])
    try {
      for await (const provider of this.p2p.contentRouting.findProviders(cidOfDigest(digestHex), { signal })) {
        const id = provider.id.toString()
        if (id === this.peerId || seen.has(id)) continue
        seen.add(id)
        if (provider.multiaddrs.length) await this.p2p.peerStore.merge(provider.id, { multiaddrs: provider.multiaddrs }).catch(() => undefined)
        const member = await this.ensureMember(id)
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

  /**
   * `providers` within k without a record here: `ASKED_WITHIN_K` members asked at once; the
   * providers their records name that are members (proven now when not connected yet) are yielded
   * and their records kept.
   */
  private async *askMembersForRecords(writer: KadDhtBatchWriter, digestHex: string, options: { timeoutMs?: number; max?: number }): AsyncGenerator<FederationMember> {
    const cid = cidOfDigest(digestHex)
    const asked = this.members().sort(() => Math.random() - 0.5).slice(0, ASKED_WITHIN_K)
    const signal = AbortSignal.timeout(options.timeoutMs ?? 3_000)
    const node = this.p2p
    const answers = await Promise.all(asked.map(async (m) => {
      let stream: Awaited<ReturnType<typeof node.dialProtocol>> | undefined
      try {
        stream = await node.dialProtocol(peerIdFromString(m.peerId), DHT_PROTOCOL, { signal })
        return await writer.askRecords(stream, cid, { signal })
      } catch (err) {
        stream?.abort(err as Error)
        this.log.debug({ err, peer_id: m.peerId }, 'provider records not read from a member')
        return []
      }
    }))
    const seen = new Set<string>()
    let yielded = 0
    for (const provider of answers.flat()) {
      const id = provider.id.toString()
      if (id === this.peerId || seen.has(id)) continue
      seen.add(id)
      // a provider this node is not connected to yet (it just joined) is dialled and proven, as the walk does
      if (this.member(id) === undefined && provider.multiaddrs.length) await this.p2p.peerStore.merge(provider.id, { multiaddrs: provider.multiaddrs }).catch(() => undefined)
      const member = this.member(id) ?? await this.ensureMember(id)
      if (member === undefined) continue
      await writer.storeRecord(cid, provider.id).catch(() => undefined)
      yield member
      if (++yielded >= (options.max ?? 20)) return
    }
  }

  /** Every member that announced `digestHex` (see `providers`). */
  async findProviders(digestHex: string, options: { timeoutMs?: number; max?: number } = {}): Promise<FederationMember[]> {
    const out: FederationMember[] = []
    for await (const member of this.providers(digestHex, options)) out.push(member)
    return out
  }
}

/**
 * The default gossipsub mesh degree. 3, not gossipsub's 6: with flood publish a member that is
 * connected to the publisher (every member, in a federation small enough for all to connect to
 * all) has the change in one hop, and each degree of mesh is one more copy of every change for
 * every member to receive and drop. On 20 nodes here (2 cores) D=6 cost 0.74 CPU-s per change
 * across the federation and D=3 0.59 (D=2 0.45), publish → visible everywhere p50 0.4–0.57 s → 0.17 s
 * (docs/federation-scale.md). 3 is the smallest degree whose random mesh is connected (a random
 * 3-regular graph is, almost surely; a 2-regular one is a union of cycles), so the mesh alone
 * still reaches members the publisher is not connected to. Large federations may raise it.
 */
export const DEFAULT_GOSSIP_MESH_DEGREE = 3

/** addresses taken from one gossiped announcement (`subscribe`'s `addressesOf`) */
const MAX_LEARNT_ADDRESSES = 8

/** departed members remembered (FederationNode.departed): beyond, the oldest is forgotten */
const MAX_DEPARTED = 10_000

/**
 * gossipsub's degrees for a mesh degree D, in the proportions of its defaults (D=6: D_lo 4,
 * D_hi 12, D_score 4, D_out 2, D_lazy 6): D_out < D_lo and D_out ≤ D/2, as gossipsub requires.
 */
export function meshDegrees(D: number): { D: number; Dlo: number; Dhi: number; Dscore: number; Dout: number; Dlazy: number } {
  const d = Math.max(1, Math.floor(D))
  const Dlo = Math.max(1, Math.round((2 * d) / 3))
  return { D: d, Dlo, Dhi: 2 * d, Dscore: Dlo, Dout: Math.min(Math.floor(d / 3), Dlo - 1), Dlazy: d }
}

/** gossipsub's fast message id: SHA-256 over every field of the message as received (see `fastMsgIdFn` above). */
export function fastMessageId(msg: { from?: Uint8Array; seqno?: Uint8Array; topic: string; data?: Uint8Array; signature?: Uint8Array; key?: Uint8Array }): string {
  const h = createHash('sha256')
  for (const field of [msg.from, msg.seqno, Buffer.from(msg.topic), msg.data, msg.signature, msg.key]) {
    const bytes = field ?? new Uint8Array(0)
    // length-prefixed, so that no two different messages hash the same concatenation
    h.update(Buffer.from(Uint32Array.of(bytes.length).buffer)).update(bytes)
  }
  return h.digest('base64')
}

/** What decides a node's declared capabilities (service-spec §2.7), from its configuration. */
export interface NodeCapabilitySettings {
  /** sandbox worker processes (execution.workers): each runs one call at a time, the others wait in the queue */
  sandboxWorkers: number
  /** the doors the node serves besides REST and GraphQL, which it always serves */
  grpc: boolean
}

/**
 * The `capabilities` a node declares: the languages its sandbox runs (`SANDBOX_LANGUAGES`), the
 * calls it runs at once (one per sandbox worker) and the doors it serves, among rest, grpc and
 * graphql.
 */
export function nodeCapabilities(settings: NodeCapabilitySettings): NodeRegistration['capabilities'] {
  return {
    languages: [...SANDBOX_LANGUAGES],
    max_concurrent: settings.sandboxWorkers,
    protocols: settings.grpc ? ['rest', 'grpc', 'graphql'] : ['rest', 'graphql'],
  }
}

function peerIdFromPublicKeyString(privateKey: PrivateKey): string {
  return peerIdFromString(privateKey.publicKey.toCID().toString()).toString()
}

export function createFederationNode(init: FederationNodeInit, components: FederationNodeComponents = {}): FederationNode {
  return new FederationNode(init, components)
}
