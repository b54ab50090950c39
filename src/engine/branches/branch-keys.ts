import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto'

/** scrypt cost: N = 2^14, r = 8, p = 1 (about 16 MiB and tens of milliseconds per check). */
const N = 16384
const R = 8
const P = 1
const LENGTH = 32
const MAX_MEMORY = 64 * 1024 * 1024

/** A branch key chosen by the caller must be at least this long. */
export const MIN_BRANCH_KEY_LENGTH = 16
export const MAX_BRANCH_KEY_LENGTH = 256

/** A fresh branch key (256 random bits). */
export function mintBranchKey(): string {
  return 'svcbk_' + randomBytes(32).toString('base64url')
}

function derive(key: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(key, salt, LENGTH, { N: n, r, p, maxmem: MAX_MEMORY }, (err, out) => (err ? reject(err) : resolve(out)))
  })
}

/**
 * The stored form of a branch key: `scrypt$N$r$p$<salt>$<hash>` (base64url). Salted and slow,
 * because a caller may choose the key and the hash travels with the ledger.
 */
export async function hashBranchKey(key: string): Promise<string> {
  const salt = randomBytes(16)
  const hash = await derive(key, salt, N, R, P)
  return ['scrypt', N, R, P, salt.toString('base64url'), hash.toString('base64url')].join('$')
}

/** Whether `key` is the key of `stored` (constant-time comparison). */
export async function verifyBranchKey(key: string, stored: string): Promise<boolean> {
  const parts = stored.split('$')
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false
  const [n, r, p] = parts.slice(1, 4).map(Number) as [number, number, number]
  if (![n, r, p].every((x) => Number.isInteger(x) && x > 0) || n > 1 << 20) return false
  const salt = Buffer.from(parts[4]!, 'base64url')
  const expected = Buffer.from(parts[5]!, 'base64url')
  const actual = await derive(key, salt, n, r, p)
  return actual.length === expected.length && timingSafeEqual(actual, expected)
}
