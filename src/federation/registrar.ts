import { SvcError } from '../core/errors.js'
import type { CatalogReplica } from '../engine/replication/catalog-replica.js'
import type { FederationMemberStatus, FederationNodeInfo } from '../engine/replication/federation-port.js'
import { MembershipError, type CertificateVerifier } from './certificates.js'
import { noopLogger, type FederationLogger } from './logger.js'
import { MemberStatusService } from './member-status.js'
import type { FederationNode, NodeRegistration } from './node.js'

export const NODES_TOPIC = 'svc/nodes/1'
export const REGISTER_PROTOCOL = '/svc/register/1.0.0'

export interface RegistrarInit {
  /** PeerIds of registry nodes to register with after start (may be empty: every member is a registry) */
  registryPeers?: string[]
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
  /** registrations learnt from a registry's broadcast (members not connected to us directly) */
  private readonly registered = new Map<string, NodeRegistration>()
  private readonly memberStatusService: MemberStatusService

  constructor(
    private readonly init: RegistrarInit,
    private readonly c: RegistrarComponents,
  ) {
    this.log = c.logger ?? noopLogger
    this.memberStatusService = new MemberStatusService({ node: c.node, replica: c.replica, registered: () => this.registered })
  }

  async start(): Promise<void> {
    const { node, verifier } = this.c
    node.subscribe(NODES_TOPIC, (payload) => {
      const registration = payload as NodeRegistration
      try {
        verifier.verify(registration.auth.certificate, registration.node_id)
        if (registration.node_id !== node.peerId) this.registered.set(registration.node_id, registration)
      } catch {
        // an invalid registration is not applied
      }
    })
    await node.handleMembers(REGISTER_PROTOCOL, async (request) => this.register(request))
    await this.memberStatusService.start()
    void this.registerWithRegistries()
  }

  async stop(): Promise<void> {
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
    for (const [id, r] of this.registered) if (!out.has(id)) out.set(id, info(r, false, null))
    return [...out.values()].sort((a, b) => (a.self ? -1 : b.self ? 1 : a.node_id.localeCompare(b.node_id)))
  }

  memberStatus(): Promise<FederationMemberStatus[]> {
    return this.memberStatusService.statuses()
  }

  /** Checks a registration's certificate against its node_id, broadcasts it, returns the node list. */
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
    const registration: NodeRegistration = {
      node_id: r.node_id, endpoint: r.endpoint,
      capabilities: { languages: r.capabilities?.languages ?? [], max_concurrent: r.capabilities?.max_concurrent ?? 1, protocols: r.capabilities?.protocols ?? [] },
      auth: { certificate: r.auth.certificate, public_key: r.auth.public_key ?? '' },
    }
    if (registration.node_id !== this.c.node.peerId) this.registered.set(registration.node_id, registration)
    await this.c.node.publish(NODES_TOPIC, registration).catch(() => undefined)
    return this.nodes()
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
