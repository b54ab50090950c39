import { createHash } from 'node:crypto'
import { canonicalJson } from '../../core/canonical-json.js'
import { SvcError, invalidRufid, rufidNotFound, validationFailed } from '../../core/errors.js'
import { computeRufid, formatRufid, parseRufid, parseVersionLabel } from '../../core/rufid.js'
import { fitsUtf8Bytes } from '../../core/text.js'
import { requirePermission } from '../authz.js'
import type { EventBus } from '../events.js'
import { ManifestService, sameSnapshot } from '../manifests/manifest-service.js'
import type { FunctionManifest } from '../manifests/types.js'
import type { SvcMetrics } from '../metrics.js'
import { Mutex } from '../mutex.js'
import type { BranchMoveWrite, CatalogStore } from '../storage/catalog-store.js'
import type { FunctionVersion, LedgerEntry, ManifestSnapshot, Page, Permission, Principal } from '../types.js'
import { parseOrThrow } from '../validation.js'
import { createInputSchema, type CreateFunctionInput } from './create-input.js'
import { importStatement } from './import-statement.js'
import { ResolutionCache } from './resolution-cache.js'
import { SANDBOX_LANGUAGES, sandboxFamilyOf } from '../sandbox/languages.js'
import { lacksCode, type RegistryReplicationHooks } from '../replication/registry-hooks.js'

export interface FunctionRegistryInit {
  cache: { maxEntries: number; ttlMs: number }
  maxSourceBytes: number
  /** `share_url` is `<shareBase>/<rufid_short>`; a function when the base is known only after listen */
  shareBase: string | (() => string)
}

export interface FunctionRegistryComponents {
  store: CatalogStore
  metrics: SvcMetrics
  events: EventBus
  /** manifest and lockfile validation and lockfile generation (default: one with the public indexes) */
  manifests?: ManifestService
  /** federation replication: told of local creates and deletes; refuses the losing side of a conflict (2002) */
  replication?: RegistryReplicationHooks
  /**
   * The lock every write of the catalog takes (shared with replication, which merges into the same
   * ledger entries); a fresh one when absent.
   */
  catalogLock?: Mutex
}

export interface CreateOptions {
  /**
   * Runs inside the registry's write lock with the version `create` is about to return (`created`
   * false when it already existed) and its ledger entry. A branch move it returns is written in
   * the same atomic batch as the version; throwing stores nothing.
   */
  withinWrite?: (fn: FunctionVersion, ledger: LedgerEntry, created: boolean) => Promise<BranchMoveWrite | undefined>
  /**
   * The permission the create needs (default rufid.create). A native execute registers an unknown
   * function whose source hashes to the RUFID it runs with rufid.execute (decisions.md).
   */
  permission?: Permission
}

/** A lineage (tenant, function_name) and its ledger entries, oldest first. */
export interface Lineage {
  function_name: string
  entries: LedgerEntry[]
}

export interface CreateResult {
  fn: FunctionVersion
  /** false when identical content (same hash, manifest and lockfile) already existed */
  created: boolean
  rufid: string
  rufid_short: string
  version: string
  import_statement: string
  share_url: string
  api_endpoint: string
}

export interface Resolution {
  fn: FunctionVersion
  cached: boolean
  resolution_time_ms: number
}

/** What a caller names: a hash, optionally pinned to a version. */
export interface FunctionTarget {
  short: string
  version?: number
}

export interface ListQuery {
  search?: string
  tags?: string[]
  limit?: number
  offset?: number
}

/** The longest page `list` answers. */
export const MAX_LIST_PAGE = 500

