/**
 * `SvcClient`: a typed client of one svc node over REST (`fetch`), with execution event
 * subscriptions over the node's `/ws` WebSocket. Imports `core/` only (the lint rule of
 * `src/client/**`), so the RUFIDs it computes come from the daemon's own code.
 */
import { parseRufid as coreParseRufid, parseVersionLabel, type ParsedRufid } from '../core/rufid.js'
import {
  ExecutionFailedError, ExecutionTimeoutError, InvalidRufidError, SvcConnectionError, SvcError, WaitTimeoutError,
  errorFromResponse, isSvcError, svcError,
} from './errors.js'
import { openSubscription, type EventSubscription, type SubscribeOptions } from './subscriptions.js'
import { executionRecordFields, withRufidForms, withRufidFormsIn } from './fields.js'
import type {
  ApiKeyInfo, ApiKeyRequest, AuditPage, AuditQuery, BranchHead, CatalogDigest, ConflictList, CreateFunctionInput,
  CreateFunctionResponse, DeleteResponse, DeployInput, DeployResponse, Discovery, ExecuteResponse, ExecutionArguments,
  ExecutionEvent, ExecutionLogs, ExecutionRecord, ExecutionRef, ExportedFunction, FederationMembers, FederationNodes,
  FunctionList, FunctionMetadata, FunctionSource, Health, InvokeResponse, ListOptions, MintedApiKey, NativeExecuteInput,
  NativeExecuteResponse, NodeInfo, PublishInput, PublishResponse, Readiness, Resolution, RevokedApiKey, SearchOptions,
  SearchResult, SystemEvent, Telemetry, TelemetrySeries, TelemetrySeriesOptions, VersionList, Whoami,
} from './types.js'

export const CLIENT_VERSION = '0.1.0'

/** The svc protocol version this client speaks (service-spec §9); a node states its own in `nodeInfo().protocol_version`. */
export { PROTOCOL_VERSION } from '../core/protocol-version.js'

/** Used when neither `url` nor `SVC_URL` is given. */
export const DEFAULT_URL = 'http://127.0.0.1:8080'

/** Execution states after which a record no longer changes are all but these. */
const PENDING_STATES: ReadonlySet<string> = new Set(['queued', 'running'])

export interface SvcClientOptions {
  /** the node's base URL; default `SVC_URL`, else `http://127.0.0.1:8080` (a path prefix is kept) */
  url?: string
  /** bearer token (API key or JWT); default `SVC_TOKEN` */
  token?: string
  /** sent as `X-Svc-Namespace`; default `SVC_NAMESPACE` */
  namespace?: string
  /** bound on every single request (and on opening a subscription), in ms; default 30 000; 0: none */
  timeoutMs?: number
  /** extra headers sent with every request */
  headers?: Record<string, string>
  /** a `fetch` implementation (default: the global one) */
  fetch?: typeof fetch
}

/** Options of one request. */
export interface RequestOptions {
  /** JSON body (omitted: no body) */
  body?: unknown
  /** query parameters; undefined and empty values are left out, arrays are sent comma-separated */
  query?: Record<string, string | number | boolean | string[] | undefined>
  headers?: Record<string, string>
  /** aborting rejects with the signal's reason */
  signal?: AbortSignal
  /** non-2xx statuses whose JSON body is returned instead of rejected (e.g. 503 of `/readyz`) */
  okStatuses?: number[]
}

export interface WaitOptions {
  /** give up (WaitTimeoutError) after this long; default 30 000 ms */
  timeoutMs?: number
  /** first delay between polls, doubled after each poll up to 1 s; default 50 ms */
  intervalMs?: number
  signal?: AbortSignal
}

/**
 * A stored function as an async callable: `await add(2, 3)` executes the RUFID on the node with
 * positional arguments and resolves with its result; `add.named({ a: 2, b: 3 })` sends named
 * arguments. A run the node reports as failed rejects with its typed error (1007, 1004, …).
 */
