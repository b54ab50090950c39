import type { Connection, PeerId, Stream } from '@libp2p/interface'
import { peerIdFromString } from '@libp2p/peer-id'
import { lpStream } from '@libp2p/utils'
import type { Libp2p } from 'libp2p'
import { LruCache } from '../engine/lru.js'
import type { MembershipRefusalReason } from '../engine/metrics.js'
import { MembershipError, type CertificateVerifier, type MembershipFailure, type VerifiedMember } from './certificates.js'
import { stallAwareTimeout } from './deadline.js'
import type { FederationLogger } from './logger.js'

export const MEMBERSHIP_PROTOCOL = '/svc/membership/1.0.0'
/** a registration with its certificate is a few KiB: an answer longer than this is refused unread */
export const MAX_REGISTRATION_BYTES = 64 * 1024

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

/** One refusal: the peer is disconnected and its redials are refused until `denied_until`. */
export interface MembershipRefusal {
  peer_id: string
  reason: MembershipRefusalReason
  detail: string
  /** the address it connected from (or was dialled at), when it was connected */
  remote_addr: string | null
  denied_until: string
}

export interface MembershipInit {
  self: NodeRegistration
  verifier: CertificateVerifier
  /** connect → verified deadline; any other outcome by then is a refusal */
  timeoutMs: number
  /** how long a refused peer stays refused (both ways, through the connection gater) */
  backoffMs: number
  /** at most this many refused peers are remembered (least recently refused are forgotten first) */
  maxDenied: number
}

export interface MembershipComponents {
  logger: FederationLogger
  /** called once per refusal (audit, metrics) */
  onRefused?: ((refusal: MembershipRefusal) => void) | undefined
  /** called with the member count whenever it changes */
  onMembersChanged?: ((count: number) => void) | undefined
}

/** A failure of the exchange that names its refusal reason. */
class Refused extends Error {
  constructor(readonly reason: MembershipRefusalReason, message: string) {
    super(message)
  }
}

const FAILURE_REASONS: Record<MembershipFailure, MembershipRefusalReason> = {
  malformed: 'malformed', untrusted_chain: 'bad_chain', not_yet_valid: 'not_yet_valid', expired: 'expired', revoked: 'revoked', peer_id_mismatch: 'peer_id_mismatch',
}

/** The refusal reason of whatever ended an exchange. */
function reasonOf(err: unknown, deadline: AbortSignal): MembershipRefusalReason {
  if (err instanceof Refused) return err.reason
  if (err instanceof MembershipError) return FAILURE_REASONS[err.failure]
  const name = (err as Error | undefined)?.name ?? ''
  if (name === 'UnsupportedProtocolError') return 'no_protocol'
  if (name === 'InvalidDataLengthError' || name === 'InvalidDataLengthLengthError') return 'oversized'
  if (deadline.aborted || name === 'AbortError' || name === 'TimeoutError') return 'timeout'
  return 'stream_reset'
}

const encode = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value))

function parse(bytes: { subarray(): Uint8Array }): unknown {
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray()))
  } catch (err) {
    throw new Refused('malformed', `the registration is not JSON: ${(err as Error).message}`)
  }
}

const isStrings = (v: unknown, max: number): v is string[] => Array.isArray(v) && v.length <= max && v.every((x) => typeof x === 'string' && x.length <= 64)

/** A claimed registration as this node keeps it (only the fields it knows, bounded). */
function registrationOf(claim: unknown, peerId: string): NodeRegistration {
  const r = claim as Partial<NodeRegistration> | null
  if (r === null || typeof r !== 'object' || Array.isArray(r) || typeof r.auth?.certificate !== 'string') {
    throw new Refused('malformed', 'the registration carries no certificate')
  }
  if (r.node_id !== peerId) throw new Refused('peer_id_mismatch', `the registration names ${JSON.stringify(r.node_id)}, the connection is ${peerId}`)
  const caps = (r.capabilities ?? {}) as Partial<NodeRegistration['capabilities']>
  return {
    node_id: peerId,
    endpoint: typeof r.endpoint === 'string' && r.endpoint.length <= 2048 ? r.endpoint : '',
    capabilities: {
      languages: isStrings(caps.languages, 16) ? caps.languages : [],
      max_concurrent: Number.isInteger(caps.max_concurrent) && caps.max_concurrent! > 0 ? caps.max_concurrent! : 1,
      protocols: isStrings(caps.protocols, 16) ? caps.protocols : [],
    },
    auth: { certificate: r.auth.certificate, public_key: typeof r.auth.public_key === 'string' && r.auth.public_key.length <= 1024 ? r.auth.public_key : '' },
  }
}

