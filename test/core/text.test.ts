// fitsUtf8Bytes (src/core/text.ts): the size check before hashing, lexing or decoding a text.
import { describe, expect, it } from 'vitest'
import { fitsUtf8Bytes } from '../../src/core/text.js'

describe('fitsUtf8Bytes', () => {
  it('compares the UTF-8 size with the bound, inclusive, for 1- to 4-byte characters', () => {
    for (const [s, bytes] of [['', 0], ['abc', 3], ['é', 2], ['€', 3], ['😀', 4], ['a€😀é', 10], ['€'.repeat(4), 12]] as const) {
      expect(Buffer.byteLength(s, 'utf8')).toBe(bytes)
      expect(fitsUtf8Bytes(s, bytes), `${s} in ${bytes}`).toBe(true)
      if (bytes > 0) expect(fitsUtf8Bytes(s, bytes - 1), `${s} in ${bytes - 1}`).toBe(false)
      expect(fitsUtf8Bytes(s, bytes + 1)).toBe(true)
    }
  })

  it('decides by length alone when it can: more code units than bytes, or 3 bytes each still fit', () => {
    expect(fitsUtf8Bytes('a'.repeat(11), 10)).toBe(false)
    expect(fitsUtf8Bytes('€€€', 9)).toBe(true)
    expect(fitsUtf8Bytes('€€€', 8)).toBe(false)
    expect(fitsUtf8Bytes('aaa', 9)).toBe(true)
    // a lone surrogate is written as U+FFFD, 3 bytes
    expect(fitsUtf8Bytes('\ud800\ud800', 6)).toBe(true)
    expect(fitsUtf8Bytes('\ud800\ud800', 5)).toBe(false)
  })
})