export interface SvcFunction<R = unknown> {
  (...args: unknown[]): Promise<R>
  /** the RUFID this callable executes (as given: short or full form) */
  readonly rufid: string
  readonly client: SvcClient
  /** set when the function was resolved (`importFunction`, `svc://` imports) */
  readonly resolution: Resolution | undefined
  /** executes with named arguments */
  named(args: Record<string, unknown>): Promise<R>
  /** executes and resolves with the whole answer (`result`, `status`, `execution_time_ms`, `execution_id`) */
  execute(args?: ExecutionArguments): Promise<ExecuteResponse<R>>
}

const envOf = (name: string): string | undefined => {
  const v = typeof process === 'undefined' ? undefined : process.env[name]
  return v ? v : undefined
}

/** parseRufid of core, raising the client's `InvalidRufidError` (no request is sent). */
export function parseRufid(value: unknown): ParsedRufid {
  try {
    return coreParseRufid(value)
  } catch (err) {
    const e = err as { message?: string; details?: Record<string, unknown> }
    throw new InvalidRufidError({ message: e.message ?? `malformed RUFID: ${JSON.stringify(value)}`, details: e.details ?? { rufid: value } })
  }
}

function versionLabel(value: string | number): string {
  try {
    return `v${parseVersionLabel(typeof value === 'number' ? `v${value}` : value)}`
  } catch {
    throw new InvalidRufidError({ message: `malformed version label: ${JSON.stringify(value)}`, details: { version: value } })
  }
}

/** A RUFID (validated) as a path segment; `:` of the full form stays readable. */
function rufidSegment(rufid: string): string {
  parseRufid(rufid)
  return encodeURIComponent(rufid).replace(/%3A/gi, ':')
}

function idSegment(kind: string, id: string): string {
  if (typeof id !== 'string' || id === '') {
    throw svcError(1006, { message: `${kind} must be a non-empty string, got ${JSON.stringify(id)}`, details: { [kind]: id } })
  }
  return encodeURIComponent(id)
}

function toBase64(source: string | Uint8Array): string {
  return (typeof source === 'string' ? Buffer.from(source, 'utf8') : Buffer.from(source)).toString('base64')
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(signal!.reason)
    }
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

export class SvcClient {
  /** the node's base URL, without a trailing slash */
  readonly url: string
  readonly namespace: string | undefined
  readonly timeoutMs: number
  readonly #token: string | undefined
  readonly #headers: Record<string, string>
  readonly #fetch: typeof fetch

  constructor(options: SvcClientOptions = {}) {
    const url = (options.url ?? envOf('SVC_URL') ?? DEFAULT_URL).trim().replace(/(?<!\/)\/+$/, '')
    let parsed: URL
    try {
      parsed = new URL(url)
    } catch {
      throw new TypeError(`the node URL must be an absolute http(s) URL, got ${JSON.stringify(url)}`)
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new TypeError(`the node URL must be an http(s) URL, got ${JSON.stringify(url)}`)
    }
    this.url = url
    this.#token = options.token ?? envOf('SVC_TOKEN')
    this.namespace = options.namespace ?? envOf('SVC_NAMESPACE')
    this.timeoutMs = options.timeoutMs ?? 30_000
    this.#headers = { ...(options.headers ?? {}) }
    this.#fetch = options.fetch ?? globalThis.fetch
  }

  /** true when a token is configured (the token itself is never exposed) */
  get hasToken(): boolean {
    return this.#token !== undefined
  }

  /** A copy of this client with other options (e.g. another token); this client is unchanged. */
  with(options: SvcClientOptions): SvcClient {
    return new SvcClient({
      url: this.url,
      token: this.#token,
      namespace: this.namespace,
      timeoutMs: this.timeoutMs,
      headers: this.#headers,
      fetch: this.#fetch,
      ...options,
    })
  }

