import { z } from 'zod'
import { createInputSchema, mintRequestSchema, publishInputSchema } from '../../engine/index.js'

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
const resolveRequest = z.object({ rufid: z.string().describe('short (12 characters) or full RUFID'), version: z.string().regex(/^v[1-9][0-9]*$/).optional() })
const executeRequest = z.object({ arguments: z.union([z.record(z.string(), z.unknown()), z.array(z.unknown())]).optional(), version: z.string().optional() })
const nativeRequest = z.object({
  rufid: z.string(), function_name: z.string(), namespace: z.string().optional(), source_code: z.string().optional(),
  input_data: z.record(z.string(), z.unknown()).optional(), signature: z.string().optional(), language: z.string().optional(),
})

const ERROR_RESPONSES = {
  '400': 'malformed RUFID (1001) or request (1006)', '401': 'no or invalid credentials (1003)', '403': 'permission denied (1003)',
  '404': 'not found (1002)', '413': 'body over the size limit (1006)', '429': 'rate limited (1005), see Retry-After',
}

type Op = { summary: string; request?: z.ZodType | Record<string, unknown>; response: z.ZodType; status?: string; query?: string[]; auth?: boolean }

/** The OpenAPI 3.1 description of the REST surface; request bodies come from the validating schemas. */
export function buildOpenApi(init: OpenApiInit): Record<string, unknown> {
  const body = (s: z.ZodType | Record<string, unknown>) => ({ required: true, content: { 'application/json': { schema: s instanceof z.ZodType ? json(s) : s } } })
  const ops: Record<string, Record<string, Op>> = {
    '/api/v1/functions/create': { post: { summary: 'Create a function (201; 200 when identical content exists)', request: createInputSchema({ maxSourceBytes: init.maxSourceBytes }), response: creation, status: '201' } },
    '/api/v1/functions/resolve': { post: { summary: 'Resolve a RUFID', request: resolveRequest, response: resolution } },
    '/api/v1/functions/{rufid}/execute': { post: { summary: 'Execute a function', request: executeRequest, response: execution } },
    '/api/v1/functions': { get: { summary: 'List functions', response: z.object({ items: z.array(metadata), pagination }), query: ['search', 'tags', 'limit', 'offset'] } },
    '/api/v1/functions/{rufid}': {
      get: { summary: 'Function metadata with usage metrics', response: metadata, query: ['version'] },
      delete: { summary: 'Delete (tombstone) a version or every live version of a hash', response: z.object({ deleted: z.array(z.string()) }), query: ['version'] },
    },
    '/api/v1/auth/v2/api-keys': {
      post: { summary: 'Mint an API key (admin); the key is shown once', request: mintRequestSchema({ defaultExpiresDays: 90, maxExpiresDays: init.maxExpiresDays }), response: minted, status: '201' },
      get: { summary: "The tenant's API keys without secrets (admin)", response: z.object({ items: z.array(minted.omit({ api_key: true })) }) },
    },
    '/api/v1/auth/v2/api-keys/{key_id}': { delete: { summary: 'Revoke an API key (admin)', response: z.object({ key_id: z.string(), revoked_at: z.string() }) } },
    '/api/v1/execution/execute': { post: { summary: 'Native test-mode execution (service-spec §4.3)', request: nativeRequest, response: execution.extend({ rufid: z.string(), registered: z.boolean() }) } },
    '/api/v1/audit': { get: { summary: "The admin tenant's audit entries", response: z.object({ items: z.array(z.record(z.string(), z.unknown())), next_cursor: z.string().nullable() }), query: ['from', 'to', 'operation', 'rufid', 'limit', 'cursor'] } },
    '/v1/functions': { post: { summary: 'Publish base64 source for a runtime', request: publishInputSchema, response: creation.pick({ rufid: true, rufid_short: true, version: true, import_statement: true, share_url: true }), status: '201' } },
    '/v1/functions/{rufid}/executions': { post: { summary: 'Start an asynchronous execution; the body is the input', request: { type: 'object' }, response: z.object({ execution_id: z.string(), status: z.string() }), status: '202' } },
    '/v1/executions/{id}': { get: { summary: 'An execution record', response: record } },
    '/v1/executions/{id}/logs': { get: { summary: 'Console output of an execution', response: z.object({ execution_id: z.string(), status: z.string(), logs: record.shape.logs }) } },
    '/v1/marketplace/functions/search': { get: { summary: 'Full-text search with facets', response: search, query: ['q', 'language', 'tags', 'limit', 'offset'] } },
    '/v1/telemetry/functions/{rufid}': { get: { summary: 'Latency, error rate and cost over a window', response: telemetry, query: ['window'] } },
    '/healthz': { get: { summary: 'Liveness', response: z.object({ status: z.string(), pid: z.number(), uptime_s: z.number() }), auth: false } },
    '/readyz': { get: { summary: 'Readiness (503 while starting or draining)', response: z.object({ status: z.string() }), auth: false } },
  }
  const paths: Record<string, Record<string, unknown>> = {}
  for (const [path, methods] of Object.entries(ops)) {
    paths[path] = {}
    const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }))
    for (const [method, op] of Object.entries(methods)) {
      paths[path][method] = {
        summary: op.summary,
        parameters: [...params, ...(op.query ?? []).map((name) => ({ name, in: 'query', required: false, schema: { type: 'string' } }))],
        ...(op.request ? { requestBody: body(op.request) } : {}),
        ...(op.auth === false ? { security: [] } : {}),
        responses: {
          [op.status ?? '200']: { description: 'success', content: { 'application/json': { schema: json(op.response) } } },
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