/**
 * Federation membership, failing closed. After connecting, each side asks the other for its
 * registration over `/svc/membership/1.0.0` and checks its certificate (chain to the federation
 * CA, validity, revocation, the PeerId Noise proved). Any outcome other than a verified
 * certificate within `timeoutMs` of the exchange's start (of this process's running time: a
 * deadline this process was too stalled to notice in time starts again, deadline.ts) is a
 * refusal: silence, garbage, an oversized or slow answer, a reset, another PeerId, a second
 * exchange that disagrees with the first. A refused peer is disconnected, logged at warn,
 * reported (`onRefused`), forgotten by the DHT, and refused both ways for `backoffMs` (a bounded
 * deny list).
 *
 * `admit` is what the membership gate (membership-gate.ts) asks for every stream and topology.
 */
export class Membership {
  private node: Libp2p | undefined
  private forget: ((peer: PeerId) => Promise<void>) | undefined
  private stopping = false
  private readonly membersById = new Map<string, FederationMember>()
  private readonly pending = new Map<string, Promise<FederationMember | undefined>>()
  /** refused PeerId → until when (ms) */
  private readonly denied: LruCache<number>
  /** PeerIds whose certificate this node verified (connected or not since), until refused; bounded */
  private readonly verified: LruCache<VerifiedMember>
  private readonly listeners = new Set<(event: 'joined' | 'left', member: FederationMember) => void>()
  private readonly log: FederationLogger

  constructor(private readonly init: MembershipInit, private readonly components: MembershipComponents) {
    this.log = components.logger
    this.denied = new LruCache<number>(init.maxDenied, () => undefined)
    this.verified = new LruCache<VerifiedMember>(init.maxDenied, () => undefined)
  }

  /** Starts answering for `node`; `forget` removes a refused peer from the DHT (routing table, peer tags). */
  attach(node: Libp2p, forget?: (peer: PeerId) => Promise<void>): void {
    this.node = node
    this.forget = forget
    this.stopping = false
  }

  /** Stops: no more exchanges or refusals (a node that stops resets its own streams). */
  detach(): void {
    this.stopping = true
    this.node = undefined
    this.membersById.clear()
    this.pending.clear()
    this.components.onMembersChanged?.(0)
  }

  get self(): NodeRegistration {
    return this.init.self
  }

  members(): FederationMember[] {
    return [...this.membersById.values()]
  }

  member(peerId: string): FederationMember | undefined {
    return this.membersById.get(peerId)
  }

  isMember(peerId: string): boolean {
    return this.membersById.has(peerId)
  }

  /**
   * Whether `peerId` proved membership (now or while it was connected), has not been refused
   * since, and its certificate is still valid: the DHT keeps and lists such peers only.
   */
  wasVerified(peerId: string): boolean {
    if (this.membersById.has(peerId)) return true
    const known = this.verified.take(peerId)
    if (known === undefined || Date.parse(known.validTo) < Date.now()) return false
    this.verified.put(peerId, known)
    return true
  }

