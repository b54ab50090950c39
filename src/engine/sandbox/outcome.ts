import { SvcError } from '../../core/errors.js'
import { fromWireError, type WireOutcome } from './ipc.js'
import type { SandboxOutcome } from './types.js'

/** The public outcome of a worker's answer: the result's JSON text is parsed here. */
export function outcomeFromWire(wire: WireOutcome, workerPid: number): SandboxOutcome {
  const outcome: SandboxOutcome = {
    status: wire.status,
    logs: Array.isArray(wire.logs) ? wire.logs : [],
    wallTimeMs: wire.wallTimeMs,
    cpuTimeMs: wire.cpuTimeMs,
    memoryBytes: wire.memoryBytes,
    workerPid,
  }
  if (typeof wire.workerMs === 'number') outcome.workerMs = wire.workerMs
  if (wire.error) outcome.error = fromWireError(wire.error)
  if (wire.status === 'success' && typeof wire.resultJson === 'string') {
    try {
      outcome.result = JSON.parse(wire.resultJson) as unknown
    } catch {
      return failedOutcome('error', new SvcError('INTERNAL_ERROR', 'the sandbox returned an unreadable result'), workerPid, wire.wallTimeMs)
    }
  }
  return outcome
}

/** An outcome without anything from the isolate (no logs, no measurements). */
export function failedOutcome(
  status: 'error' | 'timeout',
  error: SvcError,
  workerPid: number,
  wallTimeMs = 0,
): SandboxOutcome {
  return { status, error, logs: [], wallTimeMs, cpuTimeMs: 0, memoryBytes: 0, workerPid }
}
