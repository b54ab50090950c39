import { canonicalJson } from '../../core/canonical-json.js'
import type { ManifestSnapshot } from '../types.js'
import { LockfileGenerator, type GenerateOptions, type LockfileGeneratorComponents, type LockfileGeneratorInit } from './lockfile-generator.js'
import { checkLockfile, checkManifest, lockIdentity, manifestDigest, unprocessable } from './rules.js'
import type { FunctionLockfile, FunctionManifest, Problem } from './types.js'

export interface ManifestServiceInit {
  lockfile?: LockfileGeneratorInit
}

export interface SnapshotRequest {
  function_name: string
  manifest?: Record<string, unknown> | null
  lockfile?: Record<string, unknown> | null
  /** the manifest file's exact text; must parse to `manifest` (kept so export returns the same bytes) */
  manifest_text?: string | null
  /** the lockfile's exact text; must parse to `lockfile` */
  lockfile_text?: string | null
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
    const manifestText = request.manifest_text ?? undefined
    const lockText = request.lockfile_text ?? undefined
    const textProblems = [...fileTextProblems('manifest', manifestText, rawManifest), ...fileTextProblems('lockfile', lockText, rawLock)]
    if (textProblems.length > 0) {
      const first = textProblems[0]!
      throw unprocessable(`${first.pointer.slice(1)} ${first.message}`, textProblems)
    }
    const texts = { ...(manifestText !== undefined ? { manifest_text: manifestText } : {}), ...(lockText !== undefined ? { lockfile_text: lockText } : {}) }
    if (rawManifest === undefined || rawManifest === null) {
      if (rawLock !== undefined && rawLock !== null) {
        throw unprocessable('a lockfile needs the manifest it was generated from', [{ pointer: '/manifest', message: 'is required with a lockfile' }])
      }
      return { manifest: null, lockfile: null }
    }
    const manifest = this.checkManifest(rawManifest, { prefix: '/manifest', functionName: request.function_name })
    if (rawLock !== undefined && rawLock !== null) {
      const lock = this.checkLockfile(rawLock, manifest, { prefix: '/lockfile', manifestPrefix: '/manifest' })
      return { manifest: rawManifest, lockfile: lock as unknown as Record<string, unknown>, ...texts }
    }
    const stored = await reusable(manifest)
    if (stored !== undefined) return { manifest: rawManifest, lockfile: stored, ...texts }
    const lock = await this.generateLockfile(manifest, { pointerPrefix: '/manifest' })
    return { manifest: rawManifest, lockfile: lock as unknown as Record<string, unknown>, ...texts }
  }
}

/**
 * Problems of `manifest_text` / `lockfile_text`: the text of a file must come with the object and
 * parse to exactly that object (as JSON data: member order and white space are the text's own).
 */
function fileTextProblems(what: 'manifest' | 'lockfile', text: string | undefined, value: Record<string, unknown> | null | undefined): Problem[] {
  if (text === undefined) return []
  const pointer = `/${what}_text`
  if (value === undefined || value === null) return [{ pointer, message: `is the text of the ${what}: send the ${what} with it` }]
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (err) {
    return [{ pointer, message: `is not JSON: ${(err as Error).message}` }]
  }
  const at = firstDifference(parsed, value, `/${what}`)
  return at === undefined ? [] : [{ pointer, message: `does not parse to the ${what} sent with it (they differ at ${at || '/'})` }]
}

/** The JSON pointer of the first place two JSON values differ (member order aside), or undefined. */
function firstDifference(a: unknown, b: unknown, pointer: string): string | undefined {
  const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)
  if (isObj(a) && isObj(b)) {
    for (const key of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
      const here = `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`
      if (!Object.hasOwn(a, key) || !Object.hasOwn(b, key)) return here
      const d = firstDifference(a[key], b[key], here)
      if (d !== undefined) return d
    }
    return undefined
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      if (i >= a.length || i >= b.length) return `${pointer}/${i}`
      const d = firstDifference(a[i], b[i], `${pointer}/${i}`)
      if (d !== undefined) return d
    }
    return undefined
  }
  return canonicalJson(a) === canonicalJson(b) ? undefined : pointer
}

/** Same manifest (canonically) and the same lock (ignoring generated_at and generator). */
export function sameSnapshot(a: ManifestSnapshot, b: ManifestSnapshot): boolean {
  return canonicalJson(a.manifest) === canonicalJson(b.manifest) && lockIdentity(a.lockfile) === lockIdentity(b.lockfile)
}

function asJson(value: Record<string, unknown> | null | undefined): Record<string, unknown> | null | undefined {
  return value === null || value === undefined ? value : (JSON.parse(JSON.stringify(value)) as Record<string, unknown>)
}
