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
 * Limits: the wall-time limit is enforced by an interrupter thread that sets Pyodide's interrupt
 * buffer at the deadline (KeyboardInterrupt in Python, repeated every 20 ms until the call ends;
 * the supervisor's watchdog kills the worker if the function still does not stop). The memory
 * limit is dlmalloc's footprint limit: during a call the heap may grow by at most `memoryMb` (an
 * allocation beyond it fails, which Python raises as MemoryError). An interpreter whose WebAssembly
 * memory has grown far beyond its start, or that failed at the JS level, is retired.
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
  _api: Record<string, unknown>
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
}

export interface Envelope {
  ok: boolean
  json?: string
  kind?: 'missing' | 'args' | 'threw' | 'load' | 'result' | 'timeout' | 'memory' | 'unsupported' | 'internal'
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

/** Interrupter thread (CommonJS, evaluated by worker_threads): sets the interrupt buffer at the deadline. */
const INTERRUPTER = `
const { workerData } = require('node:worker_threads')
const control = new Int32Array(workerData.control)
const deadline = new Float64Array(workerData.deadline)
const interrupt = new Int32Array(workerData.interrupt)
for (;;) {
  const generation = Atomics.load(control, 0)
  if (Atomics.load(control, 1) === 0) { Atomics.wait(control, 0, generation); continue }
  const left = deadline[0] - Date.now()
  if (left > 0) { Atomics.wait(control, 0, generation, left); continue }
  Atomics.store(interrupt, 0, 2)
  Atomics.wait(control, 0, generation, 20)
}
`

/** The worker's one interrupter thread and its shared buffers. */
class Interrupter {
  readonly interrupt = new Int32Array(new SharedArrayBuffer(4))
  private readonly control = new Int32Array(new SharedArrayBuffer(8))
  private readonly deadline = new Float64Array(new SharedArrayBuffer(8))
  private readonly thread: Worker

  constructor() {
    this.thread = new Worker(INTERRUPTER, {
      eval: true,
      execArgv: [],
      workerData: { control: this.control.buffer, deadline: this.deadline.buffer, interrupt: this.interrupt.buffer },
      resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 2 },
    })
    this.thread.unref()
    this.thread.on('error', (err) => process.stderr.write(`python interrupter thread failed: ${err.message}\n`))
  }

  arm(timeoutMs: number): void {
    Atomics.store(this.interrupt, 0, 0)
    this.deadline[0] = Date.now() + timeoutMs
    Atomics.store(this.control, 1, 1)
    Atomics.add(this.control, 0, 1)
    Atomics.notify(this.control, 0)
  }

