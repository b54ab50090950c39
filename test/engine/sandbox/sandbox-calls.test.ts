import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { isSvcError } from '../../../src/core/errors.js'
import { createSandbox, type Sandbox } from '../../../src/engine/sandbox/index.js'
import { fn, request } from './helpers.js'

const MAX_LOG_BYTES = 300
let sandbox: Sandbox

beforeAll(async () => {
  sandbox = createSandbox({ workers: 2, maxWarmIsolatesPerWorker: 8, maxLogBytes: MAX_LOG_BYTES, queueLimit: 50 })
  await sandbox.start()
})

afterAll(async () => {
  await sandbox?.stop()
})

describe('arguments', () => {
  it('matches named arguments to the signature parameters in order', async () => {
    const out = await sandbox.execute(request({ source: 'function sub(a, b) { return a - b }', functionName: 'sub', args: { b: 3, a: 10 } }))
    expect(out.status).toBe('success')
    expect(out.result).toBe(7)
    expect(out.workerPid).toBeGreaterThan(0)
  })

  it('accepts a positional array', async () => {
    const out = await sandbox.execute(request({ args: [2, 3] }))
    expect(out).toMatchObject({ status: 'success', result: 5 })
  })

  it('passes missing arguments as undefined, so defaults apply', async () => {
    const out = await sandbox.execute(
      request({ source: 'function f(a, b = 40, c) { return [a, b, typeof c] }', functionName: 'f', signature: '(a, b = 40, c)', args: { a: 2 } }),
    )
    expect(out.result).toEqual([2, 40, 'undefined'])
  })

  it('rejects an argument name the signature does not declare with 1006 naming it', async () => {
    const out = await sandbox.execute(request({ args: { a: 1, b: 2, bogus: 3 } }))
    expect(out.status).toBe('error')
    expect(out.error?.code).toBe(1006)
    expect(out.error?.message).toContain('bogus')
  })

  it('uses typed signatures and rest parameters', async () => {
    const out = await sandbox.execute(
      request({
        source: 'function total(label, ...xs) { return label + xs.reduce((s, x) => s + x, 0) }',
        functionName: 'total',
        signature: 'total(label: string, ...xs: number[]): string',
        args: { label: 'sum=', xs: [1, 2, 3] },
      }),
    )
    expect(out.result).toBe('sum=6')
  })
})

describe('results', () => {
  it('copies a JSON result out of the isolate', async () => {
    const out = await sandbox.execute(fn('results/json', 'return { n: 1, s: "x", list: [true, null, { deep: [1.5] }] }'))
    expect(out.result).toEqual({ n: 1, s: 'x', list: [true, null, { deep: [1.5] }] })
  })

  it('awaits async functions', async () => {
    const out = await sandbox.execute(
      request({ key: 'results/async', source: 'async function add(a, b) { await null; return a + b }' }),
    )
    expect(out).toMatchObject({ status: 'success', result: 5 })
  })

  it('leaves result undefined when the function returns nothing', async () => {
    const out = await sandbox.execute(fn('results/void', 'return undefined'))
    expect(out.status).toBe('success')
    expect(out.result).toBeUndefined()
  })

  it.each([
    ['a function', 'return () => 1', /function/],
    ['a symbol', 'return Symbol("s")', /symbol/],
    ['a BigInt', 'return { big: 10n }', /BigInt/],
    ['a cyclic object', 'const o = {}; o.self = o; return o', /circular/i],
  ])('reports %s result as 1007 with a clear message', async (_what, body, pattern) => {
    const out = await sandbox.execute(fn('results/non-json', body))
    expect(out.status).toBe('error')
    expect(out.error?.code).toBe(1007)
    expect(out.error?.message).toMatch(/not JSON-serialisable/)
    expect(out.error?.message).toMatch(pattern)
  })

  it('reports a thrown error as 1007 with its name and message', async () => {
    const out = await sandbox.execute(fn('results/throw', 'throw new RangeError("out of range")'))
    expect(out.status).toBe('error')
    expect(out.error?.code).toBe(1007)
    expect(out.error?.message).toContain('RangeError: out of range')
    expect(out.error?.details.stack).toMatch(/RangeError/)
  })

  it('reports a rejected promise as 1007', async () => {
    const out = await sandbox.execute(fn('results/reject', 'return Promise.reject(new Error("async boom"))'))
    expect(out.error?.code).toBe(1007)
    expect(out.error?.message).toContain('async boom')
  })

  it('fails a call that leaves an unhandled promise rejection with 1007', async () => {
    const out = await sandbox.execute(fn('results/unhandled', 'Promise.reject(new TypeError("nobody caught me")); return 1'))
    expect(out.error?.code).toBe(1007)
    expect(out.error?.message).toContain('TypeError: nobody caught me')
  })
})

