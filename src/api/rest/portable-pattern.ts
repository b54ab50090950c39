/**
 * JSON Schema `pattern`s that every validator compiles — ECMAScript's (with or without the `u`
 * flag), Python's `re`, Go's RE2 — from the server's own regular expressions.
 *
 * The server's rules use what only JavaScript has: Unicode property escapes (`\p{L}`) and flags
 * (`/i`), which a JSON Schema pattern cannot carry. They are rewritten into the common subset:
 * - `\p{L}`, `\p{N}`, … become their ASCII part or any non-ASCII character
 *   (`(?:[A-Za-z_$]|[^\x00-\x7F])`): the document accepts every name the server accepts, and a
 *   few non-ASCII ones the server refuses (the server's answer, 1006, is authoritative);
 * - `/i` spells both cases of each letter (`[nN][oO]…`);
 * - named groups become non-capturing groups (Python spells them `(?P<name>…)`).
 * Anything else that does not carry over (a negated class holding `\p{…}`, an astral `\u{…}`)
 * throws, so a new rule that cannot be described fails the build of the document, not a client.
 */

/** ASCII members of the Unicode properties the server's rules use. */
const ASCII_OF: Record<string, string> = {
  L: 'A-Za-z',
  Letter: 'A-Za-z',
  Lu: 'A-Z',
  Ll: 'a-z',
  N: '0-9',
  Nd: '0-9',
  ID_Start: 'A-Za-z',
  ID_Continue: '0-9A-Za-z_',
}

const NON_ASCII = '[^\\x00-\\x7F]'

/** The pattern of `re` in the subset every JSON Schema validator compiles. */
export function portablePattern(re: RegExp): string {
  const src = re.source
  const ignoreCase = re.flags.includes('i')
  let out = ''
  let i = 0
  while (i < src.length) {
    const c = src[i]!
    if (c === '\\') {
      const [token, next] = escapeAt(src, i)
      const property = propertyOf(token)
      out += property === undefined ? token : `(?:[${property}]|${NON_ASCII})`
      i = next
    } else if (c === '[') {
      const [klass, next] = classAt(src, i, ignoreCase)
      out += klass
      i = next
    } else if (c === '(' && src.startsWith('(?<', i) && src[i + 3] !== '=' && src[i + 3] !== '!') {
      const close = src.indexOf('>', i)
      out += '(?:'
      i = close + 1
    } else {
      out += ignoreCase && /[A-Za-z]/.test(c) ? `[${c.toLowerCase()}${c.toUpperCase()}]` : c
      i++
    }
  }
  return out
}

/** One escape sequence starting at `i` (`\d`, `\p{L}`, `\u00e9`, `\u{1F600}`, `\x41`, `\.`). */
function escapeAt(src: string, i: number): [string, number] {
  const kind = src[i + 1]
  if ((kind === 'p' || kind === 'P' || kind === 'u') && src[i + 2] === '{') {
    const end = src.indexOf('}', i)
    const token = src.slice(i, end + 1)
    if (kind === 'P') throw new Error(`pattern ${src}: a negated property escape ${token} has no portable form`)
    if (kind === 'u') {
      const cp = Number.parseInt(token.slice(3, -1), 16)
      if (cp > 0xffff) throw new Error(`pattern ${src}: ${token} is outside the Basic Multilingual Plane`)
      return [`\\u${cp.toString(16).padStart(4, '0')}`, end + 1]
    }
    return [token, end + 1]
  }
  if (kind === 'u') return [src.slice(i, i + 6), i + 6]
  if (kind === 'x') return [src.slice(i, i + 4), i + 4]
  return [src.slice(i, i + 2), i + 2]
}

function propertyOf(token: string): string | undefined {
  if (!token.startsWith('\\p{')) return undefined
  const name = token.slice(3, -1).replace(/^(General_Category|gc)=/, '')
  const ascii = ASCII_OF[name]
  if (ascii === undefined) throw new Error(`Unicode property ${token} has no portable form`)
  return ascii
}

/** A character class starting at `i`, rewritten; returns it and the index after its `]`. */
function classAt(src: string, start: number, ignoreCase: boolean): [string, number] {
  let i = start + 1
  const negated = src[i] === '^'
  if (negated) i++
  const items: string[] = []
  let unicode = false
  while (i < src.length && src[i] !== ']') {
    if (src[i] === '\\') {
      const [token, next] = escapeAt(src, i)
      const property = propertyOf(token)
      if (property !== undefined) {
        unicode = true
        items.push(property)
      } else {
        items.push(token)
      }
      i = next
    } else if (src[i + 1] === '-' && src[i + 2] !== undefined && src[i + 2] !== ']') {
      items.push(rangeOf(src[i]!, src[i + 2]!, ignoreCase))
      i += 3
    } else {
      const c = src[i]!
      items.push(ignoreCase && /[A-Za-z]/.test(c) ? `${c.toLowerCase()}${c.toUpperCase()}` : c)
      i++
    }
  }
  if (src[i] !== ']') throw new Error(`pattern ${src}: unterminated character class`)
  const body = items.join('')
  if (!unicode) return [`[${negated ? '^' : ''}${body}]`, i + 1]
  if (negated) throw new Error(`pattern ${src}: a negated class with a Unicode property has no portable form`)
  return [`(?:[${body}]|${NON_ASCII})`, i + 1]
}

function rangeOf(from: string, to: string, ignoreCase: boolean): string {
  const range = `${from}-${to}`
  if (!ignoreCase) return range
  const letters = /[a-z]/.test(from) && /[a-z]/.test(to) ? `${from.toUpperCase()}-${to.toUpperCase()}`
    : /[A-Z]/.test(from) && /[A-Z]/.test(to) ? `${from.toLowerCase()}-${to.toLowerCase()}` : ''
  return range + letters
}
