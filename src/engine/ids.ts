import { randomFillSync } from 'node:crypto'

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'
/** Random bytes drawn 4 KB at a time (one call into the CSPRNG per 256 ids, not one per id). */
const pool = Buffer.alloc(4096)
let poolOffset = pool.length

/**
 * A time-ordered identifier: 10 characters of milliseconds since the epoch, then 16 random
 * characters, in Crockford base 32 (whose alphabet is in ASCII order, so ids sort by time).
 */
export function timeOrderedId(prefix: string, now = Date.now()): string {
  let time = ''
  let t = now
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time
    t = Math.floor(t / 32)
  }
  if (poolOffset + 16 > pool.length) {
    randomFillSync(pool)
    poolOffset = 0
  }
  let tail = ''
  for (let i = poolOffset; i < poolOffset + 16; i++) tail += CROCKFORD[pool[i]! % 32]
  poolOffset += 16
  return `${prefix}${time}${tail}`
}

/** The smallest id of `timeOrderedId(prefix, now)` for a given instant (for range scans). */
export function timeOrderedLowerBound(prefix: string, now: number): string {
  return timeOrderedId(prefix, now).slice(0, prefix.length + 10)
}
