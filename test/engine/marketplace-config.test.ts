// The marketplace's memory bound in the daemon configuration.
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/daemon/config.js'

describe('marketplace configuration', () => {
  it('defaults to a bound of 200,000 indexed functions; SVC_MARKETPLACE_MAX_INDEXED_FUNCTIONS overrides it, validated', () => {
    expect(loadConfig({ env: {} }).marketplace.max_indexed_functions).toBe(200_000)
    expect(loadConfig({ env: { SVC_MARKETPLACE_MAX_INDEXED_FUNCTIONS: '0' } }).marketplace.max_indexed_functions).toBe(0)
    expect(loadConfig({ env: { SVC_MARKETPLACE_MAX_INDEXED_FUNCTIONS: '5000' } }).marketplace.max_indexed_functions).toBe(5000)
    expect(() => loadConfig({ env: { SVC_MARKETPLACE_MAX_INDEXED_FUNCTIONS: 'many' } })).toThrow(/SVC_MARKETPLACE_MAX_INDEXED_FUNCTIONS/)
    expect(() => loadConfig({ env: { SVC_MARKETPLACE_MAX_INDEXED_FUNCTIONS: '-1' } })).toThrow(/marketplace.max_indexed_functions/)
  })
})
