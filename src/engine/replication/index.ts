export {
  CatalogReplica, catalogKey, branchChangeKey, type CatalogChange, type VersionChange, type BranchChange, type CatalogConflict, type VersionConflict,
  type BranchConflict, type BranchContender, type SyncBatch, type VersionVector, type ApplyResult,
} from './catalog-replica.js'
export { HybridLogicalClock } from './hlc.js'
export type { RegistryReplicationHooks } from './registry-hooks.js'
export type { FederationPort, FederatedDiscovery, FederationNodeInfo, FederationMemberStatus } from './federation-port.js'
