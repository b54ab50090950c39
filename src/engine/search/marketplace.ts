import { parseRufid } from '../../core/rufid.js'
import { requirePermission } from '../authz.js'
import type { EventBus, SystemEvent } from '../events.js'
import { Mutex } from '../mutex.js'
import type { CatalogStore } from '../storage/catalog-store.js'
import type { FunctionVersion, Principal } from '../types.js'
import { analyze, compileQuery, type CompiledQuery, type Hit, type QueryInput } from './analysis.js'
import { newestLive, scanSearch, TimeSlicer } from './scan.js'
import { TenantIndex, type IndexSearchResult } from './tenant-index.js'

export type MarketplaceQuery = QueryInput

export type Listing = Omit<FunctionVersion, 'source_code'>

export interface MarketplaceResult {
  items: Listing[]
  pagination: { total: number; limit: number; offset: number; next_offset: number | null }
  aggregations: { language: Record<string, number>; tags: Record<string, number>; author: Record<string, number> }
}

/** Used when the engine is built without a marketplace section (tests, in-process benchmarks). */
export const DEFAULT_MAX_INDEXED_FUNCTIONS = 200_000

export interface MarketplaceInit {
  /**
   * Documents (one per function: its newest live version) held in memory over every tenant's
   * index. Past it the least recently searched tenants are evicted; a tenant larger than it on its
   * own is searched by scanning the store. 0: no index, every search scans the store.
   */
  maxIndexedFunctions: number
  /** longest stretch (ms) an index build or a store scan runs before giving the event loop a turn (default 10) */
  sliceMs?: number
}

export interface MarketplaceComponents {
  store: CatalogStore
  events: EventBus
}

/** What the marketplace holds in memory, for operators and tests. */
export interface MarketplaceStats {
  max_indexed_functions: number
  indexed_functions: number
  /** tenants with an index, least recently searched first */
  indexed_tenants: string[]
  /** tenants found larger than the bound: searched by scanning the store */
  oversized_tenants: string[]
}

interface Entry {
  index: TenantIndex
  /** the build, then each update from the bus, in order */
  pending: Promise<void>
  dropped: boolean
  /** why the build failed (the store could not be read) */
  error?: unknown
}

/** A search gives up on indexes after this many evictions under its feet, and scans the store. */
const ATTEMPTS = 3

/**
 * The marketplace search (full text over name, description, signature and tags; filters language
 * and tags; facets language, tags, author; pagination), always within the caller's tenant. Matching
 * and ranking rules: analysis.ts.
 *
 * Nothing is read at start. A tenant's index is built on its first search, from a stream of its
 * functions in the store (yielding to the event loop every few milliseconds), then kept current from
 * the bus (function.created / function.deleted, replicated ones included). The indexes together hold
 * at most `maxIndexedFunctions` documents: past it the least recently searched tenants are evicted
 * (a later search rebuilds theirs). A tenant that alone exceeds the bound is not indexed: its
 * searches scan the store (the slow path, same results). Listings are not kept in memory: a page's
 * items are read from the store (at most `limit` reads).
 */
export class Marketplace {
  /** Map order is LRU order: least recently searched first */
  private readonly indexes = new Map<string, Entry>()
  private readonly oversized = new Set<string>()
  private indexed = 0
  private readonly builds = new Mutex()
  private readonly scans = new Mutex()
  private started = false
  private readonly onSystem = (e: SystemEvent): void => {
    if ((e.type !== 'function.created' && e.type !== 'function.deleted') || !e.tenant_id || !e.rufid) return
    const entry = this.indexes.get(e.tenant_id)
    if (!entry || entry.dropped) return
    let short: string
    try {
      short = parseRufid(e.rufid).short
    } catch {
      return
    }
    entry.pending = entry.pending.then(() => this.reindex(entry, short))
  }

  constructor(
    private readonly init: MarketplaceInit,
    private readonly c: MarketplaceComponents,
  ) {}

  /** Subscribes to the bus; reads nothing. */
  async start(): Promise<void> {
    if (this.started) return
    this.started = true
    this.c.events.on('system', this.onSystem)
  }

  /** Unsubscribes and forgets every index. */
  async stop(): Promise<void> {
    if (!this.started) return
    this.started = false
    this.c.events.off('system', this.onSystem)
    for (const entry of [...this.indexes.values()]) this.drop(entry)
    this.oversized.clear()
  }

  stats(): MarketplaceStats {
    return {
      max_indexed_functions: this.init.maxIndexedFunctions,
      indexed_functions: this.indexed,
      indexed_tenants: [...this.indexes.keys()],
      oversized_tenants: [...this.oversized],
    }
  }

