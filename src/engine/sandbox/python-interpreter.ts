/**
 * One Pyodide (WebAssembly CPython) interpreter inside a sandbox worker process, and the host-side
 * hardening around it.
 *
 * The JS layer is the boundary that holds even if Python code gets hold of a JS object:
 * - workers run with `--disallow-code-generation-from-strings` (worker-process.ts), so a leaked
 *   `Function` constructor cannot compile host code;
 * - the `js` module is an empty null-prototype object, and `js` / `pyodide_js` are unregistered;
 * - after loading, the `require` of Pyodide's emscripten module (CommonJS) gets stand-ins: no
 *   `child_process` (`system()` returns 127 without starting anything), no `ws` (emscripten
 *   sockets neither connect nor listen), randomness only; the global `require` likewise; `fetch`
 *   and `WebSocket` are removed from the worker's globals; `Error.prepareStackTrace` is locked;
 *   NODEFS and the other host-backed filesystems are unregistered and `mountNodeFS`,
 *   `mountNativeFS`, `loadPackage` and `loadBinaryFile` refuse, so nothing is fetched or mounted
 *   at run time. The filesystem is Pyodide's in-memory one: the host's files are not in it.
 * - before every call the prelude's namespace and the builtins are restored from copies only the
 *   worker holds; after it, /tmp and /home/pyodide are emptied (see python-prelude.py for the rest).
 *
 * A call is two calls into the prelude, made from here: `call` (restore the interpreter, then the
 * function's own code: loading its source, binding its arguments, the call, encoding its result)
 * and `finish` (the envelope, putting the interpreter back). The guards do not rely on
 * any state Python code can reach: the audit hook holds none (python-prelude.py), and whether and
 * when a call is interrupted is decided here, by the InterruptGate, from JavaScript state.
 *
 * Limits: an interrupter thread watches the call's wall time and the CPU time of the thread that
 * runs Python, and signals the gate when either limit has passed (again every 20 ms while the
 * call goes on); the gate raises KeyboardInterrupt in the function's code. A function that keeps
 * running 250 ms after the interrupt has its interpreter discarded (the stack is unwound through
 * the gate) instead of getting the worker killed; one stuck in a C loop that never checks for
 * signals is still ended by the supervisor's watchdog, which kills the worker. The memory limit
 * is dlmalloc's footprint limit: during a call the heap may grow by at most `memoryMb` (an
 * allocation beyond it fails, which Python raises as MemoryError). An interpreter whose
 * WebAssembly memory has grown far beyond its start, or that failed at the JS level, is retired.
 * No Python runs in an interpreter outside its tenant's calls: handles the worker lets go of are
 * released at the start of the tenant's next call, and a retired interpreter is dropped whole.
 */
import { randomFillSync } from 'node:crypto'
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import { PYTHON_PRELUDE } from './python-prelude.js'
import type { ResolvedWheel } from './python-wheelhouse.js'

const MIB = 1024 * 1024
/** An interpreter whose WebAssembly memory grew this much beyond its start is replaced. */
const RETIRE_GROWTH_BYTES = 384 * MIB
const NO_LIMIT = 0xffff_ffff
const DEPS_ROOT = '/lib/svc-deps'
const INCOMING = `${DEPS_ROOT}/.incoming`
const HOME = '/home/pyodide'
/** Where calls may write; emptied after every call. */
const WRITABLE_DIRS = ['/tmp', HOME]
/** The prelude's file name in tracebacks and frames (the prelude refuses user code its frames). */
const PRELUDE_FILENAME = '<svc-prelude>'

interface PyCallable {
  (...args: unknown[]): unknown
  destroy(): void
}

interface PyDict {
  get(key: string): unknown
  destroy(): void
}

interface EmscriptenModule {
  HEAP8: Int8Array
  _malloc_footprint(): number
  _malloc_set_footprint_limit(bytes: number): number
  _malloc_trim(pad: number): number
  _PyEval_SaveThread?: () => number
  _PyErr_CheckSignals(): number
  _PyErr_Clear(): void
  _Py_EMSCRIPTEN_SIGNAL_HANDLING: number
  [key: string]: unknown
}

interface PyodideApi {
  runPython(code: string, options?: { globals?: unknown; filename?: string }): unknown
  toPy(value: unknown): PyDict
  setStdout(options: { write: (buffer: Uint8Array) => number; isatty?: boolean }): void
  setStderr(options: { write: (buffer: Uint8Array) => number; isatty?: boolean }): void
  setStdin(options: { error: boolean }): void
  setInterruptBuffer(buffer: Int32Array | undefined): void
  unregisterJsModule(name: string): void
  ERRNO_CODES: Record<string, number>
  FS: {
    ErrnoError: new (errno: number) => Error
    mkdirTree(path: string): void
    writeFile(path: string, data: Uint8Array): void
    readdir(path: string): string[]
    lstat(path: string): { mode: number }
    unlink(path: string): void
    rmdir(path: string): void
    rename(from: string, to: string): void
    cwd(): string
    chdir(path: string): void
    filesystems: Record<string, unknown>
  }
  version: string
  _module: EmscriptenModule
  _api: Record<string, unknown> & { fatal_error?: (err: unknown) => void }
  [key: string]: unknown
}

