export type {
  ExecutionLimits,
  LogLine,
  PipPin,
  Sandbox,
  SandboxInit,
  SandboxLogger,
  SandboxOutcome,
  SandboxRequest,
  SandboxStats,
  SandboxWorkerStats,
} from './types.js'
export { createSandbox } from './sandbox.js'
export { parseSignatureParams, parseSignature, bindArguments, type SignatureParam, type BoundArguments } from './signature.js'
export { SANDBOX_FAMILIES, sandboxFamilyOf } from './languages.js'
export {
  OS_ISOLATION_MODES,
  launchNodeScript,
  resolveOsIsolation,
  type OsIsolation,
  type OsIsolationInit,
  type OsIsolationLayer,
  type OsIsolationMode,
  type OsIsolationStatus,
} from './os-isolation.js'
export {
  CGROUPS_MODES,
  cgroupMemoryMbFor,
  resolveMemoryBound,
  type CgroupsMode,
  type MemoryBound,
  type MemoryBoundInit,
  type MemoryBoundStatus,
} from './cgroups.js'
