import { validationFailed } from '../../core/errors.js'
import { requirePermission } from '../authz.js'
import { timeOrderedLowerBound } from '../ids.js'
import { fullRufidOf, type FunctionTarget, type FunctionRegistry } from '../registry/function-registry.js'
import type { CatalogStore } from '../storage/catalog-store.js'
import type { FunctionVersion, Principal } from '../types.js'

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }
const MAX_WINDOW_MS = 30 * 86_400_000

/**
 * A decimal integer from 1 to `max` (no sign, no leading zero) as a regular expression source:
 * what a JSON Schema `pattern` can say of a bounded number written in text.
 */
export function decimalUpTo(max: number): string {
  const digits = String(max)
  const alternatives: string[] = []
  // every number with fewer digits
  if (digits.length > 1) alternatives.push(digits.length === 2 ? '[1-9]' : `[1-9][0-9]{0,${digits.length - 2}}`)
  // as many digits: a prefix of max, then a smaller digit, then anything
  for (let i = 0; i < digits.length; i++) {
    const d = Number(digits[i])
    const low = i === 0 ? 1 : 0
    if (d - 1 >= low) {
      const rest = digits.length - i - 1
      alternatives.push(`${digits.slice(0, i)}${d - 1 === low ? String(low) : `[${low}-${d - 1}]`}${rest > 1 ? `[0-9]{${rest}}` : rest === 1 ? '[0-9]' : ''}`)
    }
  }
  alternatives.push(digits)
  return `(?:${alternatives.join('|')})`
}

/**
 * A telemetry window: a count and a unit (`30s`, `15m`, `6h`, `7d`), at most 30 days. The REST
 * door's query schema carries this pattern, so the document states the same bound.
 */
export const TELEMETRY_WINDOW = new RegExp(`^(?:${Object.keys(UNITS).map((unit) => `${decimalUpTo(MAX_WINDOW_MS / UNITS[unit]!)}${unit}`).join('|')})$`)

/** decisions.md telemetry response. */
export interface FunctionTelemetry {
  /** as asked: the short RUFID (every version) or the full one (that version) */
  rufid: string
  rufid_short: string
  /** the full RUFID of the version asked for, or of the newest live one */
  full_rufid: string
  window: string
  executions: number
  latency_ms: { p50: number; p95: number; p99: number; max: number }
  error_rate: number
  cost: { cpu_ms_total: number; cpu_ms_avg: number; memory_bytes_avg: number }
}

/** `30s`, `15m`, `6h`, `7d` → milliseconds (1006 otherwise; at most 30 days). */
export function parseWindow(window: unknown): number {
  const m = typeof window === 'string' && TELEMETRY_WINDOW.test(window) ? /^([0-9]+)([smhd])$/.exec(window) : null
  if (!m) {
    throw validationFailed('window must be a duration such as 30s, 15m, 6h or 7d (at most 30d)', [{ pointer: '/window', message: 'malformed window' }])
  }
  return Number(m[1]) * UNITS[m[2]!]!
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!
}

/** A finished execution of one function, as telemetry reads it. */
export interface FinishedExecution {
  /** when it started (ms since the epoch, from its time-ordered id) */
  at: number
  execution_time_ms: number
  failed: boolean
  cpu_time_ms: number
  memory_bytes: number
}

/**
 * The function a telemetry request names (1002 when the caller cannot see it) and its finished
 * executions in `[now - windowMs, now]`, oldest first: one scan of the time-ordered execution records.
 */
export async function finishedExecutions(
  principal: Principal,
  target: FunctionTarget,
  windowMs: number,
  c: { store: CatalogStore; functions: FunctionRegistry },
  now: number,
): Promise<{ fn: FunctionVersion; executions: FinishedExecution[] }> {
  requirePermission(principal, 'rufid.read')
  const { fn } = await c.functions.resolve(principal, target)
  const executions: FinishedExecution[] = []
  const from = timeOrderedLowerBound('ex_', now - windowMs)
  const to = timeOrderedLowerBound('ex_', now + 1)
  for await (const r of c.store.executionsBetween(from, to)) {
    if (r.tenant_id !== principal.tenant_id || r.rufid_short !== fn.rufid_short) continue
    if (target.version !== undefined && r.version !== target.version) continue
    if (r.status === 'queued' || r.status === 'running') continue
    executions.push({
      at: Date.parse(r.started_at),
      execution_time_ms: r.execution_time_ms ?? 0,
      failed: r.status !== 'success',
      cpu_time_ms: r.cpu_time_ms ?? 0,
      memory_bytes: r.memory_bytes ?? 0,
    })
  }
  return { fn, executions }
}

/** The `rufid` field of a telemetry answer: the short RUFID, or the full one when a version was named. */
export const telemetryRufidOf = (fn: FunctionVersion, target: FunctionTarget): string =>
  target.version === undefined ? fn.rufid_short : fullRufidOf(fn)

/** Latency percentiles, error rate and cost of one function from its execution records in a window. */
export async function functionTelemetry(
  principal: Principal,
  target: FunctionTarget,
  window: string,
  c: { store: CatalogStore; functions: FunctionRegistry },
  now = Date.now(),
): Promise<FunctionTelemetry> {
  const ms = parseWindow(window)
  const { fn, executions } = await finishedExecutions(principal, target, ms, c, now)
  const latencies = executions.map((e) => e.execution_time_ms).sort((a, b) => a - b)
  const n = latencies.length
  const errors = executions.filter((e) => e.failed).length
  const cpu = executions.reduce((sum, e) => sum + e.cpu_time_ms, 0)
  const memory = executions.reduce((sum, e) => sum + e.memory_bytes, 0)
  const round = (x: number) => Math.round(x * 1000) / 1000
  return {
    rufid: telemetryRufidOf(fn, target),
    rufid_short: fn.rufid_short,
    full_rufid: fullRufidOf(fn),
    window,
    executions: n,
    latency_ms: { p50: percentile(latencies, 50), p95: percentile(latencies, 95), p99: percentile(latencies, 99), max: n ? latencies[n - 1]! : 0 },
    error_rate: n ? errors / n : 0,
    cost: { cpu_ms_total: round(cpu), cpu_ms_avg: n ? round(cpu / n) : 0, memory_bytes_avg: n ? Math.round(memory / n) : 0 },
  }
}