/** What one call produced, before it becomes an outcome. */
export interface InterpreterRun {
  /** The prelude's envelope, parsed; undefined when the interpreter failed at the JS level. */
  envelope?: Envelope
  /** The JS-level failure (the interpreter is no longer usable). */
  fault?: string
  /** Output written to the standard file descriptors directly (os.write, C code). */
  raw: Array<{ level: 'log' | 'error'; text: string }>
  wallTimeMs: number
  cpuTimeMs: number
  /** Heap footprint of the interpreter after the call. */
  memoryBytes: number
  /** The limit the interrupter stopped the call at (its result, if any, does not count). */
  limit?: LimitReason
  /** The function kept running after the interrupt: its interpreter was discarded (never run again). */
  abandoned?: boolean
}

export interface Envelope {
  ok: boolean
  json?: string
  /** `interrupted`: a KeyboardInterrupt ended the call (the interrupter's, or one the function raised itself) */
  kind?: 'missing' | 'args' | 'threw' | 'load' | 'result' | 'interrupted' | 'memory' | 'unsupported' | 'internal'
  error?: { name?: string; message?: string; stack?: string; details?: Record<string, unknown> }
  lines: Array<[string, string, number]>
  used: number
  truncated: boolean
}

export interface CallSpec {
  /** The code object `prepare` returned. */
  code: PyHandle
  functionName: string
  argsJson: string
  /** Site directory of the call's dependency set ('' for none). */
  site: string
  /** The modules of that set already imported by this tenant (undefined for none). */
  stash: PyHandle | undefined
  timeoutMs: number
  /** CPU time the call may use (the thread that runs Python, from the start of the call); 0: no limit */
  cpuMs: number
  memoryMb: number
  maxLogBytes: number
  /** A warm function's dict (`newDict`), kept between its calls; undefined for fresh globals. */
  instance?: PyHandle | undefined
  /**
   * Restore the builtins and the protected stdlib state before the call (false only when the
   * previous call of this interpreter was the same warm function).
   */
  restore: boolean
  /** a deterministic call: the `random` module is seeded from this hex digest for the call */
  seed?: string
}

/** Why the interrupter stopped a call: its wall-time limit or its CPU-time limit. */
export type LimitReason = 'time' | 'cpu'
/** the reason bits of a signal word (REASON_TIME is 1) */
const REASON_CPU = 2
/** How the interrupter reads the CPU time of the thread that runs Python (InterrupterStatus.cpuClock). */
const CPU_CLOCKS = ['none', 'schedstat', 'stat', 'process'] as const
export type CpuClock = (typeof CPU_CLOCKS)[number]

/**
 * Interrupter thread (CommonJS, evaluated by worker_threads). While a call is armed it sets the
 * signal word when the call's wall-time deadline has passed or the thread that runs Python (the
 * worker's main thread, whose thread id is the process id) has used the call's CPU time since it
 * was armed, and again every 20 ms while the call goes on (a CPU limit no shorter than the time
 * limit is not watched: CPU time cannot outrun wall time). The CPU time comes from
 * /proc/self/task/<tid>/schedstat (nanoseconds), else that thread's stat (clock ticks), else the
 * whole process (process.cpuUsage: the stop then comes a little early, never late). CPU time is
 * at most wall time, so the thread sleeps until the earliest moment the budget could be spent and
 * polls at least every 2 ms near it; the CPU time at the start is read 5 ms into the call (most
 * calls are over by then and cost no read): the call is stopped within a few ms of CPU past its
 * limit, never before it.
 * The signal word carries the generation of the arming it belongs to (generation * 4 + reason):
 * a late write for a call that already ended is ignored.
 */
