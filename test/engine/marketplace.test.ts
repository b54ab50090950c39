// The marketplace index: built lazily per tenant, kept current from the bus, bounded (LRU), and a
// slow path (a scan of the store) for a tenant over the bound that answers as the index does.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { computeRufid } from '../../src/core/rufid.js'
import {
  createCatalogStore, Marketplace, type CatalogStore, type FunctionVersion, type MarketplaceQuery, type MarketplaceResult,
} from '../../src/engine/index.js'
import { analyze, compileQuery } from '../../src/engine/search/analysis.js'
import { scanSearch } from '../../src/engine/search/scan.js'
import { TenantIndex } from '../../src/engine/search/tenant-index.js'
import { createTestEngine, principal, type TestEngine } from '../fixtures/engine.js'

interface Def {
  function_name: string
  language?: string
  description?: string
  tags?: string[]
  signature?: string
}

const CATALOG: Record<string, Def[]> = {
  acme: [
    { function_name: 'parseCsv', description: 'reads comma separated values', tags: ['text', 'csv'] },
    { function_name: 'parseJson', language: 'typescript', description: 'reads json documents', tags: ['text'] },
    { function_name: 'sumAll', description: 'adds numbers', tags: ['math'] },
    { function_name: 'readMore', description: 'reads text from a stream', tags: ['text', 'io'], signature: '(stream, size)' },
    { function_name: 'mean', language: 'python', description: 'mean of numbers', tags: ['math', 'stats'] },
    { function_name: 'median', language: 'python', description: 'median of numbers, reads lists', tags: ['stats'] },
  ],
  globex: [
    { function_name: 'secretReader', description: 'reads the secret plans', tags: ['text', 'secret'] },
    { function_name: 'plot', description: 'plots numbers', tags: ['math'] },
  ],
}

function source(def: Def): string {
  const language = def.language ?? 'javascript'
  if (language === 'python') return `def ${def.function_name}(x):\n    return x\n`
  return `function ${def.function_name}(x) {\n  return x\n}\n`
}

const create = (t: TestEngine, tenant: string, def: Def) =>
  t.engine.functions.create(principal(tenant), {
    function_name: def.function_name, language: def.language ?? 'javascript', signature: def.signature ?? '(x)',
    source_code: source(def), description: def.description ?? '', tags: def.tags ?? [],
  })

const names = (r: MarketplaceResult) => r.items.map((i) => i.function_name)

/** Queries whose results the indexed path and the slow path must give identically. */
const QUERIES: MarketplaceQuery[] = [
  {}, { limit: 100 }, { q: 'reads' }, { q: 'read' }, { q: 'numbers' }, { q: 'reads text' }, { q: 'parse' }, { q: 'csv' },
  { q: 'nothing-like-this' }, { q: '!!!' }, { q: 'of numbers' }, { tags: ['text'] }, { tags: ['text', 'csv'] }, { tags: ['nope'] },
  { language: 'Python' }, { language: 'typescript', q: 'reads' }, { q: 'stream' }, { q: 'x' },
  { limit: 2 }, { limit: 2, offset: 2 }, { limit: 2, offset: 4 }, { q: 'reads', limit: 1, offset: 1 }, { offset: 50 },
]

