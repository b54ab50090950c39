import { isDeepStrictEqual } from 'node:util'
import { z } from 'zod'
import { PROTOCOL_VERSION } from '../../core/protocol-version.js'
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

/** Where the document keeps its named schemas; `$ref`s point here. */
export const COMPONENT_SCHEMAS = '#/components/schemas/'
/** A component name: PascalCase, what generated clients name their types (stable: renaming one breaks its users). */
const COMPONENT_NAME = /^[A-Z][A-Za-z0-9]*$/

/**
 * A zod schema as JSON Schema 2020-12 (what OpenAPI 3.1 uses), with every `pattern` in the subset
 * all validators compile (portable-pattern.ts). Objects stay open (a client must accept fields
 * added later); the contract test closes them to catch fields the document does not declare.
 *
 * A schema named with `.meta({ id })` (response-schemas.ts, request-schemas.ts), wherever it
 * appears, becomes `{ $ref: '#/components/schemas/<id>' }` and its own JSON Schema is added to
 * `components` (the document's `components/schemas`), once: one name given to two schemas that
 * differ is an error, so a generator never sees two shapes under one name.
 */
export function jsonSchemaOf(schema: z.ZodType, components: Record<string, JsonSchema> = {}): JsonSchema {
  const { $schema: _drop, $defs, ...rest } = z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'any',
    override(ctx) {
      const patterns = regexesOf(ctx.zodSchema as unknown as z.ZodType)
      if (patterns.length === 0) return
      const portable = new Map(patterns.map((re) => [re.source, portablePattern(re)]))
      rewritePatterns(ctx.jsonSchema as JsonSchema, portable)
    },
  }) as JsonSchema
  for (const [name, def] of Object.entries(($defs ?? {}) as Record<string, JsonSchema>)) {
    if (!COMPONENT_NAME.test(name)) throw new Error(`schema name ${JSON.stringify(name)} is not PascalCase (.meta({ id }) names a component)`)
    const named = refsToComponents(def) as JsonSchema
    const known = components[name]
    if (known !== undefined && !isDeepStrictEqual(known, named)) {
      throw new Error(`two different schemas are named ${name}: give one of them another .meta({ id })`)
    }
    components[name] = named
  }
  return refsToComponents(rest) as JsonSchema
}

