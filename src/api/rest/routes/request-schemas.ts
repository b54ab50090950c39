import { z } from 'zod'
import { validationFailed } from '../../../core/errors.js'
import { FULL_RUFID, SHORT_RUFID, TENANT_ID } from '../../../core/rufid.js'
import { MAX_BRANCH_KEY_LENGTH, MIN_BRANCH_KEY_LENGTH } from '../../../engine/branches/branch-keys.js'
import {
  AUDIT_NO_TENANT, BRANCH_NAME, createInputSchema, MAX_AUDIT_PAGE, MAX_LIST_PAGE, MAX_SEARCH_PAGE, MAX_TELEMETRY_BUCKETS, TELEMETRY_WINDOW,
} from '../../../engine/index.js'

/**
 * Request bodies the REST door checks itself (the engine validates the rest with its own zod
 * schemas: create, publish, API keys). The routes parse with these and `/openapi.json` is
 * generated from them, so the description cannot drift from what is accepted. RUFID and version
 * fields carry the grammar `FunctionRegistry.target` enforces; the routes call it first, so a
 * malformed RUFID stays 1001 and only the other fields can fail here (1006).
 *
 * Each body carries `.meta({ id })`, its name under `components/schemas` in `/openapi.json` (see
 * response-schemas.ts); the bodies the engine validates are named where the route declares them.
 */

/** A full RUFID whose version has at most 15 digits (every such number is exact; a longer one is refused, 1001). */
const BOUNDED_FULL_RUFID = FULL_RUFID.source.replace(':v([1-9][0-9]*):', ':v([1-9][0-9]{0,14}):')
if (BOUNDED_FULL_RUFID === FULL_RUFID.source) throw new Error('request-schemas: the full RUFID grammar changed; bound its version again')
const rufid = z.string().regex(new RegExp(`${SHORT_RUFID.source}|${BOUNDED_FULL_RUFID}`))
  .describe('short RUFID (12 characters) or full RUFID rufid:<hash>:v<n>:<tenant>')

/** Path parameter {rufid} (checked by `FunctionRegistry.target`: 1001 when malformed) */
export const rufidParamSchema = rufid
/** `v<n>` with at most 15 digits (every such number is exact; a longer one names no version). */
export const VERSION_QUERY = /^v[1-9][0-9]{0,14}$/
const version = z.union([z.string().regex(VERSION_QUERY), z.literal('')]).nullable().optional()
  .describe('v<n>: that version (absent, empty or null: the newest live version)')
/** What a function is called with (execution-service's normalizeArguments). */
const argumentsValue = z.union([z.record(z.string(), z.unknown()), z.array(z.unknown())])
  .meta({ id: 'Arguments', description: 'named arguments (an object) or positional ones (an array)' })
const args = argumentsValue.nullable().optional()
  .describe('named arguments (an object) or positional ones (an array); absent or null: none')
/** The function name rule of the create schema (one definition for both). */
const functionName = createInputSchema({ maxSourceBytes: 1 }).shape.function_name

/** POST /api/v1/functions/resolve */
export const resolveRequestSchema = z.object({ rufid, version }).meta({ id: 'ResolveRequest' })

/** POST /api/v1/functions/{rufid}/execute */
export const executeRequestSchema = z.object({ arguments: args, version }).meta({ id: 'ExecuteRequest' })

/** POST /api/v1/functions/branches/{branch}/invoke (the branch is in the path) */
export const invokeRequestSchema = z.object({ function_name: functionName, arguments: args }).meta({ id: 'InvokeRequest' })

/** Path parameter {branch} of invoke */
export const branchNameSchema = z.string().regex(BRANCH_NAME)

/** What a deploy body adds to a create body (the engine's deploy schema checks the same rules). */
export const branchFields = {
  branch: branchNameSchema.optional().describe('default main'),
  branch_key: z.string().min(MIN_BRANCH_KEY_LENGTH).max(MAX_BRANCH_KEY_LENGTH).nullable().optional()
    .describe('required to move an existing branch; a new branch gets this key, or a minted one'),
}

/** POST /api/v1/execution/execute (service-spec §4.3); the engine reads it (native-execution.ts). */
export const nativeExecuteRequestSchema = z.object({
  rufid: z.string().regex(new RegExp(`^(?:rufid:)?${SHORT_RUFID.source.slice(1, -1)}$|${BOUNDED_FULL_RUFID}`)).describe('rufid:<hash>, the short or the full RUFID'),
  function_name: z.string().optional(),
  namespace: z.string().regex(TENANT_ID).optional().describe('the namespace to run in when the X-Svc-Namespace header is absent'),
  source_code: z.string().optional().describe('registers the function when the RUFID is unknown and the source hashes to it'),
  input_data: argumentsValue.optional(),
  signature: z.string().optional(),
  language: z.string().optional(),
}).meta({ id: 'NativeExecuteRequest' })

