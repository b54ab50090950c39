import { readFileSync } from 'node:fs'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  base62, computeRufid, formatRufid, isShortRufid, isValidTenantId, languageFamily, normalizeSource, parseRufid, parseVersionLabel, prepareSource,
  trimAsciiWhitespace,
} from '../../src/core/rufid.js'
import { SvcError } from '../../src/core/errors.js'

interface Vector {
  id: string
  covers: string[]
  function_name: string
  signature: string
  language: string
  source_code: string
  normalized_code: string
  sha256_hex: string
  rufid_short: string
}

const vectors = JSON.parse(readFileSync(new URL('../vectors/rufid-v1.json', import.meta.url), 'utf8')) as { cases: Vector[] }

describe('RUFID v1 vectors (test/vectors/rufid-v1.json)', () => {
  it('has at least 30 cases covering every bullet of rufid-v1.md §9', () => {
    expect(vectors.cases.length).toBeGreaterThanOrEqual(30)
    const covered = new Set(vectors.cases.flatMap((c) => c.covers))
    for (const bullet of [
      'family:python', 'family:js', 'family:go', 'family:plain', 'comment-in-string', 'block-comment-no-lf',
      'block-comment-with-lf', 'crlf', 'bom', 'python-triple-quoted', 'indentation-depth',
      'template-trailing-whitespace', 'unterminated-string', 'empty-source', 'non-ascii',
    ]) expect(covered, bullet).toContain(bullet)
  })

  for (const v of vectors.cases) {
    it(`${v.id}`, () => {
      const got = computeRufid(v)
      expect(got.normalized_code).toBe(v.normalized_code)
      expect(got.content_digest).toBe(v.sha256_hex)
      expect(got.rufid_short).toBe(v.rufid_short)
      expect(got.rufid_short).toMatch(/^[A-Za-z0-9]{12}$/)
    })
  }

  it('indentation that differs only in depth gives different RUFIDs', () => {
    const [a, b] = ['py-indent-2', 'py-indent-4'].map((id) => vectors.cases.find((c) => c.id === id)!)
    expect(a!.rufid_short).not.toBe(b!.rufid_short)
  })
})

describe('normalization', () => {
  it('treats comments and insignificant whitespace as identity-neutral', () => {
    const base = { function_name: 'add', signature: '(a, b)', language: 'js' }
    const a = computeRufid({ ...base, source_code: 'function add(a, b) { return a + b }' })
    const b = computeRufid({ ...base, source_code: '\n// doc\nfunction add(a, b) { return a + b }   \n\n' })
    expect(a.rufid_short).toBe(b.rufid_short)
  })

  it('never merges programs that differ inside a string literal', () => {
    const base = { function_name: 'f', signature: '()', language: 'python' }
    const a = computeRufid({ ...base, source_code: 'def f():\n    return "a  "\n' })
    const b = computeRufid({ ...base, source_code: 'def f():\n    return "a "\n' })
    expect(a.rufid_short).not.toBe(b.rufid_short)
  })

  it('maps languages to families case-insensitively', () => {
    expect(languageFamily('TypeScript')).toBe('js')
    expect(languageFamily('GOLANG')).toBe('go')
    expect(languageFamily('Py')).toBe('python')
    expect(languageFamily('rust')).toBe('plain')
    for (const l of ['python', 'python3', 'py']) expect(languageFamily(l), l).toBe('python')
    for (const l of ['javascript', 'js', 'node', 'nodejs', 'typescript', 'ts', 'jsx', 'tsx', 'mjs', 'cjs']) expect(languageFamily(l), l).toBe('js')
    for (const l of ['go', 'golang']) expect(languageFamily(l), l).toBe('go')
    for (const l of ['', 'java', 'pythonx', 'constructor', 'toString', '__proto__']) expect(languageFamily(l), l).toBe('plain')
  })

  it('keeps the executed source untouched (normalization is only for identity)', () => {
    const src = 'def f():  # c\n    return 1\n'
    normalizeSource(src, 'python')
    expect(src).toBe('def f():  # c\n    return 1\n')
  })
})

describe('trims (scans from the ends, issue 27)', () => {
  // the rules as rufid-v1 §2.3 and §6 (plain) state them, written as the regexes the scans replaced:
  // the same text, only quadratic in V8 on a long blank run followed by anything else
  const specTrim = (s: string): string => s.replace(/^[ \t\n\r\f\v]+|[ \t\n\r\f\v]+$/g, '')
  const specPlain = (s: string): string => prepareSource(s).replace(/[ \t\f\v\n]+$/, '')
  // ASCII whitespace, CR, a BOM, and the Unicode blanks §2.3 and §6 leave alone
  const text = fc.array(fc.constantFrom(' ', '\t', '\n', '\r', '\f', '\v', 'x', ':', '\u00a0', '\u2028', '\ufeff', '\u3000'), { maxLength: 24 }).map((a) => a.join(''))

  it('trimAsciiWhitespace trims exactly what §2.3 names', () => {
    fc.assert(fc.property(text, (s) => { expect(trimAsciiWhitespace(s)).toBe(specTrim(s)) }), { numRuns: 2000 })
    expect(trimAsciiWhitespace(' \t\n\r\f\vadd\v\f\r\n\t ')).toBe('add')
    expect(trimAsciiWhitespace('\u00a0add\u00a0')).toBe('\u00a0add\u00a0')
    expect(trimAsciiWhitespace(' \t ')).toBe('')
  })

  it('the plain family drops trailing blanks and LFs only, as §6 says', () => {
    fc.assert(fc.property(text, (s) => { expect(normalizeSource(s, 'ruby')).toBe(specPlain(s)) }), { numRuns: 2000 })
    expect(normalizeSource('puts 1 \t\f\v\r\n \n', 'ruby')).toBe('puts 1')
    expect(normalizeSource('  puts 1\u00a0\n', 'ruby')).toBe('  puts 1\u00a0')
  })

  it('a line of block comments: each is a space, or an LF when it spans lines', () => {
    expect(normalizeSource('a/**/b/*\n*/c/**/d', 'js')).toBe('a b\nc d')
    expect(normalizeSource('x' + '/**/'.repeat(1000) + 'y/*\n*/z', 'go')).toBe('x' + ' '.repeat(1000) + 'y\nz')
  })
})