const INTERRUPTER = `
const { workerData } = require('node:worker_threads')
const fs = require('node:fs')
const control = new Int32Array(workerData.control)
const limits = new Float64Array(workerData.limits)
const signal = new Int32Array(workerData.signal)
const task = '/proc/self/task/' + process.pid
const buffer = Buffer.alloc(512)
function opened(path) { try { const fd = fs.openSync(path, 'r'); return fd } catch { return -1 } }
function readAt(fd) { const n = fs.readSync(fd, buffer, 0, buffer.length, 0); return buffer.toString('latin1', 0, n) }
let clock = 3
let fd = opened(task + '/schedstat')
if (fd >= 0) clock = 1
else { fd = opened(task + '/stat'); if (fd >= 0) clock = 2 }
function cpuMs() {
  try {
    if (clock === 1) return Number(readAt(fd).split(' ')[0]) / 1e6
    if (clock === 2) { const f = readAt(fd); const rest = f.slice(f.lastIndexOf(') ') + 2).split(' '); return (Number(rest[11]) + Number(rest[12])) * 10 }
  } catch { clock = 3 }
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}
cpuMs()
Atomics.store(signal, 2, clock)
const SETTLE_MS = 5
let seen = -1
let base = -1
let armedAt = 0
let watchCpu = false
for (;;) {
  const generation = Atomics.load(control, 0)
  if (Atomics.load(control, 1) === 0) { Atomics.wait(control, 0, generation); continue }
  const now = Date.now()
  if (generation !== seen) {
    seen = generation
    // CPU time never exceeds wall time: a CPU limit no shorter than the time left cannot pass first
    watchCpu = limits[1] > 0 && limits[1] < limits[0] - now
    base = -1
    armedAt = now
  }
  const left = limits[0] - now
  const cpuLimit = limits[1]
  let reason = left <= 0 ? 1 : 0
  let wait = left
  if (reason === 0 && watchCpu) {
    if (base < 0 && now - armedAt < SETTLE_MS) {
      // most calls end within a few ms: the baseline is read only for one still running (read
      // later it is larger, so the call is stopped at most SETTLE_MS of CPU late, never early)
      wait = Math.min(left, SETTLE_MS - (now - armedAt))
    } else {
      if (base < 0) base = cpuMs()
      const used = cpuMs() - base
      if (used >= cpuLimit) reason = 2
      else wait = Math.min(left, Math.max(cpuLimit - used, 2))
    }
  }
  if (reason !== 0) {
    if (Atomics.load(control, 0) !== generation) continue
    const word = ((generation & 0x1fffffff) << 2) | reason
    Atomics.compareExchange(signal, 1, 0, word)
    Atomics.store(signal, 0, word)
    wait = 20
  }
  Atomics.wait(control, 0, generation, wait)
}
`

/** The worker's one interrupter thread and the buffers it shares with the main thread. */
class Interrupter {
  /** [pending signal word (the gate consumes it), first signal word of the arming, CPU clock in use] */
  readonly signal = new Int32Array(new SharedArrayBuffer(12))
  private readonly control = new Int32Array(new SharedArrayBuffer(8))
  private readonly limits = new Float64Array(new SharedArrayBuffer(16))
  private readonly thread: Worker

  constructor() {
    this.thread = new Worker(INTERRUPTER, {
      eval: true,
      execArgv: [],
      workerData: { control: this.control.buffer, limits: this.limits.buffer, signal: this.signal.buffer },
      resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 2 },
    })
    this.thread.unref()
    this.thread.on('error', (err) => process.stderr.write(`python interrupter thread failed: ${err.message}\n`))
  }

  /** Arms the thread for one call; returns the tag its signal words carry. */
  arm(timeoutMs: number, cpuMs: number): number {
    Atomics.store(this.signal, 0, 0)
    Atomics.store(this.signal, 1, 0)
    this.limits[0] = Date.now() + timeoutMs
    this.limits[1] = cpuMs > 0 ? cpuMs : 0
    Atomics.store(this.control, 1, 1)
    const generation = Atomics.add(this.control, 0, 1) + 1
    Atomics.notify(this.control, 0)
    return generation & 0x1fffffff
  }

  /** Ends the arming (the thread is not woken for it: it finds out when its wait ends or the next call arms it). */
  disarm(): void {
    Atomics.store(this.control, 1, 0)
    Atomics.add(this.control, 0, 1)
    Atomics.store(this.signal, 0, 0)
  }

  /** The limit that first fired during the arming tagged `tag`, if any. */
  fired(tag: number): LimitReason | undefined {
    const word = Atomics.load(this.signal, 1)
    if (word === 0 || word >>> 2 !== tag) return undefined
    return (word & 3) === REASON_CPU ? 'cpu' : 'time'
  }

  get cpuClock(): CpuClock {
    return CPU_CLOCKS[Atomics.load(this.signal, 2)] ?? 'none'
  }
}

/** The Python signal number the gate delivers (SIGINT: KeyboardInterrupt through the default handler). */
const SIGINT = 2
/**
 * After the first interrupt of a call, how long the function may keep running (swallowing the
 * KeyboardInterrupt, which is repeated every 20 ms) before its interpreter is discarded: the
 * gate then unwinds the WebAssembly stack and the interpreter is never run again. It is well
 * below the supervisor's Python kill grace (execution.python.kill_grace_ms, 1000 ms by default),
 * so such a function costs its own tenant an interpreter, not the worker (and every other
 * tenant's interpreters in it).
 */
const ABANDON_AFTER_MS = 250
/**
 * The worker's own parts of a call (dropping what the previous call left before it, the envelope
 * and putting the interpreter back after it) are not interrupted, unless one has run this long
 * past the call's limit: only code the call left behind (a `__del__`, `__eq__`, trace function…)
 * can make them that slow. The interpreter is then replaced after the call.
 */
