/**
 * The derived signature of rufid-v1 §10: when a door receives no `signature`, it is read from the
 * source, and every implementation derives the same text because it enters the canonical string
 * of §7. The Python client (`clients/python/svc/signature.py`) and the Go client
 * (`clients/go/signature.go`) implement the same rules; all three are checked against
 * `test/vectors/signature-v1.json`.
 *
 * The rules, with the points §10 leaves open fixed here (every implementation does the same):
 *
 * - The source is prepared (§2) and lexed (§4–§5) exactly as for the RUFID: only code characters
 *   (outside string literals; comments removed) can form a definition or open and close a list.
 * - Between tokens any run of whitespace (space, tab, FF, VT, LF; a removed comment counts as the
 *   whitespace it leaves) is allowed, including none where the tokens cannot run together.
 * - An identifier character is an ASCII letter or digit, `_`, `$`, or any non-ASCII character.
 *   A keyword (`def`, `function`, `async`, `func`) or the name only matches as a whole word: the
 *   characters right before and after it are not identifier characters (so `exports.add = …`
 *   is a binding of `add`, and `add2 = …` is not).
 * - The first definition is the one whose first token (`def`, `function`, `func`, or NAME for a
 *   binding) comes first in the text; candidates that turn out not to be definitions are skipped.
 * - python: `def NAME (`.
 * - js: `function [*] NAME (`; or a binding `NAME [: Type] = VALUE` where `=` is not part of `==` or
 *   `=>` and VALUE is `[async] function [*] (`, `[async] (…) [: ReturnType] =>` or `[async] x =>`.
 *   `: Type` runs to the first `=` at nesting depth 0 and must not cross a `,`, `;` or LF at depth
 *   0; `: ReturnType` likewise runs to the first `=>`. TypeScript type parameters (`f<T>(`) are
 *   not one of the listed forms. A `(` right after `NAME =` that never closes is an unbalanced
 *   list (1006), not a skipped candidate.
 * - go: `func NAME (` or `func (receiver) NAME (`; type parameters (`F[T any](`) are not a listed form.
 * - The list runs from its `(` to the matching `)`, `()`, `[]` and `{}` nested; a closer that does
 *   not match the innermost opener, or the end of the text, is an unbalanced list.
 * - Inside it, each run of whitespace outside string literals becomes one space, and no such space
 *   is kept right after a `(` or right before a `)` (every parenthesis of the list, not only the
 *   outer two); string literals are copied unchanged.
 *
 * A derivation takes time linear in the source, whatever the source holds (see `CodeText`).
 */
import { SvcError } from './errors.js'
import { languageFamily, lexSource, prepareSource, trimAsciiWhitespace, type LanguageFamily, type Lexed } from './rufid.js'

export interface SignatureSource {
  function_name: string
  language: string
  source_code: string
}

/** Why no signature could be derived (`details.reason` of the 1006 error). */
export type SignatureFailure = 'no_definition' | 'unbalanced' | 'unsupported_language'

