import { createHash } from 'node:crypto'
import pep440 from '@renovatebot/pep440'
import pep440Specifier from '@renovatebot/pep440/lib/specifier.js'
import semver from 'semver'
import { canonicalJson } from '../../core/canonical-json.js'
import { SvcError } from '../../core/errors.js'
import { lockfileSchemaProblems, manifestSchemaProblems } from './schema-validation.js'
import type { FunctionLockfile, FunctionManifest, PinnedDependency, Problem } from './types.js'

/**
 * The rules of manifests and lockfiles that need no network: schema and semantic validation,
 * the manifest digest, deterministic ordering, lockfile identity and lockfile-covers-manifest.
 */

/** SHA-256 (lower-case hex) of the RFC 8785 canonical JSON of a manifest: `manifest_digest`. */
export function manifestDigest(manifest: unknown): string {
  return createHash('sha256').update(canonicalJson(manifest), 'utf8').digest('hex')
}

/** PEP 503 normalized distribution name: lower case, runs of `-_.` become one `-`. */
export const normalizePipName = (name: string): string => name.replace(/[-_.]+/g, '-').toLowerCase()

/** Orders by UTF-16 code units (never locale-dependent), so output is the same on every machine. */
export const compareCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/** A dist-tag such as `latest` or `next` (npm), accepted where a range is not. */
const NPM_TAG = /^[A-Za-z][A-Za-z0-9._-]*$/

/**
 * The longest version specifier of a manifest dependency (the schema's `maxLength`, pip and npm).
 * A longer one is already a schema problem and is never handed to the PEP 440 or semver parsers:
 * their time grows faster than their input (a 128 KB PEP 440 specifier took 0.5 s).
 */
export const MAX_VERSION_SPECIFIER_CHARS = 256
/**
 * The most dependencies of one ecosystem a manifest may list (the schema's `maxItems`). A longer
 * list is already a schema problem, and its entries are not checked one by one: each specifier
 * costs its parser ~60 µs, and 32,000 of them fit in a 1 MiB body (2.3 s).
 */
export const MAX_DEPENDENCIES = 512

/** 1006 (HTTP 422): the manifest or lockfile is well-formed JSON but not acceptable. */
export function unprocessable(message: string, problems: Problem[]): SvcError {
  return new SvcError('VALIDATION_FAILED', message, { details: { problems }, reason: 'unprocessable' })
}

function fail(what: string, problems: Problem[]): never {
  const first = problems[0]!
  throw unprocessable(`invalid ${what}: ${first.pointer || '/'} ${first.message}`, problems)
}

/** The clauses of a PEP 440 specifier (`>=2.28,<3` → two clauses). */
export function pipClauses(spec: string): Array<{ operator: string; version: string; prefix?: string; is_prerelease: boolean; is_devrelease: boolean }> {
  if (spec.trim() === '') return []
  return (pep440Specifier.parse(spec) ?? []) as unknown as Array<{ operator: string; version: string; prefix?: string; is_prerelease: boolean; is_devrelease: boolean }>
}

export function isValidPipSpecifier(spec: string): boolean {
  return spec.trim() === '' || (pep440.validRange(spec) && pipClauses(spec).length > 0)
}

export function isValidNpmSpecifier(spec: string): boolean {
  return semver.validRange(spec) !== null || NPM_TAG.test(spec)
}

/** True for a pip version an installer takes as an exact pin: a valid PEP 440 version, no range. */
export const isExactPipVersion = (v: string): boolean => pep440.valid(v) !== null && !/[<>=!~*,\s]/.test(v)

/** True for an exact npm version (`semver.valid` without loose forms such as `v1.2.3`). */
export const isExactNpmVersion = (v: string): boolean => semver.valid(v) === v

/**
 * Validates a manifest against the schema and the rules a schema cannot say: version specifiers
 * parse, no dependency is listed twice, `name` equals the function's name when one is given.
 * Every problem is reported at once (schema problems first): a rule is skipped only where the
 * schema problem leaves it nothing to evaluate (say `version` is not a string), and a rule problem
 * at a pointer the schema already faults is not repeated. Throws 1006 (422) with one JSON pointer
 * per problem; returns the manifest, unchanged.
 */
