// What a call sends back is bounded in the worker (issue 27, storage per tenant): a result over
// `maxResultBytes` is 1007 `result_size` and never leaves the worker; the logs a record stores (the
// lines' JSON, not only their text) stay within twice `maxLogBytes` (STORED_LOG_FACTOR).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { boundCallOutput, boundLogs, STORED_LOG_FACTOR } from '../../../src/engine/sandbox/call-output.js'
import type { WireOutcome } from '../../../src/engine/sandbox/ipc.js'
import { createSandbox, type LogLine, type Sandbox } from '../../../src/engine/sandbox/index.js'
import { pyBody, PYTHON_HOOK_TIMEOUT_MS } from './fixtures/python.js'
import { fn } from './helpers.js'

const MAX_LOG_BYTES = 4096
/** what the logs of one call may take stored */
const STORED_MAX = STORED_LOG_FACTOR * MAX_LOG_BYTES
const MAX_RESULT_BYTES = 64 * 1024
const at = '2026-11-28T00:00:00.000Z'

/** Bytes the lines take in a stored record (JSON array of them). */
const storedBytes = (lines: LogLine[]): number => Buffer.byteLength(JSON.stringify(lines), 'utf8')
const withoutMarker = (lines: LogLine[]): LogLine[] => (/^\[logs truncated/.test(lines.at(-1)?.message ?? '') ? lines.slice(0, -1) : lines)

describe('boundLogs', () => {
  it('leaves logs within the bound as they are (the same array)', () => {
    const lines: LogLine[] = [{ level: 'log', message: 'hello', at }, { level: 'error', message: 'world', at }]
    expect(boundLogs(lines, 4096)).toBe(lines)
  })

  it('bounds many short lines by what they take stored, not by their text', () => {
    // 4,000 empty lines: 4,000 bytes of text by the runtimes' count (1 per line), ~200 KB stored before
    const lines: LogLine[] = Array.from({ length: 4000 }, () => ({ level: 'log', message: '', at }))
    expect(storedBytes(lines)).toBeGreaterThan(40 * MAX_LOG_BYTES)
    const kept = boundLogs(lines, MAX_LOG_BYTES)
    expect(storedBytes(withoutMarker(kept))).toBeLessThanOrEqual(STORED_MAX)
    expect(kept.length).toBeGreaterThan(10)
    expect(kept.at(-1)).toMatchObject({ level: 'warn', message: `[logs truncated: output exceeded ${MAX_LOG_BYTES} bytes]` })
  })

  it('counts escapes: control characters that take 6 bytes each stored', () => {
    const lines: LogLine[] = [{ level: 'log', message: '\u0001'.repeat(4000), at }]
    const kept = boundLogs(lines, MAX_LOG_BYTES)
    expect(storedBytes(withoutMarker(kept))).toBeLessThanOrEqual(STORED_MAX)
    // the one line is cut to fit, not dropped
    expect(kept[0]!.message.length).toBeGreaterThan(1000)
    expect(kept[0]!.message.length).toBeLessThan(4000)
  })

  it('cuts a long line to fit, never inside a surrogate pair', () => {
    const lines: LogLine[] = [{ level: 'log', message: 'ab' + '😀'.repeat(3000), at }]
    const kept = boundLogs(lines, 500)
    expect(storedBytes(withoutMarker(kept))).toBeLessThanOrEqual(1000)
    const message = kept[0]!.message
    expect(message.length).toBeGreaterThan(400)
    expect(message.charCodeAt(message.length - 1)).not.toBe(0xd83d)
    // well-formed: no lone surrogate (UTF-8 would turn it into U+FFFD)
    expect(Buffer.from(message, 'utf8').toString('utf8')).toBe(message)
  })

  it("keeps a runtime's own truncation line last, once", () => {
    const marker: LogLine = { level: 'warn', message: '[logs truncated: output exceeded 4096 bytes]', at }
    const lines: LogLine[] = [...Array.from({ length: 200 }, (_, i): LogLine => ({ level: 'log', message: `line ${i}`, at })), marker]
    const kept = boundLogs(lines, 1024)
    expect(kept.length).toBeLessThan(lines.length)
    expect(kept.at(-1)).toBe(marker)
    expect(kept.filter((l) => l.message.startsWith('[logs truncated')).length).toBe(1)
  })
})

describe('boundCallOutput', () => {
  const outcome = (resultJson: string): WireOutcome => ({ status: 'success', resultJson, logs: [], wallTimeMs: 1, cpuTimeMs: 1, memoryBytes: 1 })

  it('passes a result within the limit, measured in UTF-8 bytes', () => {
    const within = outcome(JSON.stringify('é'.repeat(400)))
    expect(boundCallOutput(within, { maxLogBytes: 100, maxResultBytes: 802 })).toBe(within)
    const over = boundCallOutput(outcome(JSON.stringify('é'.repeat(400))), { maxLogBytes: 100, maxResultBytes: 801 })
    expect(over.status).toBe('error')
    expect(over.resultJson).toBeUndefined()
    expect(over.error).toMatchObject({ name: 'EXECUTION_FAILED', details: { limit: 'result_size', resultBytes: 802, maxResultBytes: 801 } })
  })

  it('has no result limit when none is given', () => {
    const big = outcome(JSON.stringify('x'.repeat(100_000)))
    expect(boundCallOutput(big, { maxLogBytes: 100 })).toBe(big)
  })
})

describe('in a sandbox worker', () => {
  let sandbox: Sandbox
  beforeAll(async () => {
    sandbox = createSandbox({ workers: 1, maxWarmIsolatesPerWorker: 8, maxLogBytes: MAX_LOG_BYTES, queueLimit: 20 })
    await sandbox.start()
  }, PYTHON_HOOK_TIMEOUT_MS)
  afterAll(async () => {
    await sandbox?.stop()
  })

  it('JavaScript: a result over maxResultBytes is 1007 result_size, without the result; the logs stay', async () => {
    const out = await sandbox.execute(fn('out/big', 'console.log("before"); return "x".repeat(200000)', { maxResultBytes: MAX_RESULT_BYTES }))
    expect(out.status).toBe('error')
    expect(out.result).toBeUndefined()
    expect(out.error?.code).toBe(1007)
    expect(out.error?.details).toEqual({ limit: 'result_size', resultBytes: 200_002, maxResultBytes: MAX_RESULT_BYTES })
    expect(out.logs.map((l) => l.message)).toEqual(['before'])
    // the warm function answers the next call as before
    const small = await sandbox.execute(fn('out/small', 'return "x".repeat(1000)', { maxResultBytes: MAX_RESULT_BYTES }))
    expect(small).toMatchObject({ status: 'success', result: 'x'.repeat(1000) })
  })

  it('JavaScript: ten thousand empty lines are stored within twice maxLogBytes', async () => {
    const out = await sandbox.execute(fn('out/chatty', 'for (let i = 0; i < 10000; i++) console.log(""); return 1'))
    expect(out).toMatchObject({ status: 'success', result: 1 })
    expect(storedBytes(withoutMarker(out.logs))).toBeLessThanOrEqual(STORED_MAX)
    expect(out.logs.at(-1)?.message).toMatch(/truncated/)
  })

  it('Python: a result over maxResultBytes is 1007 result_size, without the result', async () => {
    const out = await sandbox.execute(pyBody('out/py-big', 'return "x" * 200000', { maxResultBytes: MAX_RESULT_BYTES }))
    expect(out.status).toBe('error')
    expect(out.result).toBeUndefined()
    expect(out.error?.details).toMatchObject({ limit: 'result_size', resultBytes: 200_002 })
  }, PYTHON_HOOK_TIMEOUT_MS)

  it('Python: many short prints are stored within twice maxLogBytes', async () => {
    const out = await sandbox.execute(pyBody('out/py-chatty', 'for i in range(5000):\n    print("")\nreturn 1'))
    expect(out).toMatchObject({ status: 'success', result: 1 })
    expect(storedBytes(withoutMarker(out.logs))).toBeLessThanOrEqual(STORED_MAX)
  }, PYTHON_HOOK_TIMEOUT_MS)

  it('refuses a malformed maxResultBytes', async () => {
    await expect(sandbox.execute(fn('out/bad', 'return 1', { maxResultBytes: -1 }))).rejects.toMatchObject({ code: 1006 })
  })
})
