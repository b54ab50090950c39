import pep440 from '@renovatebot/pep440'
import semver from 'semver'
import { fetchIndexJson, type IndexRequestOptions } from './package-index.js'
import { normalizePipName, pipClauses } from './rules.js'
import type { NpmRequirement, PinnedDependency, PipRequirement } from './types.js'

/** The index answered, but no release fits the requirement (or the document is not usable). */
export class NoMatchingReleaseError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'NoMatchingReleaseError'
  }
}

type RequestOptions = Omit<IndexRequestOptions, 'accept'>

interface PypiFile {
  filename?: unknown
  yanked?: boolean
  digests?: { sha256?: unknown }
}

interface PypiProject {
  releases?: Record<string, PypiFile[] | undefined>
}

const PURE_WHEEL = /-(?:py3|py2\.py3)-none-any\.whl$/

/** The sha256 of a release's pure-Python wheel (not yanked) as the index lists it. */
function pureWheelSha256(files: PypiFile[] | undefined): string | undefined {
  for (const f of Array.isArray(files) ? files : []) {
    const sha = f?.digests?.sha256
    if (typeof f?.filename === 'string' && PURE_WHEEL.test(f.filename) && f.yanked !== true && typeof sha === 'string' && /^[0-9a-f]{64}$/i.test(sha)) {
      return sha.toLowerCase()
    }
  }
  return undefined
}

/**
 * Pins a pip requirement against a PyPI-style JSON API (`<index>/<name>/json`, the shape
 * pypi.org serves). The newest release the PEP 440 specifier accepts wins, except:
 * - pre-releases and dev releases only when the specifier itself names one (`>=2.0b1`);
 * - yanked releases (every file yanked, PEP 592) and releases without files only when the
 *   specifier pins exactly that version (`==2.31.0`, `===2.31.0`).
 * Only the requirement itself is pinned: transitive dependencies are not resolved.
 */
export async function resolvePip(req: PipRequirement, indexUrl: string, o: RequestOptions): Promise<PinnedDependency> {
  const name = normalizePipName(req.name)
  const doc = (await fetchIndexJson(`${indexUrl}/${encodeURIComponent(name)}/json`, { ...o, accept: 'application/json' })) as PypiProject
  if (doc === null || typeof doc !== 'object' || doc.releases === null || typeof doc.releases !== 'object') {
    throw new NoMatchingReleaseError(`the index's answer for ${name} has no releases`)
  }
  const spec = (req.version ?? '').trim()
  const clauses = pipClauses(spec)
  const wantsPre = clauses.some((c) => c.is_prerelease || c.is_devrelease)
  const exactPin = clauses.length === 1 && (clauses[0]!.operator === '===' || (clauses[0]!.operator === '==' && !clauses[0]!.prefix))
  const installable = (files: Array<{ yanked?: boolean }> | undefined): boolean =>
    Array.isArray(files) && files.length > 0 && files.some((f) => f?.yanked !== true)
  const candidates = Object.entries(doc.releases)
    .filter(([v, files]) => {
      const parsed = pep440.explain(v)
      if (parsed === null) return false // a legacy, non-PEP 440 version: never chosen
      if (!wantsPre && (parsed.is_prerelease || parsed.is_devrelease)) return false
      return exactPin || installable(files)
    })
    .map(([v]) => v)
  const best = pep440.maxSatisfying(candidates, spec, { prereleases: wantsPre })
  if (best === null) {
    throw new NoMatchingReleaseError(candidates.length === 0
      ? `${name} has no installable release on ${indexUrl}`
      : `no release of ${name} on ${indexUrl} satisfies ${JSON.stringify(spec)}`)
  }
  const sha256 = pureWheelSha256(doc.releases[best])
  return { name, version: best, source: indexUrl, ...(sha256 === undefined ? {} : { sha256 }) }
}

interface NpmPackument {
  versions?: Record<string, { deprecated?: unknown } | undefined>
  'dist-tags'?: Record<string, string | undefined>
}

/**
 * Pins an npm requirement against a registry (`<registry>/<name>`, the packument npm serves; the
 * abbreviated form is asked for). As npm does: a dist-tag names its version; for a range the
 * `latest` tag wins when it satisfies, else the newest satisfying non-deprecated version, else
 * the newest satisfying deprecated one; pre-releases only when the range names one.
 */
export async function resolveNpm(req: NpmRequirement, registryUrl: string, o: RequestOptions): Promise<PinnedDependency> {
  const path = req.name.startsWith('@') ? `@${encodeURIComponent(req.name.slice(1))}` : encodeURIComponent(req.name)
  const doc = (await fetchIndexJson(`${registryUrl}/${path}`, {
    ...o,
    accept: 'application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8',
  })) as NpmPackument
  if (doc === null || typeof doc !== 'object' || doc.versions === null || typeof doc.versions !== 'object') {
    throw new NoMatchingReleaseError(`the registry's answer for ${req.name} has no versions`)
  }
  const versions = doc.versions
  const tags = doc['dist-tags'] ?? {}
  const spec = (req.version ?? '').trim() || 'latest'
  const range = semver.validRange(spec)
  if (range === null) {
    const tagged = tags[spec]
    if (tagged === undefined || versions[tagged] === undefined) {
      throw new NoMatchingReleaseError(`${req.name} has no dist-tag ${JSON.stringify(spec)} on ${registryUrl}`)
    }
    return { name: req.name, version: tagged, source: registryUrl }
  }
  const all = Object.keys(versions).filter((v) => semver.valid(v) === v)
  const latest = tags.latest
  const deprecated = (v: string): boolean => {
    const d = versions[v]?.deprecated
    return d !== undefined && d !== false && d !== ''
  }
  let best: string | null = null
  if (latest !== undefined && all.includes(latest) && !deprecated(latest) && semver.satisfies(latest, range)) best = latest
  best ??= semver.maxSatisfying(all.filter((v) => !deprecated(v)), range)
  best ??= semver.maxSatisfying(all, range)
  if (best === null) throw new NoMatchingReleaseError(`no version of ${req.name} on ${registryUrl} satisfies ${JSON.stringify(spec)}`)
  return { name: req.name, version: best, source: registryUrl }
}