  onMember(listener: (event: 'joined' | 'left', member: FederationMember) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Whether `peerId` was refused and its back-off has not ended. */
  isDenied(peerId: string): boolean {
    const until = this.denied.take(peerId)
    if (until === undefined || until < Date.now()) return false
    this.denied.put(peerId, until)
    return true
  }

  /** How many refused peers are remembered (bounded by `maxDenied`). */
  get deniedCount(): number {
    return this.denied.size
  }

  /** For the gate: true for a member, false for a refused peer, else the outcome of its exchange. */
  admit(peer: PeerId): boolean | Promise<boolean> {
    const id = peer.toString()
    if (this.membersById.has(id)) return true
    if (this.node === undefined || this.stopping || this.isDenied(id)) return false
    return this.ensure(id).then((m) => m !== undefined)
  }

  /**
   * The member behind `peerId`, proving membership first when it has not been proven (dialling the
   * peer when it is not connected). Undefined when it is refused or cannot be reached.
   */
  ensure(peerId: string): Promise<FederationMember | undefined> {
    if (peerId === this.init.self.node_id) return Promise.resolve(undefined)
    const known = this.membersById.get(peerId)
    if (known) return Promise.resolve(known)
    if (this.isDenied(peerId) || this.node === undefined || this.stopping) return Promise.resolve(undefined)
    let pending = this.pending.get(peerId)
    if (pending === undefined) {
      pending = this.prove(peerId).finally(() => this.pending.delete(peerId))
      this.pending.set(peerId, pending)
    }
    return pending
  }

  private connected(peerId: string): boolean {
    return (this.node?.getConnections(peerIdFromString(peerId)) ?? []).some((c) => c.status === 'open')
  }

  /** Our side of the exchange: we send our registration and check the peer's answer. */
  private async prove(peerId: string): Promise<FederationMember | undefined> {
    const node = this.node!
    const peer = peerIdFromString(peerId)
    const deadline = stallAwareTimeout(this.init.timeoutMs)
    if (!this.connected(peerId)) {
      // a peer we are not connected to: unreachable is not a refusal (nothing was exchanged)
      try {
        await node.dial(peer, { signal: deadline })
      } catch (err) {
        this.log.debug({ peer_id: peerId, err }, 'peer unreachable for a membership exchange')
        return undefined
      }
    }
    for (let attempt = 0; ; attempt++) {
      try {
        const stream = await node.dialProtocol(peer, MEMBERSHIP_PROTOCOL, { signal: deadline })
        try {
          const lp = lpStream(stream, { maxDataLength: MAX_REGISTRATION_BYTES })
          await lp.write(encode(this.init.self), { signal: deadline })
          const answer = parse(await lp.read({ signal: deadline }))
          const member = this.check(peerId, answer)
          await stream.close({ signal: deadline }).catch(() => stream.abort(new Error('closing')))
          return member
        } catch (err) {
          stream.abort(err as Error)
          throw err
        }
      } catch (err) {
        if (this.stopping || this.node !== node) return undefined
        const reason = reasonOf(err, deadline)
        // the connection the exchange ran on closed under it while another is open (a duplicate
        // connection pruned): once more on another one, within the same deadline
        if (reason === 'stream_reset' && attempt === 0 && !deadline.aborted && this.connected(peerId)) continue
        if (this.slowNotHostile(peerId, reason)) {
          // it proved itself on its own exchange meanwhile: a member
          const member = this.membersById.get(peerId)
          if (member) return member
          // a member we verified before, too slow this time (a loaded machine, a restart): not refused;
          // disconnected, and dialled again later (member-keeper.ts)
          this.log.info({ peer_id: peerId, reason, detail: (err as Error).message }, 'membership exchange with a known member failed: disconnected, not refused')
          await node.hangUp(peer).catch(() => undefined)
          return undefined
        }
        await this.refuse(peerId, reason, (err as Error).message)
        return undefined
      }
    }
  }

  /** The peer's side, answered: we read its registration, check it, and answer with ours. */
  async answer(stream: Stream, connection: Connection): Promise<void> {
    const peerId = connection.remotePeer.toString()
    const deadline = stallAwareTimeout(this.init.timeoutMs)
    const lp = lpStream(stream, { maxDataLength: MAX_REGISTRATION_BYTES })
    try {
      this.check(peerId, parse(await lp.read({ signal: deadline })))
    } catch (err) {
      stream.abort(err as Error)
      const reason = reasonOf(err, deadline)
      // a known member slow to send its registration: our own exchange with it decides (see prove)
      if (this.slowNotHostile(peerId, reason)) return
      if (!this.stopping && this.node !== undefined) await this.refuse(peerId, reason, (err as Error).message)
      return
    }
    try {
      await lp.write(encode(this.init.self), { signal: deadline })
      await stream.close({ signal: deadline })
    } catch (err) {
      // the peer is verified; if it did not get our answer, its side of the exchange decides
      stream.abort(err as Error)
    }
  }

  /**
   * Whether an exchange that ran out of time or was reset concerns a peer that is a member (it
   * proved itself on the exchange it opened) or whose certificate this node verified before (a
   * restarted member, or a member on a machine too loaded to answer in time). Such a peer is not
   * refused: refusing would deny a legitimate member for the whole back-off, and both sides of a
   * loaded federation would keep refusing each other. A peer never verified is refused as before.
   */
  private slowNotHostile(peerId: string, reason: MembershipRefusalReason): boolean {
    if (reason !== 'timeout' && reason !== 'stream_reset') return false
    return this.wasVerified(peerId)
  }

  /** Checks a registration claimed by `peerId` (whose identity Noise proved) and admits the peer. Throws the refusal. */
  private check(peerId: string, claim: unknown): FederationMember {
    const registration = registrationOf(claim, peerId)
    const certificate = this.init.verifier.verify(registration.auth.certificate, peerId)
    const known = this.membersById.get(peerId)
    if (known) {
      if (known.certificate.fingerprint256 !== certificate.fingerprint256) {
        throw new Refused('disagreement', `a second exchange presented certificate ${certificate.serial}, the first ${known.certificate.serial}`)
      }
      return known
    }
    if (this.isDenied(peerId)) throw new Refused('stream_reset', 'refused while its exchange ran')
    const member: FederationMember = { peerId, registration, certificate, verified_at: new Date().toISOString() }
    // the peer disconnected while its answer was on its way (it stopped just after answering):
    // its peer:disconnect has been handled already and no other comes, so admitting it now would
    // keep a member that is gone until it connects again. Not refused: it proved itself.
    if (!this.connected(peerId)) {
      this.log.debug({ peer_id: peerId }, 'membership exchange finished after the peer disconnected: not admitted')
      return member
    }
    this.membersById.set(peerId, member)
    this.verified.put(peerId, certificate)
    this.components.onMembersChanged?.(this.membersById.size)
    this.log.info({ peer_id: peerId, endpoint: registration.endpoint, serial: certificate.serial }, 'federation member joined')
    for (const l of this.listeners) l('joined', member)
    return member
  }

  /**
   * Refuses `peerId`: no longer a member, disconnected, its redials refused both ways for the
   * back-off period, forgotten by the DHT; logged at warn and reported once.
   */
  async refuse(peerId: string, reason: MembershipRefusalReason, detail: string): Promise<void> {
    if (peerId === this.init.self.node_id) return
    const node = this.node
    const peer = peerIdFromString(peerId)
    const already = this.isDenied(peerId)
    const until = Date.now() + this.init.backoffMs
    this.denied.put(peerId, until)
    this.verified.take(peerId)
    this.drop(peerId, `refused: ${reason}`)
    if (!already) {
      const remote = node?.getConnections(peer)[0]?.remoteAddr.toString() ?? null
      const refusal: MembershipRefusal = { peer_id: peerId, reason, detail: detail.slice(0, 500), remote_addr: remote, denied_until: new Date(until).toISOString() }
      this.log.warn({ peer_id: peerId, reason, detail: refusal.detail, remote_addr: remote }, 'peer refused federation membership: disconnected')
      this.components.onRefused?.(refusal)
    }
    await node?.hangUp(peer).catch(() => undefined)
    await this.forget?.(peer).catch(() => undefined)
  }

  /** Drops a member (on refusal, or on disconnect when it has no other connection). */
  drop(peerId: string, why: string): void {
    const member = this.membersById.get(peerId)
    if (member === undefined) return
    if (why === 'disconnected' && this.connected(peerId)) return
    this.membersById.delete(peerId)
    this.components.onMembersChanged?.(this.membersById.size)
    this.log.info({ peer_id: peerId, reason: why }, 'federation member left')
    for (const l of this.listeners) l('left', member)
  }
}
