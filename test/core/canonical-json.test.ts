// canonicalJson and canonicalJsonStrict share one writer, and the strict one checks as it writes;
// the reference below is the code they replaced (JSON.stringify per value, then for the strict one
// a checking walk first): the same text for every value, and for every value without a canonical
// form the same TypeError, message included.
import { describe, expect, it } from 'vitest'
import { canonicalJson, canonicalJsonStrict } from '../../src/core/canonical-json.js'

/** mulberry32: a small seeded generator, so a failure names a reproducible case */
function rng(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const STRINGS = ['', 'a', 'plain text', 'quote " inside', 'back\\slash', 'tab\tnew\nline', '\u0000\u001f\u007f', 'é ü 中文', '𝄞 pair', '\u2028\u2029', '~/ pointer', 'z', 'A', 'aa', '\ud800', '\udc00x']
const NUMBERS = [0, -0, 1, -1, 0.1, 1e21, 1e-7, 123456789012345680000, Number.MAX_SAFE_INTEGER, -5e-324, 2 ** 53 + 2]

function value(r: () => number, depth: number): unknown {
  const k = Math.floor(r() * (depth > 3 ? 5 : 8))
  switch (k) {
    case 0: return STRINGS[Math.floor(r() * STRINGS.length)]
    case 1: return NUMBERS[Math.floor(r() * NUMBERS.length)]
    case 2: return r() < 0.5
    case 3: return null
    case 4: return r() < 0.9 ? Math.round(r() * 1e6) / 1e3 : [NaN, Infinity, undefined, 10n][Math.floor(r() * 4)]
    case 5: {
      const arr: unknown[] = []
      const n = Math.floor(r() * 4)
      for (let i = 0; i < n; i++) arr.push(value(r, depth + 1))
      if (r() < 0.05) arr[n + 1] = 1 // a hole
      return arr
    }
    case 6: {
      const obj: Record<string, unknown> = r() < 0.05 ? Object.create(null) : {}
      const n = Math.floor(r() * 4)
      for (let i = 0; i < n; i++) obj[STRINGS[Math.floor(r() * STRINGS.length)]!] = r() < 0.1 ? undefined : value(r, depth + 1)
      return obj
    }
    default: return r() < 0.9 ? { nested: value(r, depth + 1) } : r() < 0.5 ? new Date(0) : new Map()
  }
}

/** The replaced canonicalJson (a hole written as null, as JSON.stringify writes it). */
function referenceJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError('non-finite number in JSON')
    if (typeof value === 'bigint') throw new TypeError('bigint in JSON')
    const s = JSON.stringify(value)
    if (s === undefined) throw new TypeError(`${typeof value} is not JSON`)
    return s
  }
  if (Array.isArray(value)) return '[' + Array.from(value, (v) => (v === undefined ? 'null' : referenceJson(v))).join(',') + ']'
  const record = value as Record<string, unknown>
  const keys = Object.keys(record).filter((k) => record[k] !== undefined).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  return '{' + keys.map((k) => JSON.stringify(k) + ':' + referenceJson(record[k])).join(',') + '}'
}

const LONE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** The replaced checking walk of canonicalJsonStrict, pointers and messages as they were. */
function referenceCheck(value: unknown, pointer: string): void {
  if (value === null || typeof value === 'boolean') return
  if (typeof value === 'string') {
    if (LONE.test(value)) throw new TypeError(`lone surrogate in the string at '${pointer}'`)
    return
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`non-finite number at '${pointer}'`)
    return
  }
  if (Array.isArray(value)) {
    value.forEach((v, i) => referenceCheck(v, `${pointer}/${i}`))
    return
  }
  if (typeof value === 'object' && [Object.prototype, null].includes(Object.getPrototypeOf(value))) {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      const at = `${pointer}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`
      if (LONE.test(k)) throw new TypeError(`lone surrogate in the member name at '${at}'`)
      if (v !== undefined) referenceCheck(v, at)
    }
    return
  }
  throw new TypeError(`${value === undefined ? 'undefined' : typeof value === 'object' ? 'a non-plain object' : typeof value} at '${pointer}' is not JSON`)
}

/** A function's answer: its text, or its error's message */
function answer(f: () => string): { text?: string; error?: string } {
  try {
    return { text: f() }
  } catch (err) {
    return { error: (err as Error).message }
  }
}

describe('canonicalJson and canonicalJsonStrict (one writer)', () => {
  it('write what the replaced code wrote for 5,000 random values, and refuse the same values with the same message', () => {
    let accepted = 0
    let refused = 0
    for (let seed = 1; seed <= 5_000; seed++) {
      const v = value(rng(seed), 0)
      expect(answer(() => canonicalJson(v)), `seed ${seed}`).toEqual(answer(() => referenceJson(v)))
      const got = answer(() => canonicalJsonStrict(v))
      expect(got, `seed ${seed}`).toEqual(answer(() => {
        referenceCheck(v, '')
        return referenceJson(v)
      }))
      if (got.text !== undefined) {
        accepted++
        expect(got.text, `seed ${seed}`).toBe(canonicalJson(v))
        expect(JSON.parse(got.text), `seed ${seed}`).toEqual(JSON.parse(canonicalJson(v)))
      } else {
        refused++
        // the message names the first place without a canonical form, as the checking walk did
        expect(got.error, `seed ${seed}`).toMatch(/ at '[^']*'/)
      }
    }
    // both kinds of value were generated
    expect(accepted).toBeGreaterThan(1_000)
    expect(refused).toBeGreaterThan(100)
  })

  it('matches RFC 8785 on the fixed cases', () => {
    expect(canonicalJsonStrict({ b: 1, a: [true, null, 'x'], c: { e: -0, d: 1e21 } })).toBe('{"a":[true,null,"x"],"b":1,"c":{"d":1e+21,"e":0}}')
    expect(canonicalJsonStrict({ '\u20ac': 1, '\r': 2, '1': 3, 'ö': 4 })).toBe('{"\\r":2,"1":3,"ö":4,"€":1}')
    expect(canonicalJsonStrict('quote " \\ \u0001')).toBe('"quote \\" \\\\ \\u0001"')
    expect(canonicalJsonStrict({ skipped: undefined, kept: 1 })).toBe('{"kept":1}')
    // eslint-disable-next-line no-sparse-arrays
    expect(canonicalJsonStrict([1, , 2])).toBe('[1,null,2]') // a hole is null, as JSON.stringify writes it
    expect(() => canonicalJsonStrict({ a: [1, { b: NaN }] })).toThrow("non-finite number at '/a/1/b'")
    expect(() => canonicalJsonStrict({ a: ['\ud800'] })).toThrow("lone surrogate in the string at '/a/0'")
    // a member left out for its undefined value still has its name checked
    expect(() => canonicalJsonStrict({ ok: 1, '\ud800': undefined })).toThrow("lone surrogate in the member name at '/\ud800'")
    expect(() => canonicalJsonStrict([undefined])).toThrow("undefined at '/0' is not JSON")
    expect(() => canonicalJsonStrict({ d: new Date(0) })).toThrow("a non-plain object at '/d' is not JSON")
  })
})
