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
  if (Array.isArray(value)) return '[' + value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',') + ']'
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
  assertPlainJson(value, [])
  return canonicalJson(value)
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
