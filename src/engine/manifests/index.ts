export * from './types.js'
export { ManifestService, sameSnapshot, type ManifestServiceInit, type SnapshotRequest } from './manifest-service.js'
export {
  LockfileGenerator, DEFAULT_NPM_REGISTRY_URL, DEFAULT_PIP_INDEX_URL, GENERATOR,
  type LockfileGeneratorInit, type LockfileGeneratorComponents, type GenerateOptions, type ResolutionProgress,
} from './lockfile-generator.js'
export {
  checkLockfile, checkManifest, lockIdentity, manifestDigest, normalizePipName, sortedLockfile, compareCodeUnits,
} from './rules.js'
export { manifestSchemaProblems, lockfileSchemaProblems, MANIFEST_SCHEMA_URL, LOCKFILE_SCHEMA_URL } from './schema-validation.js'
export { normalizeIndexUrl, type FetchLike } from './package-index.js'
