/**
 * What a call may send back, bounded in the worker before it crosses the pipe (issue 27: a tenant
 * must not fill the node's disk or memory through its results and console output):
 *
 * - **The result**: its JSON text over `maxResultBytes` UTF-8 bytes turns the outcome into 1007
 *   EXECUTION_FAILED (`details.limit: 'result_size'`, `resultBytes`, `maxResultBytes`); the text
 *   is dropped here, so it never reaches the supervisor, the execution record or the result cache.
 * - **The logs**: the runtimes cap the messages' text at `maxLogBytes` (each line's UTF-8 bytes + 1)
 *   as they are written, and that stays the cap a function sees. A record stores each line as JSON
 *   with its level and time (~60 bytes more per line) and escapes (a control character takes 6
 *   bytes), so short or escaped lines took many times their text: 32,768 empty lines within the
 *   default 64 KiB were ~2 MB stored. The lines kept here are those whose stored JSON (and a comma
 *   each) fits in `STORED_LOG_FACTOR` × `maxLogBytes`, the last one cut to fit, then the truncation
 *   line (`[logs truncated: …]`, about 110 bytes) when anything was cut. Lines of 60 bytes or more
 *   never reach this bound before the text cap.
 */
import { SvcError } from '../../core/errors.js'
import { toWireError, type WireOutcome } from './ipc.js'
import type { LogLine } from './types.js'

export interface CallOutputLimits {
  maxLogBytes: number
  /** absent: no limit on the result */
  maxResultBytes?: number | undefined
}

const TRUNCATED = /^\[logs truncated: /

/** The logs a record stores (their JSON) take at most this many times `maxLogBytes`. */
export const STORED_LOG_FACTOR = 2

/** The truncation line the runtimes write; the same text when this bound cuts. */
export const truncationLine = (maxLogBytes: number): LogLine => ({
  level: 'warn', message: `[logs truncated: output exceeded ${maxLogBytes} bytes]`, at: new Date().toISOString(),
})

/** `outcome` within the limits (the same object when it was within them). */
export function boundCallOutput(outcome: WireOutcome, limits: CallOutputLimits): WireOutcome {
  const logs = boundLogs(outcome.logs, limits.maxLogBytes)
  if (logs !== outcome.logs) outcome.logs = logs
  const max = limits.maxResultBytes
  const json = outcome.resultJson
  // UTF-8 takes at most 3 bytes per UTF-16 code unit: short results are not measured
  if (max === undefined || json === undefined || json.length * 3 <= max) return outcome
  const resultBytes = Buffer.byteLength(json, 'utf8')
  if (resultBytes <= max) return outcome
  const error = new SvcError('EXECUTION_FAILED', `the result is ${resultBytes} bytes of JSON, over this node's limit of ${max} bytes per result (execution.max_result_bytes): it was not kept`, {
    details: { limit: 'result_size', resultBytes, maxResultBytes: max },
  })
  const { wallTimeMs, cpuTimeMs, memoryBytes } = outcome
  return { status: 'error', error: toWireError(error), logs, wallTimeMs, cpuTimeMs, memoryBytes }
}

/**
 * Log lines whose stored JSON fits in `STORED_LOG_FACTOR` × `maxLogBytes` (see the module
 * comment), the truncation line last when anything was cut (or the runtime had cut already).
 * `lines` itself when it fits.
 */
export function boundLogs(lines: LogLine[], maxLogBytes: number): LogLine[] {
  if (lines.length === 0) return lines
  const maxBytes = STORED_LOG_FACTOR * maxLogBytes
  const last = lines[lines.length - 1]!
  const marked = last.level === 'warn' && TRUNCATED.test(last.message)
  const content = marked ? lines.slice(0, -1) : lines
  const kept: LogLine[] = []
  let used = 0
  let cut = false
  for (const line of content) {
    const size = storedSize(line)
    if (used + size <= maxBytes) {
      kept.push(line)
      used += size
      continue
    }
    // the message cut to what is left, when a useful part of it fits
    const room = maxBytes - used - storedSize({ ...line, message: '' })
    const units = room > 0 ? prefixFitting(line.message, room) : 0
    if (units > 0) kept.push({ ...line, message: line.message.slice(0, units) })
    cut = true
    break
  }
  if (!cut) return lines
  kept.push(marked ? last : truncationLine(maxLogBytes))
  return kept
}

/** Bytes a line takes in a stored record: its JSON and the comma after it. */
function storedSize(line: LogLine): number {
  return Buffer.byteLength(JSON.stringify(line), 'utf8') + 1
}

/** UTF-16 code units of the longest prefix of `s` whose JSON string escape fits in `bytes`. */
function prefixFitting(s: string, bytes: number): number {
  let used = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00
    const size = pair ? 4 : escapedSize(c)
    if (used + size > bytes) return i
    used += size
    if (pair) i++
  }
  return s.length
}

/** UTF-8 bytes of one UTF-16 code unit (not half of a pair) inside a JSON string, as JSON.stringify escapes it. */
function escapedSize(c: number): number {
  if (c === 0x22 || c === 0x5c || c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d) return 2
  if (c < 0x20) return 6
  if (c < 0x80) return 1
  if (c < 0x800) return 2
  if (c >= 0xd800 && c <= 0xdfff) return 6 // a lone surrogate: \udxxx
  return 3
}