export function checkManifest(value: unknown, options: { prefix?: string; functionName?: string } = {}): FunctionManifest {
  const prefix = options.prefix ?? ''
  const problems = manifestSchemaProblems(value, prefix)
  const faulted = new Set(problems.map((p) => p.pointer))
  const rule = (pointer: string, message: string): void => {
    if (!faulted.has(pointer)) problems.push({ pointer, message })
  }
  const m = isObject(value) ? value : {}
  if (options.functionName !== undefined && typeof m.name === 'string' && m.name !== options.functionName) {
    rule(`${prefix}/name`, `must equal the function name ${JSON.stringify(options.functionName)}`)
  }
  const deps = isObject(m.dependencies) ? m.dependencies : {}
  const ecosystems = [
    { key: 'pip', valid: isValidPipSpecifier, what: 'a PEP 440 version specifier', norm: normalizePipName },
    { key: 'npm', valid: isValidNpmSpecifier, what: 'a semver range or dist-tag', norm: (n: string) => n },
  ] as const
  for (const { key, valid, what, norm } of ecosystems) {
    const list = deps[key]
    if (!Array.isArray(list) || list.length > MAX_DEPENDENCIES) continue
    const seen = new Map<string, number>()
    list.forEach((d: unknown, i) => {
      if (!isObject(d)) return
      const at = `${prefix}/dependencies/${key}/${i}`
      if (typeof d.version === 'string' && d.version.length <= MAX_VERSION_SPECIFIER_CHARS && !valid(d.version)) rule(`${at}/version`, `is not ${what}: ${JSON.stringify(d.version)}`)
      if (typeof d.name !== 'string') return
      const first = seen.get(norm(d.name))
      if (first !== undefined) rule(`${at}/name`, `lists ${d.name} again (see ${prefix}/dependencies/${key}/${first})`)
      else seen.set(norm(d.name), i)
    })
  }
  if (problems.length > 0) fail('manifest', problems)
  return value as FunctionManifest
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)

const byPipName = (a: PinnedDependency, b: PinnedDependency): number =>
  compareCodeUnits(normalizePipName(a.name), normalizePipName(b.name)) || compareCodeUnits(a.name, b.name)
const byName = (a: PinnedDependency, b: PinnedDependency): number => compareCodeUnits(a.name, b.name)

/** The lockfile with each dependency list sorted by name (system: sorted, duplicates dropped); members in a fixed order. */
export function sortedLockfile(lock: FunctionLockfile): FunctionLockfile {
  const deps = lock.dependencies
  const pin = (d: PinnedDependency): PinnedDependency => ({ name: d.name, version: d.version, source: d.source, ...(d.sha256 === undefined ? {} : { sha256: d.sha256 }) })
  return {
    schemaVersion: lock.schemaVersion,
    generated_at: lock.generated_at,
    generator: lock.generator,
    manifest_digest: lock.manifest_digest,
    dependencies: {
      ...(deps.pip ? { pip: deps.pip.map(pin).sort(byPipName) } : {}),
      ...(deps.npm ? { npm: deps.npm.map(pin).sort(byName) } : {}),
      ...(deps.system ? { system: [...new Set(deps.system)].sort(compareCodeUnits) } : {}),
    },
  }
}

/**
 * What makes two lockfiles the same lock: everything but `generated_at` and `generator`, in
 * canonical form with sorted lists. Republishing a manifest whose lockfile differs only in when
 * or by what it was generated is idempotent.
 */
export function lockIdentity(lock: Record<string, unknown> | null | undefined): string {
  if (lock === null || lock === undefined) return 'null'
  const copy = { ...lock } as Record<string, unknown>
  delete copy.generated_at
  delete copy.generator
  const deps = copy.dependencies
  if (deps && typeof deps === 'object' && !Array.isArray(deps)) {
    const d = deps as Record<string, unknown>
    const sortList = (list: unknown, key: (x: unknown) => string): unknown =>
      Array.isArray(list) ? [...list].sort((a, b) => compareCodeUnits(key(a), key(b))) : list
    const nameOf = (x: unknown): string => (x && typeof x === 'object' ? String((x as { name?: unknown }).name) : String(x))
    copy.dependencies = {
      ...d,
      ...('pip' in d ? { pip: sortList(d.pip, (x) => normalizePipName(nameOf(x))) } : {}),
      ...('npm' in d ? { npm: sortList(d.npm, nameOf) } : {}),
      ...('system' in d ? { system: Array.isArray(d.system) ? [...new Set(d.system as unknown[])].sort((a, b) => compareCodeUnits(String(a), String(b))) : d.system } : {}),
    }
  }
  return canonicalJson(copy)
}

/**
 * Validates a supplied lockfile against the schema and against its manifest: the digest matches,
 * versions are exact, every manifest dependency is pinned to a version its specifier accepts,
 * the system packages are the manifest's. Extra pins (transitive dependencies) are allowed.
 * Throws 1006 (422) listing every problem; returns the lockfile with its lists sorted.
 */
