import { SvcError } from '../core/errors.js'
import type { CatalogReplica } from '../engine/replication/catalog-replica.js'
import type { FederationMemberStatus, FederationNodeInfo } from '../engine/replication/federation-port.js'
import { MembershipError, type CertificateVerifier } from './certificates.js'
import { noopLogger, type FederationLogger } from './logger.js'
import { checkRegistrationKey } from './registration-key.js'
import { MemberStatusService } from './member-status.js'
import type { FederationNode, NodeRegistration } from './node.js'

export const NODES_TOPIC = 'svc/nodes/1'
export const REGISTER_PROTOCOL = '/svc/register/1.0.0'

export interface RegistrarInit {
  /** PeerIds of registry nodes to register with after start (may be empty: every member is a registry) */
  registryPeers?: string[]
  /**
   * a node known from a registration only (not connected) is listed until it has not been heard of
   * for this long (default 1 h); this node renews its own registration with its members at a third of it
   */
  registrationTtlMs?: number
  /** at most this many nodes known from registrations only (default 10,000; the least recently heard of go first) */
  maxRegistrations?: number
}

interface HeardRegistration {
  registration: NodeRegistration
  /** when it was last registered, broadcast, or seen connected (ms) */
  heardAt: number
}

export interface RegistrarComponents {
  node: FederationNode
  /** checks a registration's certificate against its node_id */
  verifier: CertificateVerifier
  /** this node's catalog digest, for the member status */
  replica: Pick<CatalogReplica, 'digest'>
  logger?: FederationLogger
}

/**
 * Node registration and the member list (service-spec §2.7): registers this node with the
 * configured registry peers, accepts registrations (`/svc/register/1.0.0` from members, or REST)
 * whose certificate binds their node_id and broadcasts them (`svc/nodes/1`), and lists every known
 * node with its status (member-status.ts).
 */
export class Registrar {
  private readonly log: FederationLogger
  /** registrations learnt from a registry's broadcast (members not connected to us directly), least recently heard of first */
  private readonly registered = new Map<string, HeardRegistration>()
  private readonly memberStatusService: MemberStatusService
  private readonly ttlMs: number
  private readonly maxRegistrations: number
  private renewTimer: NodeJS.Timeout | undefined
  private offMembers: (() => void) | undefined

  constructor(
    private readonly init: RegistrarInit,
    private readonly c: RegistrarComponents,
  ) {
    this.log = c.logger ?? noopLogger
    this.ttlMs = init.registrationTtlMs ?? 3_600_000
    this.maxRegistrations = init.maxRegistrations ?? 10_000
    this.memberStatusService = new MemberStatusService({ node: c.node, replica: c.replica, registered: () => this.current() })
  }

  async start(): Promise<void> {
    const { node, verifier } = this.c
    node.subscribe(NODES_TOPIC, (payload) => {
      const registration = payload as NodeRegistration
      try {
        verifier.verify(registration.auth.certificate, registration.node_id)
        checkRegistrationKey(registration.auth.public_key, registration.auth.certificate, registration.node_id)
        this.heard(registration)
      } catch {
        // an invalid registration is not applied
      }
    })
    await node.handleMembers(REGISTER_PROTOCOL, async (request) => this.register(request))
    await this.memberStatusService.start()
    // a member that leaves was heard of until then: its registration (if any) counts from now
    this.offMembers = node.onMember((event, member) => {
      const known = this.registered.get(member.peerId)
      if (event === 'left' && known) this.touch(member.peerId, known)
    })
    // renewal: this node's registration, broadcast again before members forget it
    const every = Math.max(1_000, Math.floor(this.ttlMs / 3))
    this.renewTimer = setInterval(() => {
      if (node.members().length > 0) void node.publish(NODES_TOPIC, node.self).catch((err: unknown) => this.log.debug({ err }, 'registration renewal failed'))
    }, Math.round(every * (0.9 + Math.random() * 0.2)))
    this.renewTimer.unref()
    void this.registerWithRegistries()
  }

  async stop(): Promise<void> {
    if (this.renewTimer) clearInterval(this.renewTimer)
    this.renewTimer = undefined
    this.offMembers?.()
    this.offMembers = undefined
    this.c.node.unsubscribe(NODES_TOPIC)
    await this.c.node.unhandle(REGISTER_PROTOCOL)
    await this.memberStatusService.stop()
  }

