import { readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { resolve } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { z } from 'zod'
import { parseCidr } from '../api/client-address.js'
import { federationConfigSchema } from '../federation/daemon-wiring.js'
import { OS_ISOLATION_MODES } from '../engine/sandbox/os-isolation.js'
import { CGROUPS_MODES } from '../engine/sandbox/cgroups.js'

const limits = z.object({
  timeout_ms: z.number().int().min(1).max(600_000),
  memory_mb: z.number().int().min(8).max(8192),
  cpu_ms: z.number().int().min(1).max(600_000),
})

const tenant = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1–64 characters of A-Z a-z 0-9 _ . -')
const role = z.enum(['developer', 'consumer', 'admin'])
const rule = z.object({ points: z.number().int().min(0), window_s: z.number().int().min(1) }).strict()
/** A CIDR of IPv4 or IPv6 (a bare address is one host): what parseCidr accepts. */
const cidr = z.string().superRefine((text, ctx) => {
  try {
    parseCidr(text)
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message })
  }
})

/** A bound on Python interpreters' memory in MB: 0 (none) or room for at least one interpreter (a fresh one holds 20 MB). */
const interpreterMb = z.number().int().max(1024 * 1024).refine((mb) => mb === 0 || mb >= 64, { message: 'must be 0 (no bound) or at least 64' })

/** How a token's claims give the principal: the same members for JWTs and introspected OAuth tokens. */
const claimFields = {
  tenant_claim: z.string().min(1),
  roles_claim: z.string().min(1),
  scope_claim: z.string().min(1),
  user_claim: z.string().min(1),
  clock_tolerance_s: z.number().int().min(0),
}

