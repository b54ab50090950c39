import type { IncomingMessage } from 'node:http'
import type { Readable } from 'node:stream'
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib'
import { SvcError } from '../core/errors.js'

/**
 * The JSON body reader of the HTTP doors (REST, GraphQL over HTTP): the body of a POST, PUT or
 * PATCH is JSON whatever its Content-Type says (curl -d sends a form type), read up to a size
 * limit and parsed. It replaces @koa/bodyparser (co-body, raw-body, inflation, type-is, bourne),
 * which did the same with five packages' worth of work per request, and keeps its answers:
 *
 * - over the limit (the declared Content-Length, or the bytes read, decompressed ones counted): 413
 *   (1006, `payload_too_large`), the rest of the body left unread;
 * - malformed JSON, a body that was cut off, an unknown Content-Encoding: 400 (1006);
 * - a key `__proto__`, or `constructor` holding a `prototype`, anywhere in the document: 400 (1006),
 *   as @hapi/bourne refused them (prototype poisoning of code that merges the body);
 * - a document nested deeper than MAX_JSON_DEPTH arrays and objects: 400 (1006), before anything
 *   recursive walks it (canonical JSON, manifest checks, serialization to the sandbox ran out of
 *   stack on 20,000 levels: a 500 where the caller's input was at fault);
 * - `gzip`, `deflate`, `br` and `identity` Content-Encodings are read; a leading BOM is ignored;
 * - an empty body reads as `''` (no document), other methods as `undefined` (nothing read).
 */
export async function readJsonBody(req: IncomingMessage, limitBytes: number): Promise<unknown> {
  const method = req.method
  if (method !== 'POST' && method !== 'PUT' && method !== 'PATCH') return undefined
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase()
  const declared = req.headers['content-length']
  if (encoding === 'identity' && declared !== undefined && Number(declared) > limitBytes) {
    req.pause()
    throw bodyTooLarge()
  }
  const text = await readText(decoded(req, encoding), limitBytes, req)
  if (text === '') return ''
  // before parsing: V8's parser slows down more than linearly past ~500,000 levels
  if (text.length > MAX_JSON_DEPTH && depthExceeds(text, MAX_JSON_DEPTH)) {
    throw malformed(`the document is nested deeper than ${MAX_JSON_DEPTH} arrays and objects`)
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw malformed(err instanceof Error ? err.message : 'malformed JSON')
  }
  if (SUSPECT_KEY.test(text)) refusePoisoning(value)
  return value
}

/** The deepest nesting of arrays and objects a JSON body may have. */
export const MAX_JSON_DEPTH = 1000

/**
 * Whether the JSON `text` (not parsed yet: it may be malformed, then the answer only counts
 * brackets outside strings) nests arrays and objects deeper than `max`: one scan that skips
 * strings and stops at the first level past `max` (a document deeper than `max` is at least `max`
 * characters long, so shorter bodies are never scanned).
 */
function depthExceeds(text: string, max: number): boolean {
  let depth = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 34 /* " */) {
      // to the closing quote: a backslash escapes the next character
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i)
        if (d === 92 /* \ */) i++
        else if (d === 34) break
      }
    } else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > max) return true
    } else if (c === 93 /* ] */ || c === 125 /* } */) {
      depth--
    }
  }
  return false
}

/** A body over the size limit: 413 (1006 `payload_too_large`). */
export function bodyTooLarge(): SvcError {
  return new SvcError('VALIDATION_FAILED', 'request body exceeds the size limit', {
    reason: 'payload_too_large', details: { limit: 'see server.body_limit_bytes' },
  })
}

const malformed = (why: string): SvcError => new SvcError('VALIDATION_FAILED', `malformed request body: ${why}`)

function decoded(req: IncomingMessage, encoding: string): Readable {
  switch (encoding) {
    case 'identity': return req
    case 'gzip': case 'x-gzip': return req.pipe(createGunzip())
    case 'deflate': return req.pipe(createInflate())
    case 'br': return req.pipe(createBrotliDecompress())
    default:
      req.pause()
      throw new SvcError('VALIDATION_FAILED', `unsupported Content-Encoding: ${encoding}`)
  }
}

function readText(stream: Readable, limitBytes: number, req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const cleanup = (): void => {
      stream.off('data', onData)
      stream.off('end', onEnd)
      stream.off('error', onError)
      req.off('aborted', onAborted)
      req.off('close', onClose)
    }
    const fail = (err: SvcError): void => {
      cleanup()
      if (stream !== req) stream.destroy()
      req.unpipe()
      req.pause()
      reject(err)
    }
    const onData = (chunk: Buffer): void => {
      size += chunk.length
      if (size > limitBytes) fail(bodyTooLarge())
      else chunks.push(chunk)
    }
    const onEnd = (): void => {
      cleanup()
      const buffer = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)
      const text = buffer.toString('utf8')
      resolve(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text)
    }
    const onError = (err: Error): void => fail(malformed(err.message))
    const onAborted = (): void => fail(malformed('the request was aborted'))
    // the client went away before the body ended
    const onClose = (): void => {
      if (!req.complete) onAborted()
    }
    stream.on('data', onData)
    stream.once('end', onEnd)
    stream.once('error', onError)
    req.once('aborted', onAborted)
    req.once('close', onClose)
  })
}

/** `"__proto__":` or `"constructor":`, plain or with \u escapes (what @hapi/bourne looks for first). */
const SUSPECT_KEY = new RegExp([
  String.raw`"(?:_|\\u005[Ff])(?:_|\\u005[Ff])(?:p|\\u0070)(?:r|\\u0072)(?:o|\\u006[Ff])(?:t|\\u0074)(?:o|\\u006[Ff])(?:_|\\u005[Ff])(?:_|\\u005[Ff])"\s*:`,
  String.raw`"(?:c|\\u0063)(?:o|\\u006[Ff])(?:n|\\u006[Ee])(?:s|\\u0073)(?:t|\\u0074)(?:r|\\u0072)(?:u|\\u0075)(?:c|\\u0063)(?:t|\\u0074)(?:o|\\u006[Ff])(?:r|\\u0072)"\s*:`,
].join('|'))

function refusePoisoning(root: unknown): void {
  const pending: unknown[] = [root]
  while (pending.length > 0) {
    const node = pending.pop()
    if (node === null || typeof node !== 'object') continue
    if (Array.isArray(node)) {
      // one by one: spreading a long array into push's arguments overflowed the stack (a 500)
      for (const item of node as unknown[]) pending.push(item)
      continue
    }
    const obj = node as Record<string, unknown>
    if (Object.prototype.hasOwnProperty.call(obj, '__proto__')) throw malformed('a key __proto__ is not allowed')
    const ctor = obj.constructor
    if (Object.prototype.hasOwnProperty.call(obj, 'constructor') && ctor !== null && typeof ctor === 'object' &&
      Object.prototype.hasOwnProperty.call(ctor, 'prototype')) {
      throw malformed('a key constructor holding a prototype is not allowed')
    }
    for (const key in obj) pending.push(obj[key])
  }
}
