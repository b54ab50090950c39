/**
 * Request and response shapes of the node's REST door (README "REST endpoints", decisions.md
 * "`/v1` group field names", "Execution record", "Native test mode"). Field names are the wire
 * names (snake_case). Answers may carry more fields than listed here.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/** Named arguments (matched to the signature's parameters) or positional ones. */
export type ExecutionArguments = Record<string, unknown> | unknown[]

export interface FunctionLimits {
  timeout_ms?: number
  memory_mb?: number
  cpu_ms?: number
}

/** `POST /api/v1/functions/create` (service-spec §2.3). */
export interface CreateFunctionInput {
  function_name: string
  source_code: string
  signature: string
  language: string
  description?: string
  tags?: string[]
  manifest?: Record<string, unknown>
  lockfile?: Record<string, unknown>
  limits?: FunctionLimits
  /** function.svc.json exactly as written (must parse to `manifest`); export gives it back byte for byte */
  manifest_text?: string
  /** function.lock.json exactly as written (must parse to `lockfile`) */
  lockfile_text?: string
  [extra: string]: unknown
}

/** Every body that names a function carries both forms (derived by the client when a node sends one). */
export interface RufidForms {
  /** the 12-character hash */
  rufid_short: string
  /** `rufid:<hash>:v<n>:<tenant>` */
  full_rufid: string
}

/**
 * Both forms on answers that older nodes (before the operation layer of issue 13) sent without
 * naming the function at all: present whenever the node sends them, as every current node does.
 */
export type RufidFormsOfNewerNodes = Partial<RufidForms>

export interface CreateFunctionResponse extends RufidForms {
  /** full form `rufid:<hash>:v<n>:<tenant>` */
  rufid: string
  version: string
  content_digest: string
  import_statement: string
  share_url: string
  api_endpoint: string
  /** false when identical content already existed (HTTP 200 instead of 201) */
  created: boolean
}

/** `POST /v1/functions`; `source` is the raw text (sent base64-encoded). */
export interface PublishInput {
  name: string
  /** language plus version, e.g. `javascript` or `nodejs20` */
  runtime: string
  source: string | Uint8Array
  description?: string
  tags?: string[]
  signature?: string
  manifest?: Record<string, unknown>
  lockfile?: Record<string, unknown>
}

export interface PublishResponse extends RufidForms {
  /** full form */
  rufid: string
  version: string
  import_statement: string
  share_url: string
}

/** `POST /api/v1/functions/resolve` (service-spec §2.7 plus the definition). */
export interface Resolution extends RufidForms {
  function_id: string
  /** full form */
  rufid: string
  version: string
  accessible: boolean
  cached: boolean
  resolution_time_ms: number
  content_digest: string
  function_name: string
  signature: string
  language: string
  created_at: string
  manifest: Record<string, unknown> | null
  lockfile: Record<string, unknown> | null
  manifest_text?: string | null
  lockfile_text?: string | null
}

/** `POST /api/v1/functions/{rufid}/execute`. */
export interface ExecuteResponse<R = unknown> extends RufidFormsOfNewerNodes {
  result: R
  execution_time_ms: number
  status: string
  execution_id: string
}

/** `POST /v1/functions/{rufid}/executions` (202). */
export interface ExecutionRef extends RufidFormsOfNewerNodes {
  execution_id: string
  status: ExecutionStatus
}

export type ExecutionStatus = 'queued' | 'running' | 'success' | 'error' | 'timeout'

/** `GET /v1/executions/{id}`. */
export interface ExecutionRecord<R = unknown> extends RufidForms {
  execution_id: string
  /** full form */
  rufid: string
  version: string
  /** the tenant the execution ran for (read from `tenant` on nodes that do not send it yet) */
  tenant_id: string
  /** @deprecated the old name of `tenant_id`, sent one more release */
  tenant?: string
  function_name: string
  language: string
  status: ExecutionStatus
  started_at: string
  finished_at: string | null
  execution_time_ms: number | null
  cpu_time_ms: number | null
  memory_bytes: number | null
  result?: R
  error?: { code: number; name: string; message: string; details?: Record<string, unknown> }
  logs: unknown[]
}

/** `GET /v1/executions/{id}/logs`. */
export interface ExecutionLogs extends RufidFormsOfNewerNodes {
  execution_id: string
  status: ExecutionStatus
  logs: unknown[]
}

export interface UsageMetrics {
  usage_count: number
  avg_execution_time_ms: number
  success_rate: number
}

/** Function metadata (service-spec §2.2; `rufid` is the short form). */
export interface FunctionMetadata extends RufidForms {
  /** the short form (service-spec §2.2) */
  rufid: string
  function_name: string
  signature: string
  language: string
  version: string
  created_at: string
  author: string
  tenant_id: string
  description: string
  tags: string[]
  dependencies: string[]
  content_digest: string
  metrics?: UsageMetrics
}

export interface Pagination {
  total: number
  limit: number
  offset: number
  next_offset: number | null
}

