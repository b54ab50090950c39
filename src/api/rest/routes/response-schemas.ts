import { z } from 'zod'
import { ALL_PERMISSIONS, lockfileObjectSchema, manifestObjectSchema, type Permission } from '../../../engine/index.js'

/**
 * What the REST door answers, beside what it accepts (request-schemas.ts). The presenters are typed
 * against these (`z.output<…>`), `/openapi.json` declares them per route and status, and
 * test/e2e/rest-contract.test.ts checks real answers of every route against the document.
 *
 * Naming a function: a body's `rufid` keeps the meaning the interface gives it in that body
 * (service-spec §2.2 metadata: the short form; §4.1 create and the resolution: the full form), and
 * every body that names a function also carries `rufid_short` (always the 12-character hash) and
 * `full_rufid` (always `rufid:<hash>:v<n>:<tenant>`), so a client reads the form it needs by one
 * name whatever the body.
 *
 * Naming: every shape a client author would name, and every shape more than one route answers,
 * carries `.meta({ id })`: `/openapi.json` lists it once under `components/schemas/<id>` and
 * refers to it with `$ref` wherever it appears (openapi.ts). Ids are PascalCase and stable: they
 * are the type names of every generated client, so renaming one breaks its users.
 */

export const rufidShort = z.string().length(12).describe('the 12-character hash (short RUFID)')
export const fullRufid = z.string().describe('the full RUFID rufid:<hash>:v<n>:<tenant>')
const versionLabel = z.string().describe('v<n>')
const time = z.string().describe('ISO 8601 UTC time')
const jsonObject = z.record(z.string(), z.unknown())

/** Both forms of a function's name, carried by every body that names one. */
export const functionNames = { rufid_short: rufidShort, full_rufid: fullRufid }

/** The `error` member of every error body. */
export const errorInfoSchema = z.object({
  code: z.int().describe('svc error code (decisions.md "Errors")'),
  name: z.string(),
  message: z.string(),
  details: jsonObject,
}).meta({ id: 'ErrorInfo' })

/** The body of every 4xx and 5xx answer of the REST door. */
export const errorBodySchema = z.object({ error: errorInfoSchema }).meta({ id: 'Error' })

/** POST /api/v1/functions/create (service-spec §4.1; `rufid` is the full RUFID). */
export const creationSchema = z.object({
  rufid: fullRufid,
  ...functionNames,
  version: versionLabel,
  content_digest: z.string().describe('SHA-256 hex of the canonical content'),
  import_statement: z.string(),
  share_url: z.string(),
  api_endpoint: z.string(),
  created: z.boolean().describe('false when identical content already existed (answered 200, nothing written)'),
}).meta({ id: 'CreateResult' })

/** POST /api/v1/functions/resolve (service-spec §2.7; `rufid` is the full RUFID). */
export const resolutionSchema = z.object({
  function_id: z.string(),
  rufid: fullRufid,
  ...functionNames,
  version: versionLabel,
  accessible: z.boolean(),
  cached: z.boolean(),
  resolution_time_ms: z.number(),
  content_digest: z.string(),
  function_name: z.string(),
  signature: z.string(),
  language: z.string(),
  created_at: time,
  manifest: manifestObjectSchema.nullable(),
  lockfile: lockfileObjectSchema.nullable(),
  manifest_text: z.string().nullable().describe('the manifest as published (exact bytes); null when only the object was sent'),
  lockfile_text: z.string().nullable().describe('the lockfile as published (exact bytes); null when generated or only the object was sent'),
}).meta({ id: 'Resolution' })

export const usageMetricsSchema = z.object({
  usage_count: z.int(),
  avg_execution_time_ms: z.number(),
  success_rate: z.number().describe('0 to 1'),
}).meta({ id: 'UsageMetrics' })

/** Function metadata (service-spec §2.2; `rufid` is the short RUFID). */
export const metadataSchema = z.object({
  rufid: rufidShort,
  ...functionNames,
  function_name: z.string(),
  signature: z.string(),
  language: z.string(),
  version: versionLabel,
  created_at: time,
  author: z.string(),
  tenant_id: z.string(),
  description: z.string(),
  tags: z.array(z.string()),
  dependencies: z.array(z.string()),
  content_digest: z.string(),
  metrics: usageMetricsSchema.optional().describe('GET /api/v1/functions/{rufid} only'),
}).meta({ id: 'Function' })

export const paginationSchema = z.object({
  total: z.int(),
  limit: z.int(),
  offset: z.int(),
  next_offset: z.int().nullable().describe('null on the last page'),
}).meta({ id: 'Pagination' })