/** POST /api/v1/functions/signature: a source to derive the signature from, or a signature to read. */
export const signatureRequestSchema = z.union([
  z.object({
    function_name: z.string().min(1).max(128),
    language: z.string().min(1).max(32),
    source_code: z.string().min(1).max(1024 * 1024),
  }).strict().meta({ id: 'SignatureOfSource' }),
  z.object({ signature: z.string().max(1024) }).strict().meta({ id: 'SignatureText' }),
]).meta({ id: 'SignatureRequest' })

/** POST /api/v1/federation/nodes (service-spec §2.7); federation checks it (documentation only). */
export const registrationRequestSchema = z.object({
  node_id: z.string().describe('libp2p PeerId'),
  endpoint: z.string(),
  capabilities: z.object({ languages: z.array(z.string()), max_concurrent: z.int(), protocols: z.array(z.string()) }).partial().optional(),
  auth: z.object({ certificate: z.string().describe('PEM node certificate issued by the federation CA, binding node_id'), public_key: z.string().optional() }),
}).meta({ id: 'NodeRegistration' })

/** POST /api/v1/federation/sync; federation checks it (documentation only). */
export const syncRequestSchema = z.object({
  added: z.array(z.record(z.string(), z.unknown())),
  updated: z.array(z.record(z.string(), z.unknown())),
  deleted: z.array(z.record(z.string(), z.unknown())),
  timestamp: z.string(),
  vector: z.record(z.string(), z.number()).describe('origin → highest sequence seen'),
  certificates: z.record(z.string(), z.string()).describe("origin → its federation certificate (PEM), for the origins of the batch's changes"),
}).partial().meta({ id: 'SyncRequest' })

/** Parses a request body with one of the schemas above; 1006 with the JSON pointer of every problem. */
export function parseRequest<T>(schema: z.ZodType<T>, body: unknown, what: string): T {
  const parsed = schema.safeParse(body)
  if (parsed.success) return parsed.data
  throw problemsOf(parsed.error, `invalid ${what}`)
}

function problemsOf(error: z.ZodError, what: string): ReturnType<typeof validationFailed> {
  const problems = error.issues.map((issue) => ({
    pointer: issue.path.map((p) => '/' + String(p).replace(/~/g, '~0').replace(/\//g, '~1')).join(''),
    message: issue.message,
  }))
  const first = problems[0]
  return validationFailed(`${what}: ${first ? `${first.pointer || '/'} ${first.message}` : 'rejected'}`, problems)
}

// ---- query parameters ------------------------------------------------------------------------
//
// Every query parameter of every route is declared in one of these and parsed strictly before the
// caller is admitted: a value that is empty or blank (`?version=`, `?q=%20`), a number that is not
// one (`limit=abc`), out of its range (`limit=0`), a value that breaks its pattern (`version=one`,
// `window=944799h`) or a parameter given twice is 1006 naming it — never read as "absent" or as
// "all" (a `DELETE …?version=` from an unset shell variable deleted every version). Each schema
// states its rule in the document too (minLength, pattern, bounds), so what the document allows
// is what the node accepts. Parameters a route does not declare are ignored.

/** A value with something in it: not empty, not only ASCII whitespace (what `parseQuery` refuses first). */
export const NOT_BLANK = /[^\t\n\v\f\r ]/
const text = () => z.string().min(1).regex(NOT_BLANK)
const pageLimit = (max: number) => z.int().min(1).max(max).optional().describe(`page size, 1 to ${max} (default 20)`)
const pageOffset = z.int().min(0).optional().describe('items to skip (default 0)')
/** An item of a comma-separated list: non-blank, and no comma (the list is split on commas). */
const NO_COMMA = /^[^,]*$/
const commaList = z.array(text().regex(NO_COMMA)).min(1).optional()
const versionQuery = z.string().regex(VERSION_QUERY).optional()
  .describe('v<n>: that version (absent: the newest live version, or every live version for a delete)')
/**
 * An ISO 8601 time the audit log reads (`Date.parse`): a date from 1970, optionally a time with
 * minutes, seconds and a fraction, and `Z` or an offset (without one: the node's local time).
 */
export const AUDIT_TIME = /^(?:19[7-9][0-9]|[2-9][0-9]{3})-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])(?:T(?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\.[0-9]{1,9})?)?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])?)?$/
/** An audit entry id (`next_cursor`): `au_` and 26 characters of Crockford base 32. */
export const AUDIT_CURSOR = /^au_[0-9A-HJKMNP-TV-Z]{26}$/

/** Path parameter {id} of /v1/executions: `ex_` and 26 characters of Crockford base 32 (ExecutionService.get checks the same). */
export const executionIdSchema = z.string().regex(/^ex_[0-9A-HJKMNP-TV-Z]{26}$/).describe('an execution id (ex_ and 26 Crockford base 32 characters)')

/** GET /api/v1/functions */
export const listQuerySchema = z.object({
  search: text().optional().describe('words to find in name, description, signature and tags'),
  tags: commaList.describe('comma-separated tags; a function must carry all of them'),
  limit: pageLimit(MAX_LIST_PAGE),
  offset: pageOffset,
})

/** GET and DELETE /api/v1/functions/{rufid}, GET …/export, …/source */
export const versionQuerySchema = z.object({ version: versionQuery })

