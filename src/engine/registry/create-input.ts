import { z } from 'zod'
import { sandboxFamilyOf } from '../sandbox/languages.js'

/** A function name is an identifier in the languages svc-node runs (letters, digits, `_`, `$`). */
export const FUNCTION_NAME = /^[\p{L}_$][\p{L}\p{N}_$]{0,127}$/u
const TAG = /^[\p{L}\p{N}_.:+#-]{1,64}$/u
const LANGUAGE = /^[A-Za-z][A-Za-z0-9+#._-]{0,31}$/

const anyCase = (word: string): string => [...word].map((c) => (/[a-z]/.test(c) ? `[${c}${c.toUpperCase()}]` : c)).join('')
/**
 * The language values a create accepts, as the published schema states them (a JSON Schema pattern
 * has no flags: each letter in either case): the names rufid-v1 gives the js and python families
 * that the sandbox runs, and versioned Python (`python3.12`). The registry refuses any other
 * (`FunctionRegistry.admitLanguage`, 1006 naming it and what the node runs); a test holds the two equal.
 */
export const RUNNABLE_LANGUAGE_PATTERN = `^(?:${[
  ...['javascript', 'js', 'node', 'nodejs', 'typescript', 'ts', 'jsx', 'tsx', 'mjs', 'cjs', 'python', 'py'].filter((name) => sandboxFamilyOf(name) !== undefined).map(anyCase),
  `(?:${anyCase('python')}|${anyCase('py')})3(?:\\.[0-9]+)*`,
].join('|')})$`

/** Longest manifest_text / lockfile_text (a request body is capped at 1 MiB anyway). */
export const MAX_FILE_TEXT = 1024 * 1024

/**
 * A manifest object (function.svc.json), checked by the ManifestService against
 * schemas/function_manifest.schema.json. The `id` names it in /openapi.json (`Manifest`), where the
 * requests and answers that carry one refer to it.
 */
export const manifestObjectSchema = z.record(z.string(), z.unknown())
  .meta({ id: 'Manifest', description: 'function.svc.json as an object (schemas/function_manifest.schema.json)' })
/** A lockfile object (function.lock.json, schemas/function_lock.schema.json); `Lockfile` in /openapi.json. */
export const lockfileObjectSchema = z.record(z.string(), z.unknown())
  .meta({ id: 'Lockfile', description: 'function.lock.json as an object (schemas/function_lock.schema.json)' })

/**
 * The manifest and lockfile of a create or publish request (validated by the ManifestService):
 * the objects, and optionally the files' exact text, which export returns byte for byte.
 */
export const manifestFields = {
  manifest: manifestObjectSchema.nullable().optional(),
  lockfile: lockfileObjectSchema.nullable().optional(),
  /** function.svc.json exactly as written (must parse to `manifest`) */
  manifest_text: z.string().max(MAX_FILE_TEXT).nullable().optional(),
  /** function.lock.json exactly as written (must parse to `lockfile`) */
  lockfile_text: z.string().max(MAX_FILE_TEXT).nullable().optional(),
}

/** The per-call limits a create request may set (`FunctionLimits` in /openapi.json). */
const functionLimitsSchema = z
  .object({
    timeout_ms: z.number().int().positive().optional(),
    memory_mb: z.number().int().positive().optional(),
    cpu_ms: z.number().int().positive().optional(),
  })
  .strict()
  .meta({ id: 'FunctionLimits' })

export interface CreateInputLimits {
  maxSourceBytes: number
}

export function createInputSchema(limits: CreateInputLimits) {
  return z.object({
    function_name: z.string().regex(FUNCTION_NAME, 'must be an identifier of at most 128 characters'),
    source_code: z
      .string()
      .min(1, 'must not be empty')
      .refine((s) => Buffer.byteLength(s, 'utf8') <= limits.maxSourceBytes, {
        message: `must be at most ${limits.maxSourceBytes} bytes`,
      }),
    signature: z.string().trim().min(1, 'must not be empty').max(1024),
    language: z.string().regex(LANGUAGE, 'must be a language name such as python, javascript or typescript')
      .meta({ pattern: RUNNABLE_LANGUAGE_PATTERN, maxLength: 32, description: 'a language this node runs (javascript, typescript, python and their aliases); another is refused with 1006' }),
    description: z.string().max(4096).optional(),
    tags: z.array(z.string().regex(TAG, 'tags are 1–64 letters, digits or _.:+#-')).max(32).optional(),
    ...manifestFields,
    limits: functionLimitsSchema.optional(),
  })
}

export type CreateFunctionInput = z.infer<ReturnType<typeof createInputSchema>>

export const resolveInputSchema = z.object({
  rufid: z.unknown(),
  version: z.unknown().optional(),
})
