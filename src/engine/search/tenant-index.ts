import {
  FacetCounter, FIELD_COUNT, fullMask, maskOf, termScore, TopHits,
  type AnalyzedDoc, type CompiledQuery, type Hit,
} from './analysis.js'

/** Values ↔ dense ids. */
class Dictionary {
  readonly ids = new Map<string, number>()
  readonly values: string[] = []

  id(value: string): number {
    let id = this.ids.get(value)
    if (id === undefined) {
      id = this.values.length
      this.values.push(value)
      this.ids.set(value, id)
    }
    return id
  }
}

function grow<T extends Int32Array | Uint8Array>(a: T, need: number): T {
  if (need <= a.length) return a
  let size = a.length
  while (size < need) size *= 2
  const b = new (a.constructor as new (n: number) => T)(size)
  b.set(a)
  return b
}

export interface IndexSearchResult {
  /** the best `offset + limit` hits, best first */
  hits: Hit[]
  total: number
  facets: FacetCounter
}

/**
 * One tenant's marketplace documents (the newest live version of each function), held compactly:
 * columns of typed arrays by document slot, one arena of (word, field, frequency) entries, and
 * dictionaries of words, languages, authors and tags. A search scans the tenant's documents (no
 * posting lists: a scan of typed arrays is a few milliseconds per 100,000 documents, and it matches
 * and scores exactly as the streaming scan of the store does, see analysis.ts).
 *
 * Slots are never reused: a removed document leaves a hole until the index is rebuilt
 * (`wasteful` says when that is worth it).
 */
export class TenantIndex {
  private readonly shorts: Array<string | undefined> = []
  private readonly slotOf = new Map<string, number>()
  private versions = new Int32Array(256)
  private languages = new Int32Array(256)
  private authors = new Int32Array(256)
  private termStart = new Int32Array(256)
  private termCount = new Int32Array(256)
  private tagStart = new Int32Array(256)
  private tagCount = new Int32Array(256)
  /** field lengths in words, FIELD_COUNT per slot */
  private lengths = new Int32Array(256 * FIELD_COUNT)
  /** wordId * FIELD_COUNT + field, by term entry */
  private terms = new Int32Array(4096)
  /** term frequency (capped at 255), by term entry */
  private tfs = new Uint8Array(4096)
  private termsUsed = 0
  private tagIds = new Int32Array(1024)
  private tagsUsed = 0
  private readonly words = new Dictionary()
  /** documents holding a word in a field: wordId * FIELD_COUNT + field */
  private df = new Int32Array(1024 * FIELD_COUNT)
  /** documents holding a word in any field */
  private dfAny = new Int32Array(1024)
  private readonly languageIds = new Dictionary()
  private readonly authorIds = new Dictionary()
  private readonly tagDict = new Dictionary()
  private readonly lengthSums = new Array<number>(FIELD_COUNT).fill(0)
  private deadSlots = 0
  private deadWords = 0

  constructor(readonly tenant: string) {}

  /** documents indexed */
  get size(): number {
    return this.slotOf.size
  }

  /** true when removed documents or words no longer used take more room than the live ones */
  get wasteful(): boolean {
    const liveWords = this.words.values.length - this.deadWords
    return this.deadSlots > Math.max(4096, this.size) || this.deadWords > Math.max(65_536, liveWords)
  }

  has(short: string): boolean {
    return this.slotOf.has(short)
  }

  /** Adds (or replaces) a document. */
  add(doc: AnalyzedDoc): void {
    this.remove(doc.short)
    const slot = this.shorts.length
    this.shorts.push(doc.short)
    this.slotOf.set(doc.short, slot)
    const n = slot + 1
    this.versions = grow(this.versions, n)
    this.languages = grow(this.languages, n)
    this.authors = grow(this.authors, n)
    this.termStart = grow(this.termStart, n)
    this.termCount = grow(this.termCount, n)
    this.tagStart = grow(this.tagStart, n)
    this.tagCount = grow(this.tagCount, n)
    this.lengths = grow(this.lengths, n * FIELD_COUNT)
    this.versions[slot] = doc.version
    this.languages[slot] = this.languageIds.id(doc.language)
    this.authors[slot] = this.authorIds.id(doc.author)

    let entries = 0
    for (const f of doc.fields) entries += f.words.length
    this.terms = grow(this.terms, this.termsUsed + entries)
    this.tfs = grow(this.tfs, this.termsUsed + entries)
    this.termStart[slot] = this.termsUsed
    this.termCount[slot] = entries
    const seen = new Set<number>()
    for (let f = 0; f < FIELD_COUNT; f++) {
      const field = doc.fields[f]!
      this.lengths[slot * FIELD_COUNT + f] = field.length
      this.lengthSums[f]! += field.length
      for (let i = 0; i < field.words.length; i++) {
        const known = this.words.values.length
        const w = this.words.id(field.words[i]!)
        if (w >= this.dfAny.length) {
          this.dfAny = grow(this.dfAny, w + 1)
          this.df = grow(this.df, (w + 1) * FIELD_COUNT)
        }
        this.terms[this.termsUsed] = w * FIELD_COUNT + f
        this.tfs[this.termsUsed] = Math.min(field.tf[i]!, 255)
        this.termsUsed++
        this.df[w * FIELD_COUNT + f]!++
        if (!seen.has(w)) {
          seen.add(w)
          // a word of the dictionary no document held any more comes back
          if (this.dfAny[w]!++ === 0 && w < known) this.deadWords--
        }
      }
    }
    this.tagIds = grow(this.tagIds, this.tagsUsed + doc.tags.length)
    this.tagStart[slot] = this.tagsUsed
    this.tagCount[slot] = doc.tags.length
    for (const t of doc.tags) this.tagIds[this.tagsUsed++] = this.tagDict.id(t)
  }

