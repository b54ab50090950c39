// The console's query strings: an empty or blank box is left out, never sent (the node refuses an
// empty or blank query value with 400, issue 28: a search of only spaces must list every function).
import { describe, expect, it } from 'vitest'
import { queryOf } from '../../console/src/api.js'

describe('console queryOf', () => {
  it('leaves out empty and blank values and trims the others', () => {
    expect(queryOf({ search: '   ', tags: '', limit: 20, offset: undefined, version: null })).toBe('?limit=20')
    expect(queryOf({ search: '  add ' })).toBe('?search=add')
    expect(queryOf({ search: '\t' })).toBe('')
  })
})