describe('marketplace', () => {
  let t: TestEngine
  let store: CatalogStore
  const marketplaces: Marketplace[] = []
  const open = async (maxIndexedFunctions: number, sliceMs?: number): Promise<Marketplace> => {
    const m = new Marketplace({ maxIndexedFunctions, ...(sliceMs === undefined ? {} : { sliceMs }) }, { store, events: t.engine.events })
    await m.start()
    marketplaces.push(m)
    return m
  }

  beforeEach(async () => {
    t = await createTestEngine()
    // a second view of the engine's database (not started or stopped: the engine owns it)
    store = createCatalogStore({ db: t.db })
    for (const [tenant, defs] of Object.entries(CATALOG)) for (const def of defs) await create(t, tenant, def)
  })
  afterEach(async () => {
    for (const m of marketplaces.splice(0)) await m.stop()
    await t.engine.stop()
  })

  it('indexes nothing at start; a search builds its own tenant index only', async () => {
    expect(t.engine.marketplace.stats()).toMatchObject({ indexed_functions: 0, indexed_tenants: [] })
    const m = await open(1000)
    expect(m.stats()).toMatchObject({ indexed_functions: 0, indexed_tenants: [] })
    const r = await m.search(principal('acme'), { q: 'reads' })
    expect(names(r).sort()).toEqual(['median', 'parseCsv', 'parseJson', 'readMore'])
    expect(m.stats()).toMatchObject({ indexed_functions: CATALOG.acme!.length, indexed_tenants: ['acme'] })
  })

  it('keeps a built index current: creates, deletes and replicated versions are visible to the next search', async () => {
    const m = await open(1000)
    const acme = principal('acme')
    expect((await m.search(acme, { q: 'geometry' })).pagination.total).toBe(0)
    const made = await create(t, 'acme', { function_name: 'area', description: 'geometry of shapes', tags: ['math', 'geo'] })
    const found = await m.search(acme, { q: 'geometry' })
    expect(names(found)).toEqual(['area'])
    expect(found.aggregations.tags).toEqual({ math: 1, geo: 1 })
    expect((await m.search(acme, { limit: 100 })).pagination.total).toBe(CATALOG.acme!.length + 1)

    await t.engine.functions.delete(acme, t.engine.functions.target(acme, made.rufid_short))
    expect((await m.search(acme, { q: 'geometry' })).pagination.total).toBe(0)
    expect((await m.search(acme, { limit: 100 })).aggregations.tags.geo).toBeUndefined()

    // a version written by replication reaches the bus as federation publishes it
    const def = { function_name: 'fromPeer', signature: '()', language: 'javascript', source_code: 'function fromPeer() {}\n' }
    const id = computeRufid(def)
    const fn: FunctionVersion = {
      ...def, function_id: '00000000-0000-4000-8000-000000000001', tenant_id: 'acme', rufid_short: id.rufid_short, version: 1,
      description: 'replicated from a peer', tags: ['peer'], content_digest: id.content_digest, created_at: new Date().toISOString(),
      author: 'peer@acme.test', manifest: null, lockfile: null, limits: {},
    }
    await store.putReplicatedVersion(fn, undefined)
    t.engine.events.publishSystem({ type: 'function.created', tenant_id: 'acme', rufid: `rufid:${id.rufid_short}:v1:acme`, message: 'replicated' })
    const replicated = await m.search(acme, { q: 'peer' })
    expect(names(replicated)).toEqual(['fromPeer'])
    expect(replicated.items[0]).not.toHaveProperty('source_code')
    expect(replicated.aggregations.author).toEqual({ 'peer@acme.test': 1 })
  })

  it('evicts the least recently searched tenant past the bound, and answers correctly after a rebuild', async () => {
    const m = await open(CATALOG.acme!.length + 1)
    const acme = await m.search(principal('acme'), { q: 'reads' })
    expect(m.stats()).toMatchObject({ indexed_tenants: ['acme'], indexed_functions: 6 })
    const globex = await m.search(principal('globex'), { q: 'reads' })
    expect(names(globex)).toEqual(['secretReader'])
    // 6 + 2 > 7: acme (least recently searched) made room
    expect(m.stats()).toMatchObject({ indexed_tenants: ['globex'], indexed_functions: 2 })
    const again = await m.search(principal('acme'), { q: 'reads' })
    expect(again).toEqual(acme)
    expect(m.stats()).toMatchObject({ indexed_tenants: ['acme'], indexed_functions: 6 })
    expect(m.stats().indexed_functions).toBeLessThanOrEqual(7)
  })

  it('answers a tenant larger than the bound by scanning the store, with the items, order and facets of the index', async () => {
    const indexed = await open(1000)
    const small = await open(CATALOG.acme!.length - 1)
    const none = await open(0)
    for (const query of QUERIES) {
      const expected = await indexed.search(principal('acme'), query)
      expect(await small.search(principal('acme'), query), JSON.stringify(query)).toEqual(expected)
      expect(await none.search(principal('acme'), query), JSON.stringify(query)).toEqual(expected)
    }
    expect(small.stats()).toMatchObject({ indexed_functions: 0, indexed_tenants: [], oversized_tenants: ['acme'] })
    expect(none.stats()).toMatchObject({ indexed_functions: 0, indexed_tenants: [] })
    // globex fits: indexed, while acme keeps the slow path
    await small.search(principal('globex'), {})
    expect(small.stats()).toMatchObject({ indexed_tenants: ['globex'], oversized_tenants: ['acme'] })
  })

  it('finds, filters, pages and counts facets per the catalog on both paths, never mixing tenants', async () => {
    for (const max of [1000, 0]) {
      const m = await open(max)
      const all = await m.search(principal('acme'), { limit: 100 })
      expect(all.pagination).toEqual({ total: 6, limit: 100, offset: 0, next_offset: null })
      expect(all.aggregations).toEqual({
        language: { javascript: 3, python: 2, typescript: 1 },
        tags: { text: 3, math: 2, stats: 2, csv: 1, io: 1 },
        author: { 'dev@acme.test': 6 },
      })
      expect(names(all)).not.toContain('secretReader')
      expect(names(await m.search(principal('acme'), { q: 'secret' }))).toEqual([])
      expect(names(await m.search(principal('acme'), { tags: ['secret'] }))).toEqual([])
      const globex = await m.search(principal('globex'), { limit: 100 })
      expect(names(globex).sort()).toEqual(['plot', 'secretReader'])
      expect(globex.aggregations.tags).toEqual({ math: 1, secret: 1, text: 1 })
      expect(names(await m.search(principal('acme'), { tags: ['text', 'csv'] }))).toEqual(['parseCsv'])
      expect(names(await m.search(principal('acme'), { language: 'TYPESCRIPT' }))).toEqual(['parseJson'])
      // every query word in one field: "reads" and "text" are both in readMore's description
      expect(names(await m.search(principal('acme'), { q: 'reads text' }))).toEqual(['readMore'])
      const page = await m.search(principal('acme'), { limit: 4, offset: 4 })
      expect(page.items).toHaveLength(2)
      expect(page.pagination).toEqual({ total: 6, limit: 4, offset: 4, next_offset: null })
      expect((await m.search(principal('acme'), { limit: 4 })).pagination.next_offset).toBe(4)
    }
  })

  it('refuses a search without rufid.read and a query of too many words (1006)', async () => {
    const m = await open(1000)
    await expect(m.search(principal('acme', ['rufid.create']), {})).rejects.toMatchObject({ code: 1003 })
    const q = Array.from({ length: 31 }, (_, i) => `w${i}`).join(' ')
    await expect(m.search(principal('acme'), { q })).rejects.toMatchObject({ code: 1006 })
  })

  it('lets the event loop turn while it builds an index', async () => {
    for (let i = 0; i < 50; i++) await create(t, 'big', { function_name: `fn${i}`, description: `function number ${i}` })
    const m = await open(1000, 0)
    let seenDuringBuild = -1
    const search = m.search(principal('big'), { q: 'number' })
    setImmediate(() => {
      seenDuringBuild = m.stats().indexed_functions
    })
    expect((await search).pagination.total).toBe(50)
    expect(seenDuringBuild).toBeGreaterThan(0)
    expect(seenDuringBuild).toBeLessThan(50)
  })
})

