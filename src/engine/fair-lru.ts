/**
 * Bounds of a cache shared by several accounts (tenants). The shared bounds are the cache's
 * capacity; the per-account bounds are what one account may hold at most, whatever room is left.
 */
export interface FairLruBounds {
  /** entries held at most over all accounts */
  maxEntries: number
  /** total weight (e.g. bytes) held at most over all accounts; Infinity: no bound */
  maxWeight?: number
  /** entries one account may hold at most; Infinity: only the shared bound */
  maxEntriesPerAccount?: number
  /** weight one account may hold at most; Infinity: only the shared bound */
  maxWeightPerAccount?: number
}

interface Held<V> {
  value: V
  account: string
  weight: number
}

interface AccountShare<V> {
  /** this account's entries, least recently used first (a Map keeps insertion order) */
  entries: Map<string, Held<V>>
  weight: number
}

/**
 * A least-recently-used cache whose room is shared fairly between accounts. When a shared bound is
 * passed, the entry that goes is the least recently used one of the account holding the most (the
 * most entries for the entry bound, the most weight for the weight bound; ties go to the account
 * whose least recently used entry is oldest), so an account's churn evicts its own entries first
 * and never those of an account that holds less than it does: an account holding no more than an
 * equal share of the room keeps what it holds. An account past its own bound loses its own least
 * recently used entries. Entries pushed out, removed with `delete` or dropped by `clear` are handed
 * to `onEvict`; `take` removes an entry without evicting it.
 *
 * `peek`, `take`, `touch` and `put` without eviction are O(1); an eviction looks at every account
 * holding something (accounts are few: the tenants of one node).
 */
export class FairLru<V> {
  private readonly where = new Map<string, Held<V>>()
  private readonly accounts = new Map<string, AccountShare<V>>()
  private totalWeight = 0
  /** a recency stamp per key, for ties between accounts */
  private readonly stamps = new Map<string, number>()
  private clock = 0

  constructor(
    private readonly bounds: FairLruBounds,
    private readonly onEvict: (key: string, value: V, account: string) => void = () => undefined,
  ) {
    if (!Number.isInteger(bounds.maxEntries) || bounds.maxEntries < 0) throw new RangeError('FairLru maxEntries must be an integer ≥ 0')
    for (const name of ['maxWeight', 'maxEntriesPerAccount', 'maxWeightPerAccount'] as const) {
      const v = bounds[name]
      if (v !== undefined && !(v >= 0)) throw new RangeError(`FairLru ${name} must be ≥ 0`)
    }
  }

  get size(): number {
    return this.where.size
  }

  /** the entries' total weight */
  get weight(): number {
    return this.totalWeight
  }

  keys(): string[] {
    return [...this.where.keys()]
  }

  has(key: string): boolean {
    return this.where.has(key)
  }

  /** The account an entry belongs to. */
  accountOf(key: string): string | undefined {
    return this.where.get(key)?.account
  }

  /** What each account holds: entries and weight. */
  shares(): Map<string, { entries: number; weight: number }> {
    const out = new Map<string, { entries: number; weight: number }>()
    for (const [account, share] of this.accounts) out.set(account, { entries: share.entries.size, weight: share.weight })
    return out
  }

  /** The entry, without taking it or changing its recency. */
  peek(key: string): V | undefined {
    return this.where.get(key)?.value
  }

  /** Marks the entry most recently used; returns it. */
  touch(key: string): V | undefined {
    const held = this.where.get(key)
    if (held === undefined) return undefined
    const share = this.accounts.get(held.account)!
    share.entries.delete(key)
    share.entries.set(key, held)
    this.stamps.set(key, ++this.clock)
    return held.value
  }

  /** Removes and returns the entry (the caller owns it until it is `put` back). */
  take(key: string): V | undefined {
    const held = this.detach(key)
    return held?.value
  }

  /**
   * Inserts the entry as the most recently used of `account`, with its weight, then evicts what
   * the bounds require (possibly this entry itself, when its account may hold nothing more).
   */
  put(key: string, value: V, account: string, weight = 0): void {
    const previous = this.detach(key)
    if (previous !== undefined && previous.value !== value) this.onEvict(key, previous.value, previous.account)
    const w = Number.isFinite(weight) && weight > 0 ? weight : 0
    let share = this.accounts.get(account)
    if (share === undefined) {
      share = { entries: new Map(), weight: 0 }
      this.accounts.set(account, share)
    }
    const held: Held<V> = { value, account, weight: w }
    share.entries.set(key, held)
    share.weight += w
    this.where.set(key, held)
    this.stamps.set(key, ++this.clock)
    this.totalWeight += w
    this.enforce(account)
  }

  delete(key: string): void {
    const held = this.detach(key)
    if (held !== undefined) this.onEvict(key, held.value, held.account)
  }

  clear(): void {
    for (const key of this.keys()) this.delete(key)
  }

  private detach(key: string): Held<V> | undefined {
    const held = this.where.get(key)
    if (held === undefined) return undefined
    this.where.delete(key)
    this.stamps.delete(key)
    const share = this.accounts.get(held.account)!
    share.entries.delete(key)
    share.weight -= held.weight
    this.totalWeight -= held.weight
    if (share.entries.size === 0) this.accounts.delete(held.account)
    return held
  }

  private enforce(account: string): void {
    const { maxEntries, maxWeight = Infinity, maxEntriesPerAccount = Infinity, maxWeightPerAccount = Infinity } = this.bounds
    // the account that just put: its own bounds first
    for (let share = this.accounts.get(account); share !== undefined && (share.entries.size > maxEntriesPerAccount || share.weight > maxWeightPerAccount); share = this.accounts.get(account)) {
      this.evictOldestOf(share)
    }
    while (this.where.size > maxEntries) this.evictOldestOf(this.heaviest((s) => s.entries.size))
    while (this.totalWeight > maxWeight && this.where.size > 0) this.evictOldestOf(this.heaviest((s) => s.weight))
  }

  /** The account holding the most by `measure`; among equals, the one whose oldest entry is oldest. */
  private heaviest(measure: (share: AccountShare<V>) => number): AccountShare<V> {
    let best: AccountShare<V> | undefined
    let bestMeasure = -Infinity
    let bestStamp = Infinity
    for (const share of this.accounts.values()) {
      const m = measure(share)
      const oldest = share.entries.keys().next().value as string
      const stamp = this.stamps.get(oldest) ?? 0
      if (m > bestMeasure || (m === bestMeasure && stamp < bestStamp)) {
        best = share
        bestMeasure = m
        bestStamp = stamp
      }
    }
    return best!
  }

  private evictOldestOf(share: AccountShare<V>): void {
    const oldest = share.entries.keys().next().value as string
    this.delete(oldest)
  }
}