export function checkLockfile(
  value: unknown,
  manifest: FunctionManifest,
  options: { prefix?: string; manifestPrefix?: string } = {},
): FunctionLockfile {
  const prefix = options.prefix ?? ''
  const mprefix = options.manifestPrefix ?? ''
  const problems = lockfileSchemaProblems(value, prefix)
  const digest = manifestDigest(manifest)
  if (problems.length > 0) {
    // the pins cannot be compared in a lockfile of the wrong shape, but a wrong digest still shows
    const claimed = isObject(value) ? value.manifest_digest : undefined
    const at = `${prefix}/manifest_digest`
    if (typeof claimed === 'string' && claimed !== digest && !problems.some((p) => p.pointer === at)) {
      problems.push({ pointer: at, message: `does not match the manifest (its SHA-256 is ${digest})` })
    }
    fail('lockfile', problems)
  }
  const lock = value as FunctionLockfile
  if (lock.manifest_digest !== digest) {
    // the digest first: it is the problem a caller most needs to see
    problems.push({ pointer: `${prefix}/manifest_digest`, message: `does not match the manifest (its SHA-256 is ${digest})` })
  }
  const pinsOf = (list: PinnedDependency[] | undefined, ecosystem: 'pip' | 'npm'): Map<string, number> => {
    const out = new Map<string, number>()
    list?.forEach((d, i) => {
      const exact = ecosystem === 'pip' ? isExactPipVersion(d.version) : isExactNpmVersion(d.version)
      if (!exact) problems.push({ pointer: `${prefix}/dependencies/${ecosystem}/${i}/version`, message: `must be an exact ${ecosystem === 'pip' ? 'PEP 440' : 'semver'} version, not ${JSON.stringify(d.version)}` })
      const key = ecosystem === 'pip' ? normalizePipName(d.name) : d.name
      if (out.has(key)) problems.push({ pointer: `${prefix}/dependencies/${ecosystem}/${i}/name`, message: `pins ${d.name} twice` })
      else out.set(key, i)
    })
    return out
  }
  const pip = pinsOf(lock.dependencies.pip, 'pip')
  const npm = pinsOf(lock.dependencies.npm, 'npm')
  const wanted = manifest.dependencies ?? {}
  wanted.pip?.forEach((req, i) => {
    const at = pip.get(normalizePipName(req.name))
    if (at === undefined) {
      problems.push({ pointer: `${prefix}/dependencies/pip`, message: `does not pin ${req.name} (${mprefix}/dependencies/pip/${i})` })
      return
    }
    const pinned = lock.dependencies.pip![at]!
    const spec = req.version ?? ''
    if (spec.trim() !== '' && isExactPipVersion(pinned.version) && !pep440.satisfies(pinned.version, spec, { prereleases: true })) {
      problems.push({ pointer: `${prefix}/dependencies/pip/${at}/version`, message: `${pinned.version} does not satisfy ${spec} (${mprefix}/dependencies/pip/${i})` })
    }
  })
  wanted.npm?.forEach((req, i) => {
    const at = npm.get(req.name)
    if (at === undefined) {
      problems.push({ pointer: `${prefix}/dependencies/npm`, message: `does not pin ${req.name} (${mprefix}/dependencies/npm/${i})` })
      return
    }
    const pinned = lock.dependencies.npm![at]!
    const range = req.version === undefined ? null : semver.validRange(req.version)
    if (range !== null && isExactNpmVersion(pinned.version) && !semver.satisfies(pinned.version, range, { includePrerelease: true })) {
      problems.push({ pointer: `${prefix}/dependencies/npm/${at}/version`, message: `${pinned.version} does not satisfy ${req.version} (${mprefix}/dependencies/npm/${i})` })
    }
  })
  const system = new Set(lock.dependencies.system ?? [])
  const wantedSystem = new Set(wanted.system ?? [])
  for (const s of wantedSystem) if (!system.has(s)) problems.push({ pointer: `${prefix}/dependencies/system`, message: `does not list ${s}, which the manifest requires` })
  for (const s of system) if (!wantedSystem.has(s)) problems.push({ pointer: `${prefix}/dependencies/system`, message: `lists ${s}, which the manifest does not` })
  if (problems.length > 0) {
    const mismatch = problems[0]!.pointer === `${prefix}/manifest_digest`
    throw unprocessable(
      mismatch ? `lockfile does not belong to this manifest: manifest_digest ${lock.manifest_digest} ≠ ${digest}` : `invalid lockfile: ${problems[0]!.pointer} ${problems[0]!.message}`,
      problems,
    )
  }
  return sortedLockfile(lock)
}