const PRELUDE_GRACE_MS = 200
/** Preparation (installing dependencies, compiling the source) gets this long before it is interrupted. */
const PREPARE_BUDGET_MS = 20_000

type GatePhase = 'idle' | 'prelude' | 'user'

/** Thrown through the interpreter's WebAssembly stack to discard an interpreter that will not stop. */
class InterpreterAbandoned extends Error {
  constructor() {
    super('the function did not stop when interrupted')
    this.name = 'InterpreterAbandoned'
  }
}

/**
 * Decides, on the main thread, when a running interpreter sees an interrupt. CPython in Pyodide
 * reads `Module.Py_EmscriptenSignalBuffer[0]` every 50 eval-loop checks (and in
 * PyErr_CheckSignals) and raises the signal it finds there; that property is this gate's getter.
 * The state it decides by (the phase of the call, set by the worker around each part of a call,
 * and the interrupter's signal word) is JavaScript state no Python code can reach or change:
 * - in the call's own code (`user`), a pending limit is delivered at once, after the gate put
 *   the stateless builtin `signal.default_int_handler` back as the SIGINT handler (through the
 *   real `_signal.signal`, which only the worker holds), so no handler a function installed —
 *   with `signal.signal`, a fresh `_signal` module or otherwise — decides what happens;
 * - in the worker's own parts (`prelude`), only after PRELUDE_GRACE_MS in that part;
 * - when the call is still running ABANDON_AFTER_MS after the first interrupt, or when anything
 *   runs Python in an interpreter that was abandoned, it throws: the stack unwinds to the worker.
 */
class InterruptGate {
  phase: GatePhase = 'idle'
  private phaseStartedAt = 0
  private tag = -1
  /** when the first interrupt of the current call was delivered (0: none) */
  private deliveredAt = 0
  /** an interrupt was delivered in one of the worker's own parts of the call */
  interruptedPrelude = false
  abandoned = false
  private readonly pending = new Int32Array(1)
  /** handlers replaced by the gate (released in a later call's prelude, never inside the getter) */
  readonly replaced: PyHandle[] = []

  constructor(
    private readonly signal: Int32Array,
    private readonly setHandler: PyCallable,
    private readonly defaultHandler: PyHandle,
    private readonly onAbandon: () => void,
  ) {}

  /** The value of `Module.Py_EmscriptenSignalBuffer`. */
  read(): Int32Array {
    if (this.abandoned) throw new InterpreterAbandoned()
    const word = this.signal[0] as number
    if (word === 0 || this.phase === 'idle' || word >>> 2 !== this.tag) return this.pending
    return this.limitPassed()
  }

  begin(tag: number): void {
    this.tag = tag
    this.deliveredAt = 0
    this.interruptedPrelude = false
  }

  enter(phase: GatePhase): void {
    this.phase = phase
    // only the worker's own parts are timed (PRELUDE_GRACE_MS)
    if (phase === 'prelude') this.phaseStartedAt = performance.now()
  }

  get delivered(): boolean {
    return this.deliveredAt !== 0
  }

  private limitPassed(): Int32Array {
    const now = performance.now()
    if (this.deliveredAt !== 0 && now - this.deliveredAt >= ABANDON_AFTER_MS) {
      this.abandoned = true
      this.onAbandon()
      throw new InterpreterAbandoned()
    }
    if (this.phase === 'prelude' && now - this.phaseStartedAt < PRELUDE_GRACE_MS) return this.pending
    // consumed: the interrupter sets it again in 20 ms while the call goes on
    Atomics.store(this.signal, 0, 0)
    try {
      // the handler is replaced here, never released here (releasing it could run its __del__)
      const old = this.setHandler(SIGINT, this.defaultHandler)
      if (isHandle(old)) this.replaced.push(old)
    } catch {
      // nothing better to do: the delivery below still trips the handler in place
    }
    if (this.phase === 'prelude') this.interruptedPrelude = true
    if (this.deliveredAt === 0) this.deliveredAt = now
    this.pending[0] = SIGINT
    return this.pending
  }
}

function isHandle(value: unknown): value is PyHandle {
  return (typeof value === 'function' || (typeof value === 'object' && value !== null)) && typeof (value as Partial<PyHandle>).destroy === 'function'
}

let interrupter: Interrupter | undefined

/** Output that reaches the standard file descriptors (not sys.stdout), kept for the running call only. */
class RawOutput {
  private collecting = false
  private chunks: Array<{ level: 'log' | 'error'; text: string }> = []
  private bytes = 0
  private readonly decoder = new TextDecoder()

  writer(level: 'log' | 'error'): (buffer: Uint8Array) => number {
    return (buffer) => {
      if (this.collecting && this.bytes < 1_048_576) {
        this.bytes += buffer.length
        this.chunks.push({ level, text: this.decoder.decode(buffer) })
      }
      return buffer.length
    }
  }

  begin(): void {
    this.collecting = true
    this.chunks = []
    this.bytes = 0
  }

