import { components } from '@orama/orama'
import { SvcError } from '../../core/errors.js'
import type { FunctionVersion } from '../types.js'

/**
 * What the marketplace's two search paths share, so that they give the same answer on the same data:
 * how a function becomes words, how a query is read, which documents match, how a match scores,
 * how facets are counted and ordered, and which page of hits is kept.
 *
 * Matching (the semantics the Orama index had, with `threshold: 0`): the query is split into words
 * (Orama's English tokenizer: lower case, split on anything but letters, digits, `_ ' -`, diacritics
 * folded, no stemming, no stop words). A query word matches a document word it is a prefix of. A
 * document matches when one of its fields (name, description, signature, tags) holds every query
 * word; an empty query matches every document. Filters: `language` (case-insensitive) and `tags`
 * (the document carries every given tag, exactly).
 *
 * Scoring: BM25 (k 1.2, b 0.75, BM25+ delta 0.5) of each matching (field, word), with the word's
 * document frequency in that field over the tenant's documents; a document word matched by two
 * query words counts twice. Ties (every hit of an empty query) go by `rufid_short`.
 */

/** The fields searched, in the order their words are stored and scored. */
export const FIELDS = ['name', 'description', 'signature', 'tags'] as const
export const FIELD_COUNT = FIELDS.length

/** A query may hold this many distinct words (each needs a bit of a 31-bit mask). */
export const MAX_QUERY_WORDS = 30
/** The longest query text `q`, in characters: a longer one is 1006 before it is read (issue 27). */
export const MAX_QUERY_CHARS = 1024
/** language and author facets keep this many values (the most frequent), as Orama's string facets did. */
export const FACET_LIMIT = 100

const K = 1.2
const B = 0.75
const D = 0.5

// Orama's default tokenizer with duplicates kept (term frequencies). Called with withCache = false:
// its normalization cache would otherwise grow with every word it ever saw.
const tokenizer = components.tokenizer.createTokenizer({ language: 'english', allowDuplicates: true })

/**
 * The longest text of one field that is read into words: longer text (only a replicated catalog
 * entry can carry one; a create bounds every field below it) is read up to here. Orama's
 * tokenizer builds each word with one call argument per character, and a word of ~120,000
 * characters overflowed the stack.
 */
export const MAX_FIELD_CHARS = 8192

export function wordsOf(text: string): string[] {
  if (!text) return []
  return tokenizer.tokenize(text.length > MAX_FIELD_CHARS ? text.slice(0, MAX_FIELD_CHARS) : text, undefined, undefined, false)
}

/** One field of a document: its distinct words in first-occurrence order, their counts, its length in words. */
export interface AnalyzedField {
  words: string[]
  tf: number[]
  length: number
}

/** A function version as both search paths see it. */
export interface AnalyzedDoc {
  short: string
  version: number
  /** lower case */
  language: string
  author: string
  /** distinct, as given */
  tags: string[]
  fields: AnalyzedField[]
}

function field(texts: string[]): AnalyzedField {
  const counts = new Map<string, number>()
  let length = 0
  for (const text of texts) {
    for (const w of wordsOf(text)) {
      counts.set(w, (counts.get(w) ?? 0) + 1)
      length++
    }
  }
  return { words: [...counts.keys()], tf: [...counts.values()], length }
}

export function analyze(fn: FunctionVersion): AnalyzedDoc {
  const tags = Array.isArray(fn.tags) ? fn.tags.filter((t) => typeof t === 'string') : []
  const text = (v: unknown): string => (typeof v === 'string' ? v : '')
  return {
    short: fn.rufid_short,
    version: fn.version,
    language: text(fn.language).toLowerCase(),
    author: text(fn.author),
    tags: [...new Set(tags)],
    fields: [field([text(fn.function_name)]), field([text(fn.description)]), field([text(fn.signature)]), field(tags)],
  }
}

/** A search request, read once. */
export interface CompiledQuery {
  /** distinct query words; empty: every document matches */
  words: string[]
  /** true when the text had characters but no word: nothing matches */
  nothing: boolean
  /** lower case */
  language: string | undefined
  /** exact */
  author: string | undefined
  /** distinct */
  tags: string[]
  limit: number
  offset: number
}

export interface QueryInput {
  q?: string | undefined
  language?: string | undefined
  author?: string | undefined
  tags?: string[] | undefined
  limit?: number | undefined
  offset?: number | undefined
}

/** The longest page a marketplace search answers. */
export const MAX_SEARCH_PAGE = 100

/**
 * Reads a query: limit 1–100 (default 20), offset ≥ 0; a `q` longer than MAX_QUERY_CHARS or with
 * more than MAX_QUERY_WORDS distinct words is 1006.
 */
