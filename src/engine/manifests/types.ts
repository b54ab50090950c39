/** `function.svc.json` (service-spec §2.4) and `function.lock.json` (§2.5), as validated by schemas/. */

export interface PipRequirement {
  name: string
  /** PEP 440 specifier such as `>=2.28,<3`; absent means any final release */
  version?: string
  /** package index: `pypi` (the node's configured index) or an index URL */
  source?: string
}

/** svc-node extension: npm packages, shaped like pip requirements. */
export interface NpmRequirement {
  name: string
  /** semver range (`^4.17.0`) or dist-tag (`latest`); absent means the `latest` tag */
  version?: string
}

export interface FunctionManifest {
  schemaVersion: '1.0'
  name: string
  description?: string
  entrypoint?: string
  runtime?: { language: string; version: string; platform?: string }
  dependencies?: { pip?: PipRequirement[]; npm?: NpmRequirement[]; system?: string[] }
  environment?: Record<string, 'required' | 'optional'>
  scripts?: Record<string, string>
  metadata?: Record<string, unknown>
  /** svc-node extension: how the node runs the function */
  execution?: {
    /**
     * `warm` (default): calls of one function version share a warm instance (module state
     * persists between them, never across versions or tenants); `fresh`: a new context per call.
     */
    context?: 'warm' | 'fresh'
  }
  /**
   * svc-node extension: the result depends only on the content, the pinned dependencies and the
   * arguments. Results are cached per tenant and shared among federation members with receipts;
   * calls run in a fresh context with seeded randomness and a fixed clock.
   */
  deterministic?: boolean
}

/** One dependency pinned to an exact version, with the index it was resolved against. */
export interface PinnedDependency {
  name: string
  version: string
  source: string
  /**
   * pip: SHA-256 hex of the version's pure-Python wheel as the index lists it (absent when the
   * index lists none). A node installs only a wheel with this hash, and may then fetch it from a
   * federation peer.
   */
  sha256?: string
}

export interface FunctionLockfile {
  schemaVersion: '1.0'
  generated_at: string
  generator: string
  /** SHA-256 hex of the RFC 8785 canonical JSON of the manifest */
  manifest_digest: string
  dependencies: { pip?: PinnedDependency[]; npm?: PinnedDependency[]; system?: string[] }
}

/** A problem at a JSON pointer (RFC 6901), as carried in `details.problems` of a 1006. */
export interface Problem {
  pointer: string
  message: string
}

export const MANIFEST_FILE = 'function.svc.json'
export const LOCKFILE_FILE = 'function.lock.json'