export function functionIdOf(tenant: string, short: string, version: number): string {
  const h = createHash('sha256').update(`${tenant}:${short}:v${version}`).digest('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`
}

export const fullRufidOf = (fn: Pick<FunctionVersion, 'rufid_short' | 'version' | 'tenant_id'>): string =>
  formatRufid(fn.rufid_short, fn.version, fn.tenant_id)

/**
 * The catalog of functions: create (idempotent, versioned per lineage), resolve (through a cache),
 * list and delete (tombstones). Every operation is scoped to the principal's tenant.
 */
export class FunctionRegistry {
  private readonly store: CatalogStore
  private readonly metrics: SvcMetrics
  private readonly events: EventBus
  readonly manifests: ManifestService
  private readonly cache: ResolutionCache<FunctionVersion>
  private readonly writes: Mutex
  private readonly createSchema: ReturnType<typeof createInputSchema>
  private readonly shareBaseOf: () => string
  private readonly replication: RegistryReplicationHooks | undefined
  /** registry.max_source_bytes: the longest source, in UTF-8 bytes, a function version may have */
  readonly maxSourceBytes: number

  constructor(init: FunctionRegistryInit, components: FunctionRegistryComponents) {
    this.store = components.store
    this.metrics = components.metrics
    this.events = components.events
    this.manifests = components.manifests ?? new ManifestService()
    this.replication = components.replication
    this.writes = components.catalogLock ?? new Mutex()
    this.cache = new ResolutionCache(init.cache)
    this.maxSourceBytes = init.maxSourceBytes
    this.createSchema = createInputSchema({ maxSourceBytes: init.maxSourceBytes })
    const base = init.shareBase
    this.shareBaseOf = typeof base === 'function' ? () => base().replace(/(?<!\/)\/+$/, '') : () => base.replace(/(?<!\/)\/+$/, '')
    this.metrics.cacheHitRatioSource.read = () => this.cache.hitRatio()
  }

  /**
   * What a create checks before any work that grows with the source (hashing, deriving a
   * signature, decoding), for the doors that do such work before calling `create` (native execute,
   * `/v1` publish): 1003 without `permission` (rufid.create unless the create is given another,
   * see CreateOptions), then 1006 when `source` is longer than registry.max_source_bytes
   * (`pointer` names the field, as create's own check does).
   */
  admitSource(principal: Principal, source: string, pointer = '/source_code', permission: Permission = 'rufid.create'): void {
    requirePermission(principal, permission)
    if (!fitsUtf8Bytes(source, this.maxSourceBytes)) {
      const message = `must be at most ${this.maxSourceBytes} bytes`
      throw validationFailed(`invalid function definition: ${pointer} ${message}`, [{ pointer, message }])
    }
  }

  /**
   * 1006 (400) when this node's sandbox cannot run `language`: `details.language` is what was asked,
   * `details.languages` what the node runs (the sandbox's own list), and the message names both.
   * Every local create path calls it before hashing (create itself, and the doors that hash or derive
   * a signature before calling create). A value that is not a language name at all (not a string,
   * empty, longer than 32 characters…) is left to the definition's schema, which reports it with its pointer.
   * Replication never calls it: a federation member may serve a catalog entry this node only stores.
   */
  admitLanguage(language: unknown, pointer = '/language'): void {
    if (typeof language !== 'string' || language === '' || language.length > 32 || sandboxFamilyOf(language) !== undefined) return
    const languages = [...SANDBOX_LANGUAGES]
    const message = `this node cannot run ${JSON.stringify(language)}: it runs ${languages.join(', ')}`
    throw new SvcError('VALIDATION_FAILED', `invalid function definition: ${pointer} ${message}`, {
      details: { language, languages, problems: [{ pointer, message }] },
    })
  }

  /**
   * Publishes a function version. Identical content (same hash, manifest and lock) is idempotent
   * (the text a manifest or lockfile was sent as is not content: the first version's text is kept);
   * a hash collision is 1008. A manifest is validated (1006/422 with JSON pointers); without a
   * lockfile one is generated (or reused from a stored version with the same manifest); a
   * lockfile whose manifest_digest does not match is 1006/422; a language this node cannot run is
   * 1006 (`admitLanguage`). Nothing is stored on any failure.
   */
  async create(principal: Principal, raw: unknown, options: CreateOptions = {}): Promise<CreateResult> {
    requirePermission(principal, options.permission ?? 'rufid.create')
    const input: CreateFunctionInput = parseOrThrow(this.createSchema, raw, 'function definition')
    this.admitLanguage(input.language) // before the source is hashed
    const identity = computeRufid(input)
    const tenant = principal.tenant_id
    const short = identity.rufid_short
    const collision = async (): Promise<void> => {
      const known = await this.store.digestOf(short)
      if (known !== undefined && known !== identity.content_digest) {
        throw new SvcError('RUFID_COLLISION', `RUFID ${short} already names different content`, {
          details: { rufid_short: short },
        })
      }
    }
    await collision() // before any index is asked; checked again under the lock
    const snapshot: ManifestSnapshot = await this.manifests.snapshotFor(input, (manifest) => this.reusableLockfile(tenant, short, manifest))
    const result = await this.writes.run(async () => {
      await collision()
      const existing = await this.store.versionsOfHash(tenant, short)
      const same = existing.find((v) => v.deleted_at === undefined && sameSnapshot(v, snapshot))
      if (same) {
        if (options.withinWrite) {
          const ledger = (await this.store.getLedgerEntry(tenant, same.function_name, same.version)) ?? ledgerOf(same)
          const move = await options.withinWrite(same, ledger, false)
          if (move) {
            await this.store.putBranchMove(move)
            await this.replication?.movedBranch?.(move.ledger, move.move)
          }
        }
        return { fn: same, created: false }
      }

      const latest = await this.store.latestLedgerEntry(tenant, input.function_name)
      const version = (latest?.version ?? 0) + 1
      const created_at = new Date().toISOString()
      const fn: FunctionVersion = {
        function_id: functionIdOf(tenant, short, version),
        tenant_id: tenant,
        rufid_short: short,
        version,
        function_name: input.function_name,
        signature: input.signature,
        language: input.language,
        description: input.description ?? '',
        tags: [...new Set(input.tags ?? [])],
        source_code: input.source_code,
        content_digest: identity.content_digest,
        created_at,
        author: principal.user,
        manifest: snapshot.manifest,
        lockfile: snapshot.lockfile,
        ...(snapshot.manifest_text !== undefined ? { manifest_text: snapshot.manifest_text } : {}),
        ...(snapshot.lockfile_text !== undefined ? { lockfile_text: snapshot.lockfile_text } : {}),
        limits: input.limits ?? {},
      }
      let ledger: LedgerEntry = {
        tenant_id: tenant,
        function_name: fn.function_name,
        version,
        rufid_short: short,
        content_digest: fn.content_digest,
        created_at,
        author: fn.author,
        manifest_snapshot: snapshot,
      }
      const move = options.withinWrite ? await options.withinWrite(fn, ledger, true) : undefined
      if (move) ledger = move.ledger
      // the version and its replication record in one atomic batch: never one without the other
      const planned = await this.replication?.planned('added', fn, ledger)
      await this.store.putNewVersion({ fn, ledger, ...(move ? { head: move.head } : {}) }, planned?.ops)
      planned?.commit()
      if (move) await this.replication?.movedBranch?.(move.ledger, move.move)
      this.cache.delete(cacheKey(tenant, short))
      return { fn, created: true }
    })
    if (result.created) {
      this.metrics.rufidCreations.inc({ language: result.fn.language.toLowerCase() })
      this.events.publishSystem({
        type: 'function.created',
        tenant_id: tenant,
        rufid: fullRufidOf(result.fn),
        message: `function ${result.fn.function_name} v${result.fn.version} created`,
        data: { function_name: result.fn.function_name, version: `v${result.fn.version}` },
      })
    }
    return this.describeCreation(result.fn, result.created)
  }

  /** The lockfile of the newest live version of this hash stored with an identical manifest. */
  private async reusableLockfile(tenant: string, short: string, manifest: FunctionManifest): Promise<Record<string, unknown> | undefined> {
    const wanted = canonicalJson(manifest)
    const digest = this.manifests.digest(manifest)
    for (const v of await this.store.versionsOfHash(tenant, short)) {
      if (v.deleted_at !== undefined || v.lockfile === null || v.lockfile.manifest_digest !== digest) continue
      if (canonicalJson(v.manifest) === wanted) return v.lockfile
    }
    return undefined
  }

  describeCreation(fn: FunctionVersion, created: boolean): CreateResult {
    return {
      fn,
      created,
      rufid: fullRufidOf(fn),
      rufid_short: fn.rufid_short,
      version: `v${fn.version}`,
      import_statement: importStatement(fn.language, fn.rufid_short, fn.function_name),
      share_url: `${this.shareBaseOf()}/${fn.rufid_short}`,
      api_endpoint: `/api/v1/functions/${fn.rufid_short}/execute`,
    }
  }

  /**
   * Reads a RUFID named by a caller (short or full form, plus an optional `v<n>`) as a target in the
   * principal's tenant. Malformed input is 1001; a full RUFID of another tenant is 1002.
   */
  target(principal: Principal, rufid: unknown, version?: unknown): FunctionTarget {
    const parsed = parseRufid(rufid)
    if (parsed.tenant_id !== undefined && parsed.tenant_id !== principal.tenant_id) {
      throw rufidNotFound(String(rufid))
    }
    let pinned = parsed.version
    if (version !== undefined && version !== null && version !== '') {
      const requested = parseVersionLabel(version)
      if (pinned !== undefined && pinned !== requested) {
        throw invalidRufid(rufid, `version ${String(version)} contradicts the RUFID's version`)
      }
      pinned = requested
    }
    return pinned === undefined ? { short: parsed.short } : { short: parsed.short, version: pinned }
  }

  /** Resolves a target to its stored version (newest live one without a version). 1002 if none. */
  async resolve(principal: Principal, target: FunctionTarget, permission: 'rufid.read' | 'rufid.execute' = 'rufid.read'): Promise<Resolution> {
    requirePermission(principal, permission)
    const started = performance.now()
    const tenant = principal.tenant_id
    const key = cacheKey(tenant, target.short, target.version)
    let fn = this.cache.get(key)
    const cached = fn !== undefined
    if (fn === undefined) {
      fn = await this.lookup(tenant, target)
      this.cache.set(key, fn)
    }
    this.replication?.assertNotLoser(tenant, fn.rufid_short, fn.version)
    if (this.replication?.fetchCode && lacksCode(fn)) {
      fn = await this.replication.fetchCode(fn)
      this.cache.set(key, fn)
    }
    this.metrics.rufidResolutions.inc({ cached: String(cached) })
    return { fn, cached, resolution_time_ms: performance.now() - started }
  }

  private async lookup(tenant: string, target: FunctionTarget): Promise<FunctionVersion> {
    const label = target.version === undefined ? undefined : `v${target.version}`
    if (target.version !== undefined) {
      const fn = await this.store.getFunction(tenant, target.short, target.version)
      if (fn === undefined || fn.deleted_at !== undefined) throw rufidNotFound(target.short, label)
      return fn
    }
    const live = (await this.store.versionsOfHash(tenant, target.short)).find((v) => v.deleted_at === undefined)
    if (live === undefined) throw rufidNotFound(target.short)
    return live
  }

  /** The newest live version of each function hash of the tenant, filtered and paginated. */
  async list(principal: Principal, query: ListQuery = {}): Promise<Page<FunctionVersion>> {
    requirePermission(principal, 'rufid.read')
    const limit = clampInt(query.limit, 20, 1, MAX_LIST_PAGE)
    const offset = clampInt(query.offset, 0, 0, Number.MAX_SAFE_INTEGER)
    const newest = new Map<string, FunctionVersion>()
    for await (const fn of this.store.functionsOfTenant(principal.tenant_id)) {
      if (fn.deleted_at === undefined) newest.set(fn.rufid_short, fn) // key order: versions ascending
    }
    const needle = query.search?.trim().toLowerCase()
    const tags = query.tags?.filter((t) => t !== '') ?? []
    const matches = [...newest.values()]
      .filter((fn) => !needle || [fn.function_name, fn.description, fn.signature, ...fn.tags].some((s) => s.toLowerCase().includes(needle)))
      .filter((fn) => tags.every((t) => fn.tags.includes(t)))
      .sort((a, b) => (a.created_at === b.created_at ? a.rufid_short.localeCompare(b.rufid_short) : a.created_at < b.created_at ? 1 : -1))
    const items = matches.slice(offset, offset + limit)
    const next = offset + items.length
    return { items, pagination: { total: matches.length, limit, offset, next_offset: next < matches.length ? next : null } }
  }

  /** Tombstones one version, or every live version of the hash when no version is named. */
  async delete(principal: Principal, target: FunctionTarget): Promise<FunctionVersion[]> {
    requirePermission(principal, 'rufid.delete')
    const tenant = principal.tenant_id
    const deleted = await this.writes.run(async () => {
      const candidates = target.version === undefined
        ? await this.store.versionsOfHash(tenant, target.short)
        : [await this.store.getFunction(tenant, target.short, target.version)]
      const live = candidates.filter((v): v is FunctionVersion => v !== undefined && v.deleted_at === undefined)
      if (live.length === 0) throw rufidNotFound(target.short, target.version === undefined ? undefined : `v${target.version}`)
      const deleted_at = new Date().toISOString()
      for (const fn of live) {
        const ledger = await this.store.getLedgerEntry(tenant, fn.function_name, fn.version)
        const tombstone: FunctionVersion = { ...fn, deleted_at }
        const entry = { ...(ledger ?? ledgerOf(fn)), deleted_at }
        const planned = await this.replication?.planned('deleted', tombstone, entry)
        await this.store.putTombstone(tombstone, entry, planned?.ops)
        planned?.commit()
        this.cache.delete(cacheKey(tenant, fn.rufid_short, fn.version))
        this.cache.delete(cacheKey(tenant, fn.rufid_short))
      }
      return live
    })
    for (const fn of deleted) {
      this.events.publishSystem({
        type: 'function.deleted',
        tenant_id: tenant,
        rufid: fullRufidOf(fn),
        message: `function ${fn.function_name} v${fn.version} deleted`,
        data: { function_name: fn.function_name, version: `v${fn.version}` },
      })
    }
    return deleted
  }

  /**
   * The lineage a RUFID belongs to and all its ledger entries (tombstones included). Found through
   * any stored version of the hash, deleted ones too; 1002 when the tenant has none.
   */
  async lineage(principal: Principal, target: FunctionTarget): Promise<Lineage> {
    requirePermission(principal, 'rufid.read')
    const tenant = principal.tenant_id
    const versions = await this.store.versionsOfHash(tenant, target.short)
    const known = target.version === undefined ? versions[0] : versions.find((v) => v.version === target.version)
    if (known === undefined) throw rufidNotFound(target.short, target.version === undefined ? undefined : `v${target.version}`)
    return { function_name: known.function_name, entries: await this.store.ledgerEntries({ tenant, function_name: known.function_name }) }
  }

  /** The ledger of the principal's tenant (one lineage when `functionName` is given). */
  async ledger(principal: Principal, functionName?: string): Promise<LedgerEntry[]> {
    requirePermission(principal, 'rufid.read')
    return this.store.ledgerEntries(functionName === undefined
      ? { tenant: principal.tenant_id }
      : { tenant: principal.tenant_id, function_name: functionName })
  }

  /** Drops cached resolutions of one hash (a replicated change altered it). */
  invalidate(tenant: string, short: string, version?: number): void {
    this.cache.delete(cacheKey(tenant, short))
    if (version !== undefined) this.cache.delete(cacheKey(tenant, short, version))
  }

  cacheStats(): { size: number; hits: number; misses: number; hit_ratio: number } {
    return { size: this.cache.size, hits: this.cache.hits, misses: this.cache.misses, hit_ratio: this.cache.hitRatio() }
  }
}

function cacheKey(tenant: string, short: string, version?: number): string {
  return `${tenant}:${short}:${version === undefined ? 'latest' : version}`
}

function ledgerOf(fn: FunctionVersion): LedgerEntry {
  return {
    tenant_id: fn.tenant_id,
    function_name: fn.function_name,
    version: fn.version,
    rufid_short: fn.rufid_short,
    content_digest: fn.content_digest,
    created_at: fn.created_at,
    author: fn.author,
    manifest_snapshot: {
      manifest: fn.manifest,
      lockfile: fn.lockfile,
      ...(fn.manifest_text !== undefined ? { manifest_text: fn.manifest_text } : {}),
      ...(fn.lockfile_text !== undefined ? { lockfile_text: fn.lockfile_text } : {}),
    },
  }
}

function clampInt(value: number | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined || !Number.isFinite(value)) return fallback
  return Math.min(max, Math.max(min, Math.trunc(value)))
}

