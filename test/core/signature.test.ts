import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { computeRufid } from '../../src/core/rufid.js'
import { deriveSignature } from '../../src/core/signature.js'
import type { SvcError } from '../../src/core/errors.js'
import { thrownBy } from '../fixtures/thrown.js'

export interface SignatureVector {
  id: string
  covers: string[]
  function_name: string
  language: string
  source_code: string
  /** the derived signature, when the case derives one */
  signature?: string
  sha256_hex?: string
  rufid_short?: string
  /** the expected failure, when the case derives none */
  error?: { code: 1006; name: 'VALIDATION_FAILED'; reason: string }
}

/** The SvcError `f` throws (the engine fixture's, from a module that does not load the engine). */
const failureOf = thrownBy

const vectors = JSON.parse(readFileSync(new URL('../vectors/signature-v1.json', import.meta.url), 'utf8')) as { cases: SignatureVector[] }

describe('derived signature vectors (test/vectors/signature-v1.json)', () => {
  it('has at least 30 cases covering every family and every required form', () => {
    expect(vectors.cases.length).toBeGreaterThanOrEqual(30)
    const covered = new Set(vectors.cases.flatMap((c) => c.covers))
    for (const bullet of [
      'family:python', 'family:js', 'family:go', 'family:plain', 'nesting', 'default-with-call', 'string-in-list',
      'comment-in-list', 'multi-line', 'async', 'generator', 'export', 'arrow', 'bare-parameter', 'type-annotation',
      'method', 'any-depth', 'name-in-string', 'name-in-comment', 'unbalanced', 'no-definition', 'crlf', 'bom',
    ]) expect(covered, bullet).toContain(bullet)
    expect(new Set(vectors.cases.map((c) => c.id)).size).toBe(vectors.cases.length)
    for (const c of vectors.cases) expect(c.signature === undefined, c.id).toBe(c.error !== undefined)
  })

  for (const v of vectors.cases) {
    it(v.id, () => {
      if (v.signature !== undefined) {
        const signature = deriveSignature(v)
        expect(signature).toBe(v.signature)
        const r = computeRufid({ ...v, signature })
        expect(r.content_digest).toBe(v.sha256_hex)
        expect(r.rufid_short).toBe(v.rufid_short)
      } else {
        const err = failureOf(() => deriveSignature(v))
        expect(err.code).toBe(v.error!.code)
        expect(err.name).toBe(v.error!.name)
        expect(err.details.reason).toBe(v.error!.reason)
        expect(err.details.function_name).toBe(v.function_name)
        expect(err.message).toContain(JSON.stringify(v.function_name))
        expect(err.message).toMatch(/explicit signature/)
      }
    })
  }
})

describe('deriveSignature', () => {
  it('gives the examples of rufid-v1 §10', () => {
    expect(deriveSignature({ function_name: 'add', language: 'python', source_code: 'def add(a: int, b: int = (1)) -> int:\n  return a + b' }))
      .toBe('(a: int, b: int = (1))')
    expect(deriveSignature({ function_name: 'f', language: 'javascript', source_code: 'function f(a, b = g(1), { c } = {}) {\n}' }))
      .toBe('(a, b = g(1), { c } = {})')
    expect(deriveSignature({ function_name: 'h', language: 'js', source_code: 'const h = x => x' })).toBe('(x)')
  })

  it('trims the function name as §2.3 does', () => {
    expect(deriveSignature({ function_name: ' \tadd\n', language: 'python', source_code: 'def add(a):\n  return a' })).toBe('(a)')
  })

  it('refuses an empty name and never matches a name inside a longer identifier', () => {
    expect(failureOf(() => deriveSignature({ function_name: '  ', language: 'python', source_code: 'def (a): pass' })).details.reason).toBe('no_definition')
    expect(failureOf(() => deriveSignature({ function_name: 'add', language: 'js', source_code: 'function readd(a) {}\nconst adder = (b) => b' })).code).toBe(1006)
  })
})

describe('signatureNotDerivable', () => {
  // the message and details a door returns as they are: each reason says what was wrong
  it('names the function, the reason and the remedy', () => {
    const e = (function_name: string, language: string, source_code: string): SvcError => failureOf(() => deriveSignature({ function_name, language, source_code }))
    const none = e('add', 'python', 'x = 1')
    expect(none.name).toBe('VALIDATION_FAILED')
    expect(none.message).toBe('cannot derive the signature of function "add": no definition of "add" was found in the source; give an explicit signature')
    expect(none.details).toStrictEqual({ function_name: 'add', reason: 'no_definition', problems: [{ pointer: '/signature', message: 'required: it cannot be derived from the source' }] })
    expect(e('add', 'js', 'function add(a {').message)
      .toBe('cannot derive the signature of function "add": the parameter list of "add" in the source is not balanced; give an explicit signature')
    const plain = e('q', 'SQL', 'select 1')
    expect(plain.message).toBe('cannot derive the signature of function "q": language "SQL" has no signature derivation; give an explicit signature')
    expect(plain.details.reason).toBe('unsupported_language')
  })
})
