import { describe, expect, it } from 'vitest'
import { isSvcError } from '../../../src/core/errors.js'
import { bindArguments, parseSignature, parseSignatureParams } from '../../../src/engine/sandbox/index.js'

describe('parseSignatureParams', () => {
  it.each([
    ['(a, b)', ['a', 'b']],
    ['add(a: number, b: number): number', ['a', 'b']],
    ['(a, b = 2) => number', ['a', 'b']],
    ['function add(a, b)', ['a', 'b']],
    ['async (x) => x', ['x']],
    ['x => x * 2', ['x']],
    ['()', []],
    ['', []],
    ['(a, b,)', ['a', 'b']],
  ])('%s', (signature, expected) => {
    expect(parseSignatureParams(signature)).toEqual(expected)
  })

  it('skips brackets, strings and templates inside defaults', () => {
    const sig = '(a, b = [1, (2), {x: ")"}], c = "a,b", d = `x${ {p: 1, q: 2}.p }y`, e = \'(,\')'
    expect(parseSignatureParams(sig)).toEqual(['a', 'b', 'c', 'd', 'e'])
  })

  it('handles type annotations with generics, function types and optional markers', () => {
    const sig = '(m: Map<string, number>, f: (x: number, y: number) => void = () => {}, o?: { a: number, b: string }, g = a < b, h)'
    expect(parseSignatureParams(sig)).toEqual(['m', 'f', 'o', 'g', 'h'])
  })

  it('names rest parameters without the dots and gives destructured ones a positional placeholder', () => {
    expect(parseSignatureParams('({a, b}: {a: number; b: number}, [c, d], ...rest: number[])')).toEqual(['$0', '$1', 'rest'])
    expect(parseSignature('(a, ...xs)')).toEqual([
      { name: 'a', rest: false, destructured: false, optional: false },
      { name: 'xs', rest: true, destructured: false, optional: false },
    ])
  })

  it('ignores generics before the list, a TypeScript this parameter and comments', () => {
    expect(parseSignatureParams('function f<T extends (a: number) => void>(this: Window, x: T, y)')).toEqual(['x', 'y'])
    expect(parseSignatureParams('(a /* b, c */, // d, e\n z)')).toEqual(['a', 'z'])
  })

  it('marks a Python **kwargs and the keyword-only parameters after a bare * or *args', () => {
    expect(parseSignature('(**fields)')).toEqual([{ name: 'fields', rest: false, destructured: false, optional: false, keywords: true }])
    expect(parseSignature('(*, event)')).toEqual([{ name: 'event', rest: false, destructured: false, optional: false, keywordOnly: true }])
    const mixed = parseSignature('(a, *args, b=1, **kw)')
    expect(mixed.map((p) => [p.name, p.rest, p.keywordOnly ?? false, p.keywords ?? false])).toEqual([
      ['a', false, false, false], ['args', true, false, false], ['b', false, true, false], ['kw', false, false, true],
    ])
    // JavaScript parameters are never keyword-only
    expect(parseSignature('(a, ...xs)').some((p) => p.keywordOnly)).toBe(false)
  })
})

describe('bindArguments', () => {
  const params = parseSignature('(a, b, c)')

  it('orders named arguments by the signature and leaves absent ones undefined', () => {
    expect(bindArguments(params, { c: 3, a: 1 })).toEqual({ values: [1, undefined, 3], missing: [1] })
    expect(bindArguments(params, { a: 1 })).toEqual({ values: [1], missing: [] })
  })

  it('takes a positional array as is', () => {
    expect(bindArguments(params, [1, 2])).toEqual({ values: [1, 2], missing: [] })
  })

  it('spreads an array given to a trailing rest parameter', () => {
    expect(bindArguments(parseSignature('(a, ...xs)'), { a: 1, xs: [2, 3] }).values).toEqual([1, 2, 3])
  })

  it('rejects an argument the signature does not declare, naming it', () => {
    let caught: unknown
    try {
      bindArguments(params, { a: 1, zzz: 2 })
    } catch (err) {
      caught = err
    }
    expect(isSvcError(caught) && caught.code).toBe(1006)
    expect((caught as Error).message).toContain("'zzz'")
  })
})