export const functionListSchema = z.object({ items: z.array(metadataSchema), pagination: paginationSchema }).meta({ id: 'FunctionList' })

export const deletionSchema = z.object({ deleted: z.array(fullRufid).describe('the full RUFIDs of the versions deleted') }).meta({ id: 'Deletion' })

const hexDigest = z.string().regex(/^[0-9a-f]{64}$/)

/** An execution receipt, format version 1 (docs/receipts.md §2): exactly these fifteen members. */
export const receiptSchema = z.object({
  receipt_version: z.literal(1),
  execution_id: z.string().describe('the signing node\'s execution id (a cached answer carries the computing execution\'s)'),
  rufid: fullRufid,
  content_digest: hexDigest,
  lockfile_digest: hexDigest,
  arguments_digest: hexDigest.describe('SHA-256 of the RFC 8785 JSON of the arguments as given ({} when absent)'),
  status: z.enum(['success', 'error', 'timeout']),
  result_digest: hexDigest.nullable(),
  error_code: z.int().nullable(),
  limits: z.object({ timeout_ms: z.int(), cpu_ms: z.int(), memory_mb: z.int() }),
  started_at: time,
  finished_at: time,
  peer_id: z.string().describe('the signing node\'s libp2p PeerId (Ed25519)'),
  certificate: z.string().describe('the signer\'s node certificate (PEM), not signed'),
  signature: z.string().describe('Ed25519 signature, unpadded base64url'),
}).strict().meta({ id: 'Receipt' })

/** What every answer of an execution adds: whether the result came from the result cache, and the receipt. */
const receiptMembers = {
  cached: z.boolean().describe('true when a deterministic function\'s result came from the result cache (nothing ran)'),
  receipt: receiptSchema.nullable().describe('the signed receipt (null when the node signs none, or the call has no canonical JSON form)'),
}

/** The core execution response (service-spec §2.7) plus the record's id and the function's names. */
export const executionSchema = z.object({
  result: z.unknown().describe('the return value (any JSON value; null when the function returned nothing)'),
  execution_time_ms: z.number(),
  status: z.literal('success').describe('success (failed runs answer an error: 1004 or 1007)'),
  execution_id: z.string(),
  ...functionNames,
  ...receiptMembers,
}).meta({ id: 'ExecutionResult' })

const errorOfRecord = z.object({ code: z.int(), name: z.string(), message: z.string(), details: jsonObject.optional() }).meta({ id: 'ExecutionError' })
export const logLineSchema = z.object({ level: z.string(), message: z.string(), at: time }).meta({ id: 'LogLine' })
export const executionStatusSchema = z.enum(['queued', 'running', 'success', 'error', 'timeout']).meta({ id: 'ExecutionStatus' })

/** GET /v1/executions/{id}: the execution record (decisions.md "Execution record"). */
export const executionRecordSchema = z.object({
  execution_id: z.string(),
  rufid: fullRufid,
  ...functionNames,
  version: versionLabel,
  tenant_id: z.string(),
  tenant: z.string().meta({ deprecated: true }).describe('deprecated alias of tenant_id, kept for one release'),
  function_name: z.string(),
  language: z.string(),
  status: executionStatusSchema,
  started_at: time,
  finished_at: time.nullable(),
  execution_time_ms: z.number().nullable(),
  cpu_time_ms: z.number().nullable(),
  memory_bytes: z.number().nullable(),
  result: z.unknown().optional().describe('present unless the run failed'),
  error: errorOfRecord.optional().describe('present when the run failed'),
  logs: z.array(logLineSchema),
  ...receiptMembers,
}).meta({ id: 'ExecutionRecord' })

export const executionLogsSchema = z.object({
  execution_id: z.string(),
  ...functionNames,
  status: executionStatusSchema,
  logs: z.array(logLineSchema),
}).meta({ id: 'ExecutionLogs' })

export const executionAcceptedSchema = z.object({
  execution_id: z.string(),
  ...functionNames,
  status: executionStatusSchema.describe('queued (the record says what came of it)'),
}).meta({ id: 'ExecutionAccepted' })

export const nativeExecutionSchema = executionSchema.extend({
  rufid: fullRufid,
  registered: z.boolean().describe('true when the call registered the function from its source_code'),
  timing: z.object({ execution_time_ms: z.number(), cpu_time_ms: z.number(), total_time_ms: z.number() }),
}).meta({ id: 'NativeExecutionResult' })