/** zod's `#/$defs/<id>` references, as references to the document's `components/schemas`. */
function refsToComponents(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(refsToComponents)
  if (node === null || typeof node !== 'object') return node
  const out: JsonSchema = {}
  for (const [key, value] of Object.entries(node)) {
    out[key] = key === '$ref' && typeof value === 'string' && value.startsWith('#/$defs/')
      ? COMPONENT_SCHEMAS + value.slice('#/$defs/'.length)
      : refsToComponents(value)
  }
  return out
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

const ERRORS: Record<number, { name: string; meaning: string }> = {
  400: { name: 'BadRequest', meaning: 'malformed request (1006) or RUFID (1001)' },
  401: { name: 'Unauthorized', meaning: 'no or invalid credentials (1003); see WWW-Authenticate' },
  403: { name: 'Forbidden', meaning: 'permission denied (1003)' },
  404: { name: 'NotFound', meaning: 'a function or version not found (1002), or another resource not found (1011: an execution, its receipt, an API key, a branch; details.resource names it)' },
  405: { name: 'MethodNotAllowed', meaning: 'method not allowed (1006); see Allow' },
  406: { name: 'NotAcceptable', meaning: 'not acceptable (1006)' },
  408: { name: 'ExecutionTimeout', meaning: 'execution timeout (1004)' },
  409: { name: 'Conflict', meaning: 'RUFID collision (1008), the losing side of a catalog conflict (2002), or a federation route on a node without federation (1006, details.reason federation_disabled)' },
  413: { name: 'PayloadTooLarge', meaning: 'body over the size limit (1006)' },
  415: { name: 'UnsupportedMediaType', meaning: 'unsupported media type (1006): send application/json' },
  422: { name: 'Unprocessable', meaning: 'invalid manifest or lockfile (1006), or the function failed (1007)' },
  426: { name: 'UpgradeRequired', meaning: 'upgrade required (1006): a WebSocket path asked without Upgrade: websocket' },
  429: { name: 'RateLimited', meaning: 'rate limited (1005); see Retry-After' },
  500: { name: 'InternalError', meaning: 'internal error (1009; no details)' },
  502: { name: 'FederationUnreachable', meaning: 'federation unreachable (2001)' },
  503: { name: 'Unavailable', meaning: 'draining, overloaded or shutting down (1010); see Retry-After when given' },
}

const HEADERS: Record<number, JsonSchema> = {
  401: { 'WWW-Authenticate': { description: 'Bearer', schema: { type: 'string' } } },
  405: { Allow: { description: 'the methods the path takes', schema: { type: 'string' } } },
  426: { Upgrade: { description: 'websocket', schema: { type: 'string' } } },
  429: { 'Retry-After': { description: 'seconds before a retry may succeed', schema: { type: 'integer' } } },
  503: { 'Retry-After': { description: 'seconds before a retry may succeed', schema: { type: 'integer' } } },
}

/** What the document lists once under `components` while its operations are described. */
interface Components {
  /** `components/schemas`: every schema named with `.meta({ id })` */
  schemas: Record<string, JsonSchema>
  /** `components/responses`: the error answers */
  responses: Record<string, JsonSchema>
}

const content = (spec: ResponseSpec, components: Components): JsonSchema => spec instanceof z.ZodType
  ? { 'application/json': { schema: jsonSchemaOf(spec, components.schemas) } }
  : Object.fromEntries([spec.contentType].flat().map((type) => [type, { schema: spec.schema }]))

/** `get /api/v1/functions/:rufid` → `getApiV1FunctionsByRufid` (unique per route). */
function operationIdOf(method: string, path: string): string {
  const words = path.split('/').filter(Boolean).map((seg) => (seg.startsWith(':') ? `by-${seg.slice(1)}` : seg))
  return method + words.join('-').split(/[^A-Za-z0-9]+/).filter(Boolean).map((w) => w[0]!.toUpperCase() + w.slice(1)).join('')
}

/**
 * `$ref`s to the named error responses of these statuses, each added to `components.responses`
 * with its body: `Error` for the REST door, `GraphqlResponse` (names prefixed `Graphql`) for /graphql.
 */
function errorResponses(statuses: Iterable<number>, components: Components, door: 'rest' | 'graphql' = 'rest'): JsonSchema {
  const out: JsonSchema = {}
  const body = door === 'rest' ? jsonSchemaOf(errorBodySchema, components.schemas) : jsonSchemaOf(graphqlResponse, components.schemas)
  for (const status of [...new Set(statuses)].sort((a, b) => a - b)) {
    const known = ERRORS[status]
    const name = (door === 'graphql' ? 'Graphql' : '') + (known?.name ?? `Error${status}`)
    components.responses[name] ??= {
      description: known?.meaning ?? 'error',
      ...(HEADERS[status] ? { headers: HEADERS[status] } : {}),
      content: { 'application/json': { schema: body } },
    }
    out[String(status)] = { $ref: `#/components/responses/${name}` }
  }
  return out
}

/**
 * The OpenAPI operation of one REST route: parameters, body, and every status it can answer, each
 * body with its media type (errors: `application/json`, the `Error` schema). Named schemas are
 * added to `components`.
 */
function operationOf(route: RestRoute<never, unknown>, components: Components): JsonSchema {
  const pathParams = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]!).map((name) => ({
    name, in: 'path', required: true,
    schema: route.params?.[name] ? jsonSchemaOf(route.params[name]!, components.schemas) : { type: 'string' },
  }))
  const queryParams = Object.entries(route.query?.shape ?? {}).map(([name, field]) => {
    const schema = jsonSchemaOf(field as z.ZodType, components.schemas)
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
    successes[status] = { description: !(spec instanceof z.ZodType) && spec.description ? spec.description : description, content: content(spec, components) }
  }
  const request = route.request === undefined
    ? undefined
    : { required: route.requestOptional !== true, content: { 'application/json': { schema: route.request instanceof z.ZodType ? jsonSchemaOf(route.request, components.schemas) : route.request } } }
  return {
    operationId: operationIdOf(route.method, route.path),
    summary: route.summary,
    'x-svc-operation': route.operation,
    parameters: [...pathParams, ...queryParams],
    ...(request ? { requestBody: request } : {}),
    ...(route.access === 'public' ? { security: [] } : {}),
    responses: { ...successes, ...errorResponses([...route.errors, ...ALWAYS_ERRORS], components) },
  }
}

