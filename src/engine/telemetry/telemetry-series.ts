import { validationFailed } from '../../core/errors.js'
import { fullRufidOf, type FunctionTarget, type FunctionRegistry } from '../registry/function-registry.js'
import type { CatalogStore } from '../storage/catalog-store.js'
import type { Principal } from '../types.js'
import { finishedExecutions, parseWindow, percentile, telemetryRufidOf } from './telemetry.js'

/** One bucket of a telemetry series: the executions that started in `[start, start + bucket_ms)`. */
export interface TelemetryBucket {
  start: string
  executions: number
  errors: number
  error_rate: number
  latency_ms: { p50: number; p95: number; p99: number }
}

/** A function's telemetry over a window cut into equal buckets, oldest first (for charts). */
export interface TelemetrySeries {
  /** as asked: the short RUFID (every version) or the full one (that version) */
  rufid: string
  rufid_short: string
  /** the full RUFID of the version asked for, or of the newest live one */
  full_rufid: string
  window: string
  bucket_ms: number
  buckets: TelemetryBucket[]
}

export const MAX_TELEMETRY_BUCKETS = 240

/**
 * Executions, latency percentiles (nearest rank) and error rate of one function per bucket of a
 * window (`15m`, `6h`, `7d`…): the same records and rules as the window totals of telemetry.ts.
 * `buckets` is 1–240 (1006 otherwise); the last bucket ends now.
 */
export async function functionTelemetrySeries(
  principal: Principal,
  target: FunctionTarget,
  window: string,
  buckets: number,
  c: { store: CatalogStore; functions: FunctionRegistry },
  now = Date.now(),
): Promise<TelemetrySeries> {
  const ms = parseWindow(window)
  if (!Number.isInteger(buckets) || buckets < 1 || buckets > MAX_TELEMETRY_BUCKETS) {
    throw validationFailed(`buckets must be an integer from 1 to ${MAX_TELEMETRY_BUCKETS}`, [{ pointer: '/buckets', message: 'out of range' }])
  }
  const { fn, executions } = await finishedExecutions(principal, target, ms, c, now)
  const bucketMs = ms / buckets
  const start = now - ms
  const latencies: number[][] = Array.from({ length: buckets }, () => [])
  const errors = new Array<number>(buckets).fill(0)
  for (const e of executions) {
    const i = Math.min(buckets - 1, Math.max(0, Math.floor((e.at - start) / bucketMs)))
    latencies[i]!.push(e.execution_time_ms)
    if (e.failed) errors[i]!++
  }
  return {
    rufid: telemetryRufidOf(fn, target),
    rufid_short: fn.rufid_short,
    full_rufid: fullRufidOf(fn),
    window,
    bucket_ms: bucketMs,
    buckets: latencies.map((values, i) => {
      values.sort((a, b) => a - b)
      return {
        start: new Date(start + i * bucketMs).toISOString(),
        executions: values.length,
        errors: errors[i]!,
        error_rate: values.length ? errors[i]! / values.length : 0,
        latency_ms: { p50: percentile(values, 50), p95: percentile(values, 95), p99: percentile(values, 99) },
      }
    }),
  }
}
