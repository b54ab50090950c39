import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { SvcError } from '../../src/core/errors.js'
import { computeRufid } from '../../src/core/rufid.js'
import { createCatalogStore, type SystemEvent } from '../../src/engine/index.js'
import { RUNNABLE_LANGUAGE_PATTERN } from '../../src/engine/registry/create-input.js'
import { createTestEngine, principal, type TestEngine } from '../fixtures/engine.js'
import { addJs, addTs } from '../fixtures/functions.js'

async function codeOf(p: Promise<unknown>): Promise<number> {
  try {
    await p
  } catch (err) {
    if (err instanceof SvcError) return err.code
    throw err
  }
  throw new Error('expected a rejection')
}

describe('function registry (in-process, memory-level)', () => {
  let t: TestEngine
  const dev = principal('acme')

  beforeEach(async () => {
    t = await createTestEngine()
  })
  afterEach(async () => {
    await t.engine.stop()
  })

  it('creates v1 with the RUFID of rufid-v1 and every §4.1 field', async () => {
    const r = await t.engine.functions.create(dev, addJs)
    const expected = computeRufid(addJs)
    expect(r.created).toBe(true)
    expect(r.rufid_short).toBe(expected.rufid_short)
    expect(r.rufid).toBe(`rufid:${expected.rufid_short}:v1:acme`)
    expect(r.version).toBe('v1')
    expect(r.fn.content_digest).toBe(expected.content_digest)
    expect(r.import_statement).toBe(`const add = (await import('svc://${expected.rufid_short}')).default`)
    expect(r.share_url).toBe(`https://share.test/f/${expected.rufid_short}`)
    expect(r.api_endpoint).toBe(`/api/v1/functions/${expected.rufid_short}/execute`)
    expect(r.fn.author).toBe('dev@acme.test')
  })

  it('gives the Python import statement a leading underscore when the hash starts with a digit', async () => {
    // search for a python function whose RUFID starts with a digit (about 1 in 6; bounded)
    for (let i = 0; i < 200; i++) {
      const def = { function_name: 'f', signature: '()', language: 'python', source_code: `def f():\n    return ${i}\n` }
      const id = computeRufid(def).rufid_short
      if (!/^[0-9]/.test(id)) continue
      const r = await t.engine.functions.create(dev, def)
      expect(r.import_statement).toBe(`from svc.rufid import _${id} as f`)
      return
    }
    throw new Error('no digit-leading RUFID found in 200 tries')
  })

  it('is idempotent for identical content and writes nothing new', async () => {
    const a = await t.engine.functions.create(dev, addJs)
    const b = await t.engine.functions.create(dev, { ...addJs, source_code: `// same code\n${addJs.source_code}  \n` })
    expect(b.created).toBe(false)
    expect(b.rufid).toBe(a.rufid)
    expect(await t.engine.functions.ledger(dev, 'add')).toHaveLength(1)
  })

  it('numbers versions per lineage: new code is a new hash and the next version', async () => {
    const v1 = await t.engine.functions.create(dev, addJs)
    const v2 = await t.engine.functions.create(dev, { ...addJs, source_code: 'function add(a, b) { return b + a }' })
    expect(v2.rufid_short).not.toBe(v1.rufid_short)
    expect(v2.version).toBe('v2')
    const ledger = await t.engine.functions.ledger(dev, 'add')
    expect(ledger.map((e) => [e.version, e.rufid_short])).toEqual([[1, v1.rufid_short], [2, v2.rufid_short]])
    expect(ledger[0]!.manifest_snapshot).toEqual({ manifest: null, lockfile: null })
    // resolve with a version that does not carry that hash: 1002
    expect(await codeOf(t.engine.functions.resolve(dev, { short: v2.rufid_short, version: 1 }))).toBe(1002)
  })

  it('same code with a different manifest is a new version of the same hash', async () => {
    const v1 = await t.engine.functions.create(dev, addJs)
    const v2 = await t.engine.functions.create(dev, { ...addJs, manifest: { schemaVersion: '1.0', name: 'add' } })
    expect(v2.rufid_short).toBe(v1.rufid_short)
    expect(v2.rufid).toBe(`rufid:${v1.rufid_short}:v2:acme`)
    const newest = await t.engine.functions.resolve(dev, { short: v1.rufid_short })
    expect(newest.fn.version).toBe(2)
    expect(newest.fn.manifest).toEqual({ schemaVersion: '1.0', name: 'add' })
  })

  it('resolves through the cache and reports it', async () => {
    const r = await t.engine.functions.create(dev, addTs)
    const first = await t.engine.functions.resolve(dev, { short: r.rufid_short })
    const second = await t.engine.functions.resolve(dev, { short: r.rufid_short })
    expect(first.cached).toBe(false)
    expect(second.cached).toBe(true)
    expect(second.fn).toEqual(first.fn)
    expect(t.engine.functions.cacheStats().hit_ratio).toBeCloseTo(0.5)
    const text = await t.engine.metrics.registry.getSingleMetricAsString('svc_rufid_cache_hits_ratio')
    expect(text).toMatch(/svc_rufid_cache_hits_ratio 0\.5/)
  })

  it('refuses a different canonical string with an existing short hash (1008) and stores nothing', async () => {
    const r = await t.engine.functions.create(dev, addJs)
    // forge a digest conflict for that hash, as a second canonical string with the same hash would
    const store = createCatalogStore({ db: t.db })
    const fn = (await store.versionsOfHash('acme', r.rufid_short))[0]!
    await store.putNewVersion({
      fn: { ...fn, content_digest: 'f'.repeat(64), version: 99 },
      ledger: { ...(await store.latestLedgerEntry('acme', 'add'))!, version: 99, content_digest: 'f'.repeat(64) },
    })
    expect(await codeOf(t.engine.functions.create(principal('other'), addJs))).toBe(1008)
    expect(await t.engine.functions.ledger(principal('other'))).toHaveLength(0)
  })

  it('keeps tenants apart: another tenant gets 1002, never the data', async () => {
    const r = await t.engine.functions.create(dev, addJs)
    const other = principal('globex')
    expect(await codeOf(t.engine.functions.resolve(other, { short: r.rufid_short }))).toBe(1002)
    expect(() => t.engine.functions.target(other, r.rufid)).toThrow(SvcError)
    expect((await t.engine.functions.list(other)).items).toHaveLength(0)
  })

  it('rejects malformed RUFIDs and versions with 1001', () => {
    for (const bad of ['nope', 'rufid:short:v1:t', 42, null]) {
      try {
        t.engine.functions.target(dev, bad)
        expect.unreachable()
      } catch (err) {
        expect((err as SvcError).code).toBe(1001)
      }
    }
    expect(() => t.engine.functions.target(dev, 'AbCdEfGhIjKl', 'version-1')).toThrow(/version/)
    expect(() => t.engine.functions.target(dev, 'rufid:AbCdEfGhIjKl:v2:acme', 'v3')).toThrow(/contradicts/)
  })

  it('validates definitions with 1006 and a JSON pointer per problem', async () => {
    try {
      await t.engine.functions.create(dev, { function_name: 'not valid!', source_code: '', signature: '', language: 7, tags: ['ok', ''] })
      expect.unreachable()
    } catch (err) {
      const e = err as SvcError
      expect(e.code).toBe(1006)
      const pointers = (e.details.problems as Array<{ pointer: string }>).map((p) => p.pointer)
      expect(pointers).toEqual(expect.arrayContaining(['/function_name', '/source_code', '/signature', '/language', '/tags/1']))
    }
    expect((await t.engine.functions.list(dev)).items).toHaveLength(0)
  })

  it('requires permissions (1003)', async () => {
    const consumer = principal('acme', ['rufid.read', 'rufid.execute'])
    expect(await codeOf(t.engine.functions.create(consumer, addJs))).toBe(1003)
    const r = await t.engine.functions.create(dev, addJs)
    expect(await codeOf(t.engine.functions.delete(consumer, { short: r.rufid_short }))).toBe(1003)
  })

  it('deletes by tombstone: the version is gone and never reused', async () => {
    const events: SystemEvent[] = []
    t.engine.events.on('system', (e) => events.push(e))
    const r = await t.engine.functions.create(dev, addJs)
    await t.engine.functions.resolve(dev, { short: r.rufid_short }) // warm the cache
    const deleted = await t.engine.functions.delete(dev, { short: r.rufid_short })
    expect(deleted.map((f) => f.version)).toEqual([1])
    expect(await codeOf(t.engine.functions.resolve(dev, { short: r.rufid_short }))).toBe(1002)
    expect(await codeOf(t.engine.functions.delete(dev, { short: r.rufid_short }))).toBe(1002)
    const again = await t.engine.functions.create(dev, addJs)
    expect(again.created).toBe(true)
    expect(again.version).toBe('v2')
    const ledger = await t.engine.functions.ledger(dev, 'add')
    expect(ledger[0]!.deleted_at).toBeTypeOf('string')
    expect(events.map((e) => e.type)).toEqual(['function.created', 'function.deleted', 'function.created'])
  })

  it('lists the newest live version per hash with search, tags and pagination', async () => {
    await t.engine.functions.create(dev, addJs)
    await t.engine.functions.create(dev, addTs)
    for (let i = 0; i < 5; i++) {
      await t.engine.functions.create(dev, { function_name: `f${i}`, signature: '()', language: 'js', source_code: `function f${i}() { return ${i} }`, tags: ['gen'] })
    }
    const all = await t.engine.functions.list(dev, { limit: 3 })
    expect(all.pagination).toEqual({ total: 7, limit: 3, offset: 0, next_offset: 3 })
    const last = await t.engine.functions.list(dev, { limit: 3, offset: 6 })
    expect(last.items).toHaveLength(1)
    expect(last.pagination.next_offset).toBeNull()
    expect((await t.engine.functions.list(dev, { tags: ['math'] })).items.map((f) => f.function_name)).toEqual(['add'])
    expect((await t.engine.functions.list(dev, { search: 'ADDS two' })).items.map((f) => f.function_name)).toEqual(['add'])
  })

  it('serializes concurrent creates of one lineage into distinct versions', async () => {
    const defs = Array.from({ length: 10 }, (_, i) => ({ ...addJs, source_code: `function add(a, b) { return a + b + ${i} }` }))
    const results = await Promise.all(defs.map((d) => t.engine.functions.create(dev, d)))
    expect(results.map((r) => r.version).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `v${i + 1}`).sort())
  })

  it('refuses a language this node cannot run with 1006 naming it and the languages it runs, storing nothing', async () => {
    for (const language of ['ruby', 'go', 'Rust', 'plain', 'python2', 'c++']) {
      const err = await t.engine.functions.create(dev, { ...addJs, language }).catch((e: unknown) => e)
      expect(err, language).toBeInstanceOf(SvcError)
      expect(err, language).toMatchObject({ code: 1006, details: { language, languages: ['javascript', 'typescript', 'python'] } })
      expect((err as SvcError).message).toContain(JSON.stringify(language))
    }
    expect((await t.engine.functions.list(dev)).items).toEqual([])
  })

  it('the published language pattern (OpenAPI) accepts exactly what the registry runs', async () => {
    const pattern = new RegExp(RUNNABLE_LANGUAGE_PATTERN)
    const runs = ['javascript', 'JavaScript', 'js', 'node', 'NodeJS', 'typescript', 'ts', 'TSX', 'jsx', 'mjs', 'cjs', 'python', 'Python', 'py', 'python3', 'python3.12', 'py3.11', 'PY3']
    const refused = ['ruby', 'go', 'golang', 'plain', 'python2', 'python3.', 'python3x', 'rust', 'c++', 'java', 'node20', 'javascript1', 'x']
    for (const language of runs) {
      expect(pattern.test(language), language).toBe(true)
      expect(() => t.engine.functions.admitLanguage(language), language).not.toThrow()
    }
    for (const language of refused) {
      expect(pattern.test(language), language).toBe(false)
      expect(() => t.engine.functions.admitLanguage(language), language).toThrow(SvcError)
    }
  })
})
