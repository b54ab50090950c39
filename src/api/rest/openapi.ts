import { z } from 'zod'
import { ALWAYS_ERRORS, type ResponseSpec, type RestRoute } from './operation.js'
import { portablePattern } from './portable-pattern.js'
import { errorBodySchema } from './routes/response-schemas.js'

export interface OpenApiInit {
  maxSourceBytes: number
  maxExpiresDays: number
  /** auth.keys.default_expires_days: while a number, `expires_days: null` (never) is refused, and the document says so (absent: 90) */
  defaultExpiresDays?: number | null
  version: string
}

type JsonSchema = Record<string, unknown>

/**
 * A zod schema as JSON Schema 2020-12 (what OpenAPI 3.1 uses), with every `pattern` in the subset
 * all validators compile (portable-pattern.ts). Objects stay open (a client must accept fields
 * added later); the contract test closes them to catch fields the document does not declare.
 */
export function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'any',
    override(ctx) {
      const patterns = regexesOf(ctx.zodSchema as unknown as z.ZodType)
      if (patterns.length === 0) return
      const portable = new Map(patterns.map((re) => [re.source, portablePattern(re)]))
      rewritePatterns(ctx.jsonSchema as JsonSchema, portable)
    },
  }) as JsonSchema
  return rest
}

/** The regular expressions a zod string schema checks (`.regex(…)`), flags included. */
function regexesOf(schema: z.ZodType): RegExp[] {
  const out: RegExp[] = []
  const checks = (schema._zod.def as { checks?: Array<{ _zod: { def: { pattern?: unknown } } }> }).checks ?? []
  for (const check of checks) if (check._zod.def.pattern instanceof RegExp) out.push(check._zod.def.pattern)
  return out
}

function rewritePatterns(node: JsonSchema, portable: Map<string, string>): void {
  if (typeof node.pattern === 'string' && portable.has(node.pattern)) node.pattern = portable.get(node.pattern)
  for (const key of ['allOf', 'anyOf', 'oneOf']) {
    const list = node[key]
    if (Array.isArray(list)) for (const item of list) rewritePatterns(item as JsonSchema, portable)
  }
}

const ERROR_MEANINGS: Record<number, string> = {
  400: 'malformed request (1006) or RUFID (1001)',
  401: 'no or invalid credentials (1003); see WWW-Authenticate',
  403: 'permission denied (1003)',
  404: 'not found (1002)',
  405: 'method not allowed (1006)',
  406: 'not acceptable (1006)',
  408: 'execution timeout (1004)',
  409: 'RUFID collision (1008), the losing side of a catalog conflict (2002), or a federation route on a node without federation (1006, details.reason federation_disabled)',
  413: 'body over the size limit (1006)',
  415: 'unsupported media type (1006): send application/json',
  422: 'invalid manifest or lockfile (1006), or the function failed (1007)',
  426: 'upgrade required (1006): a WebSocket path asked without Upgrade: websocket',
  429: 'rate limited (1005); see Retry-After',
  500: 'internal error (1009; no details)',
  502: 'federation unreachable (2001)',
  503: 'draining, overloaded or shutting down (1010); see Retry-After when given',
}

const HEADERS: Record<number, JsonSchema> = {
  401: { 'WWW-Authenticate': { description: 'Bearer', schema: { type: 'string' } } },
  405: { Allow: { description: 'the methods the path takes', schema: { type: 'string' } } },
  426: { Upgrade: { description: 'websocket', schema: { type: 'string' } } },
  429: { 'Retry-After': { description: 'seconds before a retry may succeed', schema: { type: 'integer' } } },
  503: { 'Retry-After': { description: 'seconds before a retry may succeed', schema: { type: 'integer' } } },
}

const content = (spec: ResponseSpec): JsonSchema => spec instanceof z.ZodType
  ? { 'application/json': { schema: jsonSchemaOf(spec) } }
  : { [spec.contentType]: { schema: spec.schema } }

/** `get /api/v1/functions/:rufid` → `getApiV1FunctionsByRufid` (unique per route). */
function operationIdOf(method: string, path: string): string {
  const words = path.split('/').filter(Boolean).map((seg) => (seg.startsWith(':') ? `by-${seg.slice(1)}` : seg))
  return method + words.join('-').split(/[^A-Za-z0-9]+/).filter(Boolean).map((w) => w[0]!.toUpperCase() + w.slice(1)).join('')
}

