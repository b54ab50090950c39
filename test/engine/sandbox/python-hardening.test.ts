/**
 * The JS layer around Pyodide, checked directly (below the Python guards): even code that could
 * call into the interpreter's emscripten module reaches no process, socket or host file.
 */
import { existsSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PythonInterpreter } from '../../../src/engine/sandbox/python-interpreter.js'
import { PYTHON_HOOK_TIMEOUT_MS } from './fixtures/python.js'

interface Internals {
  py: {
    FS: { filesystems: Record<string, unknown>; readdir(path: string): string[] }
    _module: Record<string, (...args: unknown[]) => unknown>
    mountNodeFS(at: string, host: string): void
    loadPackage(name: string): Promise<void>
  }
}

let interpreter: PythonInterpreter
let internals: Internals
const marker = join(tmpdir(), `svc-python-hardening-${process.pid}`)

beforeAll(async () => {
  interpreter = await PythonInterpreter.load()
  internals = interpreter as unknown as Internals
}, PYTHON_HOOK_TIMEOUT_MS)

afterAll(() => {
  interpreter?.dispose()
  rmSync(marker, { force: true })
})

describe('the interpreter host layer', () => {
  it("keeps only the in-memory filesystem, without the host's files", () => {
    expect(Object.keys(internals.py.FS.filesystems)).toEqual(['MEMFS'])
    expect(internals.py.FS.readdir('/').sort()).toEqual(['.', '..', 'dev', 'home', 'lib', 'proc', 'tmp'])
    expect(() => internals.py.mountNodeFS('/host', '/')).toThrow(/not available/)
    expect(() => internals.py.loadPackage('https://example.invalid/x.whl')).toThrow(/not available/)
  })

  it('fails system() at the emscripten level without starting a process', () => {
    const mod = internals.py._module
    const command = mod.stringToNewUTF8?.(`touch ${marker}`) as number
    const status = mod.__emscripten_system?.(command)
    expect(status).toBe(127 << 8)
    expect(existsSync(marker)).toBe(false)
  })

  it('offers no global fetch or WebSocket to the worker realm', () => {
    expect(typeof (globalThis as Record<string, unknown>).fetch).toBe('undefined')
    expect(typeof (globalThis as Record<string, unknown>).WebSocket).toBe('undefined')
  })

  it('measures the CPU time of calls per thread, from /proc (schedstat)', () => {
    // the interrupter's CPU limit counts the thread that runs Python, not the whole process
    expect(PythonInterpreter.cpuClock).toBe(existsSync(`/proc/self/task/${process.pid}/schedstat`) ? 'schedstat' : 'stat')
  })

  it('locks Error.prepareStackTrace', () => {
    expect(() => {
      ;(Error as unknown as Record<string, unknown>).prepareStackTrace = () => 'x'
    }).toThrow(TypeError)
  })
})
