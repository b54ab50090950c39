/**
 * JSON Canonicalization Scheme (RFC 8785): object members sorted by the UTF-16 code units of
 * their names, no whitespace, strings and numbers serialized as ECMAScript does (which is what
 * JCS specifies). `undefined` members are omitted as JSON.stringify omits them.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError('non-finite number in JSON')
    if (typeof value === 'bigint') throw new TypeError('bigint in JSON')
    const s = JSON.stringify(value)
    if (s === undefined) throw new TypeError(`${typeof value} is not JSON`)
    return s
  }
  if (Array.isArray(value)) {
    // a hole or an undefined element is null, as JSON.stringify writes it (map + join wrote a hole as
    // nothing: `[1,,2]`, not JSON)
    let out = '['
    for (let i = 0; i < value.length; i++) out += (i > 0 ? ',' : '') + (value[i] === undefined ? 'null' : canonicalJson(value[i]))
    return out + ']'
  }
  const record = value as Record<string, unknown>
  const keys = Object.keys(record).filter((k) => record[k] !== undefined).sort(compareUtf16)
  return '{' + keys.map((k) => JSON.stringify(k) + ':' + canonicalJson(record[k])).join(',') + '}'
}

function compareUtf16(a: string, b: string): number {
  // JavaScript string comparison is by UTF-16 code units, as RFC 8785 §3.2.3 requires
  return a < b ? -1 : a > b ? 1 : 0
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/**
 * RFC 8785 without exceptions, for bytes that are hashed or signed across languages: like
 * `canonicalJson`, but only plain JSON data is accepted (objects whose prototype is Object's or
 * null, arrays, strings, finite numbers, booleans, null) and a string or member name holding a
 * lone surrogate, which has no UTF-8 form, is refused (RFC 8785 §3.2.2.2) instead of escaped.
 * Throws TypeError naming the JSON pointer of the first value that has no canonical form.
 */
export function canonicalJsonStrict(value: unknown): string {
  try {
    return strictText(value)
  } catch (err) {
    if (err !== NOT_PLAIN) throw err
  }
  // the value has no canonical form: the checking walk names the first place why
  assertPlainJson(value, [])
  return canonicalJson(value)
}

/** Thrown by `strictText` where the value is not plain JSON (the caller then finds out where). */
const NOT_PLAIN = Symbol('not plain JSON')
/** A string JSON writes as it is between quotes: printable ASCII but `"` and `\`. */
const VERBATIM = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/

/**
 * `canonicalJson` of a value `assertPlainJson` accepts, in one walk that checks as it writes (the
 * check and the writing were two walks, and the writing used `JSON.stringify` for every number,
 * string and member name); anything else throws NOT_PLAIN. The same text: numbers by ToString
 * (what JSON.stringify uses for finite numbers), strings and names by JSON.stringify unless they
 * are printable ASCII without `"` or `\`, members sorted by UTF-16 code units (the default sort),
 * `undefined` members left out, array holes written as null (as JSON.stringify writes them).
 */
function strictText(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return quoted(value)
    case 'number':
      if (!Number.isFinite(value)) throw NOT_PLAIN
      return String(value)
    case 'boolean':
      return value ? 'true' : 'false'
    case 'object': {
      if (value === null) return 'null'
      if (Array.isArray(value)) {
        let out = '['
        for (let i = 0; i < value.length; i++) {
          if (i > 0) out += ','
          out += i in value ? strictText(value[i]) : 'null'
        }
        return out + ']'
      }
      const proto: unknown = Object.getPrototypeOf(value)
      if (proto !== Object.prototype && proto !== null) throw NOT_PLAIN
      const record = value as Record<string, unknown>
      const keys = Object.keys(record).sort()
      let out = '{'
      let first = true
      for (const k of keys) {
        const v = record[k]
        if (v === undefined) continue
        out += (first ? '' : ',') + quoted(k) + ':' + strictText(v)
        first = false
      }
      return out + '}'
    }
    default:
      throw NOT_PLAIN
  }
}

function quoted(s: string): string {
  if (VERBATIM.test(s)) return '"' + s + '"'
  if (LONE_SURROGATE.test(s)) throw NOT_PLAIN
  return JSON.stringify(s)
}

/**
 * `path`: the member names and array indexes from the root down to `value`. The JSON pointer is
 * only written for an error (building one per member was most of the check's time on every call).
 */
function assertPlainJson(value: unknown, path: Array<string | number>): void {
  if (value === null || typeof value === 'boolean') return
  if (typeof value === 'string') {
    if (LONE_SURROGATE.test(value)) throw new TypeError(`lone surrogate in the string at '${pointerOf(path)}'`)
    return
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`non-finite number at '${pointerOf(path)}'`)
    return
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (!(i in value)) continue // a hole, skipped as forEach skips it
      path.push(i)
      assertPlainJson(value[i], path)
      path.pop()
    }
    return
  }
  if (typeof value === 'object') {
    const proto: unknown = Object.getPrototypeOf(value)
    if (proto === Object.prototype || proto === null) {
      const record = value as Record<string, unknown>
      for (const k of Object.keys(record)) {
        path.push(k)
        if (LONE_SURROGATE.test(k)) throw new TypeError(`lone surrogate in the member name at '${pointerOf(path)}'`)
        const v = record[k]
        if (v !== undefined) assertPlainJson(v, path)
        path.pop()
      }
      return
    }
  }
  throw new TypeError(`${value === undefined ? 'undefined' : typeof value === 'object' ? 'a non-plain object' : typeof value} at '${pointerOf(path)}' is not JSON`)
}

/** RFC 6901 JSON pointer of a path. */
function pointerOf(path: ReadonlyArray<string | number>): string {
  let out = ''
  for (const segment of path) out += '/' + (typeof segment === 'number' ? String(segment) : segment.replace(/~/g, '~0').replace(/\//g, '~1'))
  return out
}
