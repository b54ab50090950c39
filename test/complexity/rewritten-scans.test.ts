// Issue 27 replaced regexes that V8 can take quadratic time over with scans; each scan must still
// answer what its regex answered. Small random texts over the characters that matter, against
// the regex itself (fine at this size).
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { definesPythonFunction } from '../../src/engine/executions/native-execution.js'

describe('scans that replaced regexes answer as the regexes did', () => {
  it("native execute's language guess: ^\\s*(async\\s+)?def\\s+NAME\\s*\\( with the m flag", () => {
    const pieces = ['def', 'async', ' ', '\n', '\r', '\t', '\u2028', '\u00a0', '\u3000', 'f', 'fo', 'f$', '(', 'x', 'd', 'ef', ':']
    const text = fc.array(fc.constantFrom(...pieces), { maxLength: 14 }).map((a) => a.join(''))
    const name = fc.constantFrom('f', 'fo', 'f$')
    const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    fc.assert(fc.property(text, name, (s, n) => {
      expect(definesPythonFunction(s, n)).toBe(new RegExp(`^\\s*(async\\s+)?def\\s+${escape(n)}\\s*\\(`, 'm').test(s))
    }), { numRuns: 20_000 })
    expect(definesPythonFunction('x = 1\n\n  async  def  add (a, b):', 'add')).toBe(true)
    expect(definesPythonFunction('x = 1;  def add(a):', 'add')).toBe(false)
    expect(definesPythonFunction('def adder(a):', 'add')).toBe(false)
  })
})
