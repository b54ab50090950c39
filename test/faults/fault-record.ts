// Each fault case records what it did and its figures in .test-results/faults/<id>.json, pass or
// fail; `npm run reliability:report` turns those files into RELIABILITY.md's table.
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, totalmem } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { onTestFinished } from 'vitest'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
export const FAULT_RESULTS_DIR = join(ROOT, '.test-results', 'faults')

/** `npm run soak` sets SVC_SOAK=1: the long forms of the load and crash cases. */
export const SOAK = process.env.SVC_SOAK === '1'

export type FigureValue = number | string | boolean | null

export interface FaultCase {
  /** a figure of this run (rounds, counts, milliseconds, bytes…) */
  figure(name: string, value: FigureValue): void
  /** several figures at once */
  figures(values: Record<string, FigureValue>): void
  /** one line saying what the figures show, for the table */
  summary(text: string): void
}

export interface FaultCaseInit {
  /** what was done to the node */
  fault: string
  /** what must hold */
  expectation: string
  /**
   * Set on an `it.fails` case: a failure this suite found whose fix lies outside this change (the
   * test passes while the failure is there; the table shows it as a known failure).
   */
  known_failure?: string
}

/**
 * Starts recording one fault case from inside a test: written when the test ends, with its result.
 * `id` is stable (the table's row key); SOAK runs record under `<id>.soak`.
 */
export function recordFault(id: string, init: FaultCaseInit): FaultCase {
  const started = Date.now()
  const load = loadavg()[0]
  const figures: Record<string, FigureValue> = {}
  let summary = ''
  const rowId = SOAK ? `${id}.soak` : id
  onTestFinished((ctx) => {
    const result = ctx.task.result
    const state = result?.state === 'pass' ? 'pass' : result?.state === 'skip' ? 'skipped' : 'fail'
    mkdirSync(FAULT_RESULTS_DIR, { recursive: true })
    writeFileSync(join(FAULT_RESULTS_DIR, `${rowId}.json`), JSON.stringify({
      id: rowId,
      test: ctx.task.name,
      file: ctx.task.file?.name ?? null,
      suite: SOAK ? 'soak' : 'ci',
      ...init,
      figures,
      summary,
      result: state,
      error: state === 'fail' ? String(result?.errors?.[0]?.message ?? 'failed').slice(0, 500) : null,
      duration_ms: Date.now() - started,
      finished_at: new Date().toISOString(),
      machine: { cpus: cpus().length, memory_gib: Math.round(totalmem() / 2 ** 30), load_at_start: Math.round((load ?? 0) * 100) / 100 },
    }, null, 2) + '\n')
  })
  return {
    figure(name, value) {
      figures[name] = value
    },
    figures(values) {
      Object.assign(figures, values)
    },
    summary(text) {
      summary = text
    },
  }
}
