import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSandbox, type Sandbox } from '../../../src/engine/sandbox/index.js'
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

describe('no state leaks between keys, and none between calls of a fresh-context key', () => {
  const writer = 'globalThis.leaked = 42; Object.prototype.polluted = "yes"; Array.prototype.push = null; return "written"'
  const reader = 'return [typeof leaked, ({}).polluted === undefined, typeof [].push]'
  const source = `function f(mode) { if (mode === 'write') { ${writer} } ${reader} }`

  it('a global set by one key is not seen by another key', async () => {
    expect((await sandbox.execute(fn('leak/a', writer))).result).toBe('written')
    const out = await sandbox.execute(fn('leak/b', reader))
    expect(out.result).toEqual(['undefined', true, 'function'])
  })

  it('a warm key is not seen by another key with the same source, nor by the same function of another tenant', async () => {
    const write = await sandbox.execute(fn('tenant-x/same/v1', '', { source, signature: '(mode)', args: { mode: 'write' } }))
    expect(write.result).toBe('written')
    for (const key of ['tenant-x/same/v2', 'tenant-y/same/v1']) {
      const read = await sandbox.execute(fn(key, '', { source, signature: '(mode)', args: { mode: 'read' } }))
      expect(read.result, key).toEqual(['undefined', true, 'function'])
    }
  })

  it('a global set by one call is not seen by the next call of the same key in fresh-context mode', async () => {
    const write = await sandbox.execute(fn('leak/same', '', { source, signature: '(mode)', args: { mode: 'write' }, context: 'fresh' }))
    expect(write.result).toBe('written')
    const read = await sandbox.execute(fn('leak/same', '', { source, signature: '(mode)', args: { mode: 'read' }, context: 'fresh' }))
    expect(read.result).toEqual(['undefined', true, 'function'])
  })

  it('a context made while the worker was idle (the next fresh call\'s, a new key\'s) holds nothing of earlier calls', async () => {
    // the worker prepares contexts after answering, when idle: a pause lets it do so before each call
    const idle = (): Promise<void> => new Promise((r) => setTimeout(r, 100))
    for (let round = 0; round < 3; round++) {
      const write = await sandbox.execute(fn('leak/prepared', '', { source, signature: '(mode)', args: { mode: 'write' }, context: 'fresh' }))
      expect(write.result).toBe('written')
      await idle()
      const read = await sandbox.execute(fn('leak/prepared', '', { source, signature: '(mode)', args: { mode: 'read' }, context: 'fresh' }))
      expect(read.result, `round ${round}`).toEqual(['undefined', true, 'function'])
      await idle()
      const other = await sandbox.execute(fn(`leak/prepared-new-${round}`, '', { source, signature: '(mode)', args: { mode: 'read' } }))
      expect(other.result, `new key, round ${round}`).toEqual(['undefined', true, 'function'])
      await idle()
    }
  })

  it('module-level state starts afresh on every call in fresh-context mode (script and module sources)', async () => {
    const sources: Array<[string, string]> = [['leak/module', 'let count = 0\nexport function f() { count += 1; return count }'], ['leak/script', 'let count = 0\nfunction f() { count += 1; return count }']]
    for (const [key, src] of sources) {
      const first = await sandbox.execute(fn(key, '', { source: src, context: 'fresh' }))
      const second = await sandbox.execute(fn(key, '', { source: src, context: 'fresh' }))
      expect([first.result, second.result], key).toEqual([1, 1])
    }
  })
})