export interface FunctionList {
  items: FunctionMetadata[]
  pagination: Pagination
}

export interface ListOptions {
  search?: string
  tags?: string[]
  limit?: number
  offset?: number
}

export interface SearchOptions {
  language?: string
  /** exactly this author (the publishing user, e.g. `key:admin`) */
  author?: string
  tags?: string[]
  limit?: number
  offset?: number
}

/** `GET /v1/marketplace/functions/search`. */
export interface SearchResult {
  items: FunctionMetadata[]
  pagination: Pagination
  aggregations: {
    language: Record<string, number>
    tags: Record<string, number>
    author: Record<string, number>
  }
}

/** `GET /v1/telemetry/functions/{rufid}?window=`. */
export interface Telemetry extends RufidFormsOfNewerNodes {
  /** as asked: the short RUFID (every version) or the full one (that version) */
  rufid: string
  window: string
  executions: number
  latency_ms: { p50: number; p95: number; p99: number; max: number }
  error_rate: number
  cost: { cpu_ms_total: number; cpu_ms_avg: number; memory_bytes_avg: number }
}

export interface DeleteResponse {
  /** the full RUFIDs tombstoned */
  deleted: string[]
}

/** `POST /api/v1/auth/v2/api-keys`. */
export interface ApiKeyRequest {
  name: string
  /** `functions:create`, `functions:read`, `functions:execute`, `functions:delete`, `admin` */
  scopes: string[]
  /** null: never (only where the node allows keys that never expire) */
  expires_days?: number | null
}

/** The minted key; `api_key` is shown this once. */
export interface MintedApiKey {
  api_key: string
  key_id: string
  name: string
  tenant_id: string
  scopes: string[]
  expires_at: string | null
}

export interface ApiKeyInfo {
  key_id: string
  name: string
  tenant_id: string
  scopes: string[]
  created_at: string
  created_by?: string
  expires_at: string | null
  revoked_at?: string
}

export interface RevokedApiKey {
  key_id: string
  revoked_at: string
}

/** `POST /api/v1/execution/execute` (native test mode). */
export interface NativeExecuteInput {
  /** `rufid:<hash>` */
  rufid: string
  function_name?: string
  namespace?: string
  source_code?: string
  input_data?: ExecutionArguments
  signature?: string
  language?: string
}

export interface NativeExecuteResponse<R = unknown> extends ExecuteResponse<R> {
  rufid: string
  registered: boolean
  timing: { execution_time_ms: number; cpu_time_ms: number; total_time_ms: number }
}

/** One finished execution, as the `/ws` `executions` channel sends it (`engine/events.ts`). */
export interface ExecutionEvent extends RufidForms {
  execution_id: string
  /** full form */
  rufid: string
  version: string
  tenant_id: string
  function_name: string
  status: string
  execution_time_ms: number
  error_code: number | null
  timestamp: string
}

/** A node or tenant event on the `/ws` `system` channel. */
export interface SystemEvent {
  type: string
  tenant_id: string | null
  rufid: string | null
  message: string
  timestamp: string
  data: Record<string, unknown>
}

// ---- branches, versions, export (README "Manifests, lockfiles, versions and branches") -----

/** `POST /api/v1/functions/deploy`: a create body plus the branch and, after its creation, its key. */
export interface DeployInput extends CreateFunctionInput {
  /** default `main` */
  branch?: string
  /** needed to move an existing branch; on a new branch, optional: your own key (16+ characters) */
  branch_key?: string
}

/** A branch head (never its key). */
export interface BranchHead extends RufidForms {
  function_name: string
  branch: string
  version: string
  /** full form */
  rufid: string
  created_at: string
  updated_at: string
  updated_by: string
}

export interface DeployResponse extends CreateFunctionResponse {
  function_name: string
  branch: string
  /** true when this deploy created the branch */
  branch_created: boolean
  /** only when this deploy created the branch: shown once, needed to move it again */
  branch_key?: string
  /** false when the head already pointed at this version */
  moved: boolean
  previous_version: string | null
  head: BranchHead
  manifest: Record<string, unknown> | null
  lockfile: Record<string, unknown> | null
}

/** `POST /api/v1/functions/branches/{branch}/invoke`. */
export interface InvokeResponse<R = unknown> extends ExecuteResponse<R> {
  rufid_short: string
  full_rufid: string
  /** full form of the version the head points at */
  rufid: string
  version: string
  branch: string
  function_name: string
}

/** One version of a lineage in `GET /api/v1/functions/{rufid}/versions`. */
export interface VersionEntry extends RufidForms {
  version: string
  /** full form */
  rufid: string
  content_digest: string
  created_at: string
  author: string
  deleted_at?: string
  manifest_snapshot: { manifest: Record<string, unknown> | null; lockfile: Record<string, unknown> | null; [k: string]: unknown }
  branches: unknown[]
}

export interface VersionList {
  function_name: string
  versions: VersionEntry[]
  heads: BranchHead[]
}