  nodes(): FederationNodeInfo[] {
    const { node } = this.c
    const info = (r: NodeRegistration, self: boolean, verified_at: string | null): FederationNodeInfo =>
      ({ node_id: r.node_id, endpoint: r.endpoint, capabilities: r.capabilities, self, verified_at })
    const out = new Map<string, FederationNodeInfo>()
    out.set(node.peerId, info(node.self, true, null))
    for (const m of node.members()) out.set(m.peerId, info(m.registration, false, m.verified_at))
    for (const [id, r] of this.current()) if (!out.has(id)) out.set(id, info(r, false, null))
    return [...out.values()].sort((a, b) => (a.self ? -1 : b.self ? 1 : a.node_id.localeCompare(b.node_id)))
  }

  memberStatus(): Promise<FederationMemberStatus[]> {
    return this.memberStatusService.statuses()
  }

  /**
   * Checks a registration's certificate against its node_id, and its public key (when given)
   * against the certificate (registration-key.ts), broadcasts it, returns the node list.
   */
  async register(raw: unknown): Promise<FederationNodeInfo[]> {
    const r = raw as Partial<NodeRegistration> | null
    if (r === null || typeof r !== 'object' || typeof r.node_id !== 'string' || typeof r.endpoint !== 'string' || typeof r.auth?.certificate !== 'string') {
      throw new SvcError('VALIDATION_FAILED', 'a registration needs node_id, endpoint, capabilities and auth.certificate')
    }
    try {
      this.c.verifier.verify(r.auth.certificate, r.node_id)
    } catch (err) {
      const failure = err instanceof MembershipError ? err.failure : 'malformed'
      throw new SvcError('PERMISSION_DENIED', `registration refused: ${(err as Error).message}`, { details: { failure } })
    }
    checkRegistrationKey(r.auth.public_key, r.auth.certificate, r.node_id)
    const registration: NodeRegistration = {
      node_id: r.node_id, endpoint: r.endpoint,
      capabilities: { languages: r.capabilities?.languages ?? [], max_concurrent: r.capabilities?.max_concurrent ?? 1, protocols: r.capabilities?.protocols ?? [] },
      auth: { certificate: r.auth.certificate, public_key: r.auth.public_key ?? '' },
    }
    this.heard(registration)
    await this.c.node.publish(NODES_TOPIC, registration).catch(() => undefined)
    return this.nodes()
  }

  /**
   * The registrations heard of within the TTL (connected members count as heard of now); the
   * others are forgotten.
   */
  private current(): Map<string, NodeRegistration> {
    const now = Date.now()
    for (const m of this.c.node.members()) {
      const known = this.registered.get(m.peerId)
      if (known) this.touch(m.peerId, known, now)
    }
    const out = new Map<string, NodeRegistration>()
    for (const [id, known] of this.registered) {
      if (now - known.heardAt > this.ttlMs) this.registered.delete(id)
      else out.set(id, known.registration)
    }
    return out
  }

  /** A registration registered or broadcast now: kept (bounded: the least recently heard of go first). */
  private heard(registration: NodeRegistration): void {
    if (registration.node_id === this.c.node.peerId) return
    this.touch(registration.node_id, { registration, heardAt: 0 })
    for (const id of this.registered.keys()) {
      if (this.registered.size <= this.maxRegistrations) break
      this.registered.delete(id)
    }
  }

  /** Moves an entry to the most recently heard of end. */
  private touch(id: string, known: HeardRegistration, now = Date.now()): void {
    this.registered.delete(id)
    this.registered.set(id, { ...known, heardAt: now })
  }

  private async registerWithRegistries(): Promise<void> {
    const { node } = this.c
    for (const peer of this.init.registryPeers ?? []) {
      if (peer === node.peerId) continue
      try {
        const list = await node.request(peer, REGISTER_PROTOCOL, node.self) as FederationNodeInfo[]
        this.log.info({ registry: peer, nodes: list.length }, 'registered with the federation registry')
      } catch (err) {
        this.log.warn({ registry: peer, err }, 'registration failed')
      }
    }
  }
}