export const mintedKeySchema = z.object({
  api_key: z.string().describe('the key; shown this once'),
  key_id: z.string(),
  name: z.string(),
  tenant_id: z.string(),
  scopes: z.array(z.string()),
  expires_at: time.nullable(),
}).meta({ id: 'MintedApiKey' })

/** An API key as listed (never the key itself). */
export const apiKeySchema = z.object({
  key_id: z.string(),
  name: z.string(),
  tenant_id: z.string(),
  scopes: z.array(z.string()),
  created_at: time,
  created_by: z.string(),
  expires_at: time.nullable(),
  revoked_at: time.optional(),
}).meta({ id: 'ApiKey' })

export const keyListSchema = z.object({ items: z.array(apiKeySchema) }).meta({ id: 'ApiKeyList' })

export const keyRevocationSchema = z.object({ key_id: z.string(), revoked_at: time }).meta({ id: 'RevokedApiKey' })

/** One entry of the audit log. */
export const auditEntrySchema = z.object({
  id: z.string(),
  timestamp: time,
  operation: z.string(),
  rufid: z.string().nullable().describe('the RUFID as the request named it'),
  user: z.string().nullable(),
  tenant: z.string().nullable(),
  ip: z.string(),
  result: z.string(),
  duration_ms: z.number(),
  code: z.int().optional(),
  key_id: z.string().optional(),
  method: z.string().optional(),
  count: z.int().optional().describe('on a summary of rate-limit refusals: how many it stands for'),
}).meta({ id: 'AuditEntry' })

export const auditPageSchema = z.object({
  items: z.array(auditEntrySchema),
  next_cursor: z.string().nullable(),
}).meta({ id: 'AuditPage' })

export const telemetrySchema = z.object({
  rufid: z.string().describe('as asked: the short RUFID (every version) or the full one (that version)'),
  ...functionNames,
  window: z.string(),
  executions: z.int(),
  latency_ms: z.object({ p50: z.number(), p95: z.number(), p99: z.number(), max: z.number() }),
  error_rate: z.number(),
  cost: z.object({ cpu_ms_total: z.number(), cpu_ms_avg: z.number(), memory_bytes_avg: z.number() }),
}).meta({ id: 'Telemetry' })

export const searchSchema = z.object({
  items: z.array(metadataSchema).describe('functions as listed (metrics only on GET /api/v1/functions/{rufid})'),
  pagination: paginationSchema,
  aggregations: z.object({
    language: z.record(z.string(), z.int()),
    tags: z.record(z.string(), z.int()),
    author: z.record(z.string(), z.int()),
  }),
}).meta({ id: 'SearchResults' })

/** `POST /v1/functions` (decisions.md "/v1 group field names"; `rufid` is the full RUFID). */
export const publicationSchema = creationSchema.pick({ rufid: true, rufid_short: true, full_rufid: true, version: true, import_statement: true, share_url: true })
  .meta({ id: 'PublishResult' })

export const branchHeadSchema = z.object({
  function_name: z.string(),
  branch: z.string(),
  version: versionLabel,
  rufid: fullRufid,
  ...functionNames,
  created_at: time,
  updated_at: time,
  updated_by: z.string(),
}).meta({ id: 'BranchHead' })

export const deploymentSchema = creationSchema.extend({
  function_name: z.string(),
  branch: z.string(),
  branch_created: z.boolean(),
  branch_key: z.string().optional().describe('only when the branch was created; shown once'),
  moved: z.boolean(),
  previous_version: versionLabel.nullable(),
  head: branchHeadSchema,
  manifest: manifestObjectSchema.nullable(),
  lockfile: lockfileObjectSchema.nullable(),
}).meta({ id: 'DeployResult' })

export const branchListSchema = z.object({ items: z.array(branchHeadSchema) }).meta({ id: 'BranchList' })

export const invocationSchema = executionSchema.extend({
  rufid: fullRufid,
  version: versionLabel,
  branch: z.string(),
  function_name: z.string(),
}).meta({ id: 'InvocationResult' })

/** One version of a lineage, live or deleted. */
export const versionEntrySchema = z.object({
  version: versionLabel,
  rufid: fullRufid,
  ...functionNames,
  content_digest: z.string(),
  created_at: time,
  author: z.string(),
  deleted_at: time.optional(),
  manifest_snapshot: z.object({ manifest: manifestObjectSchema.nullable(), lockfile: lockfileObjectSchema.nullable() }).catchall(z.unknown()),
  branches: z.array(z.unknown()),
}).meta({ id: 'VersionEntry' })

