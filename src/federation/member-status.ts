import { X509Certificate } from 'node:crypto'
import type { CatalogReplica } from '../engine/replication/catalog-replica.js'
import type { FederationMemberStatus } from '../engine/replication/federation-port.js'
import type { FederationNode, NodeRegistration } from './node.js'

/** A member asks another for its replicated-catalog digest (members only, like every member protocol). */
export const MEMBER_STATUS_PROTOCOL = '/svc/member-status/1.0.0'

const DEFAULT_TIMEOUT_MS = 3_000

interface CatalogDigest {
  digest: string
  entries: number
  branch_moves: number
}

export interface MemberStatusComponents {
  node: FederationNode
  replica: Pick<CatalogReplica, 'digest'>
  /** nodes known from registrations only (not connected to this node) */
  registered: () => ReadonlyMap<string, NodeRegistration>
}

/**
 * What operators compare across a federation: each member's certificate (subject, serial, expiry),
 * when it was last heard from, and its catalog digest beside this node's. The digest travels over
 * its own small member protocol and is asked of every connected member on demand (in parallel,
 * each bounded by `timeoutMs`); nothing is polled in the background.
 */
export class MemberStatusService {
  private readonly lastSeen = new Map<string, string>()

  constructor(
    private readonly c: MemberStatusComponents,
    private readonly timeoutMs = DEFAULT_TIMEOUT_MS,
  ) {}

  async start(): Promise<void> {
    await this.c.node.handleMembers(MEMBER_STATUS_PROTOCOL, async () => this.ownDigest())
  }

  async stop(): Promise<void> {
    await this.c.node.unhandle(MEMBER_STATUS_PROTOCOL)
  }

  /** This node first, then connected members, then nodes known from registrations only. */
  async statuses(): Promise<FederationMemberStatus[]> {
    const { node } = this.c
    const now = new Date().toISOString()
    const self: FederationMemberStatus = {
      ...describe(node.self), self: true, connected: true, verified_at: null, last_seen_at: now, catalog: await this.ownDigest(),
    }
    const members = await Promise.all(node.members().map(async (m): Promise<FederationMemberStatus> => {
      const base = { ...describe(m.registration), self: false, connected: true, verified_at: m.verified_at }
      try {
        const answer = await node.request(m.peerId, MEMBER_STATUS_PROTOCOL, {}, this.timeoutMs)
        const catalog = digestOf(answer)
        this.lastSeen.set(m.peerId, new Date().toISOString())
        return { ...base, last_seen_at: this.lastSeen.get(m.peerId)!, catalog }
      } catch (err) {
        return { ...base, last_seen_at: this.lastSeen.get(m.peerId) ?? m.verified_at, catalog: null, error: (err as Error).message }
      }
    }))
    const connected = new Set([node.peerId, ...members.map((m) => m.node_id)])
    const others = [...this.c.registered().values()]
      .filter((r) => !connected.has(r.node_id))
      .map((r): FederationMemberStatus => ({
        ...describe(r), self: false, connected: false, verified_at: null, last_seen_at: this.lastSeen.get(r.node_id) ?? null,
        catalog: null, error: 'not connected to this node',
      }))
    const byId = (a: FederationMemberStatus, b: FederationMemberStatus): number => a.node_id.localeCompare(b.node_id)
    return [self, ...members.sort(byId), ...others.sort(byId)]
  }

  private async ownDigest(): Promise<CatalogDigest> {
    const { digest, entries, branch_moves } = await this.c.replica.digest()
    return { digest, entries, branch_moves }
  }
}

function describe(r: NodeRegistration): Pick<FederationMemberStatus, 'node_id' | 'endpoint' | 'certificate'> {
  let certificate: FederationMemberStatus['certificate'] = null
  try {
    const cert = new X509Certificate(r.auth.certificate)
    certificate = { subject: cert.subject.replace(/\n/g, ', '), serial: cert.serialNumber, expires_at: new Date(cert.validTo).toISOString() }
  } catch {
    // a registration whose certificate does not parse was refused when it arrived; show none
  }
  return { node_id: r.node_id, endpoint: r.endpoint, certificate }
}

/** A peer's answer, checked before it is shown. */
function digestOf(answer: unknown): CatalogDigest {
  const a = answer as Partial<CatalogDigest> | null
  if (a === null || typeof a !== 'object' || typeof a.digest !== 'string' || !/^[0-9a-f]{64}$/.test(a.digest)
    || !Number.isInteger(a.entries) || !Number.isInteger(a.branch_moves)) {
    throw new Error('the member answered a malformed digest')
  }
  return { digest: a.digest, entries: a.entries!, branch_moves: a.branch_moves! }
}