  end(): Array<{ level: 'log' | 'error'; text: string }> {
    this.collecting = false
    const lines: Array<{ level: 'log' | 'error'; text: string }> = []
    for (const level of ['log', 'error'] as const) {
      const text = this.chunks.filter((c) => c.level === level).map((c) => c.text).join('')
      for (const line of text.split('\n')) if (line !== '') lines.push({ level, text: line })
    }
    this.chunks = []
    return lines
  }
}

function refuse(what: string): () => never {
  return () => {
    throw new Error(`${what} is not available in the sandbox`)
  }
}

/** What Pyodide's `require` offers once it has loaded: randomness, and stand-ins that refuse. */
let safeModules: Record<string, unknown> = {}

function buildSafeModules(): Record<string, unknown> {
  // shaped like emscripten's FS.ErrnoError (EACCES), which its syscalls turn into an errno; not
  // one of an interpreter's own, so that nothing here keeps an interpreter alive after it is dropped
  const denied = (): Error => Object.assign(new Error('network access is not available in the sandbox'), { name: 'ErrnoError', errno: 2 })
  class RefusedSocket {
    static Server = class RefusedServer {
      constructor() {
        throw denied()
      }
    }

    constructor() {
      throw new Error('network access is not available in the sandbox')
    }
  }
  return Object.freeze({
    crypto: Object.freeze({ randomFillSync }),
    child_process: Object.freeze({
      spawnSync: () => ({ status: 127, signal: null, error: new Error('processes are not available in the sandbox') }),
    }),
    ws: RefusedSocket,
  })
}

function safeRequire(name: string): unknown {
  const bare = name.startsWith('node:') ? name.slice(5) : name
  return Object.hasOwn(safeModules, bare) ? safeModules[bare] : undefined
}

interface CjsModule {
  filename?: string
  require(id: string): unknown
}

let requireFiltered = false
/** What emscripten's start-up needs (a reloaded interpreter runs it again); it uses them for NODEFS only. */
const STARTUP_MODULES = new Set(['fs', 'path', 'tty', 'node:fs', 'node:path', 'node:tty'])

/**
 * Pyodide's emscripten module (pyodide.asm.js) is CommonJS and calls its own `require` at run time:
 * `child_process` for `system()`, `ws` for socket connect and listen, `crypto` for randomness.
 * From now on its `require` gets only the safe stand-ins (and the start-up modules, for a reload);
 * every other module's `require` is untouched.
 */
function filterPyodideRequire(): void {
  if (requireFiltered) return
  const asm = createRequire(import.meta.url).resolve('pyodide/pyodide.asm.js')
  const proto = (createRequire(import.meta.url)('node:module') as { prototype: CjsModule }).prototype
  const original = proto.require
  proto.require = function require(this: CjsModule, id: string): unknown {
    if (this.filename === asm && !STARTUP_MODULES.has(id)) return safeRequire(id)
    return original.call(this, id)
  }
  requireFiltered = true
}

/** Removes what could reach the host from the worker's globals and from the Pyodide API. */
function harden(py: PyodideApi): void {
  safeModules = buildSafeModules()
  filterPyodideRequire()
  const g = globalThis as Record<string, unknown>
  g.require = safeRequire
  for (const name of ['fetch', 'WebSocket', 'EventSource', 'XMLHttpRequest']) {
    try {
      delete g[name]
    } catch {
      // not configurable: leave it
    }
  }
  for (const name of Object.keys(py.FS.filesystems)) if (name !== 'MEMFS') delete py.FS.filesystems[name]
  for (const name of ['NODEFS', 'NODERAWFS', 'PROXYFS', 'IDBFS', 'WORKERFS']) delete py._module[name]
  for (const name of ['mountNodeFS', 'mountNativeFS', 'loadPackage', 'loadPackagesFromImports', 'registerComlink']) {
    py[name] = refuse(name)
  }
  py._api.loadBinaryFile = refuse('loadBinaryFile')
  delete py._api.tests
  // A prepareStackTrace hook would hand JS call sites (receivers, functions) to whoever set it.
  try {
    Object.defineProperty(Error, 'prepareStackTrace', { value: Error.prepareStackTrace, writable: false, configurable: false })
  } catch {
    // already locked by an earlier load
  }
}

const waitCell = new Int32Array(new SharedArrayBuffer(4))

/** Blocks the worker's thread for `ms` without spinning: the prelude's `time.sleep` waits in slices of this. */
function hostWait(ms: number): void {
  if (typeof ms === 'number' && ms > 0) Atomics.wait(waitCell, 0, 0, Math.min(ms, 50))
}

function asCallable(value: unknown, name: string): PyCallable {
  if (typeof value !== 'function') throw new Error(`the Python prelude did not define ${name}`)
  return value as PyCallable
}

/** A Python object the worker holds (a code object, a dict). */
export interface PyHandle {
  destroy(): void
}

type PyDictHandle = PyHandle