describe('base62', () => {
  it('encodes big-endian integers with the spec alphabet', () => {
    expect(base62(Uint8Array.from([0]))).toBe('0')
    expect(base62(Uint8Array.from([61]))).toBe('z')
    expect(base62(Uint8Array.from([62]))).toBe('10')
    expect(base62(Uint8Array.from([1, 0]))).toBe('48') // 256 = 4*62 + 8
  })
})

describe('parsing and validation (1001)', () => {
  it('accepts the short and full forms', () => {
    expect(parseRufid('AbC123xyz789')).toEqual({ short: 'AbC123xyz789' })
    expect(parseRufid('rufid:AbC123xyz789:v12:tenant-a.b_c')).toEqual({ short: 'AbC123xyz789', version: 12, tenant_id: 'tenant-a.b_c' })
    expect(formatRufid('AbC123xyz789', 3, 't1')).toBe('rufid:AbC123xyz789:v3:t1')
  })

  it.each([
    '', 'short', 'AbC123xyz78', 'AbC123xyz7890', 'AbC123xyz78!', 'AbC123xyz78é', ' AbC123xyz789',
    'rufid:AbC123xyz789', 'rufid:AbC123xyz789:v0:t', 'rufid:AbC123xyz789:v01:t', 'rufid:AbC123xyz789:1:t',
    'rufid:AbC123xyz789:v1:', 'rufid:AbC123xyz789:v1:ten ant', `rufid:AbC123xyz789:v1:${'t'.repeat(65)}`,
    'RUFID:AbC123xyz789:v1:t', 12, null, undefined, {}, ['AbC123xyz789'],
    // the patterns are the whole value (issue 28: without their anchors these parsed)
    'AbC123xyz789\n', 'xrufid:AbC123xyz789:v1:t', ' rufid:AbC123xyz789:v1:t', 'rufid:AbC123xyz789:v1:t!', 'rufid:AbC123xyz789:v1:t\n',
    `rufid:AbC123xyz789:v1:${'t'.repeat(64)}x!`, 'rufid:AbC123xyz789:v9007199254740993:t',
  ])('rejects %j with 1001', (bad) => {
    try {
      parseRufid(bad)
      expect.unreachable()
    } catch (err) {
      expect(err).toBeInstanceOf(SvcError)
      expect((err as SvcError).code).toBe(1001)
    }
  })

  it('parses version labels', () => {
    expect(parseVersionLabel('v1')).toBe(1)
    expect(parseVersionLabel('v42')).toBe(42)
    expect(parseVersionLabel('v9007199254740991')).toBe(9007199254740991)
    for (const bad of ['1', 'v0', 'V1', 'v', 'v1.0', '', 3, 'v1x', 'xv1', 'v1\n', 'v9007199254740993', null]) {
      expect(() => parseVersionLabel(bad), String(bad)).toThrow(expect.objectContaining({ code: 1001, message: `malformed version label: ${JSON.stringify(bad)}` }))
    }
  })

  it('says why a RUFID is refused', () => {
    expect(() => parseRufid(7)).toThrow(expect.objectContaining({ code: 1001, message: 'RUFID must be a string: 7' }))
    expect(() => parseRufid('nope')).toThrow(expect.objectContaining({ code: 1001, message: 'malformed RUFID: "nope"' }))
    expect(() => parseRufid('rufid:AbC123xyz789:v9007199254740993:t')).toThrow(expect.objectContaining({ message: 'version out of range: "rufid:AbC123xyz789:v9007199254740993:t"' }))
    expect(parseRufid('rufid:AbC123xyz789:v9007199254740991:t').version).toBe(9007199254740991)
  })

  it('checks short RUFIDs and tenant ids as whole values', () => {
    expect(isShortRufid('AbC123xyz789')).toBe(true)
    for (const bad of ['AbC123xyz78', 'AbC123xyz7890', ' AbC123xyz789', 'AbC123xyz789\n', 12]) expect(isShortRufid(bad), String(bad)).toBe(false)
    for (const ok of ['t', 'tenant-a.b_c', 'T'.repeat(64)]) expect(isValidTenantId(ok), ok).toBe(true)
    for (const bad of ['', ' t', 't ', 't\n', 'x!t', 't!', 'T'.repeat(65), 7, null]) expect(isValidTenantId(bad), String(bad)).toBe(false)
  })
})
