import { randomBytes } from 'node:crypto'

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'

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
  const rnd = randomBytes(16)
  let tail = ''
  for (const b of rnd) tail += CROCKFORD[b % 32]
  return `${prefix}${time}${tail}`
}

/** The smallest id of `timeOrderedId(prefix, now)` for a given instant (for range scans). */
export function timeOrderedLowerBound(prefix: string, now: number): string {
  return timeOrderedId(prefix, now).slice(0, prefix.length + 10)
}