describe('marketplace index and store scan', () => {
  // a small vocabulary so that prefixes, shared words and multi-word queries collide often
  const VOCAB = ['alpha', 'alps', 'beta', 'bet', 'gamma', 'gam', 'delta', 'del', 'csv', 'json', 'read', 'reads', 'reader', 'x']
  let seed = 7
  const rand = (n: number) => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0
    return (seed >>> 8) % n
  }
  const pick = (k: number) => Array.from({ length: k }, () => VOCAB[rand(VOCAB.length)]!)

  it('match, rank and count facets identically on random data and queries', async () => {
    const fns: FunctionVersion[] = Array.from({ length: 300 }, (_, i) => ({
      function_id: `id-${i}`, tenant_id: 't', rufid_short: `s${String(i).padStart(4, '0')}`, version: 1 + rand(3),
      function_name: pick(1 + rand(2)).join('_'), signature: `(${pick(rand(3)).join(', ')})`, language: ['JavaScript', 'python', 'typescript'][rand(3)]!,
      description: pick(rand(8)).join(' '), tags: pick(rand(3)), source_code: '', content_digest: '', created_at: '',
      author: `a${rand(4)}`, manifest: null, lockfile: null, limits: {},
    }))
    const index = new TenantIndex('t')
    for (const fn of fns) index.add(analyze(fn))
    // replace and remove some, as updates from the bus do
    for (let i = 0; i < 40; i++) index.remove(fns[rand(fns.length)]!.rufid_short)
    const live = fns.filter((f) => index.has(f.rufid_short))
    async function* stream(): AsyncGenerator<FunctionVersion> {
      for (const f of live) yield f
    }
    let nonEmpty = 0
    for (let i = 0; i < 200; i++) {
      const q = compileQuery({
        q: pick(rand(4)).map((w) => w.slice(0, 1 + rand(w.length))).join(' '),
        ...(rand(4) === 0 ? { language: 'javascript' } : {}),
        ...(rand(4) === 0 ? { tags: pick(1) } : {}),
        limit: 1 + rand(30), offset: rand(20),
      })
      const a = index.search(q)
      const b = await scanSearch(stream, q)
      expect({ hits: b.hits, total: b.total, facets: b.facets.result() }, JSON.stringify(q)).toEqual({ hits: a.hits, total: a.total, facets: a.facets.result() })
      if (a.total > 0 && q.words.length > 0) nonEmpty++
    }
    expect(nonEmpty).toBeGreaterThan(40)
  })
})