  disarm(): void {
    Atomics.store(this.control, 1, 0)
    Atomics.add(this.control, 0, 1)
    Atomics.notify(this.control, 0)
    Atomics.store(this.interrupt, 0, 0)
  }
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

function buildSafeModules(py: PyodideApi): Record<string, unknown> {
  const denied = (): Error => {
    try {
      return new py.FS.ErrnoError(py.ERRNO_CODES.EACCES ?? 2)
    } catch {
      return new Error('network access is not available in the sandbox')
    }
  }
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
  safeModules = buildSafeModules(py)
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

/** A loaded, hardened interpreter with the prelude installed. */
export class PythonInterpreter {
  /** False once the interpreter failed at the JS level or was disposed. */
  alive = true
  /** Set when the interpreter should be replaced after the current call. */
  retiring = false
  private readonly baseHeapBytes: number

  private constructor(
    private readonly py: PyodideApi,
    private readonly raw: RawOutput,
    private readonly fns: Record<'prepare' | 'invoke' | 'install' | 'forgetSite', PyCallable>,
    /** The prelude's namespace and builtins, and the worker's own copies of them. */
    private readonly pinned: { namespace: PyDictHandle; namespaceCopy: PyDictHandle; builtins: PyDictHandle; builtinsCopy: PyDictHandle },
    private readonly dict: DictOps,
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
    interrupter ??= new Interrupter()
    py.setInterruptBuffer(interrupter.interrupt)
    py.FS.mkdirTree(DEPS_ROOT)
    py.runPython('import sys\nfor _n in ("js", "pyodide_js", "pyodide_js._api"):\n    sys.modules.pop(_n, None)\ndel _n, sys')
    const namespace = py.toPy({ _host_wait: hostWait })
    py.runPython(PYTHON_PRELUDE, { globals: namespace, filename: PRELUDE_FILENAME })
    const fns = {
      prepare: asCallable(namespace.get('prepare'), 'prepare'),
      invoke: asCallable(namespace.get('invoke'), 'invoke'),
      install: asCallable(namespace.get('install'), 'install'),
      forgetSite: asCallable(namespace.get('forget_site'), 'forget_site'),
    }
    const builtins = py.runPython('import builtins\nbuiltins.__dict__') as PyDictHandle
    py.runPython('del builtins')
    const dict: DictOps = {
      copy: asCallable(py.runPython('dict'), 'dict'),
      clear: asCallable(py.runPython('dict.clear'), 'dict.clear'),
      update: asCallable(py.runPython('dict.update'), 'dict.update'),
    }
    const pinned = {
      namespace,
      namespaceCopy: dict.copy(namespace) as PyDictHandle,
      builtins,
      builtinsCopy: dict.copy(builtins) as PyDictHandle,
    }
    return new PythonInterpreter(py, raw, fns, pinned, dict)
  }

  get version(): string {
    return this.py.version
  }

  /** WebAssembly memory of the interpreter, in bytes. */
  get heapBytes(): number {
    return this.py._module.HEAP8.length
  }

  /** Compiles a function's source: its code object, or the syntax error's message. */
  prepare(source: string): { code: PyHandle } | { syntax: string } {
    const answer = this.guarded(() => this.fns.prepare(source))
    if (typeof answer === 'string') {
      const parsed = JSON.parse(answer) as { message?: unknown }
      return { syntax: String(parsed.message ?? 'the source does not compile') }
    }
    return { code: answer as PyHandle }
  }

  /** An empty dict (the modules of one dependency set; a warm function's instance). */
  newDict(): PyHandle {
    return this.py.toPy({}) as unknown as PyHandle
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
      this.guarded(() => this.fns.install(staging, JSON.stringify(paths)))
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
    this.guarded(() => this.fns.forgetSite(site))
  }

  /** Runs one call under the time and memory limits. Never throws. */
  run(spec: CallSpec): InterpreterRun {
    const mod = this.py._module
    const fs = this.py.FS
    const timer = interrupter as Interrupter
    const { namespace, namespaceCopy, builtins, builtinsCopy } = this.pinned
    let answer: unknown
    let fault: string | undefined
    try {
      // whatever an earlier call rebound in the prelude's namespace (and, unless the same warm
      // function ran last, the builtins) is undone before any Python code runs (C-level dict
      // operations)
      this.dict.clear(namespace)
      this.dict.update(namespace, namespaceCopy)
      if (spec.restore) {
        this.dict.clear(builtins)
        this.dict.update(builtins, builtinsCopy)
      }
    } catch (err) {
      fault = err instanceof Error ? err.message : String(err)
    }
    mod._malloc_trim(0)
    mod._malloc_set_footprint_limit(Math.min(NO_LIMIT - 1, mod._malloc_footprint() + Math.ceil(spec.memoryMb * MIB)))
    this.raw.begin()
    const cpuStart = process.cpuUsage()
    const started = performance.now()
    if (fault === undefined) {
      timer.arm(spec.timeoutMs)
      try {
        answer = this.fns.invoke(spec.code, spec.functionName, spec.argsJson, spec.site, spec.stash, spec.timeoutMs, spec.maxLogBytes, spec.instance, spec.restore, spec.seed)
      } catch (err) {
        fault = err instanceof Error ? err.message : String(err)
      } finally {
        timer.disarm()
      }
    }
    const wallTimeMs = performance.now() - started
    const cpu = process.cpuUsage(cpuStart)
    const raw = this.raw.end()
    let memoryBytes = 0
    if (fault === undefined) {
      mod._malloc_set_footprint_limit(NO_LIMIT)
      try {
        for (const dir of WRITABLE_DIRS) emptyDirectory(fs, dir)
        if (fs.cwd() !== HOME) fs.chdir(HOME)
      } catch (err) {
        fault = `cleaning up after the call failed: ${err instanceof Error ? err.message : String(err)}`
      }
      memoryBytes = mod._malloc_footprint()
      if (mod.HEAP8.length - this.baseHeapBytes > RETIRE_GROWTH_BYTES) this.retiring = true
    }
    if (fault !== undefined) this.dispose()
    const run: InterpreterRun = { raw, wallTimeMs, cpuTimeMs: (cpu.user + cpu.system) / 1000, memoryBytes }
    if (fault !== undefined) run.fault = fault
    else if (typeof answer === 'string') run.envelope = envelopeOf(answer)
    else run.fault = 'the Python prelude returned no envelope'
    return run
  }

  /** Drops the interpreter; its memory is reclaimed when nothing references it. */
  dispose(): void {
    if (!this.alive) return
    this.alive = false
    for (const handle of [...Object.values(this.fns), ...Object.values(this.pinned), ...Object.values(this.dict)]) {
      try {
        handle.destroy()
      } catch {
        // already gone
      }
    }
  }

  private guarded(operation: () => unknown): unknown {
    if (!this.alive) throw new Error('the Python interpreter is no longer usable')
    try {
      return operation()
    } catch (err) {
      if (isPythonError(err)) throw err
      this.dispose()
      throw err
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
