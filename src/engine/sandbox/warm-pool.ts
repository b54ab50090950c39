import { FairLru } from '../fair-lru.js'
import type { WarmEntry, WarmStore } from './runtime.js'

export interface WarmPoolBounds {
  /** entries (isolates, compiled Python sources) one worker keeps at most */
  maxEntries: number
  /** their memory (`WarmEntry.memoryBytes`) at most, over all tenants; Infinity: no bound */
  maxBytes: number
  /** the memory one tenant's entries may hold at most; Infinity: only the shared bounds */
  maxBytesPerAccount: number
}

/**
 * A worker's warm state (one entry per key: a function version of a tenant), shared fairly between
 * accounts (root tenants): bounded by count and by memory, over all and per tenant. When a shared
 * bound is passed, the least recently used entry of the tenant holding the most goes (FairLru), so
 * one tenant's churn — many functions, or calls spread over child namespaces, which count against
 * their root — evicts its own warm isolates, never those of a tenant that holds less. An entry is
 * weighed by its memory each time it is put back after a call. Evicted entries are disposed.
 */
export class WarmPool implements WarmStore {
  private readonly lru: FairLru<WarmEntry>

  constructor(bounds: WarmPoolBounds) {
    this.lru = new FairLru<WarmEntry>(
      { maxEntries: bounds.maxEntries, maxWeight: bounds.maxBytes, maxWeightPerAccount: bounds.maxBytesPerAccount },
      (_key, entry) => entry.dispose(),
    )
  }

  get size(): number {
    return this.lru.size
  }

  /** the memory of the entries, as weighed when each was last put back */
  get bytes(): number {
    return this.lru.weight
  }

  peek(key: string): WarmEntry | undefined {
    return this.lru.peek(key)
  }

  take(key: string): WarmEntry | undefined {
    return this.lru.take(key)
  }

  put(key: string, entry: WarmEntry): void {
    this.lru.put(key, entry, entry.account, entry.memoryBytes())
  }

  keys(): string[] {
    return this.lru.keys()
  }

  /** what each tenant holds: entries and bytes */
  shares(): Map<string, { entries: number; weight: number }> {
    return this.lru.shares()
  }

  clear(): void {
    this.lru.clear()
  }
}
