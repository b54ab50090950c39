import { describe, expect, it } from 'vitest'
import { FairLru } from '../../src/engine/fair-lru.js'

describe('FairLru: room shared fairly between accounts', () => {
  it("one account's churn evicts its own entries, never those of an account holding less", () => {
    const evicted: string[] = []
    const lru = new FairLru<number>({ maxEntries: 10 }, (key) => evicted.push(key))
    for (let i = 0; i < 3; i++) lru.put(`b${i}`, i, 'globex')
    for (let i = 0; i < 1_000; i++) lru.put(`a${i}`, i, 'acme')
    expect(lru.size).toBe(10)
    expect(['b0', 'b1', 'b2'].every((k) => lru.has(k))).toBe(true)
    expect(evicted.every((k) => k.startsWith('a'))).toBe(true)
    // acme keeps its most recent entries
    expect(lru.keys().filter((k) => k.startsWith('a'))).toEqual(['a993', 'a994', 'a995', 'a996', 'a997', 'a998', 'a999'])
  })

  it('when the account that did not put holds the most, its own least recently used entry goes', () => {
    const lru = new FairLru<number>({ maxEntries: 4 })
    for (let i = 0; i < 3; i++) lru.put(`b${i}`, i, 'globex')
    lru.put('a0', 0, 'acme')
    lru.put('a1', 1, 'acme')
    expect(lru.has('b0')).toBe(false)
    expect(lru.has('a0')).toBe(true)
    expect(lru.shares().get('globex')?.entries).toBe(2)
  })

  it('evicts by weight from the account holding the most weight', () => {
    const lru = new FairLru<string>({ maxEntries: 100, maxWeight: 100 })
    lru.put('b0', 'x', 'globex', 30)
    lru.put('a0', 'x', 'acme', 40)
    lru.put('a1', 'x', 'acme', 40)
    expect(lru.weight).toBe(70)
    expect(lru.has('a0')).toBe(false)
    expect(lru.has('b0')).toBe(true)
    expect(lru.has('a1')).toBe(true)
  })

  it("an account past its own bound loses its own least recently used entries", () => {
    const lru = new FairLru<string>({ maxEntries: 100, maxWeight: 1_000, maxWeightPerAccount: 50, maxEntriesPerAccount: 3 })
    lru.put('b0', 'x', 'globex', 10)
    lru.put('a0', 'x', 'acme', 30)
    lru.put('a1', 'x', 'acme', 30)
    expect(lru.has('a0')).toBe(false)
    expect(lru.has('a1')).toBe(true)
    for (let i = 2; i < 6; i++) lru.put(`a${i}`, 'x', 'acme', 1)
    expect(lru.shares().get('acme')?.entries).toBe(3)
    expect(lru.has('b0')).toBe(true)
  })

  it('touch and take keep recency and ownership; a re-put is re-weighed', () => {
    const evicted: string[] = []
    const lru = new FairLru<string>({ maxEntries: 3, maxWeight: 100 }, (k) => evicted.push(k))
    lru.put('a0', 'x', 'acme', 10)
    lru.put('a1', 'x', 'acme', 10)
    lru.put('a2', 'x', 'acme', 10)
    lru.touch('a0')
    lru.put('a3', 'x', 'acme', 10)
    expect(evicted).toEqual(['a1'])
    const taken = lru.take('a0')
    expect(taken).toBe('x')
    expect(evicted).toEqual(['a1'])
    lru.put('a0', 'x', 'acme', 90)
    expect(lru.weight).toBeLessThanOrEqual(100)
    expect(lru.accountOf('a0')).toBe('acme')
    lru.clear()
    expect(lru.size).toBe(0)
    expect(lru.weight).toBe(0)
  })
})
