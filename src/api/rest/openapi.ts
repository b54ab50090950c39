import { z } from 'zod'
import { MAX_BRANCH_KEY_LENGTH, MIN_BRANCH_KEY_LENGTH } from '../../engine/branches/branch-keys.js'
import { createInputSchema, mintRequestSchema, publishInputSchema } from '../../engine/index.js'
import { branchNameSchema, executeRequestSchema, invokeRequestSchema, resolveRequestSchema } from './routes/request-schemas.js'
import { signatureRequestSchema } from './routes/signature.js'

export interface OpenApiInit {
  maxSourceBytes: number
  maxExpiresDays: number
  version: string
}

const json = (schema: z.ZodType) => {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>
  return rest
}

// Response shapes (documentation; the request schemas below are the ones that validate requests).
const errorBody = z.object({ error: z.object({ code: z.number().int(), name: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()) }) })
const creation = z.object({
  rufid: z.string(), rufid_short: z.string().length(12), version: z.string(), content_digest: z.string(),
  import_statement: z.string(), share_url: z.string(), api_endpoint: z.string(), created: z.boolean(),
})
const resolution = z.object({
  function_id: z.string(), rufid: z.string(), rufid_short: z.string(), version: z.string(), accessible: z.boolean(), cached: z.boolean(),
  resolution_time_ms: z.number(), content_digest: z.string(), function_name: z.string(), signature: z.string(), language: z.string(),
  created_at: z.string(), manifest: z.record(z.string(), z.unknown()).nullable(), lockfile: z.record(z.string(), z.unknown()).nullable(),
  manifest_text: z.string().nullable().describe('the manifest as published (exact bytes)'), lockfile_text: z.string().nullable(),
})
const metadata = z.object({
  rufid: z.string(), full_rufid: z.string(), function_name: z.string(), signature: z.string(), language: z.string(), version: z.string(),
  created_at: z.string(), author: z.string(), tenant_id: z.string(), description: z.string(), tags: z.array(z.string()),
  dependencies: z.array(z.string()), content_digest: z.string(),
  metrics: z.object({ usage_count: z.number().int(), avg_execution_time_ms: z.number(), success_rate: z.number() }).optional(),
})
const pagination = z.object({ total: z.number().int(), limit: z.number().int(), offset: z.number().int(), next_offset: z.number().int().nullable() })
const execution = z.object({ result: z.unknown(), execution_time_ms: z.number(), status: z.string(), execution_id: z.string() })
const record = z.object({
  execution_id: z.string(), rufid: z.string(), version: z.string(), tenant: z.string(), function_name: z.string(), language: z.string(),
  status: z.enum(['queued', 'running', 'success', 'error', 'timeout']), started_at: z.string(), finished_at: z.string().nullable(),
  execution_time_ms: z.number().nullable(), cpu_time_ms: z.number().nullable(), memory_bytes: z.number().nullable(),
  result: z.unknown().optional(), error: errorBody.shape.error.optional(),
  logs: z.array(z.object({ level: z.string(), message: z.string(), at: z.string() })),
})
const minted = z.object({ api_key: z.string(), key_id: z.string(), name: z.string(), tenant_id: z.string(), scopes: z.array(z.string()), expires_at: z.string().nullable() })
const telemetry = z.object({
  rufid: z.string(), window: z.string(), executions: z.number().int(),
  latency_ms: z.object({ p50: z.number(), p95: z.number(), p99: z.number(), max: z.number() }),
  error_rate: z.number(), cost: z.object({ cpu_ms_total: z.number(), cpu_ms_avg: z.number(), memory_bytes_avg: z.number() }),
})
const search = z.object({
  items: z.array(metadata), pagination,
  aggregations: z.object({ language: z.record(z.string(), z.number()), tags: z.record(z.string(), z.number()), author: z.record(z.string(), z.number()) }),
})
const head = z.object({
  function_name: z.string(), branch: z.string(), version: z.string(), rufid: z.string(), rufid_short: z.string(),
  created_at: z.string(), updated_at: z.string(), updated_by: z.string(),
})
const deployed = creation.extend({
  function_name: z.string(), branch: z.string(), branch_created: z.boolean(), branch_key: z.string().optional().describe('only when the branch was created; shown once'),
  moved: z.boolean(), previous_version: z.string().nullable(), head,
  manifest: z.record(z.string(), z.unknown()).nullable(), lockfile: z.record(z.string(), z.unknown()).nullable(),
})
const versions = z.object({
  function_name: z.string(),
  versions: z.array(z.object({
    version: z.string(), rufid: z.string(), rufid_short: z.string(), content_digest: z.string(), created_at: z.string(), author: z.string(),
    deleted_at: z.string().optional(), manifest_snapshot: z.object({ manifest: z.unknown(), lockfile: z.unknown() }), branches: z.array(z.unknown()),
  })),
  heads: z.array(head),
})
const exported = z.object({
  rufid: z.string(), version: z.string(), function_name: z.string(),
  manifest: z.record(z.string(), z.unknown()).nullable(), lockfile: z.record(z.string(), z.unknown()).nullable(),
  manifest_text: z.string().nullable().describe('the manifest as published (exact bytes); null when only the object was sent'),
  lockfile_text: z.string().nullable().describe('the lockfile as published (exact bytes); null when generated or only the object was sent'),
})
/** What a deploy body adds to a create body (the engine's deploy schema, from the same rules). */
const branchFields = {
  branch: branchNameSchema.optional().describe('default main'),
  branch_key: z.string().min(MIN_BRANCH_KEY_LENGTH).max(MAX_BRANCH_KEY_LENGTH).nullable().optional()
    .describe('required to move an existing branch; a new branch gets this key, or a minted one'),
}
// Federation validates these itself (documentation only).
const nodeInfo = z.object({
  node_id: z.string(), endpoint: z.string(),
  capabilities: z.object({ languages: z.array(z.string()), max_concurrent: z.number().int(), protocols: z.array(z.string()) }),
  self: z.boolean(), verified_at: z.string().nullable(),
})
const registration = z.object({
  node_id: z.string().describe('libp2p PeerId'), endpoint: z.string(),
  capabilities: z.object({ languages: z.array(z.string()), max_concurrent: z.number().int(), protocols: z.array(z.string()) }).partial().optional(),
  auth: z.object({ certificate: z.string().describe('PEM node certificate issued by the federation CA, binding node_id'), public_key: z.string().optional() }),
})
const syncBatch = z.object({
  added: z.array(z.record(z.string(), z.unknown())), updated: z.array(z.record(z.string(), z.unknown())), deleted: z.array(z.record(z.string(), z.unknown())),
  timestamp: z.string(), vector: z.record(z.string(), z.number()).describe('origin → highest sequence seen'),
})
const discovery = z.object({
  rufid: z.string(), rufid_short: z.string(), content_digest: z.string().nullable(), function_name: z.string().nullable(), versions: z.array(z.string()),
  nodes: z.array(z.object({ node_id: z.string(), endpoint: z.string(), source: z.enum(['self', 'dht', 'catalog']) })),
})
// The native route (routes/auth.ts) hands its body to the engine unchecked (documentation only).
const nativeRequest = z.object({
  rufid: z.string().describe('rufid:<hash>, the short or the full RUFID'), function_name: z.string().optional(), namespace: z.string().optional(),
  source_code: z.string().optional().describe('registers the function when the RUFID is unknown and the source hashes to it'),
  input_data: z.union([z.record(z.string(), z.unknown()), z.array(z.unknown())]).optional(), signature: z.string().optional(), language: z.string().optional(),
})
// Reads the operator console needs (each in its own route file).
const nodeInfoBody = z.object({
  name: z.string(), version: z.string(), status: z.enum(['ready', 'starting', 'draining']), ready: z.boolean(),
  started_at: z.string().nullable(), uptime_s: z.number().int(), auth_mode: z.enum(['standard', 'native', 'none']),
  sandbox: z.object({ workers: z.number().int().nullable() }), federation: z.object({ enabled: z.boolean() }),
})
const whoami = z.object({
  tenant_id: z.string(), user: z.string(), method: z.string(), key_id: z.string().nullable(),
  permissions: z.array(z.enum(['rufid.create', 'rufid.read', 'rufid.execute', 'rufid.delete', 'rufid.admin'])), admin: z.boolean(),
})
const functionSource = z.object({
  rufid: z.string(), rufid_short: z.string(), version: z.string(), function_name: z.string(), language: z.string(),
  signature: z.string(), content_digest: z.string(), source_code: z.string(),
  imports: z.object({ typescript: z.string(), python: z.string(), go: z.string() }).describe('import statement per client language'),
})
const signatureAnswer = z.object({
  signature: z.string(),
  parameters: z.array(z.object({ name: z.string(), optional: z.boolean(), rest: z.boolean() })).describe('named arguments bind to these, in order'),
})
const telemetrySeries = z.object({
  rufid: z.string(), window: z.string(), bucket_ms: z.number(),
  buckets: z.array(z.object({
    start: z.string(), executions: z.number().int(), errors: z.number().int(), error_rate: z.number(),
    latency_ms: z.object({ p50: z.number(), p95: z.number(), p99: z.number() }),
  })),
})
const catalogDigest = z.object({ digest: z.string(), entries: z.number().int(), branch_moves: z.number().int() })
const memberStatus = z.object({
  node_id: z.string(), endpoint: z.string(), self: z.boolean(), connected: z.boolean(),
  certificate: z.object({ subject: z.string(), serial: z.string(), expires_at: z.string() }).nullable(),
  verified_at: z.string().nullable(), last_seen_at: z.string().nullable(), catalog: catalogDigest.nullable(), error: z.string().optional(),
})
const graphqlRequest = z.object({ query: z.string(), variables: z.record(z.string(), z.unknown()).nullable().optional(), operationName: z.string().nullable().optional() })
const graphqlResponse = z.object({
  data: z.record(z.string(), z.unknown()).nullable().optional(),
  errors: z.array(z.object({ message: z.string(), path: z.array(z.union([z.string(), z.number()])).optional(), extensions: z.object({ code: z.number().int(), name: z.string(), details: z.record(z.string(), z.unknown()) }) })).optional(),
})

