// Memory a JavaScript call makes outside the V8 heap counts against its memory_mb: WebAssembly
// memories (the constructor, a module's own memory, memory.grow from inside Wasm), resizable and
// growable buffers, ArrayBuffers, Intl objects. Past the limit the call fails with the memory error
// (1007, details.limit 'memory') and its isolate is discarded; within it, such code runs as before.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSandbox, type Sandbox, type SandboxOutcome, type SandboxRequest } from '../../../src/engine/sandbox/index.js'

const MEMORY_MB = 64
const MIB = 2 ** 20
const limits = { timeoutMs: 20_000, memoryMb: MEMORY_MB, cpuMs: 20_000 }

let sandbox: Sandbox

beforeAll(async () => {
  sandbox = createSandbox({ workers: 1, maxWarmIsolatesPerWorker: 16, maxLogBytes: 4096, queueLimit: 20 })
  await sandbox.start()
})

afterAll(async () => {
  await sandbox?.stop()
})

/** A module whose memory has the given limits bytes (flags, initial[, maximum] as LEB128), exporting it as `mem` and `grow(pages)` (memory.grow from inside Wasm). */
function wasmModule(limitsBytes: number[]): string {
  const bytes = [
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    0x01, 0x06, 0x01, 0x60, 0x01, 0x7f, 0x01, 0x7f, // type: (i32) -> i32
    0x03, 0x02, 0x01, 0x00, // function 0 of type 0
    0x05, limitsBytes.length + 1, 0x01, ...limitsBytes, // one memory
    0x07, 0x0e, 0x02, 0x03, 0x6d, 0x65, 0x6d, 0x02, 0x00, 0x04, 0x67, 0x72, 0x6f, 0x77, 0x00, 0x00, // exports mem, grow
    0x0a, 0x08, 0x01, 0x06, 0x00, 0x20, 0x00, 0x40, 0x00, 0x0b, // grow: local.get 0; memory.grow 0
  ]
  return `new Uint8Array([${bytes.join(',')}])`
}

const call = (key: string, source: string, overrides: Partial<SandboxRequest> = {}): Promise<SandboxOutcome> =>
  sandbox.execute({ key, language: 'javascript', source, functionName: 'f', signature: '()', args: [], limits, ...overrides })

function expectMemoryError(out: SandboxOutcome, memoryMb = MEMORY_MB): void {
  expect(out.status, JSON.stringify(out.result)).toBe('error')
  expect(out.error?.code).toBe(1007)
  expect(out.error?.details).toMatchObject({ limit: 'memory', memoryMb })
  expect(out.error?.message).toContain(`memory limit of ${memoryMb} MB`)
}

describe('memory outside the V8 heap counts against memory_mb', () => {
  it('refuses a WebAssembly.Memory grown past the limit, and the key starts afresh', async () => {
    const source = 'function f(grow) { if (!grow) return globalThis.kept === undefined; const m = new WebAssembly.Memory({ initial: 1 }); globalThis.kept = m; m.grow(8191); return m.buffer.byteLength }'
    const out = await call('memory/js-grow', source, { signature: '(grow)', args: [true] })
    expectMemoryError(out)
    // the isolate that held the memory was discarded: the next call of the key starts with no state
    const next = await call('memory/js-grow', source, { signature: '(grow)', args: [false] })
    expect(next).toMatchObject({ status: 'success', result: true })
  })

  it('bounds memory.grow from inside Wasm: the grow fails (-1) below the limit', async () => {
    const source = `function f() { const { exports } = new WebAssembly.Instance(new WebAssembly.Module(${wasmModule([0x00, 0x01])})); globalThis.kept = exports; return [exports.grow(8191), exports.mem.buffer.byteLength] }`
    const out = await call('memory/wasm-grow', source)
    expect(out.status, JSON.stringify(out.error)).toBe('success')
    const [grown, bytes] = out.result as [number, number]
    expect(grown).toBe(-1)
    expect(bytes).toBeLessThanOrEqual(MEMORY_MB * MIB)
  })

  it('refuses a module that declares a memory larger than the limit', async () => {
    // initial 16384 pages (1 GiB): 0x80 0x80 0x01
    const out = await call('memory/module-initial', `function f() { new WebAssembly.Module(${wasmModule([0x00, 0x80, 0x80, 0x01])}); return 'compiled' }`)
    expectMemoryError(out)
    expect(out.error?.message).toMatch(/WebAssembly memory of 16384 pages/)
  })

  it('counts several memories together', async () => {
    const source = 'function f() { globalThis.kept = []; for (let i = 0; i < 8; i++) kept.push(new WebAssembly.Memory({ initial: 1, maximum: 320 })); return kept.length }'
    expectMemoryError(await call('memory/many', source))
  })

  it('refuses ArrayBuffers, resizable ArrayBuffers and growable SharedArrayBuffers past the limit', async () => {
    expectMemoryError(await call('memory/array-buffer', 'function f() { globalThis.kept = new ArrayBuffer(512 * 2 ** 20); return 1 }'))
    expectMemoryError(await call('memory/resizable', 'function f() { const b = new ArrayBuffer(0, { maxByteLength: 2 ** 30 }); b.resize(512 * 2 ** 20); globalThis.kept = b; return b.byteLength }'))
    expectMemoryError(await call('memory/growable', 'function f() { const b = new SharedArrayBuffer(0, { maxByteLength: 2 ** 30 }); b.grow(512 * 2 ** 20); globalThis.kept = b; return b.byteLength }'))
  })

  it('charges Intl objects (their ICU memory lies outside the heap)', async () => {
    const source = 'function f() { globalThis.kept = []; for (let i = 0; i < 5000; i++) kept.push(new Intl.DateTimeFormat("en", { timeZone: "Asia/Tokyo", dateStyle: "full" })); return kept.length }'
    expectMemoryError(await call('memory/intl', source, { limits: { ...limits, memoryMb: 16 } }), 16)
  })

  it('reports the memory an isolate holds outside its heap (memoryBytes)', async () => {
    const out = await call('memory/footprint', 'function f() { globalThis.kept = new ArrayBuffer(8, { maxByteLength: 8 * 2 ** 20 }); return 1 }')
    expect(out.status, JSON.stringify(out.error)).toBe('success')
    expect(out.memoryBytes).toBeGreaterThanOrEqual(8 * MIB)
  })

  it('runs code that stays within the limit as before', async () => {
    const source = `async function f() {
      const { instance } = await WebAssembly.instantiate(${wasmModule([0x01, 0x01, 0x10])})
      const grown = instance.exports.grow(2)
      const view = new Uint8Array(instance.exports.mem.buffer); view[100] = 7
      const memory = new WebAssembly.Memory({ initial: 1, maximum: 4 }); memory.grow(1)
      const resizable = new ArrayBuffer(8, { maxByteLength: 1 << 20 }); resizable.resize(1 << 19)
      class Bytes extends ArrayBuffer {}
      return [grown, view[100], memory.buffer.byteLength, resizable.byteLength, resizable.resizable, new Bytes(4) instanceof ArrayBuffer,
        new Intl.DateTimeFormat('en', { timeZone: 'UTC' }).format(0), Intl.NumberFormat('en').format(1234.5), new Intl.Collator('de').compare('a', 'b'),
        WebAssembly.Memory.name, new WebAssembly.Memory({ initial: 1 }).constructor === WebAssembly.Memory]
    }`
    const out = await call('memory/honest', source)
    expect(out.status, JSON.stringify(out.error)).toBe('success')
    expect(out.result).toEqual([1, 7, 131072, 524288, true, true, '1/1/1970', '1,234.5', -1, 'Memory', true])
  })
})
