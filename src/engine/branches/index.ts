export * from './types.js'
export { BranchService, type BranchServiceComponents, type DeployResult, type InvokeResult } from './branch-service.js'
export { rebuildHeads, compareHeads } from './rebuild-heads.js'
export { hashBranchKey, verifyBranchKey, mintBranchKey } from './branch-keys.js'
