/**
 * A hybrid logical clock: wall-clock milliseconds plus a counter, encoded as a fixed-width string so
 * that string order is clock order (`000001732262400000-000000`).
 */
export class HybridLogicalClock {
  private wall = 0
  private counter = 0

  constructor(private readonly nowMs: () => number = Date.now) {}

  get last(): string {
    return encode(this.wall, this.counter)
  }

  /** A timestamp greater than every one issued or observed. */
  now(): string {
    const t = this.nowMs()
    if (t > this.wall) {
      this.wall = t
      this.counter = 0
    } else {
      this.counter++
    }
    return this.last
  }

  /** Moves the clock past a timestamp received from another replica. */
  observe(stamp: string): void {
    const m = /^(\d{18})-(\d{6})$/.exec(stamp)
    if (m === null) return
    const wall = Number(m[1])
    const counter = Number(m[2])
    if (wall > this.wall || (wall === this.wall && counter > this.counter)) {
      this.wall = wall
      this.counter = counter
    }
  }
}

const encode = (wall: number, counter: number): string => `${wall.toString().padStart(18, '0')}-${counter.toString().padStart(6, '0')}`
