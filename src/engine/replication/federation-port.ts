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

export interface FederatedDiscovery {
  rufid: string
  rufid_short: string
  content_digest: string | null
  function_name: string | null
  versions: string[]
  nodes: Array<{ node_id: string; endpoint: string; source: 'self' | 'dht' | 'catalog' }>
}

/**
 * The engine's network port: what the engine and its adapters may ask of the federation. A node
 * without federation has none (`engine.federation` is undefined) and runs alone.
 */
export interface FederationPort {
  readonly nodeId: string
  nodes(): FederationNodeInfo[]
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
}
