import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSandbox, type Sandbox } from '../../../src/engine/execution/index.js'
import { fn } from './helpers.js'

let sandbox: Sandbox

beforeAll(async () => {
  // One worker: every call below shares a process, so isolation must come from isolates and contexts.
  sandbox = createSandbox({ workers: 1, maxWarmIsolatesPerWorker: 8, maxLogBytes: 4096, queueLimit: 20 })
  await sandbox.start()
})

afterAll(async () => {
  await sandbox?.stop()
})

/** Evaluates `expression` in the function and returns what it yielded, or the name of what it threw. */
async function probe(expression: string): Promise<unknown> {
  const out = await sandbox.execute(
    fn('isolation/probe', '', {
      source: `async function f() { try { const v = await (${expression}); return v === undefined ? 'undefined' : typeof v } catch (e) { return 'threw ' + e.name } }`,
    }),
  )
  expect(out.error?.message).toBeUndefined()
  return out.result
}

describe('no host access', () => {
  it.each([['typeof process'], ['typeof require'], ['typeof setTimeout'], ['typeof fetch']])('%s is undefined', async (expression) => {
    const out = await sandbox.execute(fn('isolation/typeof', `return ${expression}`))
    expect(out.result).toBe('undefined')
  })

  it.each([
    ['globalThis.constructor.constructor("return process")()'],
    ['this.constructor.constructor("return process")()'],
    ['Function("return this")().process'],
    ['(async () => {}).constructor("return process")()'],
    ['globalThis.require'],
    ['globalThis.module'],
    ['globalThis.Buffer'],
  ])('%s yields nothing from the host', async (expression) => {
    const result = await probe(expression)
    expect(['undefined', 'threw ReferenceError']).toContain(result)
  })

  it('runs sloppy-mode `this` as the sandbox global, not the host', async () => {
    const out = await sandbox.execute(fn('isolation/this', 'return [typeof this.process, this === globalThis]'))
    expect(out.result).toEqual(['undefined', true])
  })

  it('exposes a console that is not a host object', async () => {
    const out = await sandbox.execute(fn('isolation/console', 'return [typeof console.log, String(console.log.constructor("return typeof process")())]'))
    expect(out.result).toEqual(['function', 'undefined'])
  })
})

describe('no state leaks between calls', () => {
  const writer = 'globalThis.leaked = 42; Object.prototype.polluted = "yes"; Array.prototype.push = null; return "written"'
  const reader = 'return [typeof leaked, ({}).polluted === undefined, typeof [].push]'

  it('a global set by one key is not seen by another key', async () => {
    expect((await sandbox.execute(fn('leak/a', writer))).result).toBe('written')
    const out = await sandbox.execute(fn('leak/b', reader))
    expect(out.result).toEqual(['undefined', true, 'function'])
  })

  it('a global set by one call is not seen by the next call of the same key', async () => {
    const source = `function f(mode) { if (mode === 'write') { ${writer} } ${reader} }`
    const write = await sandbox.execute(fn('leak/same', '', { source, signature: '(mode)', args: { mode: 'write' } }))
    expect(write.result).toBe('written')
    const read = await sandbox.execute(fn('leak/same', '', { source, signature: '(mode)', args: { mode: 'read' } }))
    expect(read.result).toEqual(['undefined', true, 'function'])
  })

  it('module-level state starts afresh on every call', async () => {
    const source = 'let count = 0\nexport function f() { count += 1; return count }'
    const first = await sandbox.execute(fn('leak/module', '', { source }))
    const second = await sandbox.execute(fn('leak/module', '', { source }))
    expect([first.result, second.result]).toEqual([1, 1])
  })

  it('a function cannot corrupt its own result envelope by replacing JSON', async () => {
    const out = await sandbox.execute(fn('leak/json', 'JSON.stringify = () => "{\\"ok\\":true,\\"json\\":\\"666\\"}"; return 7'))
    expect(out).toMatchObject({ status: 'success', result: 7 })
  })
})