/** dict's own C methods, called on dicts the worker holds (Python code cannot change them). */
interface DictOps {
  copy: PyCallable
  clear: PyCallable
  update: PyCallable
}

/** Removes `path` and everything under it from the interpreter's in-memory filesystem. */
function removeTree(fs: PyodideApi['FS'], path: string): void {
  let mode: number
  try {
    mode = fs.lstat(path).mode
  } catch {
    return
  }
  if ((mode & 0o170000) === 0o040000) {
    for (const entry of fs.readdir(path)) if (entry !== '.' && entry !== '..') removeTree(fs, `${path}/${entry}`)
    fs.rmdir(path)
  } else {
    fs.unlink(path)
  }
}

/** Removes what a call left in the writable directories. */
function emptyDirectory(fs: PyodideApi['FS'], dir: string): void {
  let entries: string[]
  try {
    entries = fs.readdir(dir)
  } catch {
    fs.mkdirTree(dir)
    return
  }
  if (entries.length <= 2) return
  for (const entry of entries) if (entry !== '.' && entry !== '..') removeTree(fs, `${dir}/${entry}`)
}

type PreludeFunction = 'prepare' | 'call' | 'finish' | 'install' | 'forgetSite'

/** A loaded, hardened interpreter with the prelude installed. */
export class PythonInterpreter {
  /** False once the interpreter failed at the JS level, was abandoned or disposed. */
  alive = true
  /** Set when the interpreter should be replaced after the current call. */
  retiring = false
  private readonly baseHeapBytes: number
  /** handles the worker let go of: released at the start of the next call (see `release`) */
  private pending: PyHandle[] = []

  private constructor(
    private readonly py: PyodideApi,
    private readonly raw: RawOutput,
    private readonly fns: Record<PreludeFunction, PyCallable>,
    /** The prelude's namespace and builtins, the worker's own copies of them, and the per-call state dict. */
    private readonly pinned: { namespace: PyDictHandle; namespaceCopy: PyDictHandle; builtins: PyDictHandle; builtinsCopy: PyDictHandle; state: PyDictHandle },
    private readonly dict: DictOps,
    private readonly gate: InterruptGate,
    private readonly timer: Interrupter,
  ) {
    this.baseHeapBytes = py._module.HEAP8.length
  }

  /** Loads Pyodide from the npm package (no network), hardens it and installs the prelude. */
  static async load(): Promise<PythonInterpreter> {
    const { loadPyodide } = await import('pyodide')
    const raw = new RawOutput()
    // Pyodide sets up its own global `require` only when there is none (a reload after harden()).
    delete (globalThis as Record<string, unknown>).require
    const py = (await loadPyodide({
      jsglobals: Object.create(null) as object,
      env: { HOME: HOME },
      stdout: () => undefined,
      stderr: () => undefined,
    })) as unknown as PyodideApi
    py.setStdout({ write: raw.writer('log'), isatty: false })
    py.setStderr({ write: raw.writer('error'), isatty: false })
    py.setStdin({ error: true })
    for (const name of ['js', 'pyodide_js']) {
      try {
        py.unregisterJsModule(name)
      } catch {
        // not registered
      }
    }
    harden(py)
    const timer = (interrupter ??= new Interrupter())
    py.FS.mkdirTree(DEPS_ROOT)
    py.runPython('import sys\nfor _n in ("js", "pyodide_js", "pyodide_js._api"):\n    sys.modules.pop(_n, None)\ndel _n, sys')
    const dict: DictOps = {
      copy: asCallable(py.runPython('dict'), 'dict'),
      clear: asCallable(py.runPython('dict.clear'), 'dict.clear'),
      update: asCallable(py.runPython('dict.update'), 'dict.update'),
    }
    const builtins = py.runPython('import builtins\nbuiltins.__dict__') as PyDictHandle
    const setHandler = asCallable(py.runPython('import _signal\n_signal.signal'), '_signal.signal')
    const defaultHandler = py.runPython('_signal.default_int_handler') as PyHandle
    py.runPython('del builtins, _signal')
    const namespace = py.toPy({ _host_wait: hostWait })
    py.runPython(PYTHON_PRELUDE, { globals: namespace, filename: PRELUDE_FILENAME })
    const fns = {
      prepare: asCallable(namespace.get('prepare'), 'prepare'),
      call: asCallable(namespace.get('call'), 'call'),
      finish: asCallable(namespace.get('finish'), 'finish'),
      install: asCallable(namespace.get('install'), 'install'),
      forgetSite: asCallable(namespace.get('forget_site'), 'forget_site'),
    }
    const pinned = {
      namespace,
      namespaceCopy: dict.copy(namespace) as PyDictHandle,
      builtins,
      builtinsCopy: dict.copy(builtins) as PyDictHandle,
      state: py.toPy({}) as unknown as PyDictHandle,
    }
    const gate = new InterruptGate(timer.signal, setHandler, defaultHandler, () => {
      // from here on a Pyodide error is passed to the worker as it is (no report, no clean-up)
      py._api.fatal_error = (err: unknown) => {
        throw err
      }
    })
    // CPython reads this property to learn of a pending signal: it is the gate, and nothing else
    // can set it (pyodide.setInterruptBuffer would; the worker never calls it)
    Object.defineProperty(py._module, 'Py_EmscriptenSignalBuffer', { get: () => gate.read(), configurable: false })
    py._module.HEAP8[py._module._Py_EMSCRIPTEN_SIGNAL_HANDLING] = 1
    return new PythonInterpreter(py, raw, fns, pinned, dict, gate, timer)
  }

