import { readFileSync } from 'node:fs'
import { SvcError } from '../../core/errors.js'
import { IndexUnreachableError, PackageNotFoundError, normalizeIndexUrl, type FetchLike } from './package-index.js'
import { NoMatchingReleaseError, resolveNpm, resolvePip } from './resolvers.js'
import { manifestDigest, sortedLockfile, unprocessable } from './rules.js'
import type { FunctionLockfile, FunctionManifest, PinnedDependency, Problem } from './types.js'

export const DEFAULT_PIP_INDEX_URL = 'https://pypi.org/pypi'
export const DEFAULT_NPM_REGISTRY_URL = 'https://registry.npmjs.org'

const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version
/** `generator` of the lockfiles this code writes. */
export const GENERATOR = `svc-node/${PACKAGE_VERSION}`

/** Settings of lockfile generation (config `lockfile.*`). */
export interface LockfileGeneratorInit {
  /** PyPI-style JSON API base (`<url>/<name>/json`); config lockfile.pip_index_url, env SVC_PIP_INDEX_URL */
  pipIndexUrl?: string
  /** npm registry base (`<url>/<name>`); config lockfile.npm_registry_url, env SVC_NPM_REGISTRY_URL */
  npmRegistryUrl?: string
  /** deadline of each index request (default 10 000 ms) */
  timeoutMs?: number
  /** deadline of a whole lockfile generation (default 60 000 ms) */
  deadlineMs?: number
  /** largest index answer read (default 32 MiB) */
  maxResponseBytes?: number
  /** index requests in flight at once (default 8) */
  concurrency?: number
  /**
   * Whether a pip requirement's `source` may name an index URL other than `pipIndexUrl`. The node
   * keeps this off (it would fetch any URL a caller names); the command line turns it on.
   */
  allowSourceUrls?: boolean
  /** `generator` written into lockfiles (default `svc-node/<version>`) */
  generator?: string
}

export interface LockfileGeneratorComponents {
  /** defaults to the global fetch */
  fetch?: FetchLike
}

export interface ResolutionProgress {
  ecosystem: 'pip' | 'npm'
  name: string
  /** dependencies resolved so far, of `total` */
  done: number
  total: number
  pinned?: PinnedDependency
}

export interface GenerateOptions {
  /** JSON pointer of the manifest in the caller's document (`/manifest` in a create request) */
  pointerPrefix?: string
  onProgress?: (p: ResolutionProgress) => void
  /** `generated_at` (default: now) */
  now?: Date
}

interface Job {
  ecosystem: 'pip' | 'npm'
  index: number
  name: string
  spec: string
  url: string
  run: () => Promise<PinnedDependency>
}

type Outcome = { ok: true; job: Job; pin: PinnedDependency } | { ok: false; job: Job; err: unknown }

/**
 * Resolves a manifest's dependencies to exact versions and writes the lockfile of §2.5: pip
 * requirements against a PyPI-style index, npm ranges against an npm registry, system packages
 * copied; every list sorted, so the same manifest against the same index state yields the same
 * lockfile except for `generated_at`. Failures name the dependency: 1006 (422) when a package or
 * a fitting release does not exist, 1010 (503) when an index cannot be reached.
 */
export class LockfileGenerator {
  readonly pipIndexUrl: string
  readonly npmRegistryUrl: string
  readonly generator: string
  private readonly timeoutMs: number
  private readonly deadlineMs: number
  private readonly maxResponseBytes: number
  private readonly concurrency: number
  private readonly allowSourceUrls: boolean
  private readonly fetch: FetchLike

  constructor(init: LockfileGeneratorInit = {}, components: LockfileGeneratorComponents = {}) {
    const pip = normalizeIndexUrl(init.pipIndexUrl ?? DEFAULT_PIP_INDEX_URL)
    const npm = normalizeIndexUrl(init.npmRegistryUrl ?? DEFAULT_NPM_REGISTRY_URL)
    if (!pip) throw new TypeError(`pip index URL must be an http(s) URL: ${String(init.pipIndexUrl)}`)
    if (!npm) throw new TypeError(`npm registry URL must be an http(s) URL: ${String(init.npmRegistryUrl)}`)
    this.pipIndexUrl = pip
    this.npmRegistryUrl = npm
    this.generator = init.generator ?? GENERATOR
    this.timeoutMs = init.timeoutMs ?? 10_000
    this.deadlineMs = init.deadlineMs ?? 60_000
    this.maxResponseBytes = init.maxResponseBytes ?? 32 * 1024 * 1024
    this.concurrency = Math.max(1, init.concurrency ?? 8)
    this.allowSourceUrls = init.allowSourceUrls ?? false
    this.fetch = components.fetch ?? ((input, reqInit) => fetch(input, reqInit))
  }

  /**
   * The index a pip requirement resolves against, or a problem: `pypi` and the configured URL
   * name the configured index; another URL only when `allowSourceUrls`.
   */
  pipSourceOf(source: string | undefined): { url: string } | { problem: string } {
    if (source === undefined || source === 'pypi') return { url: this.pipIndexUrl }
    const url = normalizeIndexUrl(source)
    if (url === this.pipIndexUrl) return { url }
    if (url !== undefined && this.allowSourceUrls) return { url }
    return {
      problem: url === undefined
        ? `is neither "pypi" nor an http(s) index URL`
        : `names an index this node does not resolve against (it uses "pypi" = ${this.pipIndexUrl})`,
    }
  }

