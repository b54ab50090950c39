/**
 * Whether `s` is at most `max` bytes in UTF-8, without encoding it when its length decides (a
 * UTF-16 code unit is 1 to 3 bytes). A size check that comes before work growing with the text
 * (hashing, lexing, decoding), so that an over-size input costs nothing more than this.
 */
export function fitsUtf8Bytes(s: string, max: number): boolean {
  if (s.length > max) return false
  if (s.length * 3 <= max) return true
  return Buffer.byteLength(s, 'utf8') <= max
}