  get version(): string {
    return this.py.version
  }

  /** WebAssembly memory of the interpreter, in bytes. */
  get heapBytes(): number {
    return this.alive ? this.py._module.HEAP8.length : 0
  }

  /** How the interrupter measures the CPU time of calls. */
  static get cpuClock(): CpuClock {
    return interrupter?.cpuClock ?? 'none'
  }

  /** Compiles a function's source: its code object, or the syntax error's message. */
  prepare(source: string): { code: PyHandle } | { syntax: string } {
    const answer = this.preparing(() => this.fns.prepare(source))
    if (typeof answer === 'string') {
      const parsed = JSON.parse(answer) as { message?: unknown }
      return { syntax: String(parsed.message ?? 'the source does not compile') }
    }
    return { code: answer as PyHandle }
  }

  /** An empty dict (the modules of one dependency set; a warm function's instance). */
  newDict(): PyHandle {
    if (!this.alive) throw new Error('the Python interpreter is no longer usable')
    return this.py.toPy({}) as unknown as PyHandle
  }

  /**
   * Lets go of a handle the worker held (a warm function's instance, a code object, a dependency
   * set's modules). Releasing one can free objects of the tenant's code and so run it (a
   * `__del__`): that happens at the start of the tenant's next call, under its limits, never
   * during another tenant's call or between calls. An interpreter that is discarded releases
   * nothing (no Python runs in it again).
   */
  release(handle: PyHandle | undefined): void {
    if (handle !== undefined && this.alive) this.pending.push(handle)
  }

  /** Installs a dependency set under its digest and returns its site directory. */
  install(digest: string, wheels: readonly ResolvedWheel[]): string {
    const fs = this.py.FS
    const site = `${DEPS_ROOT}/${digest}`
    const staging = `/tmp/.svc-install-${digest}`
    fs.mkdirTree(INCOMING)
    const paths = wheels.map((wheel, i) => {
      const path = `${INCOMING}/${i}-${wheel.file}`
      fs.writeFile(path, wheel.bytes)
      return path
    })
    try {
      this.preparing(() => this.fns.install(staging, JSON.stringify(paths)))
      removeTree(fs, site)
      fs.rename(staging, site)
    } finally {
      removeTree(fs, INCOMING)
      removeTree(fs, staging)
    }
    return site
  }

  uninstall(digest: string): void {
    if (!this.alive) return
    const site = `${DEPS_ROOT}/${digest}`
    removeTree(this.py.FS, site)
    this.preparing(() => this.fns.forgetSite(site))
  }