  toJSON(): Record<string, unknown> {
    return { url: this.url, namespace: this.namespace, token: this.#token ? 'set' : undefined, timeoutMs: this.timeoutMs }
  }

  /** The headers sent with every request (Authorization included when a token is set). */
  headers(): Record<string, string> {
    const h: Record<string, string> = { accept: 'application/json', 'user-agent': `svc-ts/${CLIENT_VERSION}` }
    if (this.#token) h.authorization = `Bearer ${this.#token}`
    if (this.namespace) h['x-svc-namespace'] = this.namespace
    for (const [k, v] of Object.entries(this.#headers)) h[k.toLowerCase()] = v
    return h
  }

  // ---- transport ------------------------------------------------------------------------------

  /**
   * One request to any path; resolves with the decoded JSON answer (`{}` for an empty body).
   * A non-2xx answer rejects with the typed error of its code; no answer at all with an
   * `SvcConnectionError` (`code` null).
   */
  async request<T = unknown>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const target = this.#urlOf(path, options.query)
    const headers = { ...this.headers(), ...(options.headers ?? {}) }
    let body: string | undefined
    if (options.body !== undefined) {
      body = JSON.stringify(options.body)
      headers['content-type'] = 'application/json'
    }
    const timeout = this.timeoutMs > 0 ? AbortSignal.timeout(this.timeoutMs) : undefined
    const signals = [timeout, options.signal].filter((s): s is AbortSignal => s !== undefined)
    const signal = signals.length === 0 ? undefined : signals.length === 1 ? signals[0] : AbortSignal.any(signals)
    let text: string
    let res: Response
    try {
      res = await this.#fetch(target, { method: method.toUpperCase(), headers, body, signal })
      text = await res.text()
    } catch (err) {
      if (options.signal?.aborted) throw options.signal.reason
      if (timeout?.aborted) {
        throw new SvcConnectionError(`${method.toUpperCase()} ${target}: no answer within ${this.timeoutMs} ms`, {
          name: 'REQUEST_TIMEOUT', details: { url: target, timeout_ms: this.timeoutMs }, cause: err,
        })
      }
      const reason = (err as { cause?: { code?: string; message?: string } }).cause
      throw new SvcConnectionError(`cannot reach ${this.url}: ${reason?.code ?? reason?.message ?? (err as Error).message}`, {
        details: { url: target, reason: reason?.code ?? (err as Error).message }, cause: err,
      })
    }
    if ((res.status < 200 || res.status > 299) && !options.okStatuses?.includes(res.status)) {
      throw errorFromResponse(res.status, text, res.headers.get('retry-after'))
    }
    if (text.trim() === '') return {} as T
    try {
      return JSON.parse(text) as T
    } catch (err) {
      throw new SvcError({
        code: null, name: 'BAD_RESPONSE', httpStatus: res.status, cause: err,
        message: `the node answered HTTP ${res.status} with a body that is not JSON: ${text.slice(0, 200)}`,
      })
    }
  }

  #urlOf(path: string, query?: RequestOptions['query']): string {
    let url = this.url + (path.startsWith('/') ? path : `/${path}`)
    if (query) {
      const params = new URLSearchParams()
      for (const [k, v] of Object.entries(query)) {
        // an empty value is refused by the node (never read as "absent"): left out like undefined
        const text = Array.isArray(v) ? v.filter((item) => item.trim() !== '').join(',') : v === undefined ? '' : String(v)
        if (text.trim() === '') continue
        params.append(k, text)
      }
      const qs = params.toString()
      if (qs) url += `?${qs}`
    }
    return url
  }

  // ---- core group /api/v1/functions -----------------------------------------------------------

  /** `POST /api/v1/functions/create`: 201 new, or 200 (`created: false`) when the content existed. */
  async create(input: CreateFunctionInput): Promise<CreateFunctionResponse> {
    return withRufidForms(await this.request<CreateFunctionResponse>('POST', '/api/v1/functions/create', { body: input }))
  }

  /** `POST /api/v1/functions/resolve` (short or full RUFID; `version` as `v2` or `2`; default newest). */
  async resolve(rufid: string, version?: string | number): Promise<Resolution> {
    parseRufid(rufid)
    const body: Record<string, unknown> = { rufid }
    if (version !== undefined) body.version = versionLabel(version)
    return withRufidForms(await this.request<Resolution>('POST', '/api/v1/functions/resolve', { body }))
  }

  /** `POST /api/v1/functions/{rufid}/execute` with named (object) or positional (array) arguments. */
  async execute<R = unknown>(rufid: string, args: ExecutionArguments = {}, options: { version?: string | number } = {}): Promise<ExecuteResponse<R>> {
    const body: Record<string, unknown> = { arguments: args }
    if (options.version !== undefined) body.version = versionLabel(options.version)
    return this.request('POST', `/api/v1/functions/${rufidSegment(rufid)}/execute`, { body })
  }

  /** `GET /api/v1/functions/{rufid}`: metadata with usage metrics. */
  async getFunction(rufid: string, version?: string | number): Promise<FunctionMetadata> {
    return withRufidForms(await this.request<FunctionMetadata>('GET', `/api/v1/functions/${rufidSegment(rufid)}`, {
      query: { version: version === undefined ? undefined : versionLabel(version) },
    }))
  }

  /** `GET /api/v1/functions/{rufid}/source`: the source of a version (the newest without `version`), its signature, digest and import statements. */
  async getFunctionSource(rufid: string, version?: string | number): Promise<FunctionSource> {
    return withRufidForms(await this.request<FunctionSource>('GET', `/api/v1/functions/${rufidSegment(rufid)}/source`, {
      query: { version: version === undefined ? undefined : versionLabel(version) },
    }))
  }

  /** `GET /api/v1/functions?search=&tags=&limit=&offset=`. */
  async listFunctions(options: ListOptions = {}): Promise<FunctionList> {
    return withRufidFormsIn(await this.request<FunctionList>('GET', '/api/v1/functions', {
      query: { search: options.search, tags: options.tags, limit: options.limit, offset: options.offset },
    }), 'items')
  }

  /** `DELETE /api/v1/functions/{rufid}`: tombstones that version (full form) or every live version. */
  async deleteFunction(rufid: string, version?: string | number): Promise<DeleteResponse> {
    return this.request('DELETE', `/api/v1/functions/${rufidSegment(rufid)}`, {
      query: { version: version === undefined ? undefined : versionLabel(version) },
    })
  }

  // ---- /v1 group -----------------------------------------------------------------------------

  /** `POST /v1/functions` (the source is sent base64-encoded). */
  async publish(input: PublishInput): Promise<PublishResponse> {
    const { source, ...rest } = input
    const body: Record<string, unknown> = { ...rest, source: toBase64(source) }
    for (const [k, v] of Object.entries(body)) if (v === undefined) delete body[k]
    return withRufidForms(await this.request<PublishResponse>('POST', '/v1/functions', { body }))
  }

  /** `POST /v1/functions/{rufid}/executions`: starts an execution, 202 `{execution_id, status}`. */
  async executeAsync(rufid: string, input: ExecutionArguments = {}): Promise<ExecutionRef> {
    return this.request('POST', `/v1/functions/${rufidSegment(rufid)}/executions`, { body: input })
  }

  /** `GET /v1/executions/{id}`: the execution record. */
  async getExecution<R = unknown>(executionId: string, options: { signal?: AbortSignal } = {}): Promise<ExecutionRecord<R>> {
    return executionRecordFields(await this.request<ExecutionRecord<R>>('GET', `/v1/executions/${idSegment('execution_id', executionId)}`, options))
  }

  /** `GET /v1/executions/{id}/logs`. */
  async executionLogs(executionId: string): Promise<ExecutionLogs> {
    return this.request('GET', `/v1/executions/${idSegment('execution_id', executionId)}/logs`)
  }

  /**
   * Polls `getExecution` until the status is no longer `queued`/`running` and resolves with that
   * record (whatever its status). Rejects with `WaitTimeoutError` after `timeoutMs`.
   */
  async waitExecution<R = unknown>(executionId: string, options: WaitOptions = {}): Promise<ExecutionRecord<R>> {
    const timeoutMs = options.timeoutMs ?? 30_000
    const deadline = performance.now() + timeoutMs
    let delay = Math.max(10, options.intervalMs ?? 50)
    const maxDelay = Math.max(1000, delay)
    for (;;) {
      const record = await this.getExecution<R>(executionId, { signal: options.signal })
      if (!PENDING_STATES.has(record.status)) return record
      const remaining = deadline - performance.now()
      if (remaining <= 0) {
        throw new WaitTimeoutError(`execution ${executionId} still ${record.status} after ${timeoutMs} ms`, {
          execution_id: executionId, status: record.status,
        })
      }
      await sleep(Math.min(delay, remaining), options.signal)
      delay = Math.min(delay * 2, maxDelay)
    }
  }

  /** `GET /v1/marketplace/functions/search?q=&language=&author=&tags=&limit=&offset=`. */
  async search(q: string, options: SearchOptions = {}): Promise<SearchResult> {
    return withRufidFormsIn(await this.request<SearchResult>('GET', '/v1/marketplace/functions/search', {
      query: { q, language: options.language, author: options.author, tags: options.tags, limit: options.limit, offset: options.offset },
    }), 'items')
  }

  /** `GET /v1/telemetry/functions/{rufid}?window=` (a duration such as `15m`, `1h`). */
  async telemetry(rufid: string, window = '15m'): Promise<Telemetry> {
    return withRufidForms(await this.request<Telemetry>('GET', `/v1/telemetry/functions/${rufidSegment(rufid)}`, { query: { window } }))
  }

  /** `GET /v1/telemetry/functions/{rufid}/series?window=&buckets=&version=`: telemetry per bucket of a window, oldest first. */
  async telemetrySeries(rufid: string, options: TelemetrySeriesOptions = {}): Promise<TelemetrySeries> {
    return withRufidForms(await this.request<TelemetrySeries>('GET', `/v1/telemetry/functions/${rufidSegment(rufid)}/series`, {
      query: {
        window: options.window,
        buckets: options.buckets,
        version: options.version === undefined ? undefined : versionLabel(options.version),
      },
    }))
  }

  // ---- API keys and the native group -----------------------------------------------------------

  /** `POST /api/v1/auth/v2/api-keys` (admin): the new key, whose `api_key` is shown only now. */
  async createApiKey(request: ApiKeyRequest): Promise<MintedApiKey> {
    return this.request('POST', '/api/v1/auth/v2/api-keys', { body: request })
  }

  /** `GET /api/v1/auth/v2/api-keys` (admin): the tenant's keys, without secrets. */
  async listApiKeys(): Promise<ApiKeyInfo[]> {
    const answer = await this.request<{ items: ApiKeyInfo[] }>('GET', '/api/v1/auth/v2/api-keys')
    return answer.items
  }

  /** `DELETE /api/v1/auth/v2/api-keys/{key_id}` (admin). */
  async revokeApiKey(keyId: string): Promise<RevokedApiKey> {
    return this.request('DELETE', `/api/v1/auth/v2/api-keys/${idSegment('key_id', keyId)}`)
  }

  /** `POST /api/v1/execution/execute` (native test mode). */
  async executeNative<R = unknown>(input: NativeExecuteInput): Promise<NativeExecuteResponse<R>> {
    return withRufidForms(await this.request<NativeExecuteResponse<R>>('POST', '/api/v1/execution/execute', { body: input }))
  }

  // ---- branches, versions, export ------------------------------------------------------------

  /**
   * `POST /api/v1/functions/deploy`: publishes the function (as `create`) and points `branch`
   * (default `main`) at the version. The first deploy to a branch creates it and answers its
   * `branch_key` once; moving it later needs that key (`PermissionDeniedError` otherwise).
   */
  async deploy(input: DeployInput): Promise<DeployResponse> {
    const answer = withRufidForms(await this.request<DeployResponse>('POST', '/api/v1/functions/deploy', { body: input }))
    withRufidFormsIn(answer, 'head')
    return answer
  }

  /** `POST /api/v1/functions/branches/{branch}/invoke`: runs the version the head of `branch` points at. */
  async invoke<R = unknown>(functionName: string, branch = 'main', args: ExecutionArguments = {}): Promise<InvokeResponse<R>> {
    return withRufidForms(await this.request<InvokeResponse<R>>('POST', `/api/v1/functions/branches/${idSegment('branch', branch)}/invoke`, {
      body: { function_name: functionName, arguments: args },
    }))
  }

  /** `GET /api/v1/functions/branches?function_name=`: the tenant's branch heads (of one function when named). */
  async listBranches(functionName?: string): Promise<BranchHead[]> {
    const answer = await this.request<{ items: BranchHead[] }>('GET', '/api/v1/functions/branches', { query: { function_name: functionName } })
    return withRufidFormsIn(answer, 'items').items
  }

  /** `GET /api/v1/functions/{rufid}/versions`: the version ledger of the RUFID's lineage, with its heads. */
  async listVersions(rufid: string): Promise<VersionList> {
    return withRufidFormsIn(await this.request<VersionList>('GET', `/api/v1/functions/${rufidSegment(rufid)}/versions`), 'versions', 'heads')
  }

  /** `GET /api/v1/functions/{rufid}/export`: manifest and lockfile of a version (texts as sent). */
  async exportFunction(rufid: string, version?: string | number): Promise<ExportedFunction> {
    return withRufidForms(await this.request<ExportedFunction>('GET', `/api/v1/functions/${rufidSegment(rufid)}/export`, {
      query: { version: version === undefined ? undefined : versionLabel(version) },
    }))
  }

  // ---- audit, federation reads, probes ---------------------------------------------------------

  /** `GET /api/v1/auth/whoami`: the caller's tenant, identity and permissions (401 without valid credentials). */
  async whoami(): Promise<Whoami> {
    return this.request('GET', '/api/v1/auth/whoami')
  }

  /** `GET /api/v1/audit` (admin): audit entries, newest first; pass `next_cursor` as `cursor` for the next page. */
  async listAuditEntries(query: AuditQuery = {}): Promise<AuditPage> {
    return this.request('GET', '/api/v1/audit', { query: { ...query } })
  }

  /** `GET /api/v1/federation/nodes`: the federation members (`ValidationFailedError`, 409 `federation_disabled`, without federation). */
  async listNodes(): Promise<FederationNodes> {
    return this.request('GET', '/api/v1/federation/nodes')
  }

  /** `GET /api/v1/federation/discover/{rufid}`: the nodes that provide a RUFID. */
  async discover(rufid: string): Promise<Discovery> {
    return this.request('GET', `/api/v1/federation/discover/${rufidSegment(rufid)}`)
  }

  /** `GET /api/v1/federation/catalog/digest`: a digest of the replicated catalog, to compare nodes. */
  async catalogDigest(): Promise<CatalogDigest> {
    return this.request('GET', '/api/v1/federation/catalog/digest')
  }

  /** `GET /api/v1/federation/conflicts`: recorded catalog conflicts. */
  async listConflicts(): Promise<ConflictList> {
    return this.request('GET', '/api/v1/federation/conflicts')
  }

  /**
   * `GET /api/v1/federation/members`: every known node with its certificate, when it was last
   * heard from and its catalog digest beside this node's (`converged`).
   */
  async federationMembers(): Promise<FederationMembers> {
    return this.request('GET', '/api/v1/federation/members')
  }

  /** `GET /healthz`: liveness. */
  async health(): Promise<Health> {
    return this.request('GET', '/healthz')
  }

  /** `GET /readyz`: `ready`, or `starting`/`draining` (answered 503, returned, not thrown). */
  async readiness(): Promise<Readiness> {
    return this.request('GET', '/readyz', { okStatuses: [503] })
  }

  /** `GET /api/v1/node/info`: version, readiness, uptime, how callers authenticate, sandbox workers, federation on/off. */
  async nodeInfo(): Promise<NodeInfo> {
    return this.request('GET', '/api/v1/node/info')
  }

  // ---- events ----------------------------------------------------------------------------------

  /**
   * Subscribes to finished executions of the caller's tenant (only those of `rufid` when given)
   * over the node's `/ws` socket. Resolves once the node confirmed the subscription, so every
   * execution that finishes afterwards is delivered. Iterate it (`for await`) or pass `onEvent`;
   * `close()` ends it.
   */
  async subscribeExecutions(rufid?: string, options: SubscribeOptions<ExecutionEvent> = {}): Promise<EventSubscription<ExecutionEvent>> {
    if (rufid !== undefined) parseRufid(rufid)
    return openSubscription<ExecutionEvent>(this.#socketInit(), { channel: 'executions', rufid }, options)
  }

  /** Subscribes to system events (function created/deleted, node and peer events). */
  async subscribeSystem(options: SubscribeOptions<SystemEvent> = {}): Promise<EventSubscription<SystemEvent>> {
    return openSubscription<SystemEvent>(this.#socketInit(), { channel: 'system' }, options)
  }

  #socketInit(): { url: string; headers: Record<string, string>; timeoutMs: number } {
    const url = new URL(`${this.url}/ws`)
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:'
    const headers = this.headers()
    delete headers.accept
    return { url: url.href, headers, timeoutMs: this.timeoutMs }
  }

  // ---- callables -----------------------------------------------------------------------------

  /** An async callable executing `rufid` (short or full form); nothing is sent until it is called. */
  function<R = unknown>(rufid: string, resolution?: Resolution): SvcFunction<R> {
    parseRufid(rufid)
    const execute = (args: ExecutionArguments = []): Promise<ExecuteResponse<R>> => this.execute<R>(rufid, args)
    const run = async (args: ExecutionArguments): Promise<R> => {
      const answer = await execute(args)
      if (answer.status !== 'success') throw runFailure(rufid, answer)
      return answer.result
    }
    const fn = ((...args: unknown[]) => run(args)) as SvcFunction<R>
    Object.defineProperties(fn, {
      name: { value: resolution?.function_name ?? rufid, configurable: true },
      rufid: { value: rufid, enumerable: true },
      client: { value: this },
      resolution: { value: resolution, enumerable: true },
      named: { value: (args: Record<string, unknown>) => run(args) },
      execute: { value: execute },
    })
    return fn
  }

  /**
   * Resolves `rufid` on the node, then returns its callable (what `svc://<rufid_short>` imports
   * give). An unknown RUFID rejects with `RufidNotFoundError` whose message names it.
   */
  async importFunction<R = unknown>(rufid: string): Promise<SvcFunction<R>> {
    let resolution: Resolution
    try {
      parseRufid(rufid)
      resolution = await this.resolve(rufid)
    } catch (err) {
      if (!isSvcError(err)) throw err
      const why = err.code === 1002
        ? `RUFID ${rufid} not found on ${this.url}`
        : err.code === 1001 && err.httpStatus === undefined
          ? `${JSON.stringify(rufid)} is not a RUFID (12 letters or digits, or the full form rufid:<hash>:v<n>:<tenant>)`
          : `resolving RUFID ${rufid} on ${this.url} failed: ${err.message}`
      const message = `${why} [${err.code === null ? '' : `${err.code} `}${err.name}]`
      const details = { ...err.details, rufid }
      if (err instanceof SvcConnectionError) throw new SvcConnectionError(message, { name: err.name, details, cause: err })
      throw svcError(err.code, {
        name: err.name, message, details, httpStatus: err.httpStatus, retryAfterSeconds: err.retryAfterSeconds, cause: err,
      })
    }
    // a full RUFID pins the version it names; a short one runs the newest version at call time
    return this.function<R>(rufid, resolution)
  }
}

function runFailure(rufid: string, answer: ExecuteResponse): SvcError {
  const error = (answer as { error?: { message?: string; code?: number } }).error
  const message = error?.message ?? `execution of ${rufid} ended with status ${JSON.stringify(answer.status)}`
  const details = { execution: answer }
  return answer.status === 'timeout' ? new ExecutionTimeoutError({ message, details }) : new ExecutionFailedError({ message, details })
}
