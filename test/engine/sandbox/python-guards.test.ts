/**
 * The Python guards hold whatever a function does to the prelude (issue 27, item 7): the import
 * guard, the audit hook and the interrupt. Each route to the prelude's state a function has —
 * the `__globals__` of any prelude function or method, frames (sys._getframe, inspect,
 * tracebacks, coroutines, trace and profile functions, sys.monitoring), gc, the audit hook's own
 * frame, the SIGINT handler, code of the function's that runs inside the prelude's own part of a
 * call — is used to switch off everything it can reach; then the function's next import of a
 * blocked module is still refused, gc introspection still denied, and an endless loop still ends
 * with 1004 by the interrupt, in the same worker, while another tenant's warm interpreter stays
 * warm. One worker: every call below shares the process.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSandbox, type Sandbox, type SandboxOutcome } from '../../../src/engine/sandbox/index.js'
import { py, PYTHON_HOOK_TIMEOUT_MS } from './fixtures/python.js'

let sandbox: Sandbox
let bystanderCalls = 0
let pid = 0

/** A stdlib class attribute lives as long as the tenant's interpreter: it counts the calls the interpreter served. */
const MARK = 'import string\nstring.Template._mark = getattr(string.Template, "_mark", 0) + 1\nreturn string.Template._mark'

async function bystander(): Promise<SandboxOutcome> {
  return sandbox.execute(py('bystander/mark', `def f():\n${indent(MARK)}\n`, { tenant: 'bystander' }))
}

beforeAll(async () => {
  sandbox = createSandbox({ workers: 1, maxWarmIsolatesPerWorker: 16, maxLogBytes: 4096, queueLimit: 20, pythonKillGraceMs: 1_000, pythonInterpretersPerWorker: 8 })
  await sandbox.start()
  const first = await bystander()
  expect(first).toMatchObject({ status: 'success', result: 1 })
  bystanderCalls = 1
  pid = first.workerPid
}, PYTHON_HOOK_TIMEOUT_MS)

afterAll(async () => {
  await sandbox?.stop()
})

function indent(text: string, by = '    '): string {
  return text.split('\n').map((l) => (l === '' ? l : by + l)).join('\n')
}

/**
 * What an attacker does with the prelude's namespace once it has it: every one-item list (the
 * flags `_user` and `_deadline` were) is set to switch its guard off, the blocked names emptied.
 */
const SPOIL = `
def spoil(g):
    if type(g) is not dict:
        return 'no namespace'
    for k in list(g):
        v = g[k]
        if type(v) is list and len(v) == 1:
            v[0] = float('inf') if isinstance(v[0], float) else False
    g['_BLOCKED'] = frozenset()
    return 'spoiled'
`

/** After tampering: the blocked imports and gc introspection, each as refused (the exception's name) or not. */
const PROBE = `
def probe():
    out = {}
    for name in ('pyodide', '_pyodide', '_pyodide_core', 'pyodide_js', 'js', 'ctypes'):
        try:
            __import__(name)
            out[name] = 'imported'
        except BaseException as e:
            out[name] = type(e).__name__
    try:
        __import__('gc').get_objects()
        out['gc'] = 'allowed'
    except BaseException as e:
        out['gc'] = type(e).__name__
    return out
`

/** A function of the hostile tenant: `tamper` (a body that sets `g`, or does its own tampering), then the probe or an endless loop. */
function hostile(tamper: string, async = false): string {
  return `import sys, time, signal, builtins, inspect, gc
${SPOIL}
${PROBE}
${async ? 'async ' : ''}def f(mode):
    g = None
${indent(tamper)}
    spoiled = spoil(g)
    if mode == 'spin':
        while True:
            pass
    return [spoiled, probe()]
`
}

function refusedAll(result: unknown): void {
  const [, probe] = result as [string, Record<string, string>]
  for (const name of ['pyodide', '_pyodide', '_pyodide_core', 'pyodide_js', 'js', 'ctypes']) {
    expect(probe[name], `import ${name}`).toMatch(/^(ImportError|ModuleNotFoundError)$/)
  }
  expect(probe.gc).toBe('PermissionError')
}