  /** Problems the generator can see before any request (unknown pip sources). */
  planProblems(manifest: FunctionManifest, pointerPrefix = ''): Problem[] {
    const problems: Problem[] = []
    manifest.dependencies?.pip?.forEach((d, i) => {
      const s = this.pipSourceOf(d.source)
      if ('problem' in s) problems.push({ pointer: `${pointerPrefix}/dependencies/pip/${i}/source`, message: s.problem })
    })
    return problems
  }

  async generate(manifest: FunctionManifest, options: GenerateOptions = {}): Promise<FunctionLockfile> {
    const prefix = options.pointerPrefix ?? ''
    const planned = this.planProblems(manifest, prefix)
    if (planned.length > 0) throw unprocessable(`invalid manifest: ${planned[0]!.pointer} ${planned[0]!.message}`, planned)
    // each request gets the per-request timeout, cut short by the deadline of the whole generation
    const deadline = Date.now() + this.deadlineMs
    const request = () => {
      const left = deadline - Date.now()
      if (left <= 0) throw new IndexUnreachableError('', `lockfile generation exceeded its deadline of ${this.deadlineMs} ms`)
      return { timeoutMs: Math.min(this.timeoutMs, left), maxResponseBytes: this.maxResponseBytes, userAgent: this.generator, fetch: this.fetch }
    }
    const jobs: Job[] = []
    manifest.dependencies?.pip?.forEach((d, index) => {
      const url = (this.pipSourceOf(d.source) as { url: string }).url
      jobs.push({ ecosystem: 'pip', index, name: d.name, spec: d.version ?? '', url, run: async () => resolvePip(d, url, request()) })
    })
    manifest.dependencies?.npm?.forEach((d, index) => {
      const url = this.npmRegistryUrl
      jobs.push({ ecosystem: 'npm', index, name: d.name, spec: d.version ?? '', url, run: async () => resolveNpm(d, url, request()) })
    })
    const outcomes = await runPool(jobs, this.concurrency, (o, done) => {
      options.onProgress?.({ ecosystem: o.job.ecosystem, name: o.job.name, done, total: jobs.length, ...(o.ok ? { pinned: o.pin } : {}) })
    })
    const failures = outcomes.filter((o): o is Extract<Outcome, { ok: false }> => !o.ok)
    if (failures.length > 0) throw failureError(failures, prefix)
    const pins = (ecosystem: 'pip' | 'npm'): PinnedDependency[] =>
      outcomes.filter((o): o is Extract<Outcome, { ok: true }> => o.ok && o.job.ecosystem === ecosystem).map((o) => o.pin)
    return sortedLockfile({
      schemaVersion: '1.0',
      generated_at: (options.now ?? new Date()).toISOString(),
      generator: this.generator,
      manifest_digest: manifestDigest(manifest),
      dependencies: { pip: pins('pip'), npm: pins('npm'), system: manifest.dependencies?.system ?? [] },
    })
  }
}

async function runPool(jobs: Job[], width: number, onDone: (o: Outcome, done: number) => void): Promise<Outcome[]> {
  const out: Outcome[] = new Array(jobs.length)
  let next = 0
  let done = 0
  const worker = async (): Promise<void> => {
    while (next < jobs.length) {
      const i = next++
      const job = jobs[i]!
      let outcome: Outcome
      try {
        outcome = { ok: true, job, pin: await job.run() }
      } catch (err) {
        outcome = { ok: false, job, err }
      }
      out[i] = outcome
      onDone(outcome, ++done)
    }
  }
  await Promise.all(Array.from({ length: Math.min(width, jobs.length) }, worker))
  return out
}

function failureError(failures: Array<{ job: Job; err: unknown }>, prefix: string): SvcError {
  const label = (j: Job): string => `${j.ecosystem} dependency ${j.name}${j.spec ? ` ${j.spec}` : ''}`
  const problems: Problem[] = failures.map(({ job, err }) => {
    const base = `${prefix}/dependencies/${job.ecosystem}/${job.index}`
    if (err instanceof PackageNotFoundError) return { pointer: `${base}/name`, message: `${job.name} does not exist on ${job.url}` }
    if (err instanceof NoMatchingReleaseError) return { pointer: `${base}/version`, message: err.message }
    if (err instanceof IndexUnreachableError) return { pointer: base, message: `cannot resolve: ${job.url} is unreachable (${err.message})` }
    return { pointer: base, message: `cannot resolve: ${(err as Error)?.message ?? String(err)}` }
  })
  const unreachable = failures.find((f) => !(f.err instanceof PackageNotFoundError || f.err instanceof NoMatchingReleaseError))
  if (unreachable) {
    const { job, err } = unreachable
    const why = err instanceof IndexUnreachableError ? err.message : (err as Error)?.message ?? String(err)
    return new SvcError('SERVICE_UNAVAILABLE', `cannot resolve ${label(job)}: package index ${job.url} is unreachable (${why})`, {
      details: { dependency: job.name, ecosystem: job.ecosystem, index: job.url, problems },
      cause: err,
    })
  }
  const { job } = failures[0]!
  const e = unprocessable(`cannot resolve ${label(job)}: ${problems[0]!.message}`, problems)
  Object.assign(e.details, { dependency: job.name, ecosystem: job.ecosystem, index: job.url })
  return e
}