export const versionLedgerSchema = z.object({
  function_name: z.string(),
  versions: z.array(versionEntrySchema),
  heads: z.array(branchHeadSchema),
}).meta({ id: 'VersionLedger' })

export const exportSchema = z.object({
  rufid: fullRufid,
  ...functionNames,
  version: versionLabel,
  function_name: z.string(),
  manifest: manifestObjectSchema.nullable(),
  lockfile: lockfileObjectSchema.nullable(),
  manifest_text: resolutionSchema.shape.manifest_text,
  lockfile_text: resolutionSchema.shape.lockfile_text,
}).meta({ id: 'FunctionExport' })

const capabilities = z.object({ languages: z.array(z.string()), max_concurrent: z.int(), protocols: z.array(z.string()) }).meta({ id: 'NodeCapabilities' })
export const nodeInfoSchema = z.object({
  node_id: z.string(),
  endpoint: z.string(),
  capabilities,
  self: z.boolean(),
  verified_at: time.nullable(),
}).meta({ id: 'FederationNode' })
export const registrationAnswerSchema = z.object({ nodes: z.array(nodeInfoSchema) }).meta({ id: 'RegistrationResult' })
export const memberListSchema = z.object({ node_id: z.string(), nodes: z.array(nodeInfoSchema) }).meta({ id: 'FederationNodes' })
export const discoverySchema = z.object({
  rufid: z.string(),
  rufid_short: rufidShort,
  content_digest: z.string().nullable(),
  function_name: z.string().nullable(),
  versions: z.array(versionLabel),
  nodes: z.array(z.object({ node_id: z.string(), endpoint: z.string(), source: z.enum(['self', 'dht', 'catalog', 'member']) })),
}).meta({ id: 'Discovery' })
export const syncBatchSchema = z.object({
  added: z.array(jsonObject),
  updated: z.array(jsonObject),
  deleted: z.array(jsonObject),
  timestamp: time,
  vector: z.record(z.string(), z.number()).describe('origin → highest sequence seen'),
  certificates: z.record(z.string(), z.string()).optional().describe("origin → its federation certificate (PEM), for the origins of the batch's changes"),
  more: z.boolean().optional().describe('true: this answer is a page (at most 2,000 changes or 8 MiB); ask again with your vector advanced by it for the rest'),
}).meta({ id: 'SyncBatch' })
export const catalogDigestSchema = z.object({ digest: z.string(), entries: z.int(), vector: z.record(z.string(), z.number()) }).meta({ id: 'CatalogDigest' })
export const conflictListSchema = z.object({ items: z.array(jsonObject) }).meta({ id: 'ConflictList' })

export const healthSchema = z.object({ status: z.literal('ok'), pid: z.int(), uptime_s: z.number() }).meta({ id: 'Health' })
export const readinessStatusSchema = z.enum(['ready', 'starting', 'draining']).meta({ id: 'ReadinessStatus' })
export const readinessSchema = z.object({ status: readinessStatusSchema }).meta({ id: 'Readiness' })

// ---- reads the operator console (and the clients) stand on ------------------------------------

/** GET /api/v1/node/info: what the node tells anyone about itself (no tenant, key or function). */
export const nodeAboutSchema = z.object({
  name: z.literal('svc-node'),
  version: z.string(),
  protocol_version: z.string().describe('the svc protocol version this node speaks (service-spec §9), apart from the package version'),
  status: readinessStatusSchema,
  ready: z.boolean(),
  started_at: time.nullable().describe('when the node started serving (null while starting)'),
  uptime_s: z.int(),
  auth_mode: z.enum(['standard', 'native', 'none']).describe('how callers authenticate (none: no credentials, tenant from X-Svc-Namespace)'),
  sandbox: z.object({
    workers: z.int().nullable().describe('sandbox worker processes'),
    os_isolation: z.object({
      mode: z.enum(['auto', 'required', 'off']).describe('execution.os_isolation'),
      layer: z.enum(['bubblewrap', 'unshare', 'none']).describe('the OS wall the workers run behind (none: off, or unavailable here)'),
      uid: z.int().nullable().describe('the uid the workers run as, when it differs from the node\'s (nobody when the node runs as root)'),
      network: z.enum(['none', 'host']).describe('none: the workers have no network interface but their own loopback'),
      reason: z.string().optional().describe('why there is no wall'),
      passed_over: z.string().optional().describe('why the mechanisms tried before the active one failed (bubblewrap before unshare)'),
    }).nullable().describe('the OS wall around the sandbox workers (README, "Sandbox layers")'),
    memory_bound: z.object({
      mode: z.enum(['auto', 'required', 'off']).describe('execution.cgroups'),
      worker_memory_mb: z.int().describe('execution.worker_memory_mb: a worker whose resident memory passes it after a call is replaced, that call failing with 1007 (0: no bound)'),
      cgroup: z.enum(['v1', 'v2', 'none']).describe('the cgroup hierarchy each worker runs in, its outer memory bound (none: see reason)'),
      cgroup_memory_mb: z.int().nullable().describe('each worker\'s cgroup memory limit (null without cgroups)'),
      pids_max: z.int().nullable().describe('each worker\'s cgroup process and thread limit (null without a pids cgroup)'),
      reason: z.string().optional().describe('why the workers have no cgroups'),
    }).nullable().describe('the sandbox workers\' memory bound (docs/tenant-isolation/memory.md)'),
  }),
  federation: z.object({ enabled: z.boolean() }),
}).meta({ id: 'NodeInfo' })

