/**
 * A bounded least-recently-used map. Entries pushed out by capacity, removed with `delete` or
 * dropped by `clear` are handed to `onEvict`; `take` removes an entry without evicting it.
 */
export class LruCache<V> {
  private readonly entries = new Map<string, V>()

  constructor(
    private readonly capacity: number,
    private readonly onEvict: (key: string, value: V) => void,
  ) {}

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
    return value
  }

  /** Inserts as most recently used, evicting the least recently used entries beyond capacity. */
  put(key: string, value: V): void {
    const previous = this.entries.get(key)
    this.entries.delete(key)
    if (previous !== undefined && previous !== value) this.onEvict(key, previous)
    this.entries.set(key, value)
    while (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value as string
      this.delete(oldest)
    }
  }

  delete(key: string): void {
    const value = this.entries.get(key)
    if (value === undefined) return
    this.entries.delete(key)
    this.onEvict(key, value)
  }

  clear(): void {
    for (const key of this.keys()) this.delete(key)
  }
}
