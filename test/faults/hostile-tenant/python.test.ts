// Hostile tenant, Python (issue 27, items 3, 4, 6 and 7): tenant A's Python functions against a real
// daemon (standard auth, default configuration, one sandbox worker so that everything A does
// happens in the process that also holds tenant B's warm interpreter). A's busy loop stops at its
// CPU limit; A's function tampering with the prelude's guards gets nothing and is still interrupted
// without the worker being killed; A churning through child namespaces leaves B's interpreter
// warm. B's interpreter is recognised by a counter it keeps on a stdlib class (it lives as long as
// the interpreter: 1 means a freshly loaded one), never by timing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { recordFault } from '../fault-record.js'
import { childPids, cpuMs, workerNodePid } from '../fault-fixtures.js'
import { startTwoTenantNode, type TwoTenantNode } from './two-tenants.js'

interface Execution {
  status?: string
  result?: unknown
  error?: { code?: number; message?: string; details?: Record<string, unknown> }
  execution_time_ms?: number
}

const MARK = {
  function_name: 'mark', signature: '()', language: 'python',
  source_code: 'import string\ndef mark():\n    string.Template._svc_mark = getattr(string.Template, "_svc_mark", 0) + 1\n    return string.Template._svc_mark\n',
}

/** The tampering: the prelude's namespace through every route we know, the audit hook's frame, the SIGINT handler. */
const TAMPER = `import sys, time, signal, builtins, inspect, gc, os
def spoil(g):
    if type(g) is dict:
        for k in list(g):
            v = g[k]
            if type(v) is list and len(v) == 1:
                v[0] = float('inf') if isinstance(v[0], float) else False
        g['_BLOCKED'] = frozenset()
class Sneaky(str):
    def startswith(self, *a):
        f = sys._getframe(0)
        while f is not None:
            for name in ('denied', 'blocked', 'user'):
                if name in f.f_locals:
                    try:
                        f.f_locals[name] = frozenset() if name != 'user' else [False]
                    except Exception:
                        pass
            f = f.f_back
        return str.startswith(self, *a)
def tamper():
    routes = 0
    for get in (lambda: sys.stdout.write.__func__.__globals__, lambda: time.sleep.__globals__,
                lambda: builtins.__import__.__globals__, lambda: sys.setrecursionlimit.__globals__,
                lambda: sys.meta_path[0].find_spec.__globals__, lambda: signal.getsignal(signal.SIGINT).__globals__,
                lambda: sys._getframe(2).f_globals, lambda: inspect.currentframe().f_back.f_back.f_globals):
        try:
            spoil(get())
            routes += 1
        except Exception:
            pass
    try:
        os.remove(Sneaky('/tmp/none'))
    except OSError:
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return routes
def probe():
    out = {}
    for name in ('js', 'pyodide_js', 'pyodide', '_pyodide_core', 'ctypes'):
        try:
            __import__(name)
            out[name] = 'imported'
        except BaseException as e:
            out[name] = type(e).__name__
    try:
        gc.get_objects()
        out['gc.get_objects'] = 'allowed'
    except BaseException as e:
        out['gc.get_objects'] = type(e).__name__
    return out
def hostile(mode):
    routes = tamper()
    if mode == 'spin':
        while True:
            pass
    return {'routes': routes, 'probe': probe()}
`

