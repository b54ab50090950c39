/**
 * A bounded LRU with a time-to-live in front of the catalog's resolution path. It counts hits and
 * misses; `hitRatio()` feeds the `svc_rufid_cache_hits_ratio` gauge.
 */
export interface ResolutionCacheInit {
  maxEntries: number
  ttlMs: number
  now?: () => number
}

interface Slot<V> {
  value: V
  expiresAt: number
}

export class ResolutionCache<V> {
  private readonly entries = new Map<string, Slot<V>>()
  private readonly maxEntries: number
  private readonly ttlMs: number
  private readonly now: () => number
  hits = 0
  misses = 0

  constructor(init: ResolutionCacheInit) {
    this.maxEntries = Math.max(1, init.maxEntries)
    this.ttlMs = init.ttlMs
    this.now = init.now ?? Date.now
  }

  get(key: string): V | undefined {
    const slot = this.entries.get(key)
    if (slot === undefined || slot.expiresAt <= this.now()) {
      if (slot !== undefined) this.entries.delete(key)
      this.misses++
      return undefined
    }
    // refresh recency: Map iteration order is insertion order
    this.entries.delete(key)
    this.entries.set(key, slot)
    this.hits++
    return slot.value
  }

  set(key: string, value: V): void {
    this.entries.delete(key)
    this.entries.set(key, { value, expiresAt: this.now() + this.ttlMs })
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value as string
      this.entries.delete(oldest)
    }
  }

  delete(key: string): void {
    this.entries.delete(key)
  }

  clear(): void {
    this.entries.clear()
  }

  get size(): number {
    return this.entries.size
  }

  /** Hits over lookups since start; 0 before the first lookup. */
  hitRatio(): number {
    const total = this.hits + this.misses
    return total === 0 ? 0 : this.hits / total
  }
}