  /** Removes a document; false when it was not indexed. */
  remove(short: string): boolean {
    const slot = this.slotOf.get(short)
    if (slot === undefined) return false
    this.slotOf.delete(short)
    this.shorts[slot] = undefined
    this.deadSlots++
    const start = this.termStart[slot]!
    const end = start + this.termCount[slot]!
    const seen = new Set<number>()
    for (let j = start; j < end; j++) {
      const t = this.terms[j]!
      const w = Math.floor(t / FIELD_COUNT)
      this.df[t]!--
      if (!seen.has(w)) {
        seen.add(w)
        if (--this.dfAny[w]! === 0) this.deadWords++
      }
    }
    for (let f = 0; f < FIELD_COUNT; f++) this.lengthSums[f]! -= this.lengths[slot * FIELD_COUNT + f]!
    return true
  }

  /** Matches, scores and counts facets over every document (see analysis.ts for the rules). */
  search(q: CompiledQuery): IndexSearchResult {
    const facets = new FacetCounter()
    const top = new TopHits(q.offset + q.limit)
    const empty = (): IndexSearchResult => ({ hits: [], total: 0, facets })
    if (q.nothing) return empty()
    const language = q.language === undefined ? -1 : this.languageIds.ids.get(q.language)
    if (language === undefined) return empty()
    const author = q.author === undefined ? -1 : this.authorIds.ids.get(q.author)
    if (author === undefined) return empty()
    const tags: number[] = []
    for (const t of q.tags) {
      const id = this.tagDict.ids.get(t)
      if (id === undefined) return empty()
      tags.push(id)
    }
    const n = q.words.length
    const full = fullMask(n)
    let masks: Int32Array | undefined
    if (n > 0) {
      masks = new Int32Array(this.words.values.length)
      let found = 0
      const values = this.words.values
      for (let w = 0; w < values.length; w++) {
        if (this.dfAny[w] === 0) continue
        const m = maskOf(values[w]!, q.words)
        masks[w] = m
        found |= m
      }
      // a query word that starts no word of the tenant: no field can hold every query word
      if (found !== full) return empty()
    }
    const docs = this.size
    const avg = this.lengthSums.map((s) => (docs > 0 ? s / docs : 0))
    const fieldMasks = new Int32Array(FIELD_COUNT)
    let total = 0
    for (let slot = 0; slot < this.shorts.length; slot++) {
      const short = this.shorts[slot]
      if (short === undefined) continue
      if (language >= 0 && this.languages[slot] !== language) continue
      if (author >= 0 && this.authors[slot] !== author) continue
      if (tags.length > 0 && !this.hasTags(slot, tags)) continue
      let score = 0
      if (masks) {
        const start = this.termStart[slot]!
        const end = start + this.termCount[slot]!
        fieldMasks.fill(0)
        for (let j = start; j < end; j++) {
          const t = this.terms[j]!
          const m = masks[Math.floor(t / FIELD_COUNT)]!
          if (m !== 0) fieldMasks[t % FIELD_COUNT]! |= m
        }
        let matched = false
        for (let f = 0; f < FIELD_COUNT; f++) if (fieldMasks[f] === full) matched = true
        if (!matched) continue
        for (let j = start; j < end; j++) {
          const t = this.terms[j]!
          const m = masks[Math.floor(t / FIELD_COUNT)]!
          if (m === 0) continue
          const f = t % FIELD_COUNT
          score += termScore(m, this.tfs[j]!, this.df[t]!, docs, this.lengths[slot * FIELD_COUNT + f]!, avg[f]!)
        }
      }
      total++
      facets.add(this.languageIds.values[this.languages[slot]!]!, this.authorIds.values[this.authors[slot]!]!, this.tagsOf(slot))
      if (top.wants(score, short)) top.push({ short, version: this.versions[slot]!, score })
    }
    return { hits: top.sorted(), total, facets }
  }

  private hasTags(slot: number, wanted: number[]): boolean {
    const start = this.tagStart[slot]!
    const end = start + this.tagCount[slot]!
    for (const id of wanted) {
      let found = false
      for (let j = start; j < end && !found; j++) found = this.tagIds[j] === id
      if (!found) return false
    }
    return true
  }

  private tagsOf(slot: number): string[] {
    const start = this.tagStart[slot]!
    const out: string[] = []
    for (let j = start; j < start + this.tagCount[slot]!; j++) out.push(this.tagDict.values[this.tagIds[j]!]!)
    return out
  }
}