/** The tampering call's probe, then its endless loop: both guards hold and the worker is the same. */
async function expectGuardsHold(key: string, source: string, tenant = 'hostile'): Promise<void> {
  const restarts = sandbox.stats().restarts
  const probed = await sandbox.execute(py(`${tenant}/${key}`, source, { signature: '(mode)', args: { mode: 'probe' }, tenant }))
  expect(probed.error?.message).toBeUndefined()
  refusedAll(probed.result)
  const spun = await sandbox.execute(py(`${tenant}/${key}`, source, {
    signature: '(mode)', args: { mode: 'spin' }, tenant, limits: { timeoutMs: 300, memoryMb: 32, cpuMs: 10_000 },
  }))
  expect(spun.error?.code).toBe(1004)
  expect(spun.error?.details).toMatchObject({ limit: 'time' })
  // ended by the interrupt: not by the watchdog killing the worker
  expect(spun.error?.message).not.toMatch(/killed/)
  expect(spun.workerPid).toBe(probed.workerPid)
  expect(sandbox.stats().restarts).toBe(restarts)
}

describe("the prelude's namespace, reached from a function", () => {
  it.each([
    ['the known route: a method of sys.stdout', 'g = sys.stdout.write.__func__.__globals__'],
    ['time.sleep', 'g = getattr(time.sleep, "__globals__", None)'],
    ['builtins.__import__', 'g = getattr(builtins.__import__, "__globals__", None)'],
    ['sys.setrecursionlimit', 'g = getattr(sys.setrecursionlimit, "__globals__", None)'],
    ['the import finder in sys.meta_path', 'g = sys.meta_path[0].find_spec.__globals__'],
    ['the SIGINT handler', 'g = getattr(signal.getsignal(signal.SIGINT), "__globals__", None)'],
    ['the frame under the call (sys._getframe)', 'g = sys._getframe(0).f_back.f_globals'],
    ['the frame under the call (inspect.currentframe)', 'g = inspect.currentframe().f_back.f_globals'],
    ['a traceback through a prelude function', "try:\n    time.sleep('not a number')\nexcept ValueError as e:\n    g = e.__traceback__.tb_next.tb_frame.f_globals"],
    ['a trace function', "seen = []\ndef tracer(frame, event, arg):\n    if frame.f_code.co_filename == '<svc-prelude>':\n        seen.append(frame.f_globals)\n    return None\nsys.settrace(tracer)\ntime.sleep(0)\nsys.settrace(None)\ng = seen[0] if seen else None"],
    ['a profile function', "seen = []\ndef profiler(frame, event, arg):\n    if frame.f_code.co_filename == '<svc-prelude>':\n        seen.append(frame.f_globals)\nsys.setprofile(profiler)\ntime.sleep(0)\nsys.setprofile(None)\ng = seen[0] if seen else None"],
    ['sys.monitoring', "seen = []\nm = sys.monitoring\nm.use_tool_id(3, 'spy')\ndef started(code, offset):\n    if code.co_filename == '<svc-prelude>' and not seen:\n        seen.append(sys._getframe(0).f_back.f_globals)\nm.register_callback(3, m.events.PY_START, started)\nm.set_events(3, m.events.PY_START)\ntime.sleep(0)\nm.set_events(3, 0)\nm.free_tool_id(3)\ng = seen[0] if seen else None"],
    ['gc.garbage (DEBUG_SAVEALL keeps the prelude frames of a collected traceback)', "gc.set_debug(gc.DEBUG_SAVEALL)\ntry:\n    time.sleep('x')\nexcept ValueError as e:\n    e.cycle = e\n    del e\ngc.collect()\ngc.set_debug(0)\nframes = [o for o in gc.garbage if type(o).__name__ == 'frame' and o.f_code.co_filename == '<svc-prelude>']\ng = frames[0].f_globals if frames else None"],
  ])('through %s: the guards still hold', async (label, tamper) => {
    await expectGuardsHold(label.replace(/\W+/g, '-'), hostile(tamper))
  })

  it("through a coroutine's frame (the frame that drives it): the guards still hold", async () => {
    await expectGuardsHold('coroutine', hostile('g = sys._getframe(0).f_back.f_globals', true))
  })
})

