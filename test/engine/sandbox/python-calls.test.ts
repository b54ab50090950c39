import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSandbox, sandboxFamilyOf, type Sandbox } from '../../../src/engine/sandbox/index.js'
import { ADD_PY, py, pyBody, PYTHON_HOOK_TIMEOUT_MS } from './fixtures/python.js'
import { LIMITS } from './helpers.js'

const MAX_LOG_BYTES = 300
let sandbox: Sandbox

beforeAll(async () => {
  sandbox = createSandbox({ workers: 1, maxWarmIsolatesPerWorker: 8, maxLogBytes: MAX_LOG_BYTES, queueLimit: 50 })
  await sandbox.start()
  const first = await sandbox.execute(py('calls/add', ADD_PY, { functionName: 'add', args: { a: 2, b: 3 } }))
  expect(first).toMatchObject({ status: 'success', result: 5 })
}, PYTHON_HOOK_TIMEOUT_MS)

afterAll(async () => {
  await sandbox?.stop()
})

describe('languages', () => {
  it.each(['python', 'python3', 'py', 'Python', 'python3.12', 'python3.11'])('%s runs in the python runtime', (language) => {
    expect(sandboxFamilyOf(language)).toBe('python')
  })

  it('runs `language: python3.12` requests', async () => {
    const out = await sandbox.execute(py('calls/versioned', ADD_PY, { language: 'python3.12', functionName: 'add', args: { a: 1, b: 1 } }))
    expect(out).toMatchObject({ status: 'success', result: 2 })
  })
})

describe('warm calls', () => {
  // behaviour only: warm and cold timings are reported by `npm run bench`, never asserted in tests
  it('answers def add(a, b) with 5, cold and on many warm calls in the same interpreter', async () => {
    for (let i = 0; i < 50; i++) {
      const out = await sandbox.execute(py('calls/add', ADD_PY, { functionName: 'add', args: { a: 2, b: 3 } }))
      expect(out).toMatchObject({ status: 'success', result: 5 })
    }
  })
})

describe('arguments', () => {
  const source = 'def f(a, b=2, *, c):\n    return [a, b, c]\n'

  it('matches named arguments to the Python signature, with defaults and keyword-only parameters', async () => {
    expect((await sandbox.execute(py('args/kw', source, { args: { a: 1, c: 3 } }))).result).toEqual([1, 2, 3])
    expect((await sandbox.execute(py('args/kw', source, { args: { c: 3, b: 20, a: 1 } }))).result).toEqual([1, 20, 3])
  })

  it('accepts a positional array', async () => {
    const out = await sandbox.execute(py('args/positional', ADD_PY, { functionName: 'add', args: [40, 2] }))
    expect(out).toMatchObject({ status: 'success', result: 42 })
  })

  it('rejects a missing required argument with 1006 naming it', async () => {
    const out = await sandbox.execute(py('args/kw', source, { args: { a: 1 } }))
    expect(out.status).toBe('error')
    expect(out.error?.code).toBe(1006)
    expect(out.error?.message).toMatch(/missing required argument 'c'/)
  })

  it('rejects an unknown argument with 1006 naming it', async () => {
    const out = await sandbox.execute(py('args/kw', source, { args: { a: 1, c: 2, bogus: 3 } }))
    expect(out.error?.code).toBe(1006)
    expect(out.error?.message).toContain("'bogus'")
    expect(out.error?.details).toMatchObject({ unknownArguments: ['bogus'] })
  })

  it('rejects too many positional arguments with 1006', async () => {
    const out = await sandbox.execute(py('args/positional', ADD_PY, { functionName: 'add', args: [1, 2, 3] }))
    expect(out.error?.code).toBe(1006)
  })

  it('passes positional-only parameters by name, spreads *args given as an array and collects **kwargs', async () => {
    const src = 'def f(a, /, b, *rest, flag=False, **extra):\n    return [a, b, rest, flag, extra]\n'
    const out = await sandbox.execute(py('args/varargs', src, { args: { a: 1, b: 2, rest: [3, 4], flag: true, colour: 'red' } }))
    expect(out.result).toEqual([1, 2, [3, 4], true, { colour: 'red' }])
    const plain = await sandbox.execute(py('args/varargs', src, { args: { b: 2, a: 1 } }))
    expect(plain.result).toEqual([1, 2, [], false, {}])
  })

  it('binds decorated functions through inspect.signature', async () => {
    const src = 'import functools\n\ndef deco(fn):\n    @functools.wraps(fn)\n    def inner(*a, **k):\n        return fn(*a, **k) * 10\n    return inner\n\n@deco\ndef f(x, y=1):\n    return x + y\n'
    expect((await sandbox.execute(py('args/decorated', src, { args: { x: 2 } }))).result).toBe(30)
    const bad = await sandbox.execute(py('args/decorated', src, { args: { z: 2 } }))
    expect(bad.error?.code).toBe(1006)
    expect(bad.error?.message).toContain("'z'")
  })

  it('gives the function JSON values as Python objects', async () => {
    const out = await sandbox.execute(py('args/json', 'def f(v):\n    return [type(x).__name__ for x in v]\n', {
      args: { v: [1, 1.5, 's', true, null, [1], { k: 1 }] },
    }))
    expect(out.result).toEqual(['int', 'float', 'str', 'bool', 'NoneType', 'list', 'dict'])
  })
})

