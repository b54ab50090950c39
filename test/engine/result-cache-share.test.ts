import { describe, expect, it } from 'vitest'
import { OFFERED_ACCOUNT, ResultCache, type CachedResult } from '../../src/engine/executions/result-cache.js'

const entry = (tenant: string, i: number, bytes = 100, source: CachedResult['source'] = 'local'): CachedResult => ({
  tenant, content_digest: `c${i}`, lockfile_digest: 'l', arguments_digest: `a${i}`, result: i, resultBytes: bytes, receipts: [], source,
})

describe("the result cache's room is shared fairly between tenants", () => {
  it("one tenant's churn evicts its own results, never those of a tenant holding less", () => {
    const cache = new ResultCache({ maxEntries: 10, maxBytes: 1e9, maxResultBytes: 1e6 })
    for (let i = 0; i < 3; i++) cache.put(`g${i}`, entry('globex', i), 'globex')
    for (let i = 0; i < 500; i++) cache.put(`a${i}`, entry('acme.n1', i), 'acme')
    expect(cache.size).toBe(10)
    for (let i = 0; i < 3; i++) expect(cache.get(`g${i}`)?.result).toBe(i)
  })

  it('a tenant past max_bytes_per_tenant loses its own oldest results', () => {
    const cache = new ResultCache({ maxEntries: 100, maxBytes: 1e9, maxResultBytes: 1e6, maxBytesPerTenant: 3_000 })
    cache.put('g0', entry('globex', 0, 1_000), 'globex')
    for (let i = 0; i < 10; i++) cache.put(`a${i}`, entry('acme', i, 1_000), 'acme')
    expect(cache.get('a0')).toBeUndefined()
    expect(cache.get('a9')?.result).toBe(9)
    expect(cache.get('g0')?.result).toBe(0)
    expect(cache.bytes).toBeLessThanOrEqual(3_000 + 2_000)
  })

  it("members' offered results share one account of their own", () => {
    const cache = new ResultCache({ maxEntries: 6, maxBytes: 1e9, maxResultBytes: 1e6 })
    for (let i = 0; i < 2; i++) cache.put(`g${i}`, entry('globex', i), 'globex')
    for (let i = 0; i < 50; i++) cache.put(`o${i}`, entry('globex', 100 + i, 100, 'offered'))
    expect(cache.get('g0')?.result).toBe(0)
    expect(cache.get('g1')?.result).toBe(1)
    expect(OFFERED_ACCOUNT).toBe('<federation>')
  })
})
