import { describe, expect, it } from 'vitest'
import { LruCache } from '../../src/engine/lru.js'

describe('LruCache', () => {
  it('evicts the least recently used entry beyond capacity', () => {
    const evicted: string[] = []
    const lru = new LruCache<number>(2, (key) => evicted.push(key))
    lru.put('a', 1)
    lru.put('b', 2)
    lru.put('a', lru.take('a') as number)
    lru.put('c', 3)
    expect(evicted).toEqual(['b'])
    expect(lru.keys()).toEqual(['a', 'c'])
  })

  it('hands out entries with take() without evicting them', () => {
    const evicted: string[] = []
    const lru = new LruCache<number>(2, (key) => evicted.push(key))
    lru.put('a', 1)
    expect(lru.take('a')).toBe(1)
    expect(lru.size).toBe(0)
    expect(evicted).toEqual([])
  })

  it('evicts everything with capacity 0 and on clear()', () => {
    const evicted: string[] = []
    const none = new LruCache<number>(0, (key) => evicted.push(key))
    none.put('x', 1)
    expect(none.size).toBe(0)
    const lru = new LruCache<number>(3, (key) => evicted.push(key))
    lru.put('a', 1)
    lru.put('b', 2)
    lru.clear()
    expect(evicted).toEqual(['x', 'a', 'b'])
  })
})