// GraphQL over HTTP and the /ws upgrade are mounted beside the router: described here by hand.
const graphqlRequest = z.object({
  query: z.string().min(1).regex(/[^\t\n\v\f\r ]/).describe('the GraphQL document (not empty or blank)'),
  variables: z.record(z.string(), z.unknown()).nullable().optional(),
  operationName: z.string().nullable().optional(),
}).meta({ id: 'GraphqlRequest' })
const graphqlError = z.object({
  message: z.string(),
  locations: z.array(z.object({ line: z.int(), column: z.int() })).optional(),
  path: z.array(z.union([z.string(), z.int()])).optional(),
  extensions: z.object({ code: z.int(), name: z.string(), details: z.record(z.string(), z.unknown()) }),
}).meta({ id: 'GraphqlError' })
const graphqlResponse = z.object({
  data: z.record(z.string(), z.unknown()).nullable().optional(),
  errors: z.array(graphqlError).optional(),
}).meta({ id: 'GraphqlResponse' })
/** Statuses a refused GraphQL request answers, with a GraphQL-shaped body (`errors`). */
const GRAPHQL_ERRORS = [400, 401, 403, 405, 406, 413, 415, 429, 500, 503]

function graphqlOperations(components: Components): JsonSchema {
  const responses = (): JsonSchema => ({
    200: {
      description: 'the result (field errors beside data); application/graphql-response+json when Accept prefers it',
      content: {
        'application/json': { schema: jsonSchemaOf(graphqlResponse, components.schemas) },
        'application/graphql-response+json': { schema: jsonSchemaOf(graphqlResponse, components.schemas) },
      },
    },
    ...errorResponses(GRAPHQL_ERRORS, components, 'graphql'),
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
      requestBody: { required: true, content: { 'application/json': { schema: jsonSchemaOf(graphqlRequest, components.schemas) } } },
      responses: responses(),
    },
  }
}

/** A query value with something in it (empty and blank ones are refused, as on every route). */
const NON_BLANK_TEXT = { type: 'string', minLength: 1, pattern: '[^\\t\\n\\v\\f\\r ]' }

function eventSocketOperations(components: Components): JsonSchema {
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
        ...errorResponses([400, 401, 403, 426, 429, 500, 503], components),
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
 * plus `/graphql` and the `/ws` WebSocket upgrade mounted beside the router. Every named schema is
 * listed once under `components/schemas` (sorted by name) and referenced with `$ref`.
 */
export function buildOpenApi(init: OpenApiInit, routes: readonly RestRoute<never, unknown>[]): Record<string, unknown> {
  const paths: Record<string, JsonSchema> = {}
  const components: Components = { schemas: {}, responses: {} }
  for (const route of routes) {
    const path = route.path.replace(/:(\w+)/g, '{$1}')
    paths[path] ??= {}
    paths[path][route.method] = operationOf(route, components)
  }
  paths['/graphql'] = graphqlOperations(components)
  paths[EVENT_SOCKET_PATH] = eventSocketOperations(components)
  const sorted = (map: Record<string, JsonSchema>) => Object.fromEntries(Object.entries(map).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
  const document = {
    openapi: '3.1.0',
    info: {
      title: 'svc-node',
      version: init.version,
      // info.version is this document's (the package's); the protocol it describes (service-spec §9)
      'x-svc-protocol-version': PROTOCOL_VERSION,
      description: 'Content-addressed functions: create, resolve and execute RUFIDs. Every body that names a function carries '
        + '`rufid_short` (the 12-character hash) and `full_rufid` (rufid:<hash>:v<n>:<tenant>); `rufid` keeps the form the '
        + `interface gives it in that body. Source code is at most ${init.maxSourceBytes} bytes; API keys expire within ${init.maxExpiresDays} days.`,
    },
    components: { schemas: sorted(components.schemas), responses: sorted(components.responses), securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API key (svck_…) or JWT' } } },
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