/** `GET /api/v1/functions/{rufid}/export`: the files of a version. */
export interface ExportedFunction extends RufidForms {
  /** full form */
  rufid: string
  version: string
  function_name: string
  manifest: Record<string, unknown> | null
  lockfile: Record<string, unknown> | null
  /** the files exactly as sent (null when not sent as text, or a generated lockfile) */
  manifest_text: string | null
  lockfile_text: string | null
}

// ---- audit, federation reads, node probes ---------------------------------------------------

export interface AuditQuery {
  /** ISO 8601 */
  from?: string
  to?: string
  /** a tenant, or `~none` (operators only) */
  tenant?: string
  operation?: string
  rufid?: string
  /** at most 1000 */
  limit?: number
  cursor?: string
}

export interface AuditPage {
  items: Array<Record<string, unknown>>
  next_cursor: string | null
}

export interface FederationNode {
  node_id: string
  endpoint?: string
  [k: string]: unknown
}

export interface FederationNodes {
  /** this node's id */
  node_id: string
  nodes: FederationNode[]
}

/** `GET /api/v1/federation/discover/{rufid}`: the nodes that provide a RUFID. */
export interface Discovery {
  /** as asked */
  rufid: string
  rufid_short: string
  content_digest: string | null
  function_name: string | null
  versions: string[]
  nodes: Array<{ node_id: string; endpoint: string; source: 'self' | 'dht' | 'catalog' | 'member' }>
}

/** One member of `GET /api/v1/federation/members`. */
export interface FederationMember {
  node_id: string
  endpoint: string
  self: boolean
  /** connected and verified now (false: known from a registration only) */
  connected: boolean
  certificate: { subject: string; serial: string; expires_at: string } | null
  verified_at: string | null
  last_seen_at: string | null
  /** the member's replicated-catalog digest as it answered just now (null: it did not answer) */
  catalog: { digest: string; entries: number; branch_moves: number } | null
  /** why `catalog` is null */
  error?: string
}

/** `GET /api/v1/federation/members`: every known node beside this node's catalog digest. */
export interface FederationMembers {
  /** this node's id */
  node_id: string
  /** this node's catalog digest */
  digest: string | null
  /** every connected member answered this node's digest */
  converged: boolean
  members: FederationMember[]
}

export interface CatalogDigest {
  digest: string
  entries: number
  vector: Record<string, number>
}

export interface ConflictList {
  items: Array<Record<string, unknown>>
}

export interface Health {
  status: string
  pid: number
  uptime_s: number
}

export interface Readiness {
  status: 'ready' | 'starting' | 'draining'
}

/** `GET /api/v1/node/info`: what the node tells anyone about itself (no credentials needed). */
export interface NodeInfo {
  name: string
  version: string
  /** the svc protocol version the node speaks (service-spec §9), e.g. `2.0.0`: compare with `PROTOCOL_VERSION` */
  protocol_version: string
  status: 'ready' | 'starting' | 'draining'
  ready: boolean
  /** when the node started serving (null while starting) */
  started_at: string | null
  uptime_s: number
  /** how callers authenticate: `none` needs no credentials (tenant from X-Svc-Namespace) */
  auth_mode: 'standard' | 'native' | 'none'
  sandbox: { workers: number | null }
  federation: { enabled: boolean }
}

/** `GET /api/v1/auth/whoami`: the caller's credential and what it may do. */
export interface Whoami {
  tenant_id: string
  user: string
  /** `api_key`, `jwt`, `oauth` (an introspected token), `mtls` or `none` */
  method: string
  key_id: string | null
  /** of `rufid.create`, `rufid.read`, `rufid.execute`, `rufid.delete`, `rufid.admin` */
  permissions: string[]
  admin: boolean
}

/** `GET /api/v1/functions/{rufid}/source`: a version's source and what a reader needs beside it. */
export interface FunctionSource extends RufidForms {
  /** full form */
  rufid: string
  version: string
  function_name: string
  language: string
  signature: string
  content_digest: string
  source_code: string
  /** each client's import statement */
  imports: { typescript: string; python: string; go: string }
}

export interface TelemetrySeriesOptions {
  /** a duration such as `15m`, `6h`, `7d` (at most 30 days); default `1h` */
  window?: string
  /** buckets the window is cut into, 1–240; default 30 */
  buckets?: number
  /** one version (`v2` or `2`); default every version of the hash */
  version?: string | number
}

/** One bucket of a telemetry series: the executions that started in `[start, start + bucket_ms)`. */
export interface TelemetryBucket {
  start: string
  executions: number
  errors: number
  error_rate: number
  latency_ms: { p50: number; p95: number; p99: number }
}

/** `GET /v1/telemetry/functions/{rufid}/series`: telemetry per bucket of a window, oldest first. */
export interface TelemetrySeries extends RufidForms {
  /** as asked: the short RUFID (every version) or the full one (that version) */
  rufid: string
  window: string
  bucket_ms: number
  buckets: TelemetryBucket[]
}
