/** Domain records of the engine. Wire formats are built from these by the protocol adapters. */
import type { Receipt } from '../core/receipt.js'

export type Permission = 'rufid.create' | 'rufid.read' | 'rufid.execute' | 'rufid.delete' | 'rufid.admin'
export const ALL_PERMISSIONS: readonly Permission[] = [
  'rufid.create', 'rufid.read', 'rufid.execute', 'rufid.delete', 'rufid.admin',
]

/** Who is calling: resolved by an adapter from credentials, checked by the engine. */
export interface Principal {
  tenant_id: string
  /** user identity recorded as author and in the audit log (an e-mail address in practice) */
  user: string
  permissions: ReadonlySet<Permission>
  /** how the principal authenticated (`anonymous`, `api_key`, `jwt`, `oauth`, `mtls`, …) */
  method: string
  key_id?: string
  /**
   * When the credential stops being valid, in ms since the epoch: an API key's `expires_at`, a
   * JWT's `exp` (plus the clock tolerance the verifier allows), a client certificate's notAfter.
   * Absent: it does not expire. Streams the credential opened end then (auth/credential-streams.ts).
   */
  expires_at?: number
}

/**
 * The root tenant of a tenant id: the part before the first dot. A credential of tenant `acme` may
 * act in any namespace `acme.…` (X-Svc-Namespace), and a key minted there belongs to `acme.team1`,
 * so what the namespaces of a tenant share — the sandbox's fair share, warm capacity, storage
 * quota — is charged to the root: spreading calls or keys over namespaces escapes nothing.
 */
export function tenantRoot(tenantId: string): string {
  const dot = tenantId.indexOf('.')
  return dot < 0 ? tenantId : tenantId.slice(0, dot)
}

/** The tenant a principal's use of shared resources is charged to (see `tenantRoot`). */
export function rootTenantOf(principal: Principal): string {
  return tenantRoot(principal.tenant_id)
}

export interface ManifestSnapshot {
  manifest: Record<string, unknown> | null
  lockfile: Record<string, unknown> | null
  /** the manifest file exactly as its author wrote it (parses to `manifest`); absent when not sent */
  manifest_text?: string
  /** the lockfile exactly as supplied (parses to the lock of `lockfile`); absent when generated or not sent */
  lockfile_text?: string
}

export interface ExecutionLimitsOverride {
  timeout_ms?: number
  memory_mb?: number
  cpu_ms?: number
}

/** One stored version of a function: (tenant, rufid hash, version). Immutable once written. */
export interface FunctionVersion {
  function_id: string
  tenant_id: string
  rufid_short: string
  version: number
  function_name: string
  signature: string
  language: string
  description: string
  tags: string[]
  source_code: string
  content_digest: string
  created_at: string
  author: string
  manifest: Record<string, unknown> | null
  lockfile: Record<string, unknown> | null
  /** see ManifestSnapshot: the files' text as sent, so export returns them byte for byte */
  manifest_text?: string
  lockfile_text?: string
  limits: ExecutionLimitsOverride
  /** set when the version is deleted (tombstone); the version number is never reused */
  deleted_at?: string
}

/** An entry of `function_version_ledger`: enough to rebuild every head without the primary tables. */
export interface LedgerEntry {
  tenant_id: string
  function_name: string
  version: number
  rufid_short: string
  content_digest: string
  created_at: string
  author: string
  manifest_snapshot: ManifestSnapshot
  deleted_at?: string
}

export type ExecutionStatus = 'queued' | 'running' | 'success' | 'error' | 'timeout'

export interface ExecutionLogLine {
  level: string
  message: string
  at: string
}

export interface ExecutionRecord {
  execution_id: string
  rufid: string
  rufid_short: string
  version: number
  tenant_id: string
  function_name: string
  language: string
  status: ExecutionStatus
  started_at: string
  finished_at?: string
  execution_time_ms?: number
  cpu_time_ms?: number
  memory_bytes?: number
  result?: unknown
  error?: { code: number; name: string; message: string; details?: Record<string, unknown> }
  logs: ExecutionLogLine[]
  user: string
  /**
   * the signed receipt (docs/receipts.md) of a finished execution; null when the node has no signer
   * or the call has no canonical form. A cached answer carries the receipt of the execution that
   * computed the result, unchanged (its execution_id is that execution's, maybe on another node).
   */
  receipt?: Receipt | null
  /** true when the result came from the result cache of a deterministic function (nothing ran) */
  cached?: boolean
  /** where a cached result came from: this node's own execution, or a member's verified receipt */
  cache_source?: 'local' | 'remote'
}

export interface Page<T> {
  items: T[]
  pagination: { total: number; limit: number; offset: number; next_offset: number | null }
}

/** Usage statistics of one function version (service-spec §2.2 `metrics`). */
export interface FunctionStats {
  usage_count: number
  success_count: number
  total_execution_time_ms: number
}