const ERROR_RESPONSES = {
  '400': 'malformed RUFID (1001) or request (1006)', '401': 'no or invalid credentials (1003)', '403': 'permission denied (1003)',
  '404': 'not found (1002)', '408': 'execution timeout (1004)', '409': 'RUFID collision (1008) or sync conflict (2002)',
  '413': 'body over the size limit (1006)', '422': 'invalid manifest or lockfile (1006), or the function failed (1007)',
  '429': 'rate limited (1005), see Retry-After', '502': 'federation unreachable (2001)', '503': 'draining or overloaded (1010)',
}

type Op = {
  summary: string
  request?: z.ZodType | Record<string, unknown>
  response: z.ZodType | { contentType: string; schema: Record<string, unknown> }
  status?: string
  query?: string[]
  auth?: boolean
  /** a path parameter's schema, when it has one beyond "a string" */
  params?: Record<string, z.ZodType>
}

/**
 * The OpenAPI 3.1 description of everything this node answers over HTTP: every route registered
 * on the REST app's Koa router (test/e2e/openapi.test.ts compares them, so a new route without a
 * description fails), plus `/graphql` and the `/ws` WebSocket upgrade mounted beside the router.
 * Request bodies are the schemas that validate them (the engine's, or routes/request-schemas.ts);
 * only the federation and native-execution bodies, checked by code elsewhere, are described by hand.
 */
