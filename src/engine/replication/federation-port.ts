import type { Receipt } from '../../core/receipt.js'
import type { CachedResult, ResultKeyFields } from '../executions/result-cache.js'
import type { Principal } from '../types.js'
import type { SyncBatch } from './catalog-replica.js'

/** A federation member as the engine sees it (service-spec §2.7 registration plus liveness). */
export interface FederationNodeInfo {
  node_id: string
  endpoint: string
  capabilities: { languages: string[]; max_concurrent: number; protocols: string[] }
  self: boolean
  verified_at: string | null
}

/** A member as an operator sees it: certificate, liveness and its catalog digest beside this node's. */
export interface FederationMemberStatus {
  node_id: string
  endpoint: string
  self: boolean
  /** connected and verified now (false: known from a registration only) */
  connected: boolean
  certificate: { subject: string; serial: string; expires_at: string } | null
  verified_at: string | null
  /** when this node last heard from the member (its last answer; now for this node) */
  last_seen_at: string | null
  /** the member's replicated-catalog digest as it answered just now (null: it did not answer) */
  catalog: { digest: string; entries: number; branch_moves: number } | null
  /** why `catalog` is null */
  error?: string
}

export interface FederatedDiscovery {
  rufid: string
  rufid_short: string
  content_digest: string | null
  function_name: string | null
  versions: string[]
  nodes: Array<{ node_id: string; endpoint: string; source: 'self' | 'dht' | 'catalog' | 'member' }>
}

/** A local miss of a deterministic call, asked of the members (`FederationPort.findResult`). */
export interface RemoteResultQuery extends ResultKeyFields {
  /** resultCacheKey of the fields */
  key: string
  /** the full RUFID being called (its tenant is `tenant`) */
  rufid: string
  /** the call's arguments (checked against each receipt's arguments_digest) */
  args: unknown
}

/** A result members vouched for, verified under the node's trust policy. */
export interface RemoteResult {
  result: unknown
  resultBytes: number
  /** verified receipts of distinct signers, all for this result; the first is answered with */
  receipts: Receipt[]
  /** true: the trust policy asks this call to be run here as well and compared (`compareResult`) */
  reexecute: boolean
}

/**
 * The engine's network port: what the engine and its adapters may ask of the federation. A node
 * without federation has none (`engine.federation.port` is undefined) and runs alone.
 */
export interface FederationPort {
  readonly nodeId: string
  nodes(): FederationNodeInfo[]
  /** every known node with its certificate and catalog digest, asked of each member now */
  memberStatus?(): Promise<FederationMemberStatus[]>
  /** checks a registration (certificate bound to node_id), broadcasts it and returns the node list */
  register(registration: unknown): Promise<FederationNodeInfo[]>
  discover(principal: Principal, rufid: string): Promise<FederatedDiscovery>
  /** applies a peer's changes and answers with this node's changes above `vector` */
  sync(batch: Partial<SyncBatch>): Promise<SyncBatch>
  /** fetches code this node lacks from a provider (digest-checked); 2001 when none can be reached */
  fetchCode?(tenant: string, short: string, version: number, contentDigest: string): Promise<string>
  /**
   * fetches a pinned wheel from a member that provides a wheel with `pin.sha256`; the bytes it
   * resolves with hash to it. Throws when no provider serves one.
   */
  fetchWheel?(pin: { name: string; version: string; sha256: string }): Promise<{ filename: string; bytes: Uint8Array }>
  /**
   * A deterministic call's result vouched for by members under the trust policy (receipts verified:
   * signature, certificate of a member not revoked, result and argument digests, key fields), or
   * undefined: run it here. Refused answers are audited and the next candidate asked.
   */
  findResult?(query: RemoteResultQuery): Promise<RemoteResult | undefined>
  /** hands a result computed here to the members that keep results of its key (fire and forget) */
  offerResult?(key: string, entry: CachedResult): void
  /** whether an entry members offered satisfies this node's trust policy (else it is not answered from) */
  acceptsResult?(entry: CachedResult): boolean
  /** a remote result was re-executed here (`reexecute`): records a conflict when the results differ */
  compareResult?(remote: RemoteResult, local: Receipt): void
}

/** A peer the federation refused membership (it logged and counted it; the engine audits it). */
export interface RefusedPeer {
  peer_id: string
  reason: string
  detail: string
  /** the address it connected from (or was dialled at), when it was connected */
  remote_addr: string | null
  denied_until: string
}

/** A member that joined or left, as the engine's subscribers are told. */
export interface MemberChange {
  node_id: string
  endpoint: string
}

/**
 * The engine's one link to a federation, wired once by the composition that starts a federation
 * (src/federation/federation.ts): the federation connects its port while it runs, and reports
 * what the engine records and publishes (refusals → audit, members → system events). Replicated
 * changes and conflicts the engine records and publishes itself (federation-link.ts).
 */
export interface FederationLink {
  /** the port of the federation this node is a member of; undefined on a single node */
  readonly port: FederationPort | undefined
  /** connects `port`; throws when another port is connected. Returns the disconnect of that port. */
  connect(port: FederationPort): () => void
  /** audits a refused peer (`federation.membership.refused`, 1003) */
  memberRefused(refusal: RefusedPeer): Promise<void>
  /** publishes `peer.joined` / `peer.left` */
  memberChanged(event: 'joined' | 'left', member: MemberChange): void
}
