export {
  CatalogReplica, catalogKey, branchChangeKey, type CatalogChange, type VersionChange, type BranchChange, type CatalogConflict, type VersionConflict,
  type BranchConflict, type BranchContender, type SyncBatch, type VersionVector, type ApplyResult, type ApplyOptions, type RejectedChange,
  REPLICA_FORMAT, isCatalogChange, vectorRoot, type CompactVector,
} from './catalog-replica.js'
export { CHANGE_REJECTIONS, signedBytes, withoutCode, type ChangeAuthenticator, type ChangeRejection, type ChangeVerdict } from './change-authenticator.js'
export { HybridLogicalClock } from './hlc.js'
export type { RegistryReplicationHooks } from './registry-hooks.js'
export type { FederationPort, FederatedDiscovery, FederationNodeInfo, FederationMemberStatus, FederationLink, RefusedPeer, MemberChange, RemoteResult, RemoteResultQuery } from './federation-port.js'