describe('hostile tenant: Python (real daemon process, one sandbox worker)', () => {
  let node: TwoTenantNode
  let mark = ''
  let marks = 0

  beforeAll(async () => {
    node = await startTwoTenantNode({ env: { SVC_SANDBOX_WORKERS: '1' } })
    mark = await node.create('B', MARK)
  }, 120_000)
  afterAll(async () => {
    await node?.stop()
  })

  async function execute(as: 'A' | 'B', rufid: string, args: unknown = {}, headers: Record<string, string> = {}): Promise<Execution> {
    const r = await (as === 'A' ? node.asA : node.asB)<Execution>('POST', `/api/v1/functions/${rufid}/execute`, { arguments: args }, headers)
    return r.body
  }

  /** B's call of its marking function: the count its interpreter has served (1: a fresh interpreter). */
  async function markB(): Promise<number> {
    const out = await execute('B', mark)
    expect(out.status, JSON.stringify(out)).toBe('success')
    marks = out.result as number
    return marks
  }

  /** The sandbox worker's node process (behind the OS wall: the innermost node of its process tree). */
  function workerPid(): number {
    const workers = childPids(node.daemon.pid)
    expect(workers).toHaveLength(1)
    return workerNodePid(workers[0]!)
  }

  it('isolation.cpu-limit-python: a busy loop with cpu_ms 500 and timeout_ms 10000 ends at its CPU limit with 1007', async () => {
    const rec = recordFault('isolation.cpu-limit-python', {
      fault: "tenant A's Python function loops forever with limits cpu_ms 500, timeout_ms 10000 (one sandbox worker, which also holds tenant B's warm interpreter)",
      expectation: 'the call ends with 1007 naming the CPU limit (details.limit cpu) after at least 500 and at most 600 ms of CPU, long before its 10 s timeout; the worker is not replaced; B is then answered by its warm interpreter',
    })
    expect(await markB()).toBe(1)
    const spin = await node.create('A', {
      function_name: 'spin', signature: '()', language: 'python', source_code: 'def spin():\n    while True:\n        pass\n',
      limits: { cpu_ms: 500, timeout_ms: 10_000 },
    })
    // the first call loads A's interpreter too: the second measures the loop alone
    expect((await execute('A', spin)).error?.code).toBe(1007)
    const pid = workerPid()
    const cpuBefore = cpuMs(pid)
    const began = Date.now()
    const out = await execute('A', spin)
    const wallMs = Date.now() - began
    const workerCpuMs = cpuMs(pid) - cpuBefore
    expect(out.error?.code).toBe(1007)
    expect(out.error?.details).toMatchObject({ limit: 'cpu', cpuMs: 500 })
    const callCpuMs = out.error?.details?.cpuTimeMs as number
    expect(callCpuMs).toBeGreaterThanOrEqual(500)
    expect(callCpuMs).toBeLessThanOrEqual(600)
    expect(wallMs).toBeLessThan(10_000)
    expect(workerPid()).toBe(pid)
    expect(await markB()).toBe(2)
    rec.figures({ cpu_limit_ms: 500, timeout_ms: 10_000, call_cpu_ms: Math.round(callCpuMs * 10) / 10, worker_cpu_ms_during_call: workerCpuMs, request_wall_ms: wallMs, error_code: out.error?.code ?? null, b_warm_after: true })
    rec.summary(`ended with 1007 (limit cpu) after ${Math.round(callCpuMs)} ms of CPU (the worker process: ${workerCpuMs} ms), ${wallMs} ms wall of a 10 s timeout; same worker; B warm`)
  }, 120_000)

  it('isolation.guard-tampering: tampering with the prelude through every known route gets nothing; the interrupt still ends its loop without killing the worker', async () => {
    const rec = recordFault('isolation.guard-tampering', {
      fault: "tenant A's Python function switches off everything it reaches of the prelude: its namespace through 8 routes (a method of sys.stdout — the reported one —, time.sleep, __import__, setrecursionlimit, the meta_path finder, the SIGINT handler, frames), the audit hook's own frame (a str subclass method run inside the hook), the SIGINT handler (SIG_IGN); then imports js, pyodide_js, pyodide, _pyodide_core, ctypes and calls gc.get_objects, or loops forever (timeout_ms 500)",
      expectation: 'every import refused (ImportError) and gc.get_objects refused (PermissionError); the endless loop ends with 1004 by the interrupt, the worker pid unchanged; B is still answered by its warm interpreter',
    })
    const before = await markB()
    const hostile = await node.create('A', { function_name: 'hostile', signature: '(mode)', language: 'python', source_code: TAMPER, limits: { timeout_ms: 500 } })
    const pid = workerPid()
    const probed = await execute('A', hostile, { mode: 'probe' })
    expect(probed.status, JSON.stringify(probed)).toBe('success')
    const { routes, probe } = probed.result as { routes: number; probe: Record<string, string> }
    for (const name of ['js', 'pyodide_js', 'pyodide', '_pyodide_core', 'ctypes']) expect(probe[name], `import ${name}`).toBe('ImportError')
    expect(probe['gc.get_objects']).toBe('PermissionError')
    const began = Date.now()
    const spun = await execute('A', hostile, { mode: 'spin' })
    const spinMs = Date.now() - began
    expect(spun.error?.code).toBe(1004)
    expect(spun.error?.message).not.toMatch(/killed/)
    expect(workerPid()).toBe(pid)
    expect(await markB()).toBe(before + 1)
    rec.figures({ namespace_routes_tried: 8, namespace_routes_taken: routes, imports_refused: 5, gc_refused: true, spin_error_code: spun.error?.code ?? null, spin_request_ms: spinMs, worker_pid_unchanged: true, b_warm_after: true })
    rec.summary(`${routes} of 8 routes still lead to the namespace (it holds no guard state now), hook frame and SIGINT handler tampered: 5/5 imports refused, gc refused; the endless loop ended with 1004 in ${spinMs} ms, same worker; B warm (count ${before} → ${before + 1})`)
  }, 120_000)

  it("isolation.python-eviction: tenant A churning through child namespaces leaves B's interpreter warm", async () => {
    const namespaces = 6
    const rec = recordFault('isolation.python-eviction', {
      fault: `tenant A creates a Python function in each of ${namespaces} child namespaces (acme.n1…) and calls each (one interpreter per namespace; the worker keeps 4, default configuration), between two calls of tenant B`,
      expectation: "B's second call is answered by the interpreter that answered its first (its counter continues); A's own least recently used interpreters are the ones evicted",
    })
    const before = await markB()
    const loads: number[] = []
    for (let i = 1; i <= namespaces; i++) {
      const ns = `acme.n${i}`
      const fn = await (async () => {
        const r = await node.asA('POST', '/api/v1/functions/create', { ...MARK, function_name: 'mark' }, { 'X-Svc-Namespace': ns })
        expect([200, 201], JSON.stringify(r.body)).toContain(r.status)
        return (r.body as Record<string, unknown>).rufid_short as string
      })()
      const out = await execute('A', fn, {}, { 'X-Svc-Namespace': ns })
      expect(out.status, JSON.stringify(out)).toBe('success')
      loads.push(out.result as number)
    }
    // every namespace got an interpreter of its own
    expect(loads).toEqual(Array(namespaces).fill(1))
    const after = await markB()
    expect(after).toBe(before + 1)
    rec.figures({ a_namespaces: namespaces, a_interpreters_loaded: loads.length, b_count_before: before, b_count_after: after, b_evicted: false })
    rec.summary(`A loaded ${loads.length} interpreters in ${namespaces} namespaces; B's interpreter kept (its count ${before} → ${after})`)
  }, 300_000)
})