export function buildOpenApi(init: OpenApiInit): Record<string, unknown> {
  const body = (s: z.ZodType | Record<string, unknown>) => ({ required: true, content: { 'application/json': { schema: s instanceof z.ZodType ? json(s) : s } } })
  const createRequest = createInputSchema({ maxSourceBytes: init.maxSourceBytes })
  const rufidParam = { rufid: z.string().describe('short or full RUFID') }
  const ops: Record<string, Record<string, Op>> = {
    '/api/v1/functions/create': { post: { summary: 'Create a function (201; 200 when identical content exists)', request: createRequest, response: creation, status: '201' } },
    '/api/v1/functions/resolve': { post: { summary: 'Resolve a RUFID', request: resolveRequestSchema, response: resolution } },
    '/api/v1/functions/{rufid}/execute': { post: { summary: 'Execute a function', request: executeRequestSchema, response: execution, params: rufidParam } },
    '/api/v1/functions': { get: { summary: 'List functions', response: z.object({ items: z.array(metadata), pagination }), query: ['search', 'tags', 'limit', 'offset'] } },
    '/api/v1/functions/{rufid}': {
      get: { summary: 'Function metadata with usage metrics', response: metadata, query: ['version'], params: rufidParam },
      delete: { summary: 'Delete (tombstone) a version or every live version of a hash', response: z.object({ deleted: z.array(z.string()) }), query: ['version'], params: rufidParam },
    },
    '/api/v1/functions/deploy': {
      post: {
        summary: 'Publish a function and point a branch at it (201 when something was created); a new branch gets a key, shown once',
        request: createRequest.extend(branchFields),
        response: deployed, status: '201',
      },
    },
    '/api/v1/functions/branches': { get: { summary: 'Branch heads of the tenant, or of one lineage', response: z.object({ items: z.array(head) }), query: ['function_name'] } },
    '/api/v1/functions/branches/{branch}/invoke': {
      post: {
        summary: 'Run the version a branch head points at', request: invokeRequestSchema, params: { branch: branchNameSchema },
        response: execution.extend({ rufid: z.string(), version: z.string(), branch: z.string(), function_name: z.string() }),
      },
    },
    '/api/v1/functions/{rufid}/versions': { get: { summary: 'The version ledger of the lineage of a RUFID, with its branch heads', response: versions, params: rufidParam } },
    '/api/v1/functions/{rufid}/export': { get: { summary: 'Manifest and lockfile of a version', response: exported, query: ['version'], params: rufidParam } },
    '/api/v1/auth/v2/api-keys': {
      post: { summary: 'Mint an API key (admin); the key is shown once', request: mintRequestSchema({ defaultExpiresDays: 90, maxExpiresDays: init.maxExpiresDays }), response: minted, status: '201' },
      get: { summary: "The tenant's API keys without secrets (admin)", response: z.object({ items: z.array(minted.omit({ api_key: true })) }) },
    },
    '/api/v1/auth/v2/api-keys/{keyId}': { delete: { summary: 'Revoke an API key (admin)', response: z.object({ key_id: z.string(), revoked_at: z.string() }) } },
    '/api/v1/execution/execute': { post: { summary: 'Native test-mode execution (service-spec §4.3)', request: nativeRequest, response: execution.extend({ rufid: z.string(), registered: z.boolean() }) } },
    '/api/v1/audit': { get: { summary: 'Audit entries: an admin reads its tenant, an operator (admin of the admin tenant) any', response: z.object({ items: z.array(z.record(z.string(), z.unknown())), next_cursor: z.string().nullable() }), query: ['from', 'to', 'tenant', 'operation', 'rufid', 'limit', 'cursor'] } },
    '/api/v1/federation/nodes': {
      post: { summary: 'Register a node by its federation certificate (2001 when this node has no federation)', request: registration, response: z.object({ nodes: z.array(nodeInfo) }), status: '201' },
      get: { summary: 'Federation members', response: z.object({ node_id: z.string(), nodes: z.array(nodeInfo) }) },
    },
    '/api/v1/federation/discover/{rufid}': { get: { summary: 'Nodes that provide a RUFID (DHT and catalog)', response: discovery, params: rufidParam } },
    '/api/v1/federation/sync': { post: { summary: "Incremental sync (admin): applies the caller's changes, answers this node's above its vector", request: syncBatch, response: syncBatch } },
    '/api/v1/federation/catalog/digest': { get: { summary: 'Digest of the replicated catalog, to compare nodes', response: z.object({ digest: z.string(), entries: z.number().int(), vector: z.record(z.string(), z.number()) }), auth: false } },
    '/api/v1/federation/conflicts': { get: { summary: 'Recorded catalog conflicts (admins see every tenant)', response: z.object({ items: z.array(z.record(z.string(), z.unknown())) }) } },
    '/v1/functions': { post: { summary: 'Publish base64 source for a runtime', request: publishInputSchema, response: creation.pick({ rufid: true, rufid_short: true, version: true, import_statement: true, share_url: true }), status: '201' } },
    '/v1/functions/{rufid}/executions': { post: { summary: 'Start an asynchronous execution; the body is the input', request: {}, response: z.object({ execution_id: z.string(), status: z.string() }), status: '202', params: rufidParam } },
    '/v1/executions/{id}': { get: { summary: 'An execution record', response: record } },
    '/v1/executions/{id}/logs': { get: { summary: 'Console output of an execution', response: z.object({ execution_id: z.string(), status: z.string(), logs: record.shape.logs }) } },
    '/v1/marketplace/functions/search': { get: { summary: 'Full-text search with facets', response: search, query: ['q', 'language', 'tags', 'author', 'limit', 'offset'] } },
    '/v1/telemetry/functions/{rufid}': { get: { summary: 'Latency, error rate and cost over a window', response: telemetry, query: ['window'], params: rufidParam } },
    '/api/v1/node/info': { get: { summary: 'Version, uptime, readiness, auth mode, sandbox workers, federation on/off (no credentials needed)', response: nodeInfoBody, auth: false } },
    '/api/v1/auth/whoami': { get: { summary: "The caller's tenant, identity and permissions", response: whoami } },
    '/api/v1/functions/{rufid}/source': { get: { summary: 'Source code of a version (the newest live one without version)', response: functionSource, query: ['version'], params: rufidParam } },
    '/api/v1/functions/signature': {
      post: {
        summary: 'The signature the node derives from a source (rufid-v1 §10), or the parameters of a given signature; stores nothing',
        request: signatureRequestSchema, response: signatureAnswer,
      },
    },
    '/v1/telemetry/functions/{rufid}/series': {
      get: { summary: 'Telemetry per bucket of a window (buckets 1–240, default 30; window default 1h)', response: telemetrySeries, query: ['window', 'buckets', 'version'], params: rufidParam },
    },
    '/api/v1/federation/members': {
      get: {
        summary: "Known nodes with certificate, last seen and each member's catalog digest beside this node's (2001 without federation)",
        response: z.object({ node_id: z.string(), digest: z.string().nullable(), converged: z.boolean(), members: z.array(memberStatus) }),
      },
    },
    '/api/v1/admin/backup': {
      get: {
        summary: "The node's whole database from one snapshot, as a gzip archive of JSON lines (svc node backup; operators only: admins of the node's admin tenant)",
        response: { contentType: 'application/gzip', schema: { type: 'string', format: 'binary' } },
      },
    },
    '/healthz': { get: { summary: 'Liveness', response: z.object({ status: z.string(), pid: z.number(), uptime_s: z.number() }), auth: false } },
    '/readyz': { get: { summary: 'Readiness (503 while starting or draining)', response: z.object({ status: z.enum(['ready', 'starting', 'draining']) }), auth: false } },
    '/metrics': {
      get: {
        summary: 'Prometheus metrics (server.metrics_access: public, admin credentials, or not served)',
        response: { contentType: 'text/plain; version=0.0.4', schema: { type: 'string' } }, auth: false,
      },
    },
    '/openapi.json': { get: { summary: 'This document', response: { contentType: 'application/json', schema: { type: 'object' } }, auth: false } },
    '/graphql': {
      get: { summary: 'GraphQL queries (service-spec §4.4) with query, variables and operationName as query parameters', response: graphqlResponse, query: ['query', 'variables', 'operationName'] },
      post: {
        summary: 'GraphQL operations; subscriptions stream as server-sent events with Accept: text/event-stream (graphql-ws over WebSocket on the same path)',
        request: graphqlRequest, response: graphqlResponse,
      },
    },
    '/ws': {
      get: {
        summary: 'WebSocket upgrade: execution and system events (JSON frames subscribe/unsubscribe/ping; credentials in Authorization, the subprotocol svc.bearer.<base64url token> offered with svc.events, or ?token=)',
        response: { contentType: 'application/json', schema: {} }, status: '101', query: ['token', 'namespace'],
      },
    },
  }
  const paths: Record<string, Record<string, unknown>> = {}
  for (const [path, methods] of Object.entries(ops)) {
    paths[path] = {}
    const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!)
    for (const [method, op] of Object.entries(methods)) {
      const params = names.map((name) => ({ name, in: 'path', required: true, schema: op.params?.[name] ? json(op.params[name]) : { type: 'string' } }))
      const success = op.response instanceof z.ZodType
        ? { 'application/json': { schema: json(op.response) } }
        : { [op.response.contentType]: { schema: op.response.schema } }
      paths[path][method] = {
        summary: op.summary,
        parameters: [...params, ...(op.query ?? []).map((name) => ({ name, in: 'query', required: false, schema: { type: 'string' } }))],
        ...(op.request ? { requestBody: body(op.request) } : {}),
        ...(op.auth === false ? { security: [] } : {}),
        responses: {
          [op.status ?? '200']: { description: op.status === '101' ? 'switching protocols' : 'success', content: success },
          ...Object.fromEntries(Object.entries(ERROR_RESPONSES).map(([code, description]) => [code, { description, content: { 'application/json': { schema: json(errorBody) } } }])),
        },
      }
    }
  }
  return {
    openapi: '3.1.0',
    info: { title: 'svc-node', version: init.version, description: 'Content-addressed functions: create, resolve and execute RUFIDs.' },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API key (svck_…) or JWT' } } },
    security: [{ bearer: [] }],
    paths,
  }
}