export const configSchema = z.object({
  server: z.object({
    host: z.string().min(1),
    port: z.number().int().min(0).max(65535),
    body_limit_bytes: z.number().int().min(1024),
    share_base: z.string(),
    shutdown_grace_ms: z.number().int().min(0),
    block_warn_ms: z.number().int().min(0),
    metrics_access: z.enum(['public', 'admin', 'disabled']),
    console: z.boolean(),
    trusted_proxies: z.array(cidr),
    tls: z.object({
      enabled: z.boolean(),
      cert_file: z.string(),
      key_file: z.string(),
      client_ca_file: z.string(),
    }).strict(),
  }).strict(),
  grpc: z.object({
    enabled: z.boolean(),
    host: z.string().min(1),
    port: z.number().int().min(0).max(65535),
    max_message_bytes: z.number().int().min(1024),
  }).strict(),
  graphql: z.object({
    max_depth: z.number().int().min(1),
    max_cost: z.number().int().min(1),
    max_document_bytes: z.number().int().min(100),
    introspection: z.enum(['authenticated', 'public', 'disabled']),
  }).strict(),
  ws: z.object({
    max_connections_per_tenant: z.number().int().min(1),
    max_messages_per_second: z.number().int().min(1),
    max_buffered_bytes: z.number().int().min(1024),
    max_payload_bytes: z.number().int().min(256),
  }).strict(),
  lockfile: z.object({
    pip_index_url: z.string().url(),
    npm_registry_url: z.string().url(),
    timeout_ms: z.number().int().min(100).max(600_000),
    deadline_ms: z.number().int().min(1000),
    max_response_bytes: z.number().int().min(1024),
    concurrency: z.number().int().min(1).max(64),
  }).strict(),
  data_dir: z.string().min(1),
  storage: z.object({
    min_free_mb: z.number().int().min(0),
    check_interval_ms: z.number().int().min(100).max(600_000),
    tenant_quota_mb: z.number().int().min(0),
  }).strict(),
  log: z.object({
    level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    format: z.enum(['auto', 'json', 'pretty']),
  }).strict(),
  auth: z.object({
    provider: z.enum(['standard', 'native', 'none']),
    default_tenant: tenant,
    bootstrap_admin_key: z.boolean(),
    keys: z.object({
      default_expires_days: z.number().int().min(1).nullable(),
      max_expires_days: z.number().int().min(1),
    }).strict(),
    anonymous: z.object({ enabled: z.boolean(), tenant, roles: z.array(role) }).strict(),
    jwt: z.object({
      enabled: z.boolean(),
      jwks_url: z.string(),
      public_key_file: z.string(),
      issuer: z.string(),
      audience: z.string(),
      algorithms: z.array(z.string()).min(1),
      ...claimFields,
    }).strict(),
    oauth_introspection: z.object({
      enabled: z.boolean(),
      endpoint: z.string().refine((s) => s === '' || /^https?:\/\/[^\s]+$/i.test(s), 'must be an http(s) URL'),
      client_id: z.string(),
      client_secret: z.string(),
      client_secret_file: z.string(),
      cache_ttl_s: z.number().int().min(0),
      cache_max_entries: z.number().int().min(0),
      timeout_ms: z.number().int().min(1),
      ...claimFields,
    }).strict(),
    mtls: z.object({ enabled: z.boolean(), roles: z.array(role) }).strict(),
  }).strict(),
  rate_limits: z.object({ per_key: rule, per_tenant: rule, per_ip_unauthenticated: rule }).strict(),
  audit: z.object({
    retention_days: z.number().int().min(0),
    sweep_interval_ms: z.number().int().min(1000),
    flush_ms: z.number().int().min(0).max(1000),
  }).strict(),
  registry: z.object({
    cache_max_entries: z.number().int().min(1),
    cache_ttl_ms: z.number().int().min(0),
    max_source_bytes: z.number().int().min(1),
  }).strict(),
  marketplace: z.object({
    max_indexed_functions: z.number().int().min(0),
  }).strict(),
  execution: z.object({
    workers: z.number().int().min(1).max(64),
    workers_on_demand: z.boolean(),
    max_warm_isolates_per_worker: z.number().int().min(1),
    max_warm_mb_per_worker: z.number().int().min(0),
    max_warm_mb_per_tenant: z.number().int().min(0),
    queue_limit: z.number().int().min(0),
    scheduling: z.object({
      queue_limit_per_tenant: z.number().int().min(0),
      max_long_running_per_tenant: z.number().int().min(0).max(64),
      long_call_ms: z.number().int().min(0).max(600_000),
      weights: z.record(tenant, z.number().positive().max(1_000_000)),
    }).strict(),
    max_log_bytes: z.number().int().min(0),
    max_result_bytes: z.number().int().min(0),
    kill_grace_ms: z.number().int().min(0),
    record_flush_ms: z.number().int().min(0).max(1000),
    records: z.object({
      retention_days: z.number().int().min(0),
      max_per_tenant: z.number().int().min(0),
      sweep_interval_ms: z.number().int().min(1000),
    }).strict(),
    os_isolation: z.enum(OS_ISOLATION_MODES),
    worker_memory_mb: z.number().int().min(0),
    cgroups: z.enum(CGROUPS_MODES),
    result_cache: z.object({
      max_entries: z.number().int().min(0),
      max_bytes: z.number().int().min(0),
      max_result_bytes: z.number().int().min(0),
      max_bytes_per_tenant: z.number().int().min(0),
    }).strict(),
    python: z.object({
      wheelhouse: z.string(),
      interpreters_per_worker: z.number().int().min(1).max(64),
      max_interpreter_mb_per_worker: interpreterMb,
      max_interpreter_mb_per_tenant: interpreterMb,
      kill_grace_ms: z.number().int().min(0),
    }).strict(),
    defaults: limits.strict(),
    max: limits.strict(),
  }).strict(),
  federation: federationConfigSchema,
}).strict()

export type SvcConfig = z.infer<typeof configSchema>

/** What a sandbox worker holds before any function's memory, MB, at most (execution.worker_memory_mb's floor). */
const WORKER_OWN_MB = 256