export function compileQuery(query: QueryInput): CompiledQuery {
  if (query.q !== undefined && query.q.length > MAX_QUERY_CHARS) {
    throw new SvcError('VALIDATION_FAILED', `q is ${query.q.length} characters long; at most ${MAX_QUERY_CHARS}`, {
      details: { problems: [{ pointer: '/q', message: `at most ${MAX_QUERY_CHARS} characters` }] },
    })
  }
  const limit = Math.min(Math.max(Math.trunc(Number.isFinite(query.limit) ? query.limit! : 20), 1), MAX_SEARCH_PAGE)
  const offset = Math.max(Math.trunc(Number.isFinite(query.offset) ? query.offset! : 0), 0)
  const text = query.q?.trim() ?? ''
  const words = [...new Set(wordsOf(text))]
  if (words.length > MAX_QUERY_WORDS) {
    throw new SvcError('VALIDATION_FAILED', `q holds ${words.length} distinct words; at most ${MAX_QUERY_WORDS}`, {
      details: { problems: [{ pointer: '/q', message: `at most ${MAX_QUERY_WORDS} distinct words` }] },
    })
  }
  return {
    words,
    nothing: text !== '' && words.length === 0,
    language: query.language ? query.language.toLowerCase() : undefined,
    author: query.author ? query.author : undefined,
    tags: [...new Set((query.tags ?? []).filter(Boolean))],
    limit,
    offset,
  }
}

/** The bits of the query words that `word` starts with (bit i: query word i). */
export function maskOf(word: string, queryWords: readonly string[]): number {
  let m = 0
  for (let i = 0; i < queryWords.length; i++) if (word.startsWith(queryWords[i]!)) m |= 1 << i
  return m
}

/** The mask a field must reach for the document to match. */
export const fullMask = (n: number): number => (n === 0 ? 0 : (1 << n) - 1)

function popcount(m: number): number {
  let c = 0
  for (let x = m; x !== 0; x &= x - 1) c++
  return c
}

/**
 * The score of one matching (field, word) of a document: BM25 of its term frequency `tf` in a field
 * of `length` words, `df` documents holding it in that field, `docs` documents, `avgLength` the field's
 * mean length; times the number of query words matching it.
 */
export function termScore(mask: number, tf: number, df: number, docs: number, length: number, avgLength: number): number {
  const idf = Math.log(1 + (docs - df + 0.5) / (df + 0.5))
  const norm = avgLength > 0 ? length / avgLength : 0
  return popcount(mask) * ((idf * (D + tf * (K + 1))) / (tf + K * (1 - B + B * norm)))
}

/** Facet counts of the matching documents. */
export class FacetCounter {
  readonly language = new Map<string, number>()
  readonly tags = new Map<string, number>()
  readonly author = new Map<string, number>()

  add(language: string, author: string, tags: readonly string[]): void {
    this.language.set(language, (this.language.get(language) ?? 0) + 1)
    this.author.set(author, (this.author.get(author) ?? 0) + 1)
    for (const t of tags) this.tags.set(t, (this.tags.get(t) ?? 0) + 1)
  }

  /** language and author: the FACET_LIMIT most frequent values; tags: every value. Count desc, then value. */
  result(): { language: Record<string, number>; tags: Record<string, number>; author: Record<string, number> } {
    return { language: ordered(this.language, FACET_LIMIT), tags: ordered(this.tags, Infinity), author: ordered(this.author, FACET_LIMIT) }
  }
}

function ordered(counts: Map<string, number>, limit: number): Record<string, number> {
  const entries = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
  return Object.fromEntries(entries.slice(0, limit))
}

export interface Hit {
  short: string
  version: number
  score: number
}

/** a ranks before b */
const before = (a: Hit, b: Hit): boolean => a.score > b.score || (a.score === b.score && a.short < b.short)

/**
 * The best `k` hits seen (score desc, then rufid_short), in O(k) memory: a binary heap whose root is
 * the worst hit kept.
 */
export class TopHits {
  private readonly heap: Hit[] = []

  constructor(private readonly k: number) {}

  /** whether a hit of this score and short would be kept (saves building it) */
  wants(score: number, short: string): boolean {
    if (this.heap.length < this.k) return true
    const worst = this.heap[0]!
    return score > worst.score || (score === worst.score && short < worst.short)
  }

  push(hit: Hit): void {
    const h = this.heap
    if (h.length < this.k) {
      h.push(hit)
      let i = h.length - 1
      while (i > 0) {
        const parent = (i - 1) >> 1
        if (!before(h[parent]!, h[i]!)) break
        ;[h[parent], h[i]] = [h[i]!, h[parent]!]
        i = parent
      }
      return
    }
    if (!before(hit, h[0]!)) return
    h[0] = hit
    let i = 0
    for (;;) {
      const l = 2 * i + 1
      const r = l + 1
      let worst = i
      if (l < h.length && before(h[worst]!, h[l]!)) worst = l
      if (r < h.length && before(h[worst]!, h[r]!)) worst = r
      if (worst === i) break
      ;[h[worst], h[i]] = [h[i]!, h[worst]!]
      i = worst
    }
  }

  /** the kept hits, best first */
  sorted(): Hit[] {
    return [...this.heap].sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0))
  }
}
