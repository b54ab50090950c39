import { z } from 'zod'
import { validationFailed } from '../../core/errors.js'
import { requirePermission } from '../authz.js'
import { deriveSignature } from '../../core/signature.js'
import type { Principal } from '../types.js'
import { jsonPointer, parseOrThrow } from '../validation.js'
import { FUNCTION_NAME, manifestFields } from './create-input.js'
import type { CreateResult, FunctionRegistry } from './function-registry.js'

/** Whitespace base64 tools put between characters (line breaks of `base64`'s 76-column output). */
const B64_SPACE = '[\\t\\n\\r ]*'
const B64_CHAR = `[A-Za-z0-9+/_-]${B64_SPACE}`
const B64_PAD = `=${B64_SPACE}`
/**
 * Base64 text (the standard or the URL-safe alphabet, padded or not, whitespace anywhere) of at
 * least one byte: what `/v1` publish decodes. The schema carries it, so the document says exactly
 * what the node accepts.
 */
export const BASE64_SOURCE = new RegExp(
  `^${B64_SPACE}(?:(?:${B64_CHAR}){4})*(?:(?:${B64_CHAR}){4}|(?:${B64_CHAR}){3}(?:${B64_PAD})?|(?:${B64_CHAR}){2}(?:${B64_PAD}${B64_PAD})?)$`,
)

/**
 * `/v1` publish (service-spec §2.3): runtime is a language plus version, e.g. `node20`,
 * `python3.11`; optionally a manifest and lockfile, validated as core create validates them. Any
 * other field is refused (1006), never silently dropped.
 */
export const publishInputSchema = z.object({
  name: z.string().regex(FUNCTION_NAME, 'must be an identifier of at most 128 characters'),
  runtime: z.string().regex(/^(node|nodejs|javascript|js|typescript|ts|python)(-?[0-9]+(\.[0-9]+)*)?$/i, 'must be a runtime such as node20, typescript5 or python3.11'),
  source: z.string().regex(BASE64_SOURCE, 'must be base64-encoded source'),
  description: z.string().max(4096).optional(),
  tags: z.array(z.string()).max(32).optional(),
  /** optional: read from the source when absent */
  signature: z.string().min(1).max(1024).optional(),
  ...manifestFields,
}).strict()

export function languageOfRuntime(runtime: string): string {
  const family = /^[a-z]+/i.exec(runtime)![0]!.toLowerCase()
  if (family === 'python') return 'python'
  if (family === 'typescript' || family === 'ts') return 'typescript'
  return 'javascript'
}

/**
 * Decodes a publish request and creates the function through the registry. rufid.create (1003) and
 * the size of the source (1006, its base64 text bounded before it is decoded, the decoded source
 * against registry.max_source_bytes) are checked before any work that grows with the source.
 */
export async function publishFunction(functions: FunctionRegistry, principal: Principal, raw: unknown): Promise<CreateResult> {
  requirePermission(principal, 'rufid.create')
  const unknown = raw !== null && typeof raw === 'object' && !Array.isArray(raw)
    ? Object.keys(raw).filter((k) => !Object.hasOwn(publishInputSchema.shape, k))
    : []
  if (unknown.length > 0) {
    // named one by one (zod's strict check reports them all at the root)
    const problems = unknown.map((k) => ({ pointer: jsonPointer([k]), message: 'is not a known field' }))
    throw validationFailed(`invalid publish request: ${problems[0]!.pointer} is not a known field (known: ${Object.keys(publishInputSchema.shape).join(', ')})`, problems)
  }
  const input = parseOrThrow(publishInputSchema, raw, 'publish request')
  const text = input.source.replace(/[\t\n\r ]+/g, '')
  // base64 of at most max_source_bytes bytes: 4 characters per 3 bytes, rounded up
  const maxText = 4 * Math.ceil(functions.maxSourceBytes / 3)
  if (text.length > maxText) {
    const message = `must decode to at most ${functions.maxSourceBytes} bytes`
    throw validationFailed(`invalid publish request: /source ${message}`, [{ pointer: '/source', message }])
  }
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(text) || text.length % 4 === 1) {
    throw validationFailed('source must be base64-encoded', [{ pointer: '/source', message: 'not base64' }])
  }
  const source_code = Buffer.from(text, 'base64').toString('utf8')
  functions.admitSource(principal, source_code, '/source')
  const language = languageOfRuntime(input.runtime)
  return functions.create(principal, {
    function_name: input.name,
    source_code,
    language,
    signature: input.signature ?? deriveSignature({ function_name: input.name, language, source_code }),
    description: input.description,
    tags: input.tags,
    manifest: input.manifest,
    lockfile: input.lockfile,
    manifest_text: input.manifest_text,
    lockfile_text: input.lockfile_text,
  })
}
