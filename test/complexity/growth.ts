// The measuring part of the complexity tests (issue 27): how the time of one input path grows when
// its hostile input doubles. A ratio within one run, never an absolute time, and robust on a busy
// machine with 2 cores shared by several test runs:
// - time is this process's CPU time (process.cpuUsage: user + system), so other processes running
//   meanwhile do not count; the in-process doors (client and server in this process) count both;
// - a batch is REPS calls, REPS chosen at the smallest size so that a batch takes at least
//   MIN_BATCH_MS (timer resolution then matters little), the same REPS for every size; the first
//   batches at the smallest size are the warm-up (compilation, caches);
// - a garbage collection (untimed) before each batch, so that no batch pays for another's garbage;
// - the two sizes of a doubling are measured in alternating batches, MIN_PAIRS pairs and more (up
//   to MAX_PAIRS) while the ratio of their least batches is over the bound: a burst of load slows
//   some batches, while a super-linear path is over the bound in every pair (quadratic: ~4x).
// A path is linear when no doubling multiplies its time by more than MAX_DOUBLING and 8n costs at
// most MAX_GROWTH³ times n; one whose doubling stays over MAX_DOUBLING stops there (a quadratic
// path at 8n could take minutes).

import v8 from 'node:v8'
import { runInNewContext } from 'node:vm'

/** the most a doubling of the input may multiply the time by, on average over n to 8n… */
export const MAX_GROWTH = 2.5
/**
 * …and any one doubling: a step at a cache or allocator threshold (one size fits the CPU's cache
 * or malloc's arena, the next does not) multiplies one doubling's time by up to ~3 on a linear
 * path, while a quadratic path approaches 4 at every doubling
 */
export const MAX_DOUBLING = 3.2
/** batches of the two sizes of a doubling, alternated: at least this many pairs… */
const MIN_PAIRS = 2
/** …and at most this many, while the ratio of their least batches is over the bound */
const MAX_PAIRS = 8
/** …and no more pairs once a doubling has taken this much CPU time (a quadratic path's are slow) */
const RETRY_BUDGET_MS = 10_000
const MIN_BATCH_MS = 10
/** about this many bytes of input are made per size, in copies… */
const COLD_BYTES = 4 * 1024 * 1024
/** …of at most this many */
const MAX_COPIES = 256
/** the most calls in a batch */
const MAX_REPS = 1 << 16

export interface Growth {
  label: string
  /** the sizes measured, n to 8n (or where it stopped) */
  sizes: number[]
  /** time of 2n / n, 4n / 2n, 8n / 4n (each size's least batch) */
  ratios: number[]
  /** each doubling's allowance over the linear bound (1; the n log n factor for a path that sorts) */
  factors: number[]
  /** CPU ms of one call at each size (the least batch over REPS) */
  perCallMs: number[]
}

export type Call<T> = (input: T) => unknown

// Only V8's interpreter and baseline compiler from here on in this process (vitest runs each test
// file in a process of its own): the optimizing compilers made the same call 1x or 10x slower from
// one batch to the next (optimized, deoptimized, optimized again), which no number of batches
// averaged away on a busy machine, while the unoptimized tiers take the same time every time. The
// measure is the algorithm's growth, which the tiers do not change (regexes are compiled either way).
v8.setFlagsFromString('--no-opt')
v8.setFlagsFromString('--no-maglev')
// a collection before each batch, untimed, so that no batch pays for the garbage of another
// (or of an earlier test in the same process): vitest's workers run without --expose-gc
v8.setFlagsFromString('--expose-gc')
const collectGarbage = runInNewContext('gc') as () => void