describe("the audit hook's own frame", () => {
  // A str subclass whose method runs inside the hook would reach the hook's frame (f_back) and,
  // in Python 3.13, write its closure cells through f_locals: the hook reads its arguments
  // without calling a method of them, and keeps nothing in cells.
  const tamper = `class Sneaky(str):
    def startswith(self, *a):
        f = sys._getframe(0)
        while f is not None:
            for name in ('denied', 'blocked', 'user', 'user_file'):
                if name in f.f_locals:
                    try:
                        f.f_locals[name] = frozenset() if name != 'user' else [False]
                    except Exception:
                        pass
            f = f.f_back
        return str.startswith(self, *a)
    def partition(self, sep):
        self.startswith('')
        return str.partition(self, sep)
import os
try:
    os.remove(Sneaky('/tmp/svc-guard-test-none'))
except OSError:
    pass
try:
    __import__(Sneaky('json'))
except ImportError:
    pass`

  it('a method of an argument never runs inside it: the guards still hold', async () => {
    // a tenant of its own: in the prelude before this change the damage outlived the call
    await expectGuardsHold('hook-frame', hostile(tamper), 'hostile-hook')
  })
})

describe('the interrupt', () => {
  it.each([
    ['signal.signal(SIGINT, SIG_IGN)', 'signal.signal(signal.SIGINT, signal.SIG_IGN)'],
    ['_signal.signal(SIGINT, a handler that returns)', "import _signal\n_signal.signal(signal.SIGINT, lambda *a: None)"],
    ['a fresh _signal module (its set-up resets the handler table)', "import _imp, importlib.machinery\n_imp.create_builtin(importlib.machinery.ModuleSpec('_signal', importlib.machinery.BuiltinImporter, origin='built-in'))"],
  ])('replacing the SIGINT handler with %s does not stop it', async (label, tamper) => {
    await expectGuardsHold(label.replace(/\W+/g, '-'), hostile(tamper))
  })
})

describe("the function's code in the prelude's own part of a call", () => {
  it('an endless __del__ run when the call ends is interrupted (1004); the tenant gets a fresh interpreter in the same worker', async () => {
    const restarts = sandbox.stats().restarts
    const source = `class Stuck:
    def __del__(self):
        while True:
            pass
keep = Stuck()
${`def f():\n${indent(MARK)}`}
`
    const out = await sandbox.execute(py('hostile/del', source, { tenant: 'hostile-del', context: 'fresh', limits: { timeoutMs: 300, memoryMb: 32, cpuMs: 10_000 } }))
    expect(out.error?.code).toBe(1004)
    expect(out.error?.message).not.toMatch(/killed/)
    expect(sandbox.stats().restarts).toBe(restarts)
    const next = await sandbox.execute(py('hostile/after-del', `def f():\n${indent(MARK)}\n`, { tenant: 'hostile-del' }))
    expect(next).toMatchObject({ status: 'success', result: 1, workerPid: out.workerPid })
  })

  it("an endless __eq__ planted in a stdlib module, run by the next call's restore, is interrupted (1004)", async () => {
    const restarts = sandbox.stats().restarts
    const plant = "import json\nclass Liar:\n    def __eq__(self, other):\n        while True:\n            pass\njson.dumps = Liar()\nreturn 'planted'"
    const planted = await sandbox.execute(py('hostile/plant', `def f():\n${indent(plant)}\n`, { tenant: 'hostile-eq' }))
    expect(planted.result).toBe('planted')
    // another function: the restore compares json's attributes with the baseline
    const out = await sandbox.execute(py('hostile/victim', 'def f():\n    return 1\n', { tenant: 'hostile-eq', limits: { timeoutMs: 300, memoryMb: 32, cpuMs: 10_000 } }))
    expect(out.error?.code).toBe(1004)
    expect(out.error?.message).not.toMatch(/killed/)
    expect(out.workerPid).toBe(planted.workerPid)
    expect(sandbox.stats().restarts).toBe(restarts)
    const next = await sandbox.execute(py('hostile/victim', 'def f():\n    return 1\n', { tenant: 'hostile-eq' }))
    expect(next).toMatchObject({ status: 'success', result: 1, workerPid: planted.workerPid })
  })
})

describe('another tenant', () => {
  it('kept its warm interpreter through all of it, in the same worker', async () => {
    const out = await bystander()
    expect(out).toMatchObject({ status: 'success', result: bystanderCalls + 1, workerPid: pid })
  })
})
