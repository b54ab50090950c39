/**
 * RUFID v1, exactly as `shared/spec/rufid-v1.md` defines it. The Python client
 * (`clients/python/svc/rufid_algo.py`) and the Go client (`clients/go/rufid.go`) implement the
 * same algorithm; all three are checked against `test/vectors/rufid-v1.json`.
 */
import { createHash } from 'node:crypto'
import { invalidRufid } from './errors.js'

export type LanguageFamily = 'python' | 'js' | 'go' | 'plain'

export interface RufidInput {
  function_name: string
  signature: string
  language: string
  source_code: string
}

export interface RufidComputation {
  rufid_short: string
  /** SHA-256 hex of the canonical string (stored as `content_digest`). */
  content_digest: string
  normalized_code: string
  canonical: string
}

const FAMILIES: Record<string, LanguageFamily> = {
  python: 'python', python3: 'python', py: 'python',
  javascript: 'js', js: 'js', node: 'js', nodejs: 'js', typescript: 'js', ts: 'js',
  jsx: 'js', tsx: 'js', mjs: 'js', cjs: 'js',
  go: 'go', golang: 'go',
}

/** §3; own names only: `constructor`, `toString`… are languages of the plain family, not Object's members. */
export function languageFamily(language: string): LanguageFamily {
  const key = language.toLowerCase()
  return Object.hasOwn(FAMILIES, key) ? FAMILIES[key]! : 'plain'
}

/** space, tab, LF, VT, FF, CR (§2.3) */
const isAsciiWs = (c: number): boolean => c === 32 || (c >= 9 && c <= 13)
/** space, tab, LF, VT, FF: what the plain family trims at the end (§6; CR is gone after §2.2) */
const isPlainTrailing = (c: number): boolean => c === 32 || (c >= 9 && c <= 12)

/**
 * §2.3: trim leading and trailing ASCII whitespace only. Scans from both ends: a regex such as
 * `[ \t…]+$` is quadratic in V8 on a long blank run followed by anything else (the failed match is
 * retried from every position of the run), and every trim here sees caller input.
 */
export function trimAsciiWhitespace(s: string): string {
  let start = 0
  let end = s.length
  while (start < end && isAsciiWs(s.charCodeAt(start))) start++
  while (end > start && isAsciiWs(s.charCodeAt(end - 1))) end--
  return start === 0 && end === s.length ? s : s.slice(start, end)
}

/** `s` without the trailing characters `drop` accepts, found by one scan from the end. */
function trimEnd(s: string, drop: (c: number) => boolean): string {
  let end = s.length
  while (end > 0 && drop(s.charCodeAt(end - 1))) end--
  return end === s.length ? s : s.slice(0, end)
}

/** §2.1–2.2: one leading BOM removed, CRLF then lone CR turned into LF. */
export function prepareSource(source: string): string {
  const noBom = source.charCodeAt(0) === 0xfeff ? source.slice(1) : source
  return noBom.replace(/\r\n/g, '\n').replace(/\r/g, '\n')
}