function cpuMs(): number {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

async function batch<T>(call: Call<T>, copies: T[], reps: number): Promise<number> {
  collectGarbage()
  const start = cpuMs()
  for (let i = 0; i < reps; i++) {
    const r = call(copies[i % copies.length]!)
    if (r instanceof Promise) await r
  }
  return Math.max(cpuMs() - start, 0.001)
}

/**
 * Measures `call` on `make(n)`, `make(2n)`, `make(4n)`, `make(8n)`; the inputs are made once, before
 * timing. `call` checks its own answer (a refusal is an answer too, and its time is what is
 * measured) and throws on any other: a path that failed fast would otherwise look linear.
 * `options.unitBytes`: about how many bytes of input one unit of `size` makes (default 1).
 * `options.sorts`: the path sorts its `size` units, which no implementation can avoid (canonical
 * JSON orders an object's members): its bound grows by the n log n factor, log2(2s) / log2(s) per
 * doubling from s (~1.07 at 8192 members) — still far below a quadratic path's 4.
 */
export async function growth<T>(label: string, n: number, make: (size: number) => T, call: Call<T>, options: { unitBytes?: number; sorts?: boolean } = {}): Promise<Growth> {
  const unitBytes = options.unitBytes ?? 1 // bytes of input per unit of size (a character, a member)
  const sizes = [n, 2 * n, 4 * n, 8 * n]
  // the allowance of each doubling (1 for a linear path)
  const factors = sizes.slice(1).map((size) => (options.sorts === true ? Math.log2(size) / Math.log2(size / 2) : 1))
  // copies of each input, about COLD_BYTES of them, the calls of a batch taking them in turn: one
  // input read again and again stays in the CPU's cache up to some size and not past it, a step
  // that looked super-linear on fast paths (0.04 ms at 128 KB, 0.16 ms at 256 KB for one scan)
  const inputs = sizes.map((size) => Array.from({ length: Math.min(MAX_COPIES, Math.max(1, Math.ceil(COLD_BYTES / (size * unitBytes)))) }, () => make(size)))
  let reps = 1
  while (reps < MAX_REPS && (await batch(call, inputs[0]!, reps)) < MIN_BATCH_MS) reps *= 2 // the first is the warm-up
  const best = sizes.map(() => Infinity)
  const measure = async (i: number): Promise<void> => {
    best[i] = Math.min(best[i]!, await batch(call, inputs[i]!, reps))
  }
  // smallest sizes first, each doubling judged before a larger size is run at all: a super-linear
  // path stops before it spends minutes on 8n
  const ratios: number[] = []
  for (let k = 1; k < sizes.length; k++) {
    await batch(call, inputs[k]!, 1) // warm-up at this size (code optimized for longer loops)
    const started = cpuMs()
    for (let pair = 0; pair < MAX_PAIRS && (pair < MIN_PAIRS || (best[k]! / best[k - 1]! > MAX_GROWTH * factors[k - 1]! && cpuMs() - started < RETRY_BUDGET_MS)); pair++) {
      await measure(k - 1)
      await measure(k)
    }
    ratios.push(best[k]! / best[k - 1]!)
    if (ratios[ratios.length - 1]! > MAX_DOUBLING * factors[k - 1]!) break
  }
  const measured = sizes.slice(0, ratios.length + 1)
  return { label, sizes: measured, ratios, factors, perCallMs: measured.map((_, i) => best[i]! / reps) }
}

/**
 * Whether the path is linear by these measures: all three doublings measured, none over
 * MAX_DOUBLING, and 8n at most MAX_GROWTH³ times n (≤ ~2.5x per doubling on average).
 */
export function isLinear(g: Growth): boolean {
  const total = g.ratios.reduce((a, b) => a * b, 1)
  const allowance = g.factors.reduce((a, b) => a * b, 1)
  return g.ratios.length === 3 && g.ratios.every((r, i) => r <= MAX_DOUBLING * g.factors[i]!) && total <= MAX_GROWTH ** 3 * allowance
}

/** One line per path for the test log: the figures behind a pass or a failure. */
export function describeGrowth(g: Growth): string {
  const ms = g.perCallMs.map((t) => (t < 1 ? t.toFixed(3) : t.toFixed(1))).join(' / ')
  const total = g.ratios.reduce((a, b) => a * b, 1)
  return `${g.label}: sizes ${g.sizes.join(', ')}; ratios ${g.ratios.map((r) => r.toFixed(2)).join(', ')} (x${total.toFixed(1)} in all); CPU ms per call ${ms}`
}
