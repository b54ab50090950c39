import { closeSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs'
import { join } from 'node:path'

/**
 * Verifies a LevelDB directory's files without opening it (LevelDB 1.20's formats: `doc/log_format.md`
 * and `doc/table_format.md` of google/leveldb).
 *
 * Why before opening: LevelDB opened without `paranoid_checks` (classic-level cannot set it) drops
 * write-ahead-log records whose checksum fails, writes what is left to a table and deletes the log:
 * acknowledged writes would vanish silently, and a second start would see a clean database. Reading
 * the logs first turns that into a refusal to start. A table is only read when a key in it is, so a
 * truncated table would surface as read errors at run time: its footer is checked at start, and
 * every block's checksum by `svc node check`.
 */

export interface LevelFileProblem {
  file: string
  problem: string
}

const LOG_BLOCK = 32768
const LOG_HEADER = 7
const TABLE_FOOTER = 48
const TABLE_MAGIC_LO = 0x8b80fb57
const TABLE_MAGIC_HI = 0xdb477524
const BLOCK_TRAILER = 5

// CRC-32C (Castagnoli), as LevelDB stores it: masked.
const CRC_TABLE = (() => {
  const t = new Uint32Array(256)
  for (let i = 0; i < 256; i++) {
    let c = i
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1
    t[i] = c >>> 0
  }
  return t
})()

export function crc32c(data: Uint8Array, start = 0, end = data.length): number {
  let crc = 0xffffffff
  for (let i = start; i < end; i++) crc = CRC_TABLE[(crc ^ data[i]!) & 0xff]! ^ (crc >>> 8)
  return (crc ^ 0xffffffff) >>> 0
}

const unmask = (masked: number): number => {
  const rot = (masked - 0xa282ead8) >>> 0
  return ((rot >>> 17) | (rot << 15)) >>> 0
}

/**
 * Problems in one write-ahead log, judged as LevelDB's log reader judges them: a record cut short
 * at the end of the file is a write the process did not finish (not a problem); a checksum
 * mismatch or a record length past its block anywhere else is corruption LevelDB would drop.
 */
export function verifyLogFile(path: string): string[] {
  const buf = readFileSync(path)
  const problems: string[] = []
  for (let block = 0; block < buf.length; block += LOG_BLOCK) {
    const blockEnd = Math.min(block + LOG_BLOCK, buf.length)
    let at = block
    while (blockEnd - at >= LOG_HEADER) {
      const length = buf[at + 4]! | (buf[at + 5]! << 8)
      const type = buf[at + 6]!
      if (type === 0 && length === 0) break // preallocated zeros: the rest of the block is padding
      if (at + LOG_HEADER + length > blockEnd) {
        if (blockEnd === buf.length) {
          // past the end of the file: the writer died mid-record, which LevelDB ignores as well, and
          // LevelDB stops reading there. Whole records after it were written after a failed write:
          // LevelDB would never read them (acknowledged writes lost)
          const next = nextValidRecord(buf, at + 1)
          if (next >= 0) problems.push(`a torn record at offset ${at} hides the records written after it (from offset ${next})`)
          return problems
        }
        problems.push(`bad record length at offset ${at}`)
        break
      }
      const expected = unmask(buf.readUInt32LE(at))
      const actual = crc32c(buf, at + 6, at + LOG_HEADER + length)
      if (expected !== actual) {
        problems.push(`checksum mismatch in the record at offset ${at}`)
        break // LevelDB drops the rest of the block
      }
      at += LOG_HEADER + length
    }
  }
  return problems
}

/** The offset of the first whole record with a valid checksum at or after `from`, or -1. */
function nextValidRecord(buf: Buffer, from: number): number {
  for (let at = from; at + LOG_HEADER <= buf.length; at++) {
    const type = buf[at + 6]!
    if (type < 1 || type > 4) continue
    const length = buf[at + 4]! | (buf[at + 5]! << 8)
    const blockEnd = Math.min((Math.floor(at / LOG_BLOCK) + 1) * LOG_BLOCK, buf.length)
    if (at + LOG_HEADER + length > blockEnd) continue
    if (unmask(buf.readUInt32LE(at)) === crc32c(buf, at + 6, at + LOG_HEADER + length)) return at
  }
  return -1
}

interface BlockHandle {
  offset: number
  size: number
}

function readVarint(buf: Uint8Array, pos: { at: number }): number {
  let result = 0
  let shift = 0
  for (let i = 0; i < 10; i++) {
    if (pos.at >= buf.length) throw new Error('varint runs past its block')
    const byte = buf[pos.at++]!
    result += (byte & 0x7f) * 2 ** shift
    if ((byte & 0x80) === 0) return result
    shift += 7
  }
  throw new Error('varint too long')
}

const readHandle = (buf: Uint8Array, pos: { at: number }): BlockHandle => ({ offset: readVarint(buf, pos), size: readVarint(buf, pos) })

/** Snappy's raw format (LevelDB compresses table blocks with it). */
export function snappyUncompress(input: Uint8Array): Uint8Array {
  const pos = { at: 0 }
  const length = readVarint(input, pos)
  const out = new Uint8Array(length)
  let o = 0
  const copy = (offset: number, len: number): void => {
    if (offset === 0 || offset > o || o + len > length) throw new Error('bad snappy copy')
    for (let i = 0; i < len; i++, o++) out[o] = out[o - offset]!
  }
  while (pos.at < input.length) {
    const tag = input[pos.at++]!
    const kind = tag & 3
    if (kind === 0) {
      let len = tag >>> 2
      if (len >= 60) {
        const bytes = len - 59
        len = 0
        for (let i = 0; i < bytes; i++) len |= input[pos.at++]! << (8 * i)
      }
      len += 1
      if (pos.at + len > input.length || o + len > length) throw new Error('bad snappy literal')
      out.set(input.subarray(pos.at, pos.at + len), o)
      o += len
      pos.at += len
    } else if (kind === 1) {
      const len = ((tag >>> 2) & 7) + 4
      const offset = ((tag >>> 5) << 8) | input[pos.at++]!
      copy(offset, len)
    } else if (kind === 2) {
      const len = (tag >>> 2) + 1
      const offset = input[pos.at]! | (input[pos.at + 1]! << 8)
      pos.at += 2
      copy(offset, len)
    } else {
      const len = (tag >>> 2) + 1
      const offset = (input[pos.at]! | (input[pos.at + 1]! << 8) | (input[pos.at + 2]! << 16) | (input[pos.at + 3]! << 24)) >>> 0
      pos.at += 4
      copy(offset, len)
    }
  }
  if (o !== length) throw new Error('snappy output shorter than announced')
  return out
}

/** A block's contents after checking its trailer's checksum, uncompressed. */
function readBlock(file: Uint8Array, handle: BlockHandle): Uint8Array {
  const end = handle.offset + handle.size + BLOCK_TRAILER
  if (end > file.length) throw new Error(`block at ${handle.offset} runs past the end of the file`)
  const type = file[handle.offset + handle.size]!
  const expected = unmask(Buffer.from(file.buffer, file.byteOffset, file.byteLength).readUInt32LE(handle.offset + handle.size + 1))
  if (crc32c(file, handle.offset, handle.offset + handle.size + 1) !== expected) throw new Error(`block checksum mismatch at offset ${handle.offset}`)
  const data = file.subarray(handle.offset, handle.offset + handle.size)
  if (type === 0) return data
  if (type === 1) return snappyUncompress(data)
  throw new Error(`bad block type ${type} at offset ${handle.offset}`)
}

/** The values of a block's entries (keys are prefix-compressed; only values are needed here). */
function blockValues(block: Uint8Array): Uint8Array[] {
  if (block.length < 4) throw new Error('block too short')
  const view = Buffer.from(block.buffer, block.byteOffset, block.byteLength)
  const restarts = view.readUInt32LE(block.length - 4)
  const limit = block.length - 4 - 4 * restarts
  if (limit < 0) throw new Error('bad restart count')
  const values: Uint8Array[] = []
  const pos = { at: 0 }
  while (pos.at < limit) {
    readVarint(block, pos) // shared key bytes
    const unshared = readVarint(block, pos)
    const valueLength = readVarint(block, pos)
    pos.at += unshared
    if (pos.at + valueLength > limit) throw new Error('block entry runs past its block')
    values.push(block.subarray(pos.at, pos.at + valueLength))
    pos.at += valueLength
  }
  return values
}

/**
 * Problems in one table file. `full`: every block's checksum (reads the whole file); otherwise the
 * footer only (its magic number: a truncated or overwritten table has none).
 */
export function verifyTableFile(path: string, options: { full: boolean }): string[] {
  const size = statSync(path).size
  if (size < TABLE_FOOTER) return [`${size} bytes: shorter than a table footer (truncated)`]
  if (!options.full) {
    const fd = openSync(path, 'r')
    try {
      const footer = Buffer.alloc(8)
      readSync(fd, footer, 0, 8, size - 8)
      return footer.readUInt32LE(0) === TABLE_MAGIC_LO && footer.readUInt32LE(4) === TABLE_MAGIC_HI ? [] : ['no table magic number at its end (truncated or overwritten)']
    } finally {
      closeSync(fd)
    }
  }
  const file = readFileSync(path)
  if (file.readUInt32LE(size - 8) !== TABLE_MAGIC_LO || file.readUInt32LE(size - 4) !== TABLE_MAGIC_HI) {
    return ['no table magic number at its end (truncated or overwritten)']
  }
  try {
    const pos = { at: size - TABLE_FOOTER }
    const metaindex = readHandle(file, pos)
    const index = readHandle(file, pos)
    // filter blocks, when a filter policy wrote any, are named by the metaindex block
    for (const value of blockValues(readBlock(file, metaindex))) readBlock(file, readHandle(value, { at: 0 }))
    for (const value of blockValues(readBlock(file, index))) readBlock(file, readHandle(value, { at: 0 }))
    return []
  } catch (err) {
    return [(err as Error).message]
  }
}

/**
 * Verifies every write-ahead log and table of a LevelDB directory (absent directory: nothing to
 * check). `full` also checks every table block's checksum.
 */
export function verifyLevelDirectory(dir: string, options: { full: boolean }): LevelFileProblem[] {
  let names: string[]
  try {
    names = readdirSync(dir)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw err
  }
  const problems: LevelFileProblem[] = []
  for (const name of names.sort()) {
    const path = join(dir, name)
    const found = /^\d+\.log$/.test(name) ? verifyLogFile(path)
      : /^\d+\.(ldb|sst)$/.test(name) ? verifyTableFile(path, options)
        : []
    for (const problem of found) problems.push({ file: name, problem })
  }
  if (names.some((n) => /^MANIFEST-\d+$/.test(n)) && !names.includes('CURRENT')) problems.push({ file: 'CURRENT', problem: 'missing (the database names no manifest)' })
  return problems
}