/** Environment variables (service-spec names where it has them) and the config path they set. */
const ENV: Array<[string, string[], 'string' | 'int' | 'boolean']> = [
  ['API_HOST', ['server', 'host'], 'string'],
  ['API_PORT', ['server', 'port'], 'int'],
  ['SVC_BODY_LIMIT_BYTES', ['server', 'body_limit_bytes'], 'int'],
  ['SVC_SHARE_BASE', ['server', 'share_base'], 'string'],
  ['SVC_METRICS_ACCESS', ['server', 'metrics_access'], 'string'],
  ['SVC_CONSOLE', ['server', 'console'], 'boolean'],
  ['SVC_DATA_DIR', ['data_dir'], 'string'],
  ['SVC_STORAGE_MIN_FREE_MB', ['storage', 'min_free_mb'], 'int'],
  ['SVC_PIP_INDEX_URL', ['lockfile', 'pip_index_url'], 'string'],
  ['SVC_NPM_REGISTRY_URL', ['lockfile', 'npm_registry_url'], 'string'],
  ['GRPC_HOST', ['grpc', 'host'], 'string'],
  ['GRPC_PORT', ['grpc', 'port'], 'int'],
  ['LOG_LEVEL', ['log', 'level'], 'string'],
  ['LOG_FORMAT', ['log', 'format'], 'string'],
  ['AUTH_PROVIDER', ['auth', 'provider'], 'string'],
  ['ADMIN_TENANT_ID', ['auth', 'default_tenant'], 'string'],
  ['SVC_JWT_JWKS_URL', ['auth', 'jwt', 'jwks_url'], 'string'],
  ['SVC_JWT_PUBLIC_KEY_FILE', ['auth', 'jwt', 'public_key_file'], 'string'],
  ['SVC_JWT_ISSUER', ['auth', 'jwt', 'issuer'], 'string'],
  ['SVC_JWT_AUDIENCE', ['auth', 'jwt', 'audience'], 'string'],
  ['SVC_SANDBOX_WORKERS', ['execution', 'workers'], 'int'],
  ['SVC_SANDBOX_OS_ISOLATION', ['execution', 'os_isolation'], 'string'],
  ['SVC_SANDBOX_WORKERS_ON_DEMAND', ['execution', 'workers_on_demand'], 'boolean'],
  ['SVC_MARKETPLACE_MAX_INDEXED_FUNCTIONS', ['marketplace', 'max_indexed_functions'], 'int'],
  ['SVC_PYTHON_WHEELHOUSE', ['execution', 'python', 'wheelhouse'], 'string'],
]

export const DEFAULT_CONFIG_PATH = new URL('../../config/default.yaml', import.meta.url)

export class ConfigError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ConfigError'
  }
}

type Tree = Record<string, unknown>
const isTree = (v: unknown): v is Tree => v !== null && typeof v === 'object' && !Array.isArray(v)

function merge(base: Tree, over: Tree): Tree {
  const out: Tree = { ...base }
  for (const [k, v] of Object.entries(over)) out[k] = isTree(v) && isTree(out[k]) ? merge(out[k] as Tree, v) : v
  return out
}

function setPath(tree: Tree, path: string[], value: unknown): void {
  let node = tree
  for (const key of path.slice(0, -1)) {
    if (!isTree(node[key])) node[key] = {}
    node = node[key] as Tree
  }
  node[path[path.length - 1]!] = value
}

function readYaml(path: string | URL, what: string): Tree {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw new ConfigError(`cannot read ${what} ${String(path)}: ${(err as Error).message}`)
  }
  const parsed: unknown = parseYaml(text)
  if (parsed === null || parsed === undefined) return {}
  if (!isTree(parsed)) throw new ConfigError(`${what} ${String(path)} must hold a YAML mapping`)
  return parsed
}

export interface LoadConfigOptions {
  env?: NodeJS.ProcessEnv
  /** overrides applied last (command-line flags) */
  overrides?: Tree
}

/**
 * Defaults from config/default.yaml, then the file named by SVC_CONFIG, then environment
 * variables, then command-line overrides; validated once and frozen.
 */