/** GET /api/v1/auth/whoami: the caller's credential and what it may do. */
export const whoamiSchema = z.object({
  tenant_id: z.string(),
  user: z.string(),
  method: z.string().describe('how the caller authenticated: api_key, jwt, oauth (an introspected token), mtls, none'),
  key_id: z.string().nullable().describe('the API key id (null for other methods)'),
  permissions: z.array(z.enum(ALL_PERMISSIONS as readonly [Permission, ...Permission[]]).meta({ id: 'Permission' })),
  admin: z.boolean(),
  storage: z.object({
    account: z.string().describe('the root tenant the storage is counted for (acme for acme.team1)'),
    used_bytes: z.number().int(),
    quota_bytes: z.number().int().nullable().describe('storage.tenant_quota_mb in bytes; null: no quota'),
    execution_records: z.number().int(),
  }).describe("what the caller's tenant stores on this node (docs/tenant-isolation/storage.md)"),
}).meta({ id: 'Whoami' })

/** GET /api/v1/functions/{rufid}/source (`rufid` is the full RUFID). */
export const functionSourceSchema = z.object({
  rufid: fullRufid,
  ...functionNames,
  version: versionLabel,
  function_name: z.string(),
  language: z.string(),
  signature: z.string(),
  content_digest: z.string(),
  source_code: z.string(),
  imports: z.object({ typescript: z.string(), python: z.string(), go: z.string() }).describe('the import statement of each client language'),
}).meta({ id: 'FunctionSource' })

/** POST /api/v1/functions/signature */
export const signatureSchema = z.object({
  signature: z.string(),
  parameters: z.array(z.object({ name: z.string(), optional: z.boolean(), rest: z.boolean() }).meta({ id: 'SignatureParameter' }))
    .describe('the parameters named arguments bind to, in order'),
}).meta({ id: 'Signature' })

/** GET /v1/telemetry/functions/{rufid}/series */
export const telemetrySeriesSchema = z.object({
  rufid: telemetrySchema.shape.rufid,
  ...functionNames,
  window: z.string(),
  bucket_ms: z.number(),
  buckets: z.array(z.object({
    start: time,
    executions: z.int(),
    errors: z.int(),
    error_rate: z.number(),
    latency_ms: z.object({ p50: z.number(), p95: z.number(), p99: z.number() }),
  }).meta({ id: 'TelemetryBucket' })).describe('oldest first; the last bucket ends now'),
}).meta({ id: 'TelemetrySeries' })

/** One federation member as an operator sees it. */
export const memberStatusSchema = z.object({
  node_id: z.string(),
  endpoint: z.string(),
  self: z.boolean(),
  connected: z.boolean().describe('connected and verified now (false: known from a registration only)'),
  certificate: z.object({ subject: z.string(), serial: z.string(), expires_at: time }).nullable(),
  verified_at: time.nullable(),
  last_seen_at: time.nullable(),
  catalog: z.object({ digest: z.string(), entries: z.int(), branch_moves: z.int() }).nullable()
    .describe('its replicated-catalog digest as it answered just now (null: it did not answer)'),
  error: z.string().optional().describe('why catalog is null'),
}).meta({ id: 'FederationMember' })

/** GET /api/v1/federation/members */
export const memberStatusListSchema = z.object({
  node_id: z.string(),
  digest: z.string().nullable().describe("this node's catalog digest"),
  converged: z.boolean().describe('every connected member answered this digest'),
  members: z.array(memberStatusSchema),
}).meta({ id: 'FederationMembers' })