  /** Runs one call under the time, CPU and memory limits. Never throws. */
  run(spec: CallSpec): InterpreterRun {
    const mod = this.py._module
    const fs = this.py.FS
    const { gate, timer, fns } = this
    const { state } = this.pinned
    let answer: unknown
    let fault: string | undefined
    let faultIsPython = false
    let runEscaped = false
    /** the interpreter was restored for the call (not stopped half-way by an interrupt or the call's own code) */
    let restored = false
    mod._malloc_trim(0)
    mod._malloc_set_footprint_limit(Math.min(NO_LIMIT - 1, mod._malloc_footprint() + Math.ceil(spec.memoryMb * MIB)))
    this.raw.begin()
    const cpuStart = process.cpuUsage()
    const started = performance.now()
    const tag = timer.arm(spec.timeoutMs, spec.cpuMs)
    gate.begin(tag)
    try {
      gate.enter('prelude')
      // whatever an earlier call rebound in the prelude's namespace (and, unless the same warm
      // function ran last, the builtins) is undone before any of the prelude's code runs
      // (C-level dict operations; dropping what a call left can run its __del__, hence the gate)
      this.restoreNamespace(spec.restore)
      this.releasePending()
      gate.enter('user')
      try {
        restored = fns.call(state, spec.code, spec.argsJson, spec.functionName, spec.site, spec.stash, spec.maxLogBytes, spec.instance, spec.restore, spec.seed) === true
      } catch (err) {
        // an interrupt that landed in the last steps of call's own handler
        if (!isPythonError(err)) throw err
        runEscaped = true
      }
      if (gate.delivered) {
        // an interrupt delivered as the call returned is still pending: it is raised (and
        // dropped) here, not in finish
        mod._PyErr_CheckSignals()
        mod._PyErr_Clear()
      }
      gate.enter('prelude')
      this.restoreNamespace(false)
      answer = fns.finish(state, gate.delivered || runEscaped)
    } catch (err) {
      fault = err instanceof Error ? err.message : String(err)
      faultIsPython = isPythonError(err)
    } finally {
      gate.enter('idle')
      timer.disarm()
    }
    const wallTimeMs = performance.now() - started
    const cpu = process.cpuUsage(cpuStart)
    const raw = this.raw.end()
    const limit = timer.fired(tag)
    const run: InterpreterRun = { raw, wallTimeMs, cpuTimeMs: (cpu.user + cpu.system) / 1000, memoryBytes: 0 }
    if (limit !== undefined) run.limit = limit
    if (gate.abandoned) {
      // thrown through the interpreter's stack: it is never run again
      run.abandoned = true
      run.limit ??= 'time'
      this.neuter()
      return run
    }
    if (fault !== undefined) {
      if (faultIsPython && (gate.interruptedPrelude || gate.delivered)) {
        // interrupted in the worker's own part of the call: the interpreter's state is suspect
        this.retiring = true
        run.limit ??= 'time'
      } else {
        run.fault = fault
        this.dispose()
        return run
      }
    }
    // interrupted while restoring or putting back the interpreter: its state is suspect
    if (gate.interruptedPrelude || !restored) this.retiring = true
    mod._malloc_set_footprint_limit(NO_LIMIT)
    try {
      for (const dir of WRITABLE_DIRS) emptyDirectory(fs, dir)
      if (fs.cwd() !== HOME) fs.chdir(HOME)
    } catch (err) {
      run.fault = `cleaning up after the call failed: ${err instanceof Error ? err.message : String(err)}`
      this.dispose()
      return run
    }
    run.memoryBytes = mod._malloc_footprint()
    if (mod.HEAP8.length - this.baseHeapBytes > RETIRE_GROWTH_BYTES) this.retiring = true
    if (typeof answer === 'string') {
      try {
        run.envelope = envelopeOf(answer)
      } catch {
        run.fault = 'the Python prelude returned an unreadable envelope'
      }
    } else if (fault === undefined) {
      run.fault = 'the Python prelude returned no envelope'
    }
    return run
  }

  /**
   * Drops the interpreter without running any Python in it again: its handles are not released
   * one by one (that could run the tenant's `__del__` methods, outside any call of the tenant);
   * the whole interpreter is reclaimed when nothing references it.
   */
  dispose(): void {
    if (!this.alive) return
    this.neuter()
  }

  private neuter(): void {
    this.alive = false
    this.pending = []
    const py = this.py
    // Pyodide's finalizers and any handle still around now fail their GIL check and do nothing
    // (a fatal-error report would be the only other effect: it is silenced)
    py._api.fatal_error = () => undefined
    try {
      py._module._PyEval_SaveThread?.()
    } catch {
      // the interpreter's stack was unwound: nothing more to do
    }
  }

  private restoreNamespace(builtins: boolean): void {
    const { namespace, namespaceCopy } = this.pinned
    this.dict.clear(namespace)
    this.dict.update(namespace, namespaceCopy)
    if (builtins) {
      this.dict.clear(this.pinned.builtins)
      this.dict.update(this.pinned.builtins, this.pinned.builtinsCopy)
    }
  }

  /** Releases the handles let go of since the last call, and the handlers the gate replaced. */
  private releasePending(): void {
    if (this.pending.length === 0 && this.gate.replaced.length === 0) return
    const handles = this.pending.concat(this.gate.replaced.splice(0))
    this.pending = []
    for (const handle of handles) {
      try {
        handle.destroy()
      } catch {
        // already gone
      }
    }
  }

  /** Runs a preparation step (compiling, installing) under the preparation budget, in the gate's prelude phase. */
  private preparing(operation: () => unknown): unknown {
    if (!this.alive) throw new Error('the Python interpreter is no longer usable')
    const { gate, timer } = this
    const tag = timer.arm(PREPARE_BUDGET_MS, 0)
    gate.begin(tag)
    gate.enter('prelude')
    try {
      return operation()
    } catch (err) {
      if (gate.abandoned) {
        this.neuter()
        throw new Error('preparing the call did not end within its budget', { cause: err })
      }
      if (isPythonError(err)) {
        if (gate.interruptedPrelude) this.retiring = true
        throw err
      }
      this.dispose()
      throw err
    } finally {
      gate.enter('idle')
      timer.disarm()
    }
  }
}

/** The prelude's envelope: JSON, or `S` and the result's JSON (success without output). */
function envelopeOf(answer: string): Envelope {
  if (answer.charCodeAt(0) === 0x53 /* S */) return { ok: true, json: answer.slice(1), lines: [], used: 0, truncated: false }
  return JSON.parse(answer) as Envelope
}

/** A Python exception surfaced by Pyodide (the interpreter is still usable). */
function isPythonError(err: unknown): boolean {
  return err instanceof Error && err.constructor.name === 'PythonError'
}