describe('warm instances (the default context mode)', () => {
  it('keep module state between calls of one key (script and module sources)', async () => {
    const sources: Array<[string, string]> = [['warm/module', 'let count = 0\nexport function f() { count += 1; return count }'], ['warm/script', 'let count = 0\nfunction f() { count += 1; return count }']]
    for (const [key, src] of sources) {
      const results = []
      for (let i = 0; i < 3; i++) results.push((await sandbox.execute(fn(key, '', { source: src }))).result)
      expect(results, key).toEqual([1, 2, 3])
    }
  })

  it('survive a call that throws, with logs of each call only', async () => {
    const src = 'let count = 0\nfunction f(fail) { count += 1; console.log("call " + count); if (fail) throw new Error("no"); return count }'
    const one = await sandbox.execute(fn('warm/throws', '', { source: src, signature: '(fail)', args: [false] }))
    const two = await sandbox.execute(fn('warm/throws', '', { source: src, signature: '(fail)', args: [true] }))
    const three = await sandbox.execute(fn('warm/throws', '', { source: src, signature: '(fail)', args: [false] }))
    expect(one.result).toBe(1)
    expect(two.error?.code).toBe(1007)
    expect(two.logs.map((l) => l.message)).toEqual(['call 2'])
    expect(three.result).toBe(3)
    expect(three.logs.map((l) => l.message)).toEqual(['call 3'])
  })

  it('are discarded after a timeout: the next call starts with fresh state', async () => {
    const src = 'let count = 0\nfunction f(spin) { count += 1; if (spin) for (;;) {} return count }'
    const limits = { timeoutMs: 200, memoryMb: 32, cpuMs: 2_000 }
    expect((await sandbox.execute(fn('warm/timeout', '', { source: src, signature: '(spin)', args: [false], limits }))).result).toBe(1)
    expect((await sandbox.execute(fn('warm/timeout', '', { source: src, signature: '(spin)', args: [false], limits }))).result).toBe(2)
    const spun = await sandbox.execute(fn('warm/timeout', '', { source: src, signature: '(spin)', args: [true], limits }))
    expect(spun.error?.code).toBe(1004)
    expect((await sandbox.execute(fn('warm/timeout', '', { source: src, signature: '(spin)', args: [false], limits }))).result).toBe(1)
  })

  it('are discarded after running out of memory: the next call starts with fresh state', async () => {
    const src = 'let count = 0\nfunction f(bomb) { count += 1; if (bomb) { const a = []; for (;;) a.push(new Array(1e5).fill(count)) } return count }'
    const limits = { timeoutMs: 5_000, memoryMb: 16, cpuMs: 5_000 }
    expect((await sandbox.execute(fn('warm/oom', '', { source: src, signature: '(bomb)', args: [false], limits }))).result).toBe(1)
    const bombed = await sandbox.execute(fn('warm/oom', '', { source: src, signature: '(bomb)', args: [true], limits }))
    expect(bombed.status).toBe('error')
    expect((await sandbox.execute(fn('warm/oom', '', { source: src, signature: '(bomb)', args: [false], limits }))).result).toBe(1)
  })

  it('are not kept when the source fails to load: the next call loads it again', async () => {
    const src = 'globalThis.tries = (globalThis.tries ?? 0) + 1\nif (tries === 1) throw new Error("first load fails")\nfunction f() { return tries }'
    const first = await sandbox.execute(fn('warm/load-fails', '', { source: src }))
    expect(first.error?.code).toBe(1007)
    // a new context: the global counter starts again, so the load fails again
    const second = await sandbox.execute(fn('warm/load-fails', '', { source: src }))
    expect(second.error?.message).toContain('first load fails')
  })
})

describe('results cannot be forged', () => {
  it('a function cannot corrupt its own result envelope by replacing JSON', async () => {
    const out = await sandbox.execute(fn('leak/json', 'JSON.stringify = () => "{\\"ok\\":true,\\"json\\":\\"666\\"}"; return 7'))
    expect(out).toMatchObject({ status: 'success', result: 7 })
  })

  it('nor by replacing Promise, its then, or returning a look-alike envelope', async () => {
    const out = await sandbox.execute(fn('leak/promise', 'Promise.prototype.then = function () { return "S666" }; globalThis.Promise = function () {}; return (async () => 7)()'))
    expect(out).toMatchObject({ status: 'success', result: 7 })
    const lookalike = await sandbox.execute(fn('leak/lookalike', 'return "S666"'))
    expect(lookalike.result).toBe('S666')
  })
})

describe('the time zone is the same on every member', () => {
  it("a function's local time is UTC whatever the node's TZ (its result must not depend on the member that ran it)", async () => {
    const before = process.env.TZ
    process.env.TZ = 'Asia/Kolkata' // +05:30: the node's own zone, which a forked worker would inherit
    const local = createSandbox({ workers: 1, maxWarmIsolatesPerWorker: 2, maxLogBytes: 4096, queueLimit: 4 })
    try {
      await local.start()
      const out = await local.execute(fn('tz/offset', 'return [new Date(0).getTimezoneOffset(), new Date(0).getHours(), Intl.DateTimeFormat().resolvedOptions().timeZone]'))
      expect(out.result).toEqual([0, 0, 'UTC'])
    } finally {
      await local.stop()
      if (before === undefined) delete process.env.TZ
      else process.env.TZ = before
    }
  })
})
