export * from './types.js'
export { BranchService, type BranchServiceComponents, type DeployResult, type InvokeResult } from './branch-service.js'
export { rebuildHeads, compareHeads, branchStates, walkBranch, mergeMoves, moveIdOfHead, placeMove, type PlacedMove, type BranchFork, type BranchState } from './rebuild-heads.js'
export { hashBranchKey, verifyBranchKey, mintBranchKey } from './branch-keys.js'