  /** Needs rufid.read; searches the caller's tenant only. Invalid input: 1006. */
  async search(principal: Principal, query: MarketplaceQuery): Promise<MarketplaceResult> {
    requirePermission(principal, 'rufid.read')
    const q = compileQuery(query)
    const tenant = principal.tenant_id
    let result: IndexSearchResult | undefined
    for (let attempt = 0; attempt < ATTEMPTS && result === undefined; attempt++) {
      if (this.init.maxIndexedFunctions <= 0 || this.oversized.has(tenant)) break
      const entry = this.entryOf(tenant)
      await entry.pending
      if (entry.error !== undefined) throw entry.error
      // evicted (or found too large) while this search waited: try again, or scan
      if (!entry.dropped) result = entry.index.search(q)
    }
    result ??= await this.scan(tenant, q)
    const page = result.hits.slice(q.offset, q.offset + q.limit)
    const next = q.offset + page.length
    return {
      items: await this.listings(tenant, page),
      pagination: { total: result.total, limit: q.limit, offset: q.offset, next_offset: next < result.total ? next : null },
      aggregations: result.facets.result(),
    }
  }

  /** The tenant's index, marked most recently used; a new one (its build queued) on first use. */
  private entryOf(tenant: string): Entry {
    const existing = this.indexes.get(tenant)
    if (existing) {
      this.indexes.delete(tenant)
      this.indexes.set(tenant, existing)
      return existing
    }
    const entry: Entry = { index: new TenantIndex(tenant), pending: Promise.resolve(), dropped: false }
    this.indexes.set(tenant, entry)
    // never rejects: a failed build drops the entry and leaves its error for the searches waiting on it
    entry.pending = this.builds.run(() => this.build(entry)).catch((err: unknown) => {
      entry.error = err
      this.drop(entry)
    })
    return entry
  }

  private async build(entry: Entry): Promise<void> {
    const slicer = new TimeSlicer(this.init.sliceMs)
    for await (const fn of newestLive(this.c.store.functionsOfTenant(entry.index.tenant))) {
      if (entry.dropped) return
      this.apply(entry, () => entry.index.add(analyze(fn)))
      await slicer.tick()
    }
  }

  /** Brings one function of a built index in line with the store. A failed read drops the index. */
  private async reindex(entry: Entry, short: string): Promise<void> {
    if (entry.dropped) return
    try {
      const live = (await this.c.store.versionsOfHash(entry.index.tenant, short)).find((v) => v.deleted_at === undefined)
      if (entry.dropped) return
      this.apply(entry, () => {
        entry.index.remove(short)
        if (live) entry.index.add(analyze(live))
      })
      // rebuilt compactly by the next search
      if (entry.index.wasteful) this.drop(entry)
    } catch {
      // never rejects (the chain of updates goes on); the next search rebuilds from the store
      this.drop(entry)
    }
  }

  /** Runs a change of `entry`'s index, then keeps the total within the bound. */
  private apply(entry: Entry, change: () => void): void {
    const before = entry.index.size
    change()
    this.indexed += entry.index.size - before
    while (this.indexed > this.init.maxIndexedFunctions && !entry.dropped) {
      const victim = [...this.indexes.values()].find((e) => e !== entry) ?? entry
      if (victim === entry) this.oversized.add(entry.index.tenant)
      this.drop(victim)
    }
  }

  private drop(entry: Entry): void {
    if (entry.dropped) return
    entry.dropped = true
    this.indexed -= entry.index.size
    if (this.indexes.get(entry.index.tenant) === entry) this.indexes.delete(entry.index.tenant)
  }

  /** The slow path, one scan at a time. A tenant found within the bound again gets an index next time. */
  private async scan(tenant: string, q: CompiledQuery): Promise<IndexSearchResult> {
    return this.scans.run(async () => {
      const result = await scanSearch(() => this.c.store.functionsOfTenant(tenant), q, new TimeSlicer(this.init.sliceMs))
      if (result.documents <= this.init.maxIndexedFunctions) this.oversized.delete(tenant)
      return result
    })
  }

  /** A page's listings, read from the store (a function deleted since the search is left out). */
  private async listings(tenant: string, hits: Hit[]): Promise<Listing[]> {
    const read = async (hit: Hit): Promise<Listing | undefined> => {
      let fn = await this.c.store.getFunction(tenant, hit.short, hit.version)
      if (!fn || fn.deleted_at !== undefined) {
        fn = (await this.c.store.versionsOfHash(tenant, hit.short)).find((v) => v.deleted_at === undefined)
      }
      if (!fn) return undefined
      const { source_code: _source, ...listing } = fn
      return listing
    }
    return (await Promise.all(hits.map(read))).filter((l): l is Listing => l !== undefined)
  }
}
