// The GraphQL door parses and validates each distinct document once (DocumentCache, per door):
// the cache must never change a verdict — introspection stays refused to anonymous callers after
// an authenticated one ran the same document, the cost limit still follows each request's
// variables, each operationName of a document selects its own operation — and it stays bounded.
import { buildSchema } from 'graphql/index.js'
import { describe, expect, it } from 'vitest'
import { checkOperation, DOCUMENT_CACHE_MAX_QUERY_CHARS, DocumentCache, parseOperation, type GraphqlInit } from '../../../src/api/graphql/limits.js'
import { SDL } from '../../../src/api/graphql/schema.js'

const schema = buildSchema(SDL)
const init: GraphqlInit = { maxDepth: 15, maxCost: 1000, maxDocumentBytes: 64 * 1024, introspection: 'authenticated' }

describe('GraphQL document cache', () => {
  it('parses a document once and hands the same document to every request of it', () => {
    const cache = new DocumentCache()
    const query = 'query($r: String!) { resolveRUFID(rufid: $r) { rufid } }'
    const a = parseOperation({ query, variables: { r: 'A' } }, init, cache)
    const b = parseOperation({ query, variables: { r: 'B' } }, init, cache)
    expect(b.document).toBe(a.document)
    expect(b.variables).toEqual({ r: 'B' })
    expect(cache.size).toBe(1)
    // without a cache every request parses its own
    expect(parseOperation({ query }, init).document).not.toBe(a.document)
  })

  it('keeps the anonymous and the authenticated verdict apart (introspection)', () => {
    const cache = new DocumentCache()
    const query = '{ __schema { queryType { name } } }'
    const check = (authenticated: boolean): number[] =>
      checkOperation(schema, parseOperation({ query }, init, cache), init, authenticated).map((e) => (e.extensions as { code: number }).code)
    expect(check(true)).toEqual([])
    expect(check(false)).toEqual([1003])
    expect(check(true)).toEqual([])
    expect(check(false)).toEqual([1003])
  })

  it('applies the cost limit to each request\'s own variables', () => {
    const cache = new DocumentCache()
    const query = 'query($n: Int) { listFunctions(limit: $n) { items { rufid metrics { usageCount } } } }'
    const cost = (n: number): string[] => checkOperation(schema, parseOperation({ query, variables: { n } }, init, cache), init, true).map((e) => e.message)
    expect(cost(5)).toEqual([])
    expect(cost(500)[0]).toMatch(/query cost \d+ exceeds the limit of 1000/)
    expect(cost(5)).toEqual([])
  })

  it('selects each named operation of a document on its own', () => {
    const cache = new DocumentCache()
    const query = 'query A { listFunctions { items { rufid } } } mutation B($r: String!) { deleteFunction(rufid: $r) }'
    expect(parseOperation({ query, operationName: 'A' }, init, cache)).toMatchObject({ label: 'rufid.list', operation: { operation: 'query' } })
    expect(parseOperation({ query, operationName: 'B' }, init, cache)).toMatchObject({ label: 'rufid.delete', operation: { operation: 'mutation' } })
    expect(() => parseOperation({ query }, init, cache)).toThrow(/exactly one operation/)
    expect(cache.size).toBe(1)
  })

  it('is bounded: the least recently used document goes, and long documents are not kept', () => {
    const cache = new DocumentCache(3)
    const q = (i: number): string => `{ listFunctions(limit: ${i}) { items { rufid } } }`
    for (const i of [1, 2, 3]) parseOperation({ query: q(i) }, init, cache)
    parseOperation({ query: q(1) }, init, cache) // 1 is now the most recent
    parseOperation({ query: q(4) }, init, cache)
    expect(cache.size).toBe(3)
    expect(cache.get(q(2))).toBeUndefined()
    expect(cache.get(q(1))).toBeDefined()
    const long = `{ listFunctions { items { rufid } } }${' '.repeat(DOCUMENT_CACHE_MAX_QUERY_CHARS)}`
    parseOperation({ query: long }, init, cache)
    expect(cache.get(long)).toBeUndefined()
  })
})
