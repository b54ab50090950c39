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
