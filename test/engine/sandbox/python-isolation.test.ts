import { existsSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSandbox, type Sandbox } from '../../../src/engine/sandbox/index.js'
import { ADD_PY, py, pyBody, PYTHON_HOOK_TIMEOUT_MS } from './fixtures/python.js'
import { fn } from './helpers.js'

// One worker: every call below shares a process and its interpreter.
let sandbox: Sandbox
let server: Server
let port = 0
let connections = 0
const marker = join(tmpdir(), `svc-python-escape-${process.pid}`)

beforeAll(async () => {
  server = createServer((socket) => {
    connections++
    socket.destroy()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  port = (server.address() as { port: number }).port
  sandbox = createSandbox({ workers: 1, maxWarmIsolatesPerWorker: 8, maxLogBytes: 4096, queueLimit: 20 })
  await sandbox.start()
  expect(await sandbox.execute(py('iso/add', ADD_PY, { functionName: 'add', args: { a: 1, b: 2 } }))).toMatchObject({ result: 3 })
}, PYTHON_HOOK_TIMEOUT_MS)

afterAll(async () => {
  await sandbox?.stop()
  server?.close()
  rmSync(marker, { force: true })
})

/** Runs `expression` and returns its repr, or `raised <ExceptionName>`. */
async function probe(expression: string, setup = ''): Promise<string> {
  const body = `${setup}\ntry:\n    return repr(${expression})[:300]\nexcept BaseException as e:\n    return 'raised ' + type(e).__name__`
  const out = await sandbox.execute(pyBody('iso/probe', body))
  expect(out.error?.message).toBeUndefined()
  return out.result as string
}

/**
 * A source that first tampers with the prelude as far as Python reaches it: every name in its
 * namespace (reached through the frame under the call) set to None. (The guards do not depend on
 * it: python-guards.test.ts.)
 */
const BYPASS = 'import sys\n_g = sys._getframe(0).f_back.f_globals\nfor _k in list(_g):\n    if not _k.startswith("__"):\n        _g[_k] = None'

describe('no host access', () => {
  it("cannot read the host's files", async () => {
    expect(await probe("open('/etc/passwd').read()")).toBe('raised FileNotFoundError')
    expect(await probe("__import__('os').listdir('/')")).toBe("['tmp', 'home', 'dev', 'proc', 'lib']")
  })

  it('cannot run host processes', async () => {
    expect(await probe(`__import__('os').system('touch ${marker}')`)).toBe('raised PermissionError')
    expect(await probe("__import__('subprocess').run(['id'])")).toMatch(/^raised (PermissionError|OSError)$/)
    expect(await probe("__import__('os').popen('id').read()")).toMatch(/^raised (PermissionError|OSError)$/)
    expect(existsSync(marker)).toBe(false)
  })

  it('cannot open network connections', async () => {
    expect(await probe(`__import__('socket').create_connection(('127.0.0.1', ${port}), timeout=1)`)).toBe('raised PermissionError')
    expect(await probe("__import__('urllib.request').request.urlopen('http://127.0.0.1:1/')")).toMatch(/^raised /)
    expect(connections).toBe(0)
  })

  it.each([
    ['import js; js.process', 'raised ImportError'],
    ["__import__('js').require", 'raised ImportError'],
    ["__import__('pyodide_js')", 'raised ImportError'],
    ["__import__('pyodide.ffi').ffi.create_proxy", 'raised ImportError'],
    ["__import__('pyodide.code').code.run_js('process')", 'raised ImportError'],
    ["__import__('importlib').import_module('pyodide.http')", 'raised ImportError'],
    ["__import__('sys').modules.get('pyodide_js')", 'None'],
    ["__import__('ctypes')", 'raised ImportError'],
    ["__import__('gc').get_objects()", 'raised PermissionError'],
    ["__import__('sys')._getframe(1)", 'raised PermissionError'],
  ])('%s reaches nothing of the host', async (expression, expected) => {
    const [setup, expr] = expression.startsWith('import js;') ? ['import js', 'js.process'] : ['', expression]
    const result = setup ? await pyImportProbe(setup, expr) : await probe(expr)
    expect(result).toBe(expected)
  })

  it("holds when the prelude's namespace is tampered with and Python reaches JS objects", async () => {
    const body = `${BYPASS}
out = {}
def attempt(label, thunk):
    try:
        out[label] = repr(thunk())[:200]
    except BaseException as e:
        out[label] = 'raised ' + type(e).__name__
import os, socket
attempt('system', lambda: os.system('touch ${marker}'))
attempt('connect', lambda: socket.create_connection(('127.0.0.1', ${port}), timeout=1))
def listen():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    s.listen(1)
    return 'listening'
attempt('listen', listen)
attempt('passwd', lambda: open('/etc/passwd').read())
attempt('pyodide_js', lambda: __import__('pyodide_js'))
attempt('js', lambda: __import__('js').process)
sc = None
seen = set()
stack = list(type.__subclasses__(object))
while stack and sc is None:
    c = stack.pop()
    if id(c) in seen:
        continue
    seen.add(id(c))
    try:
        stack.extend(type.__subclasses__(c))
    except Exception:
        pass
    for v in list(vars(c).values()):
        g = getattr(v, '__globals__', None)
        if isinstance(g, dict) and 'create_once_callable' in g and type(g['create_once_callable']).__name__ == 'builtin_function_or_method':
            sc = g['create_once_callable']
            break
out['found a JS gadget'] = sc is not None
if sc is not None:
    jsfn = sc(lambda: 1)
    attempt('Function("return process")', lambda: jsfn.constructor('return process')())
    attempt('prepareStackTrace', lambda: setattr(jsfn.constructor.__proto__, 'x', 1) or 'ok')
return out`
    const out = await sandbox.execute(pyBody('iso/bypass', body))
    expect(out.error?.message).toBeUndefined()
    const result = out.result as Record<string, string>
    expect(result.system).toBe('raised PermissionError')
    expect(result.connect).toMatch(/^raised /)
    expect(result.listen).toMatch(/^raised /)
    expect(result.passwd).toBe('raised FileNotFoundError')
    expect(result.pyodide_js).toBe('raised ImportError')
    expect(result.js).toBe('raised ImportError')
    expect(result['found a JS gadget']).toBe(true)
    expect(result['Function("return process")']).toBe('raised JsException')
    expect(existsSync(marker)).toBe(false)
    expect(connections).toBe(0)
    // the next call is served normally
    expect(await sandbox.execute(py('iso/add', ADD_PY, { functionName: 'add', args: { a: 1, b: 2 } }))).toMatchObject({ result: 3 })
  })
})

async function pyImportProbe(setup: string, expression: string): Promise<string> {
  const body = `try:\n    ${setup}\n    return repr(${expression})[:300]\nexcept BaseException as e:\n    return 'raised ' + type(e).__name__`
  const out = await sandbox.execute(pyBody('iso/import-probe', body))
  return out.result as string
}

describe('no state leaks between calls', () => {
  const writer = `import builtins, sys, os, json, logging
builtins.len = lambda x: -1
builtins.leaked = 42
sys.leaked = 'yes'
sys.path.insert(0, '/tmp')
os.environ['LEAKED'] = '1'
json.dumps = lambda *a, **k: 'hijacked'
json.JSONEncoder.default = lambda self, o: 'hijacked'
logging.basicConfig(level=logging.DEBUG)
logging.getLogger().addHandler(logging.StreamHandler())
open('/tmp/leaked.txt', 'w').write('x')
os.makedirs('/home/pyodide/leaked-dir', exist_ok=True)
os.chdir('/tmp')
import types
sys.modules['leaked_module'] = types.ModuleType('leaked_module')
sys.setrecursionlimit(50)
global_state = 'written'
return 'written'`
  const reader = `import builtins, sys, os, json, logging
return {
    'len': len([1, 2]),
    'leaked_builtin': hasattr(builtins, 'leaked'),
    'sys_attr': hasattr(sys, 'leaked'),
    'path': '/tmp' in sys.path,
    'env': os.environ.get('LEAKED'),
    'json': json.dumps({'a': 1}),
    'default': json.JSONEncoder.default is not None and 'hijacked' not in repr(json.JSONEncoder.default),
    'handlers': len(logging.getLogger().handlers),
    'tmp': os.listdir('/tmp'),
    'home': os.listdir('/home/pyodide'),
    'cwd': os.getcwd(),
    'module': 'leaked_module' in sys.modules,
    'recursion': sys.getrecursionlimit() >= 1000,
    'global': 'global_state' in globals(),
}`

  it('gives each call a fresh interpreter state', async () => {
    const w = await sandbox.execute(pyBody('iso/writer', writer))
    expect(w.result).toBe('written')
    const r = await sandbox.execute(pyBody('iso/reader', reader))
    expect(r.result).toEqual({
      len: 2,
      leaked_builtin: false,
      sys_attr: false,
      path: false,
      env: null,
      json: '{"a": 1}',
      default: true,
      handlers: 0,
      tmp: [],
      home: [],
      cwd: '/home/pyodide',
      module: false,
      recursion: true,
      global: false,
    })
  })

  it('gives each call of one key a fresh interpreter state in fresh-context mode', async () => {
    const source = `def f(mode):\n    if mode == 'write':\n${writer.split('\n').map((l) => `        ${l}`).join('\n')}\n${reader.split('\n').map((l) => `    ${l}`).join('\n')}\n`
    const w = await sandbox.execute(py('iso/fresh-same', source, { signature: '(mode)', args: { mode: 'write' }, context: 'fresh' }))
    expect(w.result).toBe('written')
    const r = await sandbox.execute(py('iso/fresh-same', source, { signature: '(mode)', args: { mode: 'read' }, context: 'fresh' }))
    expect(r.result).toMatchObject({ len: 2, leaked_builtin: false, sys_attr: false, json: '{"a": 1}', handlers: 0, module: false, global: false, tmp: [] })
  })

  it('routes logging of a later call to that call', async () => {
    await sandbox.execute(pyBody('iso/log-config', 'import logging\nlogging.basicConfig(level=logging.INFO)\nlogging.info("first")\nreturn 1'))
    const out = await sandbox.execute(pyBody('iso/log-use', 'import logging\nlogging.basicConfig(level=logging.INFO)\nlogging.warning("second")\nreturn 2'))
    expect(out.logs.map((l) => [l.level, l.message])).toEqual([['error', 'WARNING:root:second']])
  })

  it('refuses writes outside /tmp, so the stdlib cannot be altered for later calls', async () => {
    expect(await probe("open('/lib/python3.13/evil.py', 'w')")).toBe('raised PermissionError')
    expect(await probe("__import__('os').mkdir('/lib/evil')")).toBe('raised PermissionError')
    expect(await probe("__import__('os').open('/lib', __import__('os').O_RDONLY)")).toBe('raised PermissionError')
    const hooked = await sandbox.execute(pyBody('iso/hook', "import sys\nseen = []\nsys.addaudithook(lambda e, a: seen.append(e))\nopen('/tmp/x', 'w').close()\nreturn seen"))
    expect(hooked.result).toEqual([])
  })

  it('runs JavaScript and Python side by side in one worker', async () => {
    const js = await sandbox.execute(fn('iso/js', 'return typeof process'))
    const python = await sandbox.execute(py('iso/add', ADD_PY, { functionName: 'add', args: { a: 2, b: 2 } }))
    expect(js.result).toBe('undefined')
    expect(python.result).toBe(4)
    expect(js.workerPid).toBe(python.workerPid)
  })
})

describe('warm functions (the default context mode)', () => {
  const counter = 'count = 0\ndef f():\n    global count\n    count += 1\n    return count\n'

  it("keep their module globals between consecutive calls of the key, and nobody else's", async () => {
    const results = []
    for (let i = 0; i < 3; i++) results.push((await sandbox.execute(py('warm/counter', counter))).result)
    expect(results).toEqual([1, 2, 3])
    // another key with the same source has its own globals; once it ran, the interpreter is
    // restored to the baseline and the first key's module is loaded again
    expect((await sandbox.execute(py('warm/counter-2', counter))).result).toBe(1)
    expect((await sandbox.execute(py('warm/counter', counter))).result).toBe(1)
    expect((await sandbox.execute(py('warm/counter', counter))).result).toBe(2)
    // another tenant never sees them
    expect((await sandbox.execute(py('other-tenant/counter', counter, { tenant: 'other-tenant' }))).result).toBe(1)
  })

  it('see what their own calls changed in the interpreter until another function runs, which finds it restored', async () => {
    const source = "import json, builtins\ndef f(mode):\n    if mode == 'write':\n        json.dumps = lambda *a, **k: 'patched'\n        builtins.leaked = 1\n    return [json.dumps({'a': 1}), hasattr(builtins, 'leaked')]\n"
    const call = (key: string, mode: string) => sandbox.execute(py(key, source, { signature: '(mode)', args: { mode } }))
    expect((await call('warm/patch', 'write')).result).toEqual(['patched', true])
    expect((await call('warm/patch', 'read')).result).toEqual(['patched', true])
    expect((await call('warm/other', 'read')).result).toEqual(['{"a": 1}', false])
    // the warm function runs again after another one: the baseline was restored in between
    expect((await call('warm/patch', 'read')).result).toEqual(['{"a": 1}', false])
  })

  it("cannot switch off the time limit or the recursion cap for their own next call", async () => {
    const source = "import signal, sys\ndef f(mode):\n    if mode == 'disarm':\n        signal.signal(signal.SIGINT, signal.SIG_IGN)\n        sys.setrecursionlimit(50)\n        return 'disarmed'\n    if mode == 'limit':\n        return sys.getrecursionlimit()\n    while True:\n        pass\n"
    const limits = { timeoutMs: 300, memoryMb: 32, cpuMs: 5_000 }
    const call = (mode: string) => sandbox.execute(py('warm/disarm', source, { signature: '(mode)', args: { mode }, limits }))
    const disarmed = await call('disarm')
    expect(disarmed.result).toBe('disarmed')
    expect((await call('limit')).result).toBeGreaterThanOrEqual(1000)
    await call('disarm')
    const restarts = sandbox.stats().restarts
    const spun = await call('spin')
    expect(spun.error?.code).toBe(1004)
    // ended by the interrupt, not by the watchdog killing the worker
    expect(sandbox.stats().restarts).toBe(restarts)
    expect((await call('limit')).workerPid).toBe(disarmed.workerPid)
  })

  it('are discarded after a timeout: the next call loads the source again', async () => {
    const source = "count = 0\ndef f(spin):\n    global count\n    count += 1\n    while spin:\n        pass\n    return count\n"
    const limits = { timeoutMs: 300, memoryMb: 32, cpuMs: 5_000 }
    const call = (spin: boolean) => sandbox.execute(py('warm/timeout', source, { signature: '(spin)', args: { spin }, limits }))
    expect((await call(false)).result).toBe(1)
    expect((await call(false)).result).toBe(2)
    expect((await call(true)).error?.code).toBe(1004)
    expect((await call(false)).result).toBe(1)
  })
})

describe('tenants never share an interpreter', () => {
  // A tenant may change what no per-call reset undoes (here: a stdlib class's method). The first
  // segment of a key is its tenant; the calls run in the one worker of this file.
  const spy = `import string
_real = string.Template.substitute
def _spy(self, *args, **kwargs):
    string.Template._seen = getattr(string.Template, '_seen', []) + [kwargs]
    return _real(self, *args, **kwargs)
string.Template.substitute = _spy
string.Template._seen = []
return 'patched'`
  const victim = 'import string\nreturn string.Template("token=$t").substitute(t="VICTIM-SECRET-123")'
  const read = 'import string\nreturn repr(getattr(string.Template, "_seen", None))'

  it("keeps one tenant's changes to the interpreter away from another tenant's calls", async () => {
    const patched = await sandbox.execute(pyBody('attacker/patch', spy))
    expect(patched.result).toBe('patched')
    const called = await sandbox.execute(pyBody('victim/use', victim))
    expect(called.result).toBe('token=VICTIM-SECRET-123')
    expect(called.workerPid).toBe(patched.workerPid) // one process, two interpreters
    const seen = await sandbox.execute(pyBody('attacker/read', read))
    expect(seen.result).not.toContain('VICTIM-SECRET')
    // the victim's interpreter never had the spy
    expect((await sandbox.execute(pyBody('victim/read', read))).result).toBe('None')
  })
})

describe('one interpreter per tenant, within bounds', () => {
  it('evicts the least recently used tenant past the bound, and that tenant gets a fresh interpreter', async () => {
    const one = createSandbox({ workers: 1, maxWarmIsolatesPerWorker: 8, maxLogBytes: 4096, queueLimit: 20, pythonInterpretersPerWorker: 1 })
    await one.start()
    try {
      // a stdlib class's attribute survives between calls of one tenant (python-prelude.py)
      const mark = 'import string\nstring.Template._mark = getattr(string.Template, "_mark", 0) + 1\nreturn string.Template._mark'
      expect((await one.execute(pyBody('t1/mark', mark))).result).toBe(1)
      expect((await one.execute(pyBody('t1/mark', mark))).result).toBe(2) // the same interpreter
      expect((await one.execute(pyBody('t2/mark', mark))).result).toBe(1) // t1's was evicted for t2
      expect((await one.execute(pyBody('t1/mark', mark))).result).toBe(1) // t1 starts over
    } finally {
      await one.stop()
    }
  }, PYTHON_HOOK_TIMEOUT_MS)

  it("routes a tenant's calls to the worker that holds its interpreter", async () => {
    const two = createSandbox({ workers: 2, maxWarmIsolatesPerWorker: 8, maxLogBytes: 4096, queueLimit: 20 })
    await two.start()
    try {
      const a1 = await two.execute(py('ta/add', ADD_PY, { functionName: 'add', args: { a: 1, b: 1 } }))
      const b1 = await two.execute(py('tb/add', ADD_PY, { functionName: 'add', args: { a: 1, b: 1 } }))
      // a function of tenant ta the worker has never run: it goes where ta's interpreter is
      const a2 = await two.execute(pyBody('ta/other', 'return 7'))
      expect([a1.result, b1.result, a2.result]).toEqual([2, 2, 7])
      expect(b1.workerPid).not.toBe(a1.workerPid) // the second tenant went to the worker with room
      expect(a2.workerPid).toBe(a1.workerPid)
    } finally {
      await two.stop()
    }
  }, PYTHON_HOOK_TIMEOUT_MS)
})
