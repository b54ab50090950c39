// `svc functions create --file <source>` without --name: the name of the one top-level function.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { readDefinition } from '../../src/cli/functions-command.js'
import { functionNameOf, topLevelFunctions } from '../../src/cli/function-name.js'
import { CliError } from '../../src/cli/connection.js'

describe('topLevelFunctions', () => {
  it('python: top-level def and async def, not methods, nested functions, strings or comments', () => {
    const source = [
      '# def commented(x):',
      'import math',
      'DOC = """',
      'def in_a_string(x):',
      '"""',
      'class Greeter:',
      '    def greet(self, who):',
      '        def inner():',
      '            return 1',
      '        return who',
      'async def fetch(url):',
      '    return url',
      'def greet(name):',
      '    return "hello " + name',
    ].join('\n')
    expect(topLevelFunctions(source, 'python')).toEqual(['fetch', 'greet'])
    expect(topLevelFunctions('def greet(name):\r\n    return name\r\n', 'python')).toEqual(['greet'])
  })

  it('javascript: declarations and function-valued bindings at the top level', () => {
    const source = [
      '// function commented() {}',
      'const LIMIT = 3',
      'const s = "function inString() {}"',
      'function helper(a) { function nested() {} return a }',
      'const add = (a, b) => a + b',
      'let twice = async x => x * 2',
      'var old = function (x) { return x }',
      'const obj = { method() {} }',
      'if (LIMIT) { function scoped() {} }',
    ].join('\n')
    expect(topLevelFunctions(source, 'javascript')).toEqual(['helper', 'add', 'twice', 'old'])
  })

  it('javascript module: only exported functions count', () => {
    const source = [
      "import { x } from './x.js'",
      'function helper(a) { return a }',
      'const local = (a) => a',
      'export function greet(name) { return helper(name) }',
      'export { local as renamed }',
    ].join('\n')
    expect(topLevelFunctions(source, 'javascript')).toEqual(['greet', 'renamed'])
    expect(topLevelFunctions('export default function main() {}\n', 'javascript')).toEqual(['main'])
  })

  it('typescript: annotated bindings and generic functions', () => {
    const source = [
      'type N = number',
      'export const add = (a: N, b: N): N => a + b',
      'export function pick<T>(xs: T[]): T { return xs[0]! }',
      'export const handler: (x: number) => number = (x) => x',
      'export const VALUE: number = 3',
    ].join('\n')
    expect(topLevelFunctions(source, 'typescript')).toEqual(['add', 'pick', 'handler'])
  })

  it('go: func NAME, not methods nor init', () => {
    const source = [
      'package main',
      '// func Commented() {}',
      'func init() {}',
      'func (g Greeter) Greet() string { return "" }',
      'func Greet(name string) string {',
      '\treturn "hello " + name',
      '}',
      'func Map[T any](xs []T) []T { return xs }',
    ].join('\n')
    expect(topLevelFunctions(source, 'go')).toEqual(['Greet', 'Map'])
  })

  it('other languages: none', () => {
    expect(topLevelFunctions('fn main() {}', 'rust')).toEqual([])
  })
})

describe('functionNameOf', () => {
  it('names the single function, lists several, explains none', () => {
    expect(functionNameOf('def greet(n):\n  return n\n', 'python', 'greet.py')).toEqual({ name: 'greet' })
    const several = functionNameOf('def a():\n  pass\ndef b():\n  pass\n', 'python', 'two.py')
    expect(several).toEqual({ problem: expect.stringContaining('two.py defines 2 top-level functions (a, b): say which with --name') as string })
    const none = functionNameOf('x = 1\n', 'python', 'none.py')
    expect('problem' in none && none.problem).toContain('none.py defines no top-level function')
  })
})

describe('readDefinition without --name', () => {
  let dir: string
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'svc-fname-'))
  })
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true })
  })

  it('takes the name of the one def in greet.py (was: "cannot tell the function name")', () => {
    const file = join(dir, 'greet.py')
    writeFileSync(file, 'def greet(name):\n    return "hello " + name\n')
    const definition = readDefinition({ file })
    expect(definition).toMatchObject({ function_name: 'greet', language: 'python', signature: '(name)' })
  })

  it('an explicit --name still wins', () => {
    const file = join(dir, 'greet.py')
    writeFileSync(file, 'def greet(name):\n    return name\ndef other(x):\n    return x\n')
    expect(readDefinition({ file, name: 'other' })).toMatchObject({ function_name: 'other', signature: '(x)' })
  })

  it('several functions: a typed error listing them', () => {
    const file = join(dir, 'two.js')
    writeFileSync(file, 'function a(x) { return x }\nfunction b(y) { return y }\n')
    let caught: unknown
    try {
      readDefinition({ file })
    } catch (err) {
      caught = err
    }
    expect(caught).toBeInstanceOf(CliError)
    expect((caught as CliError).code).toBe(1006)
    expect((caught as CliError).message).toMatch(/two\.js defines 2 top-level functions \(a, b\): say which with --name/)
  })
})