describe('source forms', () => {
  it.each([
    ['a function declaration', 'function add(a, b) { return a + b }'],
    ['a const arrow function', 'const add = (a, b) => a + b'],
    ['an async function', 'async function add(a, b) { return a + b }'],
    ['a let function expression', 'let add = function (a, b) { return a + b }'],
    ['an exported function (module)', 'export function add(a, b) { return a + b }'],
    ['an exported const (module)', 'const helper = 1\nexport const add = (a, b) => a + b + helper - 1'],
    ['a default export (module)', 'export default function (a, b) { return a + b }'],
  ])('runs %s', async (_form, source) => {
    const out = await sandbox.execute(request({ key: `forms/${source}`, source }))
    expect(out.error?.message).toBeUndefined()
    expect(out).toMatchObject({ status: 'success', result: 5 })
  })

  it('reports a function the source does not define as 1006 naming it', async () => {
    const out = await sandbox.execute(request({ key: 'forms/missing', source: 'function other() {}' }))
    expect(out.status).toBe('error')
    expect(out.error?.code).toBe(1006)
    expect(out.error?.message).toContain("'add'")
  })

  it('does not mistake a built-in for the function, but lets the source shadow one', async () => {
    const missing = await sandbox.execute(request({ key: 'forms/builtin', functionName: 'Array', source: 'function other() {}' }))
    expect(missing.error?.code).toBe(1006)
    const shadowed = await sandbox.execute(
      request({ key: 'forms/shadow', functionName: 'escape', signature: '(s)', args: ['<'], source: 'function escape(s) { return "&lt;" }' }),
    )
    expect(shadowed.result).toBe('&lt;')
  })

  it('reports a module without the export as 1006', async () => {
    const out = await sandbox.execute(request({ key: 'forms/missing-export', source: 'export function other() {}' }))
    expect(out.error?.code).toBe(1006)
    expect(out.error?.message).toContain("'add'")
  })

  it('reports a syntax error as 1006 with the message', async () => {
    const out = await sandbox.execute(request({ key: 'forms/syntax', source: 'function add(a, b) { return a + }' }))
    expect(out.status).toBe('error')
    expect(out.error?.code).toBe(1006)
    expect(out.error?.message).toMatch(/syntax error.*Unexpected token/i)
  })

  it('refuses imports in a module source with 1006', async () => {
    const out = await sandbox.execute(request({ key: 'forms/import', source: 'import fs from "node:fs"\nexport function add() { return fs }' }))
    expect(out.error?.code).toBe(1006)
    expect(out.error?.message).toContain('node:fs')
  })

  it('reports an error thrown while the source loads as 1007', async () => {
    const out = await sandbox.execute(request({ key: 'forms/load-throw', source: 'throw new Error("at load")\nfunction add() {}' }))
    expect(out.error?.code).toBe(1007)
    expect(out.error?.message).toContain('at load')
  })

  it('runs TypeScript stripped to JavaScript', async () => {
    const source = `
      interface Pair { a: number; b: number }
      type Sum = number
      export function add(a: number, b: number): Sum {
        const p: Pair = { a, b }
        return (p.a as number) + p.b
      }`
    for (const language of ['typescript', 'ts']) {
      const out = await sandbox.execute(request({ key: `ts/${language}`, language, source, signature: 'add(a: number, b: number): number' }))
      expect(out.error?.message).toBeUndefined()
      expect(out.result).toBe(5)
    }
  })

  it('reports a TypeScript syntax error as 1006', async () => {
    const out = await sandbox.execute(request({ key: 'ts/bad', language: 'ts', source: 'function add(a: number, b: number { return a + b }' }))
    expect(out.error?.code).toBe(1006)
    expect(out.error?.message).toMatch(/TypeScript/)
  })

  it('throws VALIDATION_FAILED for a language the sandbox cannot run', async () => {
    const err = await sandbox.execute(request({ language: 'go' })).catch((e: unknown) => e)
    expect(isSvcError(err) && err.code).toBe(1006)
  })

  it('throws VALIDATION_FAILED for malformed limits', async () => {
    const err = await sandbox.execute(request({ limits: { timeoutMs: -1, memoryMb: 32, cpuMs: 100 } })).catch((e: unknown) => e)
    expect(isSvcError(err) && err.code).toBe(1006)
  })
})

describe('console capture', () => {
  it('captures every console level with values formatted inside the isolate', async () => {
    const out = await sandbox.execute(
      fn('logs/levels', `
        console.log('hello', 42, { a: [1, 2] }, null, undefined)
        console.info('info')
        console.warn('warn')
        console.error(new TypeError('bad'))
        console.debug(10n, Symbol('s'), function named() {})
        return 1`),
    )
    expect(out.status).toBe('success')
    expect(out.logs.map((l) => l.level)).toEqual(['log', 'info', 'warn', 'error', 'debug'])
    expect(out.logs[0]?.message).toBe('hello 42 {"a":[1,2]} null undefined')
    expect(out.logs[3]?.message).toMatch(/^TypeError: bad/)
    expect(out.logs[4]?.message).toBe('10 Symbol(s) [Function: named]')
    for (const line of out.logs) expect(Number.isNaN(Date.parse(line.at))).toBe(false)
  })

  it('keeps logs of a function that then throws', async () => {
    const out = await sandbox.execute(fn('logs/throw', 'console.log("before"); throw new Error("after")'))
    expect(out.status).toBe('error')
    expect(out.logs.map((l) => l.message)).toEqual(['before'])
  })

  it('caps logs at maxLogBytes and marks the truncation', async () => {
    const out = await sandbox.execute(fn('logs/cap', 'for (let i = 0; i < 1000; i++) console.log("line " + i + " é"); return "done"'))
    expect(out).toMatchObject({ status: 'success', result: 'done' })
    const kept = out.logs.slice(0, -1)
    const bytes = kept.reduce((n, l) => n + Buffer.byteLength(l.message) + 1, 0)
    expect(bytes).toBeLessThanOrEqual(MAX_LOG_BYTES)
    expect(kept.length).toBeGreaterThan(5)
    expect(out.logs.at(-1)?.message).toMatch(/truncated/)
  })
})