function errorResponses(statuses: Iterable<number>, body: JsonSchema): JsonSchema {
  const out: JsonSchema = {}
  for (const status of [...new Set(statuses)].sort((a, b) => a - b)) {
    out[String(status)] = {
      description: ERROR_MEANINGS[status] ?? 'error',
      ...(HEADERS[status] ? { headers: HEADERS[status] } : {}),
      content: { 'application/json': { schema: body } },
    }
  }
  return out
}

/** The OpenAPI operation of one REST route: parameters, body, and every status it can answer. */
function operationOf(route: RestRoute<never, unknown>): JsonSchema {
  const pathParams = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]!).map((name) => ({
    name, in: 'path', required: true,
    schema: route.params?.[name] ? jsonSchemaOf(route.params[name]!) : { type: 'string' },
  }))
  const queryParams = Object.entries(route.query?.shape ?? {}).map(([name, field]) => {
    const schema = jsonSchemaOf(field as z.ZodType)
    const { description, ...rest } = schema
    return {
      name, in: 'query', required: !(field as z.ZodType).safeParse(undefined).success,
      ...(typeof description === 'string' ? { description } : {}),
      schema: rest,
      // lists are comma-separated (tags=a,b)
      ...(rest.type === 'array' ? { style: 'form', explode: false } : {}),
    }
  })
  const successes: JsonSchema = {}
  for (const [status, spec] of Object.entries(route.responses)) {
    const description = status === '201' ? 'created' : status === '202' ? 'accepted' : status === '200' ? 'success' : 'answer'
    successes[status] = { description: !(spec instanceof z.ZodType) && spec.description ? spec.description : description, content: content(spec) }
  }
  const request = route.request === undefined
    ? undefined
    : { required: route.requestOptional !== true, content: { 'application/json': { schema: route.request instanceof z.ZodType ? jsonSchemaOf(route.request) : route.request } } }
  return {
    operationId: operationIdOf(route.method, route.path),
    summary: route.summary,
    'x-svc-operation': route.operation,
    parameters: [...pathParams, ...queryParams],
    ...(request ? { requestBody: request } : {}),
    ...(route.access === 'public' ? { security: [] } : {}),
    responses: { ...successes, ...errorResponses([...route.errors, ...ALWAYS_ERRORS], jsonSchemaOf(errorBodySchema)) },
  }
}

// GraphQL over HTTP and the /ws upgrade are mounted beside the router: described here by hand.
const graphqlRequest = z.object({
  query: z.string().min(1).regex(/[^\t\n\v\f\r ]/).describe('the GraphQL document (not empty or blank)'),
  variables: z.record(z.string(), z.unknown()).nullable().optional(),
  operationName: z.string().nullable().optional(),
})
const graphqlResponse = z.object({
  data: z.record(z.string(), z.unknown()).nullable().optional(),
  errors: z.array(z.object({
    message: z.string(),
    locations: z.array(z.object({ line: z.int(), column: z.int() })).optional(),
    path: z.array(z.union([z.string(), z.int()])).optional(),
    extensions: z.object({ code: z.int(), name: z.string(), details: z.record(z.string(), z.unknown()) }),
  })).optional(),
})
/** Statuses a refused GraphQL request answers, with a GraphQL-shaped body (`errors`). */
const GRAPHQL_ERRORS = [400, 401, 403, 405, 406, 413, 415, 429, 500, 503]

