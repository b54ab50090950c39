import { canonicalJson } from '../../core/canonical-json.js'
import type { ManifestSnapshot } from '../types.js'
import { LockfileGenerator, type GenerateOptions, type LockfileGeneratorComponents, type LockfileGeneratorInit } from './lockfile-generator.js'
import { checkLockfile, checkManifest, lockIdentity, manifestDigest, unprocessable } from './rules.js'
import type { FunctionLockfile, FunctionManifest } from './types.js'

export interface ManifestServiceInit {
  lockfile?: LockfileGeneratorInit
}

export interface SnapshotRequest {
  function_name: string
  manifest?: Record<string, unknown> | null
  lockfile?: Record<string, unknown> | null
}

/**
 * Manifests and lockfiles at the engine's entry points: validation (1006/422 with a JSON pointer
 * per problem, pointers relative to the request body), digest check, and lockfile generation
 * when a manifest arrives alone.
 */
export class ManifestService {
  readonly generator: LockfileGenerator

  constructor(init: ManifestServiceInit = {}, components: LockfileGeneratorComponents = {}) {
    this.generator = new LockfileGenerator(init.lockfile ?? {}, components)
  }

  digest(manifest: unknown): string {
    return manifestDigest(manifest)
  }

  checkManifest(value: unknown, options?: { prefix?: string; functionName?: string }): FunctionManifest {
    return checkManifest(value, options)
  }

  checkLockfile(value: unknown, manifest: FunctionManifest, options?: { prefix?: string; manifestPrefix?: string }): FunctionLockfile {
    return checkLockfile(value, manifest, options)
  }

  generateLockfile(manifest: FunctionManifest, options?: GenerateOptions): Promise<FunctionLockfile> {
    return this.generator.generate(manifest, options)
  }

  /**
   * The {manifest, lockfile} to store for a create request. No manifest: both null (a lockfile
   * alone is refused). A manifest with a lockfile: both checked, the lockfile's lists sorted. A
   * manifest alone: `reusable` is asked first for a lockfile already stored with an identical
   * manifest (so republishing is idempotent and needs no index), else one is generated.
   */
  async snapshotFor(
    request: SnapshotRequest,
    reusable: (manifest: FunctionManifest) => Promise<Record<string, unknown> | undefined>,
  ): Promise<ManifestSnapshot> {
    // what would travel as JSON (in-process callers may leave `undefined` members)
    const rawManifest = asJson(request.manifest)
    const rawLock = asJson(request.lockfile)
    if (rawManifest === undefined || rawManifest === null) {
      if (rawLock !== undefined && rawLock !== null) {
        throw unprocessable('a lockfile needs the manifest it was generated from', [{ pointer: '/manifest', message: 'is required with a lockfile' }])
      }
      return { manifest: null, lockfile: null }
    }
    const manifest = this.checkManifest(rawManifest, { prefix: '/manifest', functionName: request.function_name })
    if (rawLock !== undefined && rawLock !== null) {
      const lock = this.checkLockfile(rawLock, manifest, { prefix: '/lockfile', manifestPrefix: '/manifest' })
      return { manifest: rawManifest, lockfile: lock as unknown as Record<string, unknown> }
    }
    const stored = await reusable(manifest)
    if (stored !== undefined) return { manifest: rawManifest, lockfile: stored }
    const lock = await this.generateLockfile(manifest, { pointerPrefix: '/manifest' })
    return { manifest: rawManifest, lockfile: lock as unknown as Record<string, unknown> }
  }
}

/** Same manifest (canonically) and the same lock (ignoring generated_at and generator). */
export function sameSnapshot(a: ManifestSnapshot, b: ManifestSnapshot): boolean {
  return canonicalJson(a.manifest) === canonicalJson(b.manifest) && lockIdentity(a.lockfile) === lockIdentity(b.lockfile)
}

function asJson(value: Record<string, unknown> | null | undefined): Record<string, unknown> | null | undefined {
  return value === null || value === undefined ? value : (JSON.parse(JSON.stringify(value)) as Record<string, unknown>)
}
