/** A value set once (until reset); its listeners are told when it is set, or at once when it already is. */
export class Latch<T> {
  private current: T | undefined
  private readonly listeners = new Set<(value: T) => void>()

  /** the value, once set */
  get value(): T | undefined {
    return this.current
  }

  get isSet(): boolean {
    return this.current !== undefined
  }

  /** Calls `listener` with the value once it is set (at once when it is). Returns the unsubscribe. */
  on(listener: (value: T) => void): () => void {
    if (this.current !== undefined) {
      listener(this.current)
      return () => undefined
    }
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Sets the value and tells the listeners; false (nothing told) when it was already set. */
  set(value: T): boolean {
    if (this.current !== undefined) return false
    this.current = value
    for (const l of [...this.listeners]) l(value)
    this.listeners.clear()
    return true
  }

  /** Unset again (the listeners told before are not told again). */
  reset(): void {
    this.current = undefined
  }
}