/** GET /v1/marketplace/functions/search (decisions.md "/v1 group field names") */
export const searchQuerySchema = z.object({
  q: text().optional().describe('search text'),
  language: text().optional(),
  author: text().optional().describe('exactly this author (the publishing user)'),
  tags: commaList.describe('comma-separated tags'),
  limit: pageLimit(MAX_SEARCH_PAGE),
  offset: pageOffset,
})

/** GET /v1/telemetry/functions/{rufid} */
export const telemetryQuerySchema = z.object({
  window: z.string().regex(TELEMETRY_WINDOW).optional().describe('a duration such as 30s, 15m, 6h or 7d, at most 30d (default 15m)'),
})

/** GET /v1/telemetry/functions/{rufid}/series */
export const telemetrySeriesQuerySchema = z.object({
  window: telemetryQuerySchema.shape.window.describe('a duration such as 30s, 15m, 6h or 7d, at most 30d (default 1h)'),
  buckets: z.int().min(1).max(MAX_TELEMETRY_BUCKETS).optional().describe(`buckets the window is cut into, 1 to ${MAX_TELEMETRY_BUCKETS} (default 30)`),
  version: versionQuery,
})

/** GET /api/v1/functions/branches */
export const branchQuerySchema = z.object({ function_name: functionName.optional().describe('one lineage only') })

/** GET /api/v1/audit */
export const auditQuerySchema = z.object({
  from: z.string().regex(AUDIT_TIME).optional().describe('ISO 8601 time (1970 or later): entries at or after it'),
  to: z.string().regex(AUDIT_TIME).optional().describe('ISO 8601 time (1970 or later): entries at or before it'),
  tenant: z.string().regex(new RegExp(`${TENANT_ID.source}|^${AUDIT_NO_TENANT}$`)).optional()
    .describe(`one tenant (an operator: any; ${AUDIT_NO_TENANT}: entries without a tenant)`),
  operation: text().optional(),
  rufid: text().optional().describe('entries whose RUFID is or contains this'),
  limit: z.int().min(1).max(MAX_AUDIT_PAGE).optional().describe(`page size, 1 to ${MAX_AUDIT_PAGE} (default 100)`),
  cursor: z.string().regex(AUDIT_CURSOR).optional().describe('next_cursor of the previous page'),
})

/** The kind of value a query parameter's schema holds (optional, default and pipes unwrapped): `number`, `integer`, `array`, … */
function kindOf(schema: z.ZodType): string {
  let def = schema._zod.def as { type: string; format?: string; innerType?: z.ZodType; in?: z.ZodType }
  while (def.innerType !== undefined || def.type === 'pipe') {
    const inner = def.innerType ?? def.in!
    def = inner._zod.def as typeof def
  }
  return def.type === 'number' && (def.format === 'safeint' || def.format === 'int32') ? 'integer' : def.type
}

const INTEGER_TEXT = /^-?(0|[1-9][0-9]*)$/
const NUMBER_TEXT = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/

/**
 * The query parameters a schema declares, read from Koa's parsed query string: an empty or blank
 * value is refused, numbers are read from their decimal text, lists from comma-separated text
 * (every item non-blank); 1006 with a pointer per problem.
 */
export function parseQuery<T extends z.ZodObject<z.ZodRawShape>>(schema: T, raw: Record<string, string | string[] | undefined>): z.output<T> {
  const values: Record<string, unknown> = {}
  const problems: Array<{ pointer: string; message: string }> = []
  for (const [name, field] of Object.entries(schema.shape)) {
    const given = raw[name]
    if (given === undefined) continue
    if (Array.isArray(given)) {
      problems.push({ pointer: `/${name}`, message: `query parameter ${name} is given ${given.length} times; give it once` })
      continue
    }
    if (!NOT_BLANK.test(given)) {
      problems.push({ pointer: `/${name}`, message: `query parameter ${name} is ${given === '' ? 'empty' : 'blank'}: give a value, or leave the parameter out` })
      continue
    }
    const kind = kindOf(field as z.ZodType)
    if (kind === 'number' || kind === 'integer') {
      const integer = kind === 'integer'
      if (!(integer ? INTEGER_TEXT : NUMBER_TEXT).test(given)) {
        problems.push({ pointer: `/${name}`, message: `query parameter ${name} must be ${integer ? 'an integer' : 'a number'}, not ${JSON.stringify(given)}` })
        continue
      }
      values[name] = Number(given)
    } else if (kind === 'array') {
      const items = given.split(',')
      const blank = items.findIndex((item) => !NOT_BLANK.test(item))
      if (blank !== -1) {
        problems.push({ pointer: `/${name}/${blank}`, message: `query parameter ${name} has an empty or blank item: separate non-blank items with commas` })
        continue
      }
      values[name] = items
    } else {
      values[name] = given
    }
  }
  if (problems.length > 0) throw validationFailed(`invalid query: ${problems[0]!.message}`, problems)
  const parsed = schema.safeParse(values)
  if (parsed.success) return parsed.data
  throw problemsOf(parsed.error, 'invalid query')
}
