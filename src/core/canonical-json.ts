/**
 * JSON Canonicalization Scheme (RFC 8785): object members sorted by the UTF-16 code units of
 * their names, no whitespace, strings and numbers serialized as ECMAScript does (which is what
 * JCS specifies). `undefined` members are omitted as JSON.stringify omits them.
 */
export function canonicalJson(value: unknown): string {
  return written(value, false)
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
    return written(value, true)
  } catch (err) {
    if (err !== NOT_PLAIN) throw err
  }
  // the value has no canonical form: the checking walk names the first place why
  assertPlainJson(value, [])
  return canonicalJson(value)
}

/** Thrown by the strict writer where the value is not plain JSON (the caller then finds out where). */
const NOT_PLAIN = Symbol('not plain JSON')
/** A string JSON writes as it is between quotes: printable ASCII but `"` and `\`. */
const VERBATIM = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/

/**
 * The canonical text of both functions, in one walk. Numbers by ToString (what JSON.stringify uses
 * for finite numbers), strings and names by JSON.stringify unless they are printable ASCII without
 * `"` or `\`, members sorted by UTF-16 code units (the default sort, as RFC 8785 §3.2.3 requires),
 * `undefined` members left out, array holes written as null (as JSON.stringify writes them).
 * `strict` (canonicalJsonStrict; it was a second, checking walk): what `assertPlainJson` refuses
 * throws NOT_PLAIN. Otherwise (canonicalJson): any object is written by its own keys, an undefined
 * array element is null, a lone surrogate is escaped, and a value JSON cannot hold is a TypeError.
 */
function written(value: unknown, strict: boolean): string {
  switch (typeof value) {
    case 'string':
      return quoted(value, strict)
    case 'number':
      if (!Number.isFinite(value)) throw strict ? NOT_PLAIN : new TypeError('non-finite number in JSON')
      return String(value)
    case 'boolean':
      return value ? 'true' : 'false'
    case 'object': {
      if (value === null) return 'null'
      if (Array.isArray(value)) {
        let out = '['
        for (let i = 0; i < value.length; i++) {
          if (i > 0) out += ','
          const v: unknown = value[i]
          if (v !== undefined) out += written(v, strict)
          else if (strict && i in value) throw NOT_PLAIN
          else out += 'null'
        }
        return out + ']'
      }
      if (strict) {
        const proto: unknown = Object.getPrototypeOf(value)
        if (proto !== Object.prototype && proto !== null) throw NOT_PLAIN
      }
      const record = value as Record<string, unknown>
      let out = '{'
      let first = true
      for (const k of Object.keys(record).sort()) {
        const v = record[k]
        if (v === undefined) {
          // left out, but its name is still checked (as the checking walk always did)
          if (strict) quoted(k, true)
          continue
        }
        out += (first ? '' : ',') + quoted(k, strict) + ':' + written(v, strict)
        first = false
      }
      return out + '}'
    }
    case 'bigint':
      throw strict ? NOT_PLAIN : new TypeError('bigint in JSON')
    default:
      throw strict ? NOT_PLAIN : new TypeError(`${typeof value} is not JSON`)
  }
}

function quoted(s: string, strict: boolean): string {
  if (VERBATIM.test(s)) return '"' + s + '"'
  if (strict && LONE_SURROGATE.test(s)) throw NOT_PLAIN
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