const OPEN_PAREN = 40
const CLOSE_PAREN = 41
const CLOSERS: Record<number, number> = { 41: 40, 93: 91, 125: 123 } // ) ] }
const isOpener = (c: number): boolean => c === 40 || c === 91 || c === 123
const isSpace = (c: number): boolean => c === 32 || c === 9 || c === 10 || c === 12 || c === 11
const isIdentChar = (c: number): boolean =>
  (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 36 || c >= 0x80

/** Thrown as 1006 VALIDATION_FAILED, naming the function and asking for an explicit signature. */
export function signatureNotDerivable(functionName: string, language: string, reason: SignatureFailure): SvcError {
  const why = reason === 'unsupported_language'
    ? `language ${JSON.stringify(language)} has no signature derivation`
    : reason === 'unbalanced'
      ? `the parameter list of ${JSON.stringify(functionName)} in the source is not balanced`
      : `no definition of ${JSON.stringify(functionName)} was found in the source`
  return new SvcError('VALIDATION_FAILED', `cannot derive the signature of function ${JSON.stringify(functionName)}: ${why}; give an explicit signature`, {
    details: { function_name: functionName, reason, problems: [{ pointer: '/signature', message: 'required: it cannot be derived from the source' }] },
  })
}

/** What a type annotation runs to: `: Type` of a binding to its `=`, `: ReturnType` of an arrow to its `=>`. */
type AnnotationKind = 'binding' | 'arrow'
const UNKNOWN = -2

/**
 * A view of the lexed text in which only code characters can match. Every question it answers
 * costs amortized O(1), so a derivation is linear in the source whatever the source holds (a
 * node derives signatures of untrusted input): lists are matched once for the whole text, and
 * annotation scans share their results.
 */
class CodeText {
  readonly n: number
  /** For each code opener, the index of the closer that matches it, or -1 (see `closing`). */
  private readonly match: Int32Array
  private readonly annotationMemo: Record<AnnotationKind, Int32Array | undefined> = { binding: undefined, arrow: undefined }

  constructor(private readonly lexed: Lexed) {
    this.n = lexed.text.length
    this.match = this.matchLists()
  }

  /**
   * One pass over the text: scanning from an opener with only it open, a closer that does not
   * match the innermost open list makes that list and every list around it unbalanced (-1), and so
   * does the end of the text; this is exactly what scanning from each opener would find.
   */
  private matchLists(): Int32Array {
    const match = new Int32Array(this.n).fill(-1)
    const open: number[] = []
    for (let i = 0; i < this.n; i++) {
      const c = this.at(i)
      if (isOpener(c)) open.push(i)
      else if (CLOSERS[c] !== undefined && open.length > 0) {
        const top = open[open.length - 1]!
        if (this.lexed.text.charCodeAt(top) === CLOSERS[c]) {
          match[top] = i
          open.pop()
        } else open.length = 0
      }
    }
    return match
  }

  /** The character code at `i` when it is a code character, else -1 (literal or out of range). */
  at(i: number): number {
    return i >= 0 && i < this.n && this.lexed.code[i] === 1 ? this.lexed.text.charCodeAt(i) : -1
  }

  skipSpace(i: number): number {
    while (isSpace(this.at(i))) i++
    return i
  }

  /** `word` at `i`, made of code characters, with no identifier character right before or after. */
  word(i: number, word: string): boolean {
    if (!this.lexed.text.startsWith(word, i) || isIdentChar(this.at(i - 1)) || isIdentChar(this.at(i + word.length))) return false
    for (let k = i; k < i + word.length; k++) if (this.lexed.code[k] !== 1) return false
    return true
  }

  /** End (exclusive) of the run of identifier characters starting at `i`. */
  identEnd(i: number): number {
    while (isIdentChar(this.at(i))) i++
    return i
  }

  slice(start: number, end: number): string {
    return this.lexed.text.slice(start, end)
  }

  /** Whether `=>` starts at `i`. */
  arrow(i: number): boolean {
    return this.at(i) === 61 && this.at(i + 1) === 62
  }

  /**
   * The index of the character that closes the list opened at `open`, counting `()`, `[]`, `{}`;
   * -1 when a closer does not match its opener or the text ends first.
   */
  closing(open: number): number {
    return this.match[open]!
  }

  /** Whether an annotation of `kind` ends at `i` (a depth-0 code character). */
  private annotationStop(kind: AnnotationKind, i: number): boolean {
    return kind === 'arrow' ? this.arrow(i) : this.at(i) === 61 && !this.arrow(i) && this.at(i + 1) !== 61
  }

  /**
   * Scans a type annotation from `start` to the first code character at nesting depth 0 where it
   * ends (`=` for a binding, `=>` for an arrow; `=>` is skipped otherwise); -1 at a `,`, `;` or LF
   * at depth 0, an unbalanced list, a closer of an enclosing list, or the end. The answer depends
   * on the position only, so every position a scan passes records it for later scans.
   */
  annotationEnd(start: number, kind: AnnotationKind): number {
    const memo = (this.annotationMemo[kind] ??= new Int32Array(this.n).fill(UNKNOWN))
    const passed: number[] = []
    let i = start
    let end = -1
    for (;;) {
      if (i >= this.n) break
      if (memo[i] !== UNKNOWN) {
        end = memo[i]!
        break
      }
      passed.push(i)
      const c = this.at(i)
      if (c === -1) {
        i++
        continue
      }
      if (this.annotationStop(kind, i)) {
        end = i
        break
      }
      if (c === 44 || c === 59 || c === 10 || CLOSERS[c] !== undefined) break
      if (this.arrow(i)) i += 2
      else if (isOpener(c)) {
        if (this.match[i] === -1) break
        i = this.match[i]! + 1
      } else i++
    }
    for (const p of passed) memo[p] = end
    return end
  }

  /** §10.4: the list `open`..`close` with whitespace runs outside literals collapsed. */
  list(open: number, close: number): string {
    const { text, code } = this.lexed
    let out = ''
    let i = open
    while (i <= close) {
      if (code[i] === 1 && isSpace(text.charCodeAt(i))) {
        let j = i
        while (j <= close && code[j] === 1 && isSpace(text.charCodeAt(j))) j++
        if (this.at(i - 1) !== OPEN_PAREN && this.at(j) !== CLOSE_PAREN) out += ' '
        i = j
        continue
      }
      out += text[i]
      i++
    }
    return out
  }
}

/** Outcome of one candidate: the list's bounds, a bare parameter, or not a definition. */
type Found = { open: number; close: number } | { bare: string } | undefined

/**
 * §10: the derived signature of `function_name` in `source_code`, e.g. `(a, b = g(1))`. Throws
 * 1006 VALIDATION_FAILED when there is no definition, the list is unbalanced, or the language has
 * no derivation (family plain).
 */
export function deriveSignature(input: SignatureSource): string {
  const name = trimAsciiWhitespace(input.function_name)
  const family = languageFamily(input.language)
  if (family === 'plain') throw signatureNotDerivable(name, input.language, 'unsupported_language')
  if (name === '') throw signatureNotDerivable(name, input.language, 'no_definition')
  const t = new CodeText(lexSource(prepareSource(input.source_code), family))
  for (let i = 0; i < t.n; i++) {
    if (t.at(i) === -1 || isIdentChar(t.at(i - 1))) continue
    const found = definitionAt(t, i, name, family)
    if (found === undefined) continue
    if ('bare' in found) return `(${found.bare})`
    if (found.close === -1) throw signatureNotDerivable(name, input.language, 'unbalanced')
    return t.list(found.open, found.close)
  }
  throw signatureNotDerivable(name, input.language, 'no_definition')
}

/** The list opened at `open` (which must be a code `(`), or undefined. */
function listAt(t: CodeText, open: number): Found {
  return t.at(open) === OPEN_PAREN ? { open, close: t.closing(open) } : undefined
}

/** `NAME (` at `i` (after optional whitespace before the `(`). */
function namedListAt(t: CodeText, i: number, name: string): Found {
  return t.word(i, name) ? listAt(t, t.skipSpace(i + name.length)) : undefined
}

function definitionAt(t: CodeText, i: number, name: string, family: Exclude<LanguageFamily, 'plain'>): Found {
  switch (family) {
    case 'python':
      return t.word(i, 'def') ? namedListAt(t, t.skipSpace(i + 3), name) : undefined
    case 'go': {
      if (!t.word(i, 'func')) return undefined
      let j = t.skipSpace(i + 4)
      if (t.at(j) === OPEN_PAREN) {
        // a method's receiver, or a function literal's parameters (then no NAME follows)
        const close = t.closing(j)
        if (close === -1) return undefined
        j = t.skipSpace(close + 1)
      }
      return namedListAt(t, j, name)
    }
    case 'js':
      if (t.word(i, 'function')) return namedListAt(t, afterStar(t, t.skipSpace(i + 8)), name)
      return t.word(i, name) ? bindingAt(t, t.skipSpace(i + name.length)) : undefined
  }
}

/** Skips an optional generator `*` and the whitespace after it. */
function afterStar(t: CodeText, i: number): number {
  return t.at(i) === 42 ? t.skipSpace(i + 1) : i
}

/** A js binding after NAME: `[: Type] = VALUE` starting at `i`. */
function bindingAt(t: CodeText, i: number): Found {
  if (t.at(i) === 58 /* : */) {
    i = t.annotationEnd(i + 1, 'binding')
    if (i === -1) return undefined
  }
  if (t.at(i) !== 61 /* = */ || t.at(i + 1) === 61 || t.at(i + 1) === 62) return undefined
  const v = t.skipSpace(i + 1)
  if (t.word(v, 'async')) {
    const a = t.skipSpace(v + 5)
    const found = t.word(a, 'function') ? listAt(t, afterStar(t, t.skipSpace(a + 8))) : arrowAt(t, a)
    if (found !== undefined) return found
    // else `async` itself may be a bare parameter: `async => …`
  }
  if (t.word(v, 'function')) return listAt(t, afterStar(t, t.skipSpace(v + 8)))
  return arrowAt(t, v)
}

/** `(…) [: ReturnType] =>` or a bare parameter `x =>` at `i`. */
function arrowAt(t: CodeText, i: number): Found {
  if (t.at(i) === OPEN_PAREN) {
    const close = t.closing(i)
    if (close === -1) return { open: i, close }
    let after = t.skipSpace(close + 1)
    if (t.at(after) === 58 /* : */) {
      after = t.annotationEnd(after + 1, 'arrow')
      if (after === -1) return undefined
    }
    return t.arrow(after) ? { open: i, close } : undefined
  }
  const end = t.identEnd(i)
  return end > i && t.arrow(t.skipSpace(end)) ? { bare: t.slice(i, end) } : undefined
}