export function loadConfig(options: LoadConfigOptions = {}): Readonly<SvcConfig> {
  const env = options.env ?? process.env
  let tree = readYaml(DEFAULT_CONFIG_PATH, 'default config')
  if (env.SVC_CONFIG) tree = merge(tree, readYaml(resolve(env.SVC_CONFIG), 'config file'))
  for (const [name, path, type] of ENV) {
    const raw = env[name]
    if (raw === undefined || raw === '') continue
    if (type === 'int') {
      if (!/^-?[0-9]+$/.test(raw.trim())) throw new ConfigError(`${name} must be an integer, got ${JSON.stringify(raw)}`)
      setPath(tree, path, Number(raw))
    } else if (type === 'boolean') {
      const flag = raw.trim().toLowerCase()
      if (!['true', 'false', '1', '0'].includes(flag)) throw new ConfigError(`${name} must be true or false, got ${JSON.stringify(raw)}`)
      setPath(tree, path, flag === 'true' || flag === '1')
    } else {
      setPath(tree, path, raw)
    }
  }
  if (options.overrides) tree = merge(tree, options.overrides)
  const parsed = configSchema.safeParse(tree)
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(root)'}: ${i.message}`)
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`)
  }
  const config = parsed.data
  config.data_dir = expandHome(config.data_dir)
  checkAuth(config, env)
  for (const key of ['timeout_ms', 'memory_mb', 'cpu_ms'] as const) {
    if (config.execution.defaults[key] > config.execution.max[key]) {
      throw new ConfigError(`execution.defaults.${key} exceeds execution.max.${key}`)
    }
  }
  const workerMb = config.execution.worker_memory_mb
  // a worker holds itself (about 100 MB with an interpreter) and a function at its largest
  if (workerMb > 0 && workerMb < config.execution.max.memory_mb + WORKER_OWN_MB) {
    throw new ConfigError(`execution.worker_memory_mb (${workerMb}) must be 0 or at least execution.max.memory_mb + ${WORKER_OWN_MB} (${config.execution.max.memory_mb + WORKER_OWN_MB})`)
  }
  const python = config.execution.python
  if (python.max_interpreter_mb_per_worker > 0 && python.max_interpreter_mb_per_tenant > python.max_interpreter_mb_per_worker) {
    throw new ConfigError('execution.python.max_interpreter_mb_per_tenant exceeds execution.python.max_interpreter_mb_per_worker')
  }
  // warm state is evicted fairly, tenant by tenant; the worker's own bound replaces the worker with
  // every tenant's warm state in it: the warm bounds must leave it room (a worker holds ~200 MB itself)
  const warmMb = config.execution.max_warm_mb_per_worker + python.max_interpreter_mb_per_worker
  if (workerMb > 0 && config.execution.max_warm_mb_per_worker > 0 && python.max_interpreter_mb_per_worker > 0 && warmMb + WORKER_OWN_MB > workerMb) {
    throw new ConfigError(`execution.max_warm_mb_per_worker + execution.python.max_interpreter_mb_per_worker (${warmMb}) leave no room under execution.worker_memory_mb (${workerMb}) for the worker itself (${WORKER_OWN_MB} MB)`)
  }
  return deepFreeze(config)
}

/** Cross-field rules of the auth section, and the native test mode's three switches. */
function checkAuth(config: SvcConfig, env: NodeJS.ProcessEnv): void {
  if (config.auth.provider === 'native') {
    if (env.ENABLE_TEST_MODE !== 'true' || env.DEPLOYMENT_MODE !== 'test') {
      throw new ConfigError('AUTH_PROVIDER=native needs ENABLE_TEST_MODE=true and DEPLOYMENT_MODE=test')
    }
  }
  const jwt = config.auth.jwt
  if (jwt.jwks_url || jwt.public_key_file) jwt.enabled = true
  if (jwt.enabled) {
    if (!jwt.jwks_url && !jwt.public_key_file) throw new ConfigError('auth.jwt needs jwks_url or public_key_file')
    if (!jwt.issuer || !jwt.audience) throw new ConfigError('auth.jwt needs issuer and audience')
  }
  const introspection = config.auth.oauth_introspection
  if (introspection.endpoint) introspection.enabled = true
  if (introspection.enabled) {
    if (!introspection.endpoint) throw new ConfigError('auth.oauth_introspection needs endpoint')
    if (!introspection.client_id) throw new ConfigError('auth.oauth_introspection needs client_id')
    if (!introspection.client_secret === !introspection.client_secret_file) {
      throw new ConfigError('auth.oauth_introspection needs one of client_secret and client_secret_file')
    }
  }
  const tls = config.server.tls
  if (tls.enabled && (!tls.cert_file || !tls.key_file)) throw new ConfigError('server.tls needs cert_file and key_file')
  if (config.auth.mtls.enabled && (!tls.enabled || !tls.client_ca_file)) {
    throw new ConfigError('auth.mtls needs server.tls enabled with client_ca_file')
  }
}

function expandHome(p: string): string {
  return resolve(p === '~' ? homedir() : p.startsWith('~/') ? homedir() + p.slice(1) : p)
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v)
    Object.freeze(value)
  }
  return value
}
