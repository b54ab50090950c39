/** An optional second bound: the entries' total weight (e.g. bytes), each entry weighed once when put. */
export interface LruWeightBound<V> {
  maxWeight: number
  weigh(value: V): number
}

/**
 * A bounded least-recently-used map. Entries pushed out by capacity (or by the total weight, when
 * a weight bound is given), removed with `delete` or dropped by `clear` are handed to `onEvict`;
 * `take` removes an entry without evicting it.
 */
export class LruCache<V> {
  private readonly entries = new Map<string, V>()
  private readonly weights = new Map<string, number>()
  private totalWeight = 0

  constructor(
    private readonly capacity: number,
    private readonly onEvict: (key: string, value: V) => void,
    private readonly weightBound?: LruWeightBound<V>,
  ) {}

  /** the entries' total weight (0 without a weight bound) */
  get weight(): number {
    return this.totalWeight
  }

  get size(): number {
    return this.entries.size
  }

  keys(): string[] {
    return [...this.entries.keys()]
  }

  has(key: string): boolean {
    return this.entries.has(key)
  }

  /** The entry, without taking it or changing its recency. */
  peek(key: string): V | undefined {
    return this.entries.get(key)
  }

  /** Removes and returns the entry (the caller owns it until it is `put` back). */
  take(key: string): V | undefined {
    const value = this.entries.get(key)
    this.entries.delete(key)
    this.unweigh(key)
    return value
  }

  /** Marks the entry most recently used; returns it. */
  touch(key: string): V | undefined {
    const value = this.entries.get(key)
    if (value === undefined) return undefined
    this.entries.delete(key)
    this.entries.set(key, value)
    return value
  }

  private unweigh(key: string): void {
    const w = this.weights.get(key)
    if (w === undefined) return
    this.totalWeight -= w
    this.weights.delete(key)
  }

  /** Inserts as most recently used, evicting the least recently used entries beyond capacity. */
  put(key: string, value: V): void {
    const previous = this.entries.get(key)
    this.entries.delete(key)
    this.unweigh(key)
    if (previous !== undefined && previous !== value) this.onEvict(key, previous)
    this.entries.set(key, value)
    if (this.weightBound !== undefined) {
      const w = this.weightBound.weigh(value)
      this.weights.set(key, w)
      this.totalWeight += w
    }
    while (this.entries.size > this.capacity || (this.weightBound !== undefined && this.totalWeight > this.weightBound.maxWeight && this.entries.size > 0)) {
      const oldest = this.entries.keys().next().value as string
      this.delete(oldest)
    }
  }

  delete(key: string): void {
    const value = this.entries.get(key)
    if (value === undefined) return
    this.entries.delete(key)
    this.unweigh(key)
    this.onEvict(key, value)
  }

  clear(): void {
    for (const key of this.keys()) this.delete(key)
  }
}
