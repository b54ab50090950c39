import { z } from 'zod'
import { validationFailed } from '../../../core/errors.js'
import { FULL_RUFID, SHORT_RUFID, VERSION_LABEL } from '../../../core/rufid.js'
import { BRANCH_NAME, createInputSchema } from '../../../engine/index.js'

/**
 * Request bodies the REST door checks itself (the engine validates the rest with its own zod
 * schemas: create, publish, API keys). The routes parse with these and `/openapi.json` is
 * generated from them, so the description cannot drift from what is accepted. RUFID and version
 * fields carry the grammar `FunctionRegistry.target` enforces; the routes call it first, so a
 * malformed RUFID stays 1001 and only the other fields can fail here (1006).
 */

const rufid = z.string().regex(new RegExp(`${SHORT_RUFID.source}|${FULL_RUFID.source}`))
  .describe('short RUFID (12 characters) or full RUFID rufid:<hash>:v<n>:<tenant>')
const version = z.union([z.string().regex(VERSION_LABEL), z.literal('')]).nullable().optional()
  .describe('v<n>: that version (absent, empty or null: the newest live version)')
/** What a function is called with (execution-service's normalizeArguments). */
const args = z.union([z.record(z.string(), z.unknown()), z.array(z.unknown())]).nullable().optional()
  .describe('named arguments (an object) or positional ones (an array); absent or null: none')
/** The function name rule of the create schema (one definition for both). */
const functionName = createInputSchema({ maxSourceBytes: 1 }).shape.function_name

/** POST /api/v1/functions/resolve */
export const resolveRequestSchema = z.object({ rufid, version })

/** POST /api/v1/functions/{rufid}/execute */
export const executeRequestSchema = z.object({ arguments: args, version })

/** POST /api/v1/functions/branches/{branch}/invoke (the branch is in the path) */
export const invokeRequestSchema = z.object({ function_name: functionName, arguments: args })

/** Path parameter {branch} of invoke */
export const branchNameSchema = z.string().regex(BRANCH_NAME)

/** Parses a request body with one of the schemas above; 1006 with the JSON pointer of every problem. */
export function parseRequest<T>(schema: z.ZodType<T>, body: unknown, what: string): T {
  const parsed = schema.safeParse(body)
  if (parsed.success) return parsed.data
  const problems = parsed.error.issues.map((issue) => ({
    pointer: issue.path.map((p) => '/' + String(p).replace(/~/g, '~0').replace(/\//g, '~1')).join(''),
    message: issue.message,
  }))
  const first = problems[0]
  throw validationFailed(`invalid ${what}: ${first ? `${first.pointer || '/'} ${first.message}` : 'rejected'}`, problems)
}