function graphqlOperations(): JsonSchema {
  const responses = (): JsonSchema => ({
    200: {
      description: 'the result (field errors beside data); application/graphql-response+json when Accept prefers it',
      content: { 'application/json': { schema: jsonSchemaOf(graphqlResponse) }, 'application/graphql-response+json': { schema: jsonSchemaOf(graphqlResponse) } },
    },
    ...errorResponses(GRAPHQL_ERRORS, jsonSchemaOf(graphqlResponse)),
  })
  const queryParams = ['query', 'variables', 'operationName'].map((name) => ({ name, in: 'query', required: name === 'query', schema: NON_BLANK_TEXT }))
  return {
    get: {
      operationId: 'getGraphql',
      summary: 'GraphQL queries (service-spec §4.4) with query, variables (JSON text) and operationName as query parameters',
      parameters: queryParams,
      responses: responses(),
    },
    post: {
      operationId: 'postGraphql',
      summary: 'GraphQL operations; subscriptions stream as server-sent events with Accept: text/event-stream (graphql-ws over WebSocket on the same path)',
      requestBody: { required: true, content: { 'application/json': { schema: jsonSchemaOf(graphqlRequest) } } },
      responses: responses(),
    },
  }
}

/** A query value with something in it (empty and blank ones are refused, as on every route). */
const NON_BLANK_TEXT = { type: 'string', minLength: 1, pattern: '[^\\t\\n\\v\\f\\r ]' }

function eventSocketOperations(): JsonSchema {
  return {
    get: {
      operationId: 'getWs',
      summary: 'WebSocket upgrade: execution and system events (JSON frames subscribe/unsubscribe/ping; credentials in Authorization, the subprotocol svc.bearer.<base64url token> offered with svc.events, or ?token=)',
      parameters: [
        { name: 'token', in: 'query', required: false, description: 'the bearer token, for clients that cannot set headers', schema: NON_BLANK_TEXT },
        { name: 'namespace', in: 'query', required: false, schema: NON_BLANK_TEXT },
        {
          name: 'Sec-WebSocket-Protocol', in: 'header', required: false, schema: { type: 'string' },
          description: 'svc.events (selected when offered) and, for browsers, svc.bearer.<base64url token> (read as the bearer token, never echoed)',
        },
      ],
      responses: {
        101: { description: 'switching protocols' },
        ...errorResponses([400, 401, 403, 426, 429, 500, 503], jsonSchemaOf(errorBodySchema)),
      },
    },
  }
}

/**
 * The path of the `/ws` event socket, upgraded beside the router (api/ws): documented here, and
 * answered 426 by the REST door when asked without an upgrade.
 */
export const EVENT_SOCKET_PATH = '/ws'

/**
 * The OpenAPI 3.1 description of everything this node answers over HTTP, generated from the REST
 * routes themselves (their request, query and response schemas, and the statuses they declare),
 * plus `/graphql` and the `/ws` WebSocket upgrade mounted beside the router.
 */
export function buildOpenApi(init: OpenApiInit, routes: readonly RestRoute<never, unknown>[]): Record<string, unknown> {
  const paths: Record<string, JsonSchema> = {}
  for (const route of routes) {
    const path = route.path.replace(/:(\w+)/g, '{$1}')
    paths[path] ??= {}
    paths[path][route.method] = operationOf(route)
  }
  paths['/graphql'] = graphqlOperations()
  paths[EVENT_SOCKET_PATH] = eventSocketOperations()
  const document = {
    openapi: '3.1.0',
    info: {
      title: 'svc-node',
      version: init.version,
      description: 'Content-addressed functions: create, resolve and execute RUFIDs. Every body that names a function carries '
        + '`rufid_short` (the 12-character hash) and `full_rufid` (rufid:<hash>:v<n>:<tenant>); `rufid` keeps the form the '
        + `interface gives it in that body. Source code is at most ${init.maxSourceBytes} bytes; API keys expire within ${init.maxExpiresDays} days.`,
    },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API key (svck_…) or JWT' } } },
    security: [{ bearer: [] }],
    paths,
  }
  assertPortable(document)
  return document
}

/** Every `pattern` in the document compiles outside JavaScript (no `\p{…}`, no `(?<name>`). */
function assertPortable(node: unknown, at = '#'): void {
  if (Array.isArray(node)) node.forEach((item, i) => assertPortable(item, `${at}/${i}`))
  else if (node !== null && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === 'pattern' && typeof value === 'string' && (/\\[pP]\{/.test(value) || /\(\?<[A-Za-z]/.test(value))) {
        throw new Error(`OpenAPI pattern at ${at} is not portable: ${value}`)
      }
      assertPortable(value, `${at}/${key}`)
    }
  }
}
