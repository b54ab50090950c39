import type { CreateResult, ExecutionRecord, FunctionVersion, Resolution } from '../../engine/index.js'
import { fullRufidOf } from '../../engine/index.js'

/** service-spec §4.1 create response (plus `version`, `content_digest` and `created`). */
export function creationBody(r: CreateResult): Record<string, unknown> {
  return {
    rufid: r.rufid,
    rufid_short: r.rufid_short,
    version: r.version,
    content_digest: r.fn.content_digest,
    import_statement: r.import_statement,
    share_url: r.share_url,
    api_endpoint: r.api_endpoint,
    created: r.created,
  }
}

/** service-spec §2.7 resolution response plus `content_digest`, the definition, manifest and lockfile. */
export function resolutionBody(r: Resolution): Record<string, unknown> {
  const fn = r.fn
  return {
    function_id: fn.function_id,
    rufid: fullRufidOf(fn),
    rufid_short: fn.rufid_short,
    version: `v${fn.version}`,
    accessible: true,
    cached: r.cached,
    resolution_time_ms: Math.round(r.resolution_time_ms * 1000) / 1000,
    content_digest: fn.content_digest,
    function_name: fn.function_name,
    signature: fn.signature,
    language: fn.language,
    created_at: fn.created_at,
    manifest: fn.manifest,
    lockfile: fn.lockfile,
    manifest_text: fn.manifest_text ?? null,
    lockfile_text: fn.lockfile_text ?? null,
  }
}

export interface UsageMetrics {
  usage_count: number
  avg_execution_time_ms: number
  success_rate: number
}

/** service-spec §2.2 function metadata (`rufid` is the short form; `full_rufid` added). */
export function metadataBody(fn: FunctionVersion, metrics?: UsageMetrics): Record<string, unknown> {
  return {
    rufid: fn.rufid_short,
    full_rufid: fullRufidOf(fn),
    function_name: fn.function_name,
    signature: fn.signature,
    language: fn.language,
    version: `v${fn.version}`,
    created_at: fn.created_at,
    author: fn.author,
    tenant_id: fn.tenant_id,
    description: fn.description,
    tags: fn.tags,
    dependencies: dependenciesOf(fn),
    content_digest: fn.content_digest,
    ...(metrics ? { metrics } : {}),
  }
}

/** Dependency names with their pinned (lockfile) or requested (manifest) versions. */
export function dependenciesOf(fn: FunctionVersion): string[] {
  const source = (fn.lockfile ?? fn.manifest) as { dependencies?: { pip?: unknown; npm?: unknown; system?: unknown } } | null
  const deps = source?.dependencies
  if (!deps || typeof deps !== 'object') return []
  const out: string[] = []
  for (const list of [deps.pip, deps.npm]) {
    if (!Array.isArray(list)) continue
    for (const d of list as Array<{ name?: unknown; version?: unknown }>) {
      if (typeof d?.name !== 'string') continue
      out.push(typeof d.version === 'string' && d.version !== '' ? `${d.name}${/^[0-9]/.test(d.version) ? '==' : ''}${d.version}` : d.name)
    }
  }
  if (Array.isArray(deps.system)) for (const s of deps.system) if (typeof s === 'string') out.push(s)
  return out
}

/** service-spec §2.7 core execution response plus the record's id. */
export function executionBody(record: ExecutionRecord): Record<string, unknown> {
  return {
    result: record.result ?? null,
    execution_time_ms: record.execution_time_ms ?? 0,
    status: record.status,
    execution_id: record.execution_id,
  }
}

/** The execution record of decisions.md ("Execution record"). */
export function executionRecordBody(record: ExecutionRecord): Record<string, unknown> {
  return {
    execution_id: record.execution_id,
    rufid: record.rufid,
    version: `v${record.version}`,
    tenant: record.tenant_id,
    function_name: record.function_name,
    language: record.language,
    status: record.status,
    started_at: record.started_at,
    finished_at: record.finished_at ?? null,
    execution_time_ms: record.execution_time_ms ?? null,
    cpu_time_ms: record.cpu_time_ms ?? null,
    memory_bytes: record.memory_bytes ?? null,
    ...(record.error ? { error: record.error } : { result: record.result ?? null }),
    logs: record.logs,
  }
}
