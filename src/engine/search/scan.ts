import { setImmediate as nextTurn } from 'node:timers/promises'
import type { FunctionVersion } from '../types.js'
import {
  analyze, FacetCounter, FIELD_COUNT, fullMask, maskOf, termScore, TopHits,
  type AnalyzedDoc, type CompiledQuery,
} from './analysis.js'
import type { IndexSearchResult } from './tenant-index.js'

/**
 * Gives the event loop a turn once `sliceMs` of work has gone by since the last one, so that a long
 * loop (an index build, a scan of the store) lets requests through.
 */
export class TimeSlicer {
  private since = performance.now()

  constructor(private readonly sliceMs = 10) {}

  async tick(): Promise<void> {
    if (performance.now() - this.since < this.sliceMs) return
    await nextTurn()
    this.since = performance.now()
  }
}

/**
 * The newest live version of each function, from a tenant's versions in key order (tenant, hash,
 * version ascending): what the marketplace lists. Holds one version at a time.
 */
export async function* newestLive(versions: AsyncIterable<FunctionVersion>): AsyncGenerator<FunctionVersion> {
  let short: string | undefined
  let live: FunctionVersion | undefined
  for await (const fn of versions) {
    if (fn.rufid_short !== short) {
      if (live) yield live
      short = fn.rufid_short
      live = undefined
    }
    if (fn.deleted_at === undefined) live = fn
  }
  if (live) yield live
}

export interface ScanResult extends IndexSearchResult {
  /** live functions of the tenant (what its index would hold) */
  documents: number
}

/**
 * The marketplace's slow path: the same search as TenantIndex.search, computed by streaming the
 * tenant's functions from the store, in memory bounded by `offset + limit` hits, the facet values
 * and (with query words) the document frequencies of the tenant's words those words start.
 * With query words it reads the tenant twice: once for the statistics BM25 needs (document count,
 * mean field lengths, document frequencies), once to match, score and count.
 */
export async function scanSearch(
  functions: () => AsyncIterable<FunctionVersion>,
  q: CompiledQuery,
  slicer: TimeSlicer = new TimeSlicer(),
): Promise<ScanResult> {
  const facets = new FacetCounter()
  const top = new TopHits(q.offset + q.limit)
  const n = q.words.length
  const full = fullMask(n)
  let documents = 0
  const lengthSums = new Array<number>(FIELD_COUNT).fill(0)
  const df = new Map<string, Int32Array>()
  if (n > 0 && !q.nothing) {
    let found = 0
    for await (const fn of newestLive(functions())) {
      const doc = analyze(fn)
      documents++
      for (let f = 0; f < FIELD_COUNT; f++) {
        const field = doc.fields[f]!
        lengthSums[f]! += field.length
        for (const w of field.words) {
          const m = maskOf(w, q.words)
          if (m === 0) continue
          found |= m
          let counts = df.get(w)
          if (!counts) df.set(w, (counts = new Int32Array(FIELD_COUNT)))
          counts[f]!++
        }
      }
      await slicer.tick()
    }
    if (found !== full) return { hits: [], total: 0, facets, documents }
  }
  const avg = lengthSums.map((s) => (documents > 0 ? s / documents : 0))
  const wordsOnly = n > 0
  let total = 0
  let seen = 0
  for await (const fn of newestLive(functions())) {
    seen++
    await slicer.tick()
    if (q.nothing) continue
    const doc = analyze(fn)
    if (q.language !== undefined && doc.language !== q.language) continue
    if (q.author !== undefined && doc.author !== q.author) continue
    if (q.tags.length > 0 && !q.tags.every((t) => doc.tags.includes(t))) continue
    let score = 0
    if (wordsOnly) {
      const s = scoreOf(doc, q, full, df, documents, avg)
      if (s === undefined) continue
      score = s
    }
    total++
    facets.add(doc.language, doc.author, doc.tags)
    if (top.wants(score, doc.short)) top.push({ short: doc.short, version: doc.version, score })
  }
  return { hits: top.sorted(), total, facets, documents: wordsOnly ? documents : seen }
}

/** undefined: no field holds every query word */
function scoreOf(doc: AnalyzedDoc, q: CompiledQuery, full: number, df: Map<string, Int32Array>, documents: number, avg: number[]): number | undefined {
  let matched = false
  const masks: number[][] = []
  for (let f = 0; f < FIELD_COUNT; f++) {
    let fieldMask = 0
    const ms = doc.fields[f]!.words.map((w) => maskOf(w, q.words))
    for (const m of ms) fieldMask |= m
    masks.push(ms)
    if (fieldMask === full) matched = true
  }
  if (!matched) return undefined
  let score = 0
  for (let f = 0; f < FIELD_COUNT; f++) {
    const field = doc.fields[f]!
    for (let i = 0; i < field.words.length; i++) {
      const m = masks[f]![i]!
      if (m === 0) continue
      score += termScore(m, Math.min(field.tf[i]!, 255), df.get(field.words[i]!)![f]!, documents, field.length, avg[f]!)
    }
  }
  return score
}