const LF = 10
const isHorizontalWs = (c: number): boolean => c === 32 || c === 9 || c === 12 || c === 11
const isIdentChar = (c: number): boolean =>
  (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95
const PY_PREFIX = new Set(['r', 'R', 'b', 'B', 'u', 'U', 'f', 'F'])

/**
 * The lexer's output (§4–§5): `text` with a parallel mask, 1 for code characters and 0 for
 * characters inside string literals (which normalization never touches). Comments are already
 * removed (§5). Also read by the signature derivation (`signature.ts`, §10).
 */
export interface Lexed {
  text: string
  code: Uint8Array
}

/**
 * Builds a Lexed from runs of the source: copied as slices, never character by character (the
 * output is at most as long as the source: comments only shrink).
 */
class LexedBuilder {
  private readonly parts: string[] = []
  private readonly mask: Uint8Array
  private length = 0

  constructor(sourceLength: number) {
    this.mask = new Uint8Array(sourceLength)
  }

  code(s: string, start: number, end: number): void {
    if (end <= start) return
    this.parts.push(s.slice(start, end))
    this.mask.fill(1, this.length, this.length + end - start)
    this.length += end - start
  }

  literal(s: string, start: number, end: number): void {
    if (end <= start) return
    this.parts.push(s.slice(start, end))
    this.length += end - start
  }

  codeChar(ch: string): void {
    this.parts.push(ch)
    this.mask[this.length++] = 1
  }

  done(): Lexed {
    return { text: this.parts.join(''), code: this.mask.subarray(0, this.length) }
  }
}

/** End (exclusive) of a string whose opening delimiter ends at `bodyStart`. */
function scanQuoted(s: string, bodyStart: number, delim: string, opts: { escapes: boolean; endsAtLf: boolean }): number {
  const n = s.length
  const first = delim.charCodeAt(0)
  let k = bodyStart
  while (k < n) {
    const c = s.charCodeAt(k)
    if (opts.escapes && c === 92 /* \ */) {
      k += 2
      continue
    }
    if (opts.endsAtLf && c === LF) return k
    if (c === first && (delim.length === 1 || s.startsWith(delim, k))) return k + delim.length
    k++
  }
  return n
}

/** A line comment starting at `i` runs up to, not including, the next LF. */
function lineCommentEnd(s: string, i: number): number {
  const lf = s.indexOf('\n', i)
  return lf === -1 ? s.length : lf
}

/**
 * The first LF at or after a position, each search starting where the last one found its LF, so
 * that asking at increasing positions costs one pass in all (a line of many block comments asked
 * `indexOf('\n', i)` for each and scanned the rest of the text every time: quadratic).
 */
class NextLf {
  private at = -1

  constructor(private readonly s: string) {}

  /** Index of the first LF at or after `i`, or the text's length when there is none. */
  from(i: number): number {
    if (this.at < i) {
      const lf = this.s.indexOf('\n', i)
      this.at = lf === -1 ? this.s.length : lf
    }
    return this.at
  }
}

/** Block comment: removed; replaced by LF if it spans lines, by a space otherwise. */
function blockComment(s: string, i: number, out: LexedBuilder, nextLf: NextLf): number {
  const close = s.indexOf('*/', i + 2)
  const end = close === -1 ? s.length : close + 2
  out.codeChar(nextLf.from(i) < end ? '\n' : ' ')
  return end
}

const QUOTE = 39 // '
const DQUOTE = 34 // "

function lexPython(s: string): Lexed {
  const out = new LexedBuilder(s.length)
  const n = s.length
  let i = 0
  let run = 0 // start of the pending run of code characters
  while (i < n) {
    const c = s.charCodeAt(i)
    // string literal with an optional prefix of at most two letters from rRbBuUfF
    let literalEnd = -1
    for (let p = 0; p <= 2 && i + p < n; p++) {
      if (p > 0) {
        if (!PY_PREFIX.has(s[i + p - 1]!)) break
        if (i > 0 && isIdentChar(s.charCodeAt(i - 1))) break
      }
      const q = s.charCodeAt(i + p)
      if (q === QUOTE || q === DQUOTE) {
        const quote = q === QUOTE ? "'" : '"'
        const triple = quote.repeat(3)
        if (s.startsWith(triple, i + p)) {
          literalEnd = scanQuoted(s, i + p + 3, triple, { escapes: true, endsAtLf: false })
        } else {
          literalEnd = scanQuoted(s, i + p + 1, quote, { escapes: true, endsAtLf: true })
        }
        break
      }
    }
    if (literalEnd !== -1) {
      out.code(s, run, i)
      const end = Math.min(literalEnd, n)
      out.literal(s, i, end)
      i = run = end
      continue
    }
    if (c === 35 /* # */) {
      out.code(s, run, i)
      i = run = lineCommentEnd(s, i)
      continue
    }
    i++
  }
  out.code(s, run, n)
  return out.done()
}

function lexCLike(s: string, family: 'js' | 'go'): Lexed {
  const out = new LexedBuilder(s.length)
  const nextLf = new NextLf(s)
  const n = s.length
  let i = 0
  let run = 0 // start of the pending run of code characters
  while (i < n) {
    const c = s.charCodeAt(i)
    if (c === DQUOTE || c === QUOTE) {
      out.code(s, run, i)
      const end = Math.min(scanQuoted(s, i + 1, s[i]!, { escapes: true, endsAtLf: true }), n)
      out.literal(s, i, end)
      i = run = end
      continue
    }
    if (c === 96 /* ` */) {
      // js template literal: escapes, `${}` not tracked; go raw string: no escapes
      out.code(s, run, i)
      const end = Math.min(scanQuoted(s, i + 1, '`', { escapes: family === 'js', endsAtLf: false }), n)
      out.literal(s, i, end)
      i = run = end
      continue
    }
    if (c === 47 /* / */ && s.charCodeAt(i + 1) === 47) {
      out.code(s, run, i)
      i = run = lineCommentEnd(s, i)
      continue
    }
    if (c === 47 /* / */ && s.charCodeAt(i + 1) === 42 /* * */) {
      out.code(s, run, i)
      i = run = blockComment(s, i, out, nextLf)
      continue
    }
    i++
  }
  out.code(s, run, n)
  return out.done()
}

/**
 * §6: whitespace normalization over code characters only, in one pass that keeps runs as slices:
 * (1) a run of horizontal whitespace followed by a code LF or by the end is dropped; (2) a code LF
 * at the start, or right after another kept code LF, is dropped; then one final code LF is dropped.
 */
function normalizeWhitespace(lexed: Lexed): string {
  const { text, code } = lexed
  const n = text.length
  const parts: string[] = []
  let kept = 0 // start of the pending run of kept characters
  let anyKept = false
  let lastKeptIsCodeLf = false
  const drop = (start: number, end: number): void => {
    if (start > kept) parts.push(text.slice(kept, start))
    kept = end
  }
  let i = 0
  while (i < n) {
    const c = text.charCodeAt(i)
    if (code[i] === 1 && isHorizontalWs(c)) {
      let j = i
      while (j < n && code[j] === 1 && isHorizontalWs(text.charCodeAt(j))) j++
      if (j === n || (code[j] === 1 && text.charCodeAt(j) === LF)) {
        drop(i, j)
      } else {
        anyKept = true
        lastKeptIsCodeLf = false
      }
      i = j
      continue
    }
    if (code[i] === 1 && c === LF) {
      if (!anyKept || lastKeptIsCodeLf) drop(i, i + 1)
      else anyKept = lastKeptIsCodeLf = true
      i++
      continue
    }
    anyKept = true
    lastKeptIsCodeLf = false
    i++
  }
  if (n > kept) parts.push(text.slice(kept, n))
  const result = parts.join('')
  return lastKeptIsCodeLf ? result.slice(0, -1) : result
}

/** §4–§5 for a lexed family: `prepared` is the source after §2.1–2.2 (`prepareSource`). */
export function lexSource(prepared: string, family: Exclude<LanguageFamily, 'plain'>): Lexed {
  return family === 'python' ? lexPython(prepared) : lexCLike(prepared, family)
}

/** Normalized source code for identity (never for execution). */
export function normalizeSource(source: string, language: string): string {
  const prepared = prepareSource(source)
  const family = languageFamily(language)
  return family === 'plain' ? trimEnd(prepared, isPlainTrailing) : normalizeWhitespace(lexSource(prepared, family))
}

export const BASE62_ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

/** Big-endian unsigned integer of `bytes`, in base 62, most significant digit first, no padding. */
export function base62(bytes: Uint8Array): string {
  let n = 0n
  for (const b of bytes) n = (n << 8n) | BigInt(b)
  if (n === 0n) return '0'
  let out = ''
  while (n > 0n) {
    out = BASE62_ALPHABET[Number(n % 62n)] + out
    n /= 62n
  }
  return out
}

export function canonicalString(input: Pick<RufidInput, 'function_name' | 'signature'>, normalizedCode: string): string {
  return `${trimAsciiWhitespace(input.function_name)}:${trimAsciiWhitespace(input.signature)}:${normalizedCode}`
}

/** §7: the full computation (normalized code, canonical string, digest, short RUFID). */
export function computeRufid(input: RufidInput): RufidComputation {
  const normalized_code = normalizeSource(input.source_code, input.language)
  const canonical = canonicalString(input, normalized_code)
  const digest = createHash('sha256').update(canonical, 'utf8').digest()
  return {
    rufid_short: base62(digest).slice(0, 12),
    content_digest: digest.toString('hex'),
    normalized_code,
    canonical,
  }
}

// ---- §8 syntax --------------------------------------------------------------------------

export const SHORT_RUFID = /^[A-Za-z0-9]{12}$/
export const FULL_RUFID = /^rufid:([A-Za-z0-9]{12}):v([1-9][0-9]*):([A-Za-z0-9_.-]{1,64})$/
export const VERSION_LABEL = /^v([1-9][0-9]*)$/
export const TENANT_ID = /^[A-Za-z0-9_.-]{1,64}$/

export interface ParsedRufid {
  /** The 12-character hash. */
  short: string
  /** Version number when the full form was given. */
  version?: number
  tenant_id?: string
}

export function isShortRufid(value: unknown): value is string {
  return typeof value === 'string' && SHORT_RUFID.test(value)
}

/** Accepts the short or full form; anything else is 1001 INVALID_RUFID. */
export function parseRufid(value: unknown): ParsedRufid {
  if (typeof value !== 'string') throw invalidRufid(value, 'RUFID must be a string')
  if (SHORT_RUFID.test(value)) return { short: value }
  const m = FULL_RUFID.exec(value)
  if (!m) throw invalidRufid(value)
  const version = Number(m[2])
  if (!Number.isSafeInteger(version)) throw invalidRufid(value, 'version out of range')
  return { short: m[1]!, version, tenant_id: m[3]! }
}

/** Parses `v<n>`; throws 1001 on anything else (the version is part of a RUFID). */
export function parseVersionLabel(value: unknown): number {
  const m = typeof value === 'string' ? VERSION_LABEL.exec(value) : null
  if (!m || !Number.isSafeInteger(Number(m[1]))) throw invalidRufid(value, 'malformed version label')
  return Number(m[1])
}

export function formatRufid(short: string, version: number, tenantId: string): string {
  return `rufid:${short}:v${version}:${tenantId}`
}

export function isValidTenantId(value: unknown): value is string {
  return typeof value === 'string' && TENANT_ID.test(value)
}