describe('results', () => {
  it('returns JSON results', async () => {
    const out = await sandbox.execute(pyBody('results/json', 'return {"n": 1, "s": "x", "list": [True, None, {"deep": (1.5, 2)}]}'))
    expect(out.result).toEqual({ n: 1, s: 'x', list: [true, null, { deep: [1.5, 2] }] })
  })

  it('returns null for None', async () => {
    const out = await sandbox.execute(pyBody('results/none', 'return None'))
    expect(out.status).toBe('success')
    expect(out.result).toBeNull()
  })

  it.each([
    ['a set', 'return {1, 2}', /not JSON-serialisable: set/],
    ['an object', 'return object()', /not JSON-serialisable: object/],
    ['NaN', 'return float("nan")', /NaN or infinite/],
    ['bytes inside a dict', 'return {"b": b"x"}', /not JSON-serialisable: bytes/],
  ])('fails %s with 1007 "not JSON-serialisable"', async (_what, body, message) => {
    const out = await sandbox.execute(pyBody('results/bad', body))
    expect(out.status).toBe('error')
    expect(out.error?.code).toBe(1007)
    expect(out.error?.message).toMatch(message)
  })

  it('runs coroutines that do not wait for I/O, and refuses ones that do', async () => {
    const ok = await sandbox.execute(py('results/async', 'import asyncio\n\nasync def f(x):\n    await asyncio.sleep(0)\n    return x * 2\n', { args: { x: 21 } }))
    expect(ok.result).toBe(42)
    const io = await sandbox.execute(py('results/async-io', 'import asyncio\n\nasync def f():\n    await asyncio.sleep(0.01)\n    return 1\n'))
    expect(io.error?.code).toBe(1007)
    expect(io.error?.message).toMatch(/event loop/)
  })
})

