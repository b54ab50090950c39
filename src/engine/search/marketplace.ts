import { create, insert, remove, search, type Orama } from '@orama/orama'
import { parseRufid } from '../../core/rufid.js'
import { requirePermission } from '../authz.js'
import type { EventBus, SystemEvent } from '../events.js'
import type { CatalogStore } from '../storage/catalog-store.js'
import type { FunctionVersion, Principal } from '../types.js'

const schema = {
  tenant_id: 'enum',
  name: 'string',
  description: 'string',
  signature: 'string',
  tags: 'string[]',
  tag_set: 'enum[]',
  language: 'string',
  language_key: 'enum',
  author: 'string',
  created_at: 'string',
} as const

type MarketplaceDb = Orama<typeof schema>

export interface MarketplaceQuery {
  q?: string
  language?: string
  tags?: string[]
  limit?: number
  offset?: number
}

export type Listing = Omit<FunctionVersion, 'source_code'>

export interface MarketplaceResult {
  items: Listing[]
  pagination: { total: number; limit: number; offset: number; next_offset: number | null }
  aggregations: { language: Record<string, number>; tags: Record<string, number>; author: Record<string, number> }
}

/**
 * Full-text search over the newest live version of every function (name, description, tags,
 * signature) with facets by language, tags and author, always filtered to the caller's tenant.
 * An in-memory Orama index, rebuilt from the catalog at start and kept current from the bus.
 */
export class Marketplace {
  private db: MarketplaceDb = create({ schema })
  /** the indexed version of each document, without its source */
  private readonly listings = new Map<string, Listing>()
  private pending: Promise<void> = Promise.resolve()
  private readonly onSystem = (e: SystemEvent): void => {
    if ((e.type === 'function.created' || e.type === 'function.deleted') && e.tenant_id && e.rufid) {
      const { short } = parseRufid(e.rufid)
      const tenant = e.tenant_id
      this.pending = this.pending.then(() => this.reindex(tenant, short)).catch(() => undefined)
    }
  }

  constructor(private readonly c: { store: CatalogStore; events: EventBus }) {}

  async start(tenants: () => AsyncIterable<FunctionVersion>): Promise<void> {
    this.db = create({ schema })
    this.listings.clear()
    const newest = new Map<string, FunctionVersion>()
    for await (const fn of tenants()) if (fn.deleted_at === undefined) newest.set(docId(fn.tenant_id, fn.rufid_short), fn)
    for (const fn of newest.values()) await this.add(fn)
    this.c.events.on('system', this.onSystem)
  }

  async stop(): Promise<void> {
    this.c.events.off('system', this.onSystem)
  }

  private async reindex(tenant: string, short: string): Promise<void> {
    const id = docId(tenant, short)
    if (this.listings.delete(id)) await remove(this.db, id)
    const live = (await this.c.store.versionsOfHash(tenant, short)).find((v) => v.deleted_at === undefined)
    if (live) await this.add(live)
  }

  private async add(fn: FunctionVersion): Promise<void> {
    const { source_code: _source, ...listing } = fn
    this.listings.set(docId(fn.tenant_id, fn.rufid_short), listing)
    await insert(this.db, toDoc(fn))
  }

  async search(principal: Principal, query: MarketplaceQuery): Promise<MarketplaceResult> {
    requirePermission(principal, 'rufid.read')
    await this.pending
    const limit = Math.min(Math.max(Math.trunc(query.limit ?? 20), 1), 100)
    const offset = Math.max(Math.trunc(query.offset ?? 0), 0)
    const where: Record<string, unknown> = { tenant_id: { eq: principal.tenant_id } }
    if (query.language) where.language_key = { eq: query.language.toLowerCase() }
    const tags = (query.tags ?? []).filter(Boolean)
    if (tags.length > 0) where.tag_set = { containsAll: tags }
    const term = query.q?.trim() ?? ''
    const result = await search(this.db, {
      term,
      properties: ['name', 'description', 'tags', 'signature'],
      where: where as never,
      threshold: 0,
      limit,
      offset,
      facets: { language: { limit: 100 }, tags: { limit: 100 }, author: { limit: 100 } },
    })
    const facet = (name: string): Record<string, number> => ({ ...(result.facets?.[name]?.values ?? {}) })
    const total = result.count
    const next = offset + result.hits.length
    return {
      items: result.hits.map((h) => this.listings.get(h.id)).filter((l): l is Listing => l !== undefined),
      pagination: { total, limit, offset, next_offset: next < total ? next : null },
      aggregations: { language: facet('language'), tags: facet('tags'), author: facet('author') },
    }
  }
}

const docId = (tenant: string, short: string): string => `${tenant}:${short}`

function toDoc(fn: FunctionVersion) {
  return {
    id: docId(fn.tenant_id, fn.rufid_short),
    tenant_id: fn.tenant_id,
    name: fn.function_name,
    description: fn.description,
    signature: fn.signature,
    tags: fn.tags,
    tag_set: fn.tags,
    language: fn.language.toLowerCase(),
    language_key: fn.language.toLowerCase(),
    author: fn.author,
    created_at: fn.created_at,
  }
}