describe('errors', () => {
  it('reports an exception as 1007 with its type, message and traceback', async () => {
    const out = await sandbox.execute(py('errors/raise', 'def helper():\n    raise ValueError("kaboom")\n\ndef f():\n    helper()\n'))
    expect(out.status).toBe('error')
    expect(out.error?.code).toBe(1007)
    expect(out.error?.message).toBe("'f' raised ValueError: kaboom")
    const stack = String(out.error?.details.stack)
    expect(stack).toContain('function.py')
    expect(stack).toContain('helper')
    expect(stack).not.toContain('svc-prelude')
  })

  it('reports a syntax error as 1006', async () => {
    const out = await sandbox.execute(py('errors/syntax', 'def f(:\n    return 1\n'))
    expect(out.error?.code).toBe(1006)
    expect(out.error?.message).toMatch(/syntax error/)
  })

  it('reports a source that does not define the function as 1006', async () => {
    const out = await sandbox.execute(py('errors/missing', 'def g():\n    return 1\n'))
    expect(out.error?.code).toBe(1006)
    expect(out.error?.message).toMatch(/does not define a function named 'f'/)
  })

  it('reports a source that raises while loading as 1007', async () => {
    const out = await sandbox.execute(py('errors/load', 'raise RuntimeError("at import")\n\ndef f():\n    return 1\n'))
    expect(out.error?.code).toBe(1007)
    expect(out.error?.message).toMatch(/while loading: at import/)
  })

  it('reports sys.exit() as 1007', async () => {
    const out = await sandbox.execute(pyBody('errors/exit', 'import sys\nsys.exit(3)'))
    expect(out.error?.code).toBe(1007)
    expect(out.error?.message).toMatch(/SystemExit/)
  })

  it('keeps serving after errors', async () => {
    const out = await sandbox.execute(py('calls/add', ADD_PY, { functionName: 'add', args: { a: 2, b: 3 } }))
    expect(out.result).toBe(5)
  })
})

describe('output', () => {
  it('captures stdout as log lines and stderr as error lines, in order', async () => {
    const out = await sandbox.execute(pyBody('logs/both', 'import sys\nprint("one", 1)\nprint("two\\nthree")\nprint("oops", file=sys.stderr)\nreturn 0'))
    expect(out.logs.map((l) => [l.level, l.message])).toEqual([
      ['log', 'one 1'],
      ['log', 'two'],
      ['log', 'three'],
      ['error', 'oops'],
    ])
    expect(out.logs[0]?.at).toMatch(/^\d{4}-\d\d-\d\dT/)
  })

  it('keeps a partial last line and output written to the file descriptors', async () => {
    const out = await sandbox.execute(pyBody('logs/raw', 'import os, sys\nsys.stdout.write("no newline")\nos.write(1, b"raw fd\\n")\nreturn 0'))
    expect(out.logs.map((l) => l.message)).toEqual(['no newline', 'raw fd'])
  })

  it('caps captured output at maxLogBytes and marks the truncation', async () => {
    const out = await sandbox.execute(pyBody('logs/flood', 'for i in range(1000):\n    print("line", i)\nreturn "done"'))
    expect(out.result).toBe('done')
    const last = out.logs[out.logs.length - 1]
    expect(last?.level).toBe('warn')
    expect(last?.message).toMatch(/truncated/)
    const bytes = out.logs.slice(0, -1).reduce((n, l) => n + Buffer.byteLength(l.message) + 1, 0)
    expect(bytes).toBeLessThanOrEqual(MAX_LOG_BYTES)
  })

  it('keeps output written before an exception', async () => {
    const out = await sandbox.execute(pyBody('logs/raise', 'print("before")\nraise KeyError("k")'))
    expect(out.error?.code).toBe(1007)
    expect(out.logs.map((l) => l.message)).toEqual(['before'])
  })

  it('does not carry output into the next call', async () => {
    await sandbox.execute(pyBody('logs/partial', 'import sys\nsys.stdout.write("dangling")\nreturn 1'))
    const next = await sandbox.execute(pyBody('logs/quiet', 'return 2'))
    expect(next.logs).toEqual([])
  })
})

describe('measurements', () => {
  it('reports CPU time and the interpreter heap', async () => {
    const out = await sandbox.execute(pyBody('measure/work', 'return sum(i * i for i in range(200000))'))
    expect(out.status).toBe('success')
    expect(out.cpuTimeMs).toBeGreaterThan(0)
    expect(out.memoryBytes).toBeGreaterThan(1_000_000)
    expect(out.workerPid).toBeGreaterThan(0)
  })

  it('fails a call that used more CPU than its limit with 1007', async () => {
    const out = await sandbox.execute(pyBody('measure/cpu', 'import time\nend = time.time() + 0.15\nn = 0\nwhile time.time() < end:\n    n += 1\nreturn n', {
      limits: { ...LIMITS, cpuMs: 30 },
    }))
    expect(out.error?.code).toBe(1007)
    expect(out.error?.message).toMatch(/CPU/)
  })
})
