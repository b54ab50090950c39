import type { z } from 'zod'
import type {
  BranchHead, CreateResult, DeployResult, ExecutionRecord, FunctionVersion, Resolution,
} from '../../engine/index.js'
import { fullRufidOf, importStatement } from '../../engine/index.js'
import type {
  branchHeadSchema, creationSchema, deploymentSchema, executionLogsSchema, executionRecordSchema, executionSchema,
  exportSchema, functionSourceSchema, metadataSchema, resolutionSchema, usageMetricsSchema,
} from './routes/response-schemas.js'

/** The body a response schema describes. */
export type Body<S extends z.ZodType> = z.output<S>

/** service-spec §4.1 create response (plus `version`, `content_digest`, `created` and both names). */
export function creationBody(r: CreateResult): Body<typeof creationSchema> {
  return {
    rufid: r.rufid,
    rufid_short: r.rufid_short,
    full_rufid: r.rufid,
    version: r.version,
    content_digest: r.fn.content_digest,
    import_statement: r.import_statement,
    share_url: r.share_url,
    api_endpoint: r.api_endpoint,
    created: r.created,
  }
}

/** service-spec §2.7 resolution response plus `content_digest`, the definition, manifest and lockfile. */
export function resolutionBody(r: Resolution): Body<typeof resolutionSchema> {
  const fn = r.fn
  const full = fullRufidOf(fn)
  return {
    function_id: fn.function_id,
    rufid: full,
    rufid_short: fn.rufid_short,
    full_rufid: full,
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

export type UsageMetrics = Body<typeof usageMetricsSchema>

/** service-spec §2.2 function metadata (`rufid` is the short form) plus `full_rufid` and `rufid_short`. */
export function metadataBody(fn: Omit<FunctionVersion, 'source_code'>, metrics?: UsageMetrics): Body<typeof metadataSchema> {
  return {
    rufid: fn.rufid_short,
    rufid_short: fn.rufid_short,
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
export function dependenciesOf(fn: Pick<FunctionVersion, 'lockfile' | 'manifest'>): string[] {
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

/** service-spec §2.7 core execution response plus the record's id and the function's names. */
export function executionBody(record: ExecutionRecord): Body<typeof executionSchema> {
  return {
    result: record.result ?? null,
    execution_time_ms: record.execution_time_ms ?? 0,
    status: 'success',
    execution_id: record.execution_id,
    rufid_short: record.rufid_short,
    full_rufid: record.rufid,
    cached: record.cached === true,
    receipt: record.receipt ?? null,
  }
}

/** JSON text of receipts that cached answers send again and again, by receipt object (the result cache's entry holds it). */
const cachedReceiptTexts = new WeakMap<object, string>()

/**
 * The JSON text of a response body, as JSON.stringify writes it. A cached answer (`cached: true`)
 * carries the receipt of the execution that computed it, the same object on every hit: its text
 * (~1 KB, the certificate's line breaks escaped one character at a time) is written once and
 * kept (~5 of a hit's ~15 µs of serializing on this host). Taken when the receipt is the body's
 * last member, where `executionBody` puts it; any other body is JSON.stringify's.
 */
export function jsonText(body: unknown): string {
  const b = body as { cached?: unknown; receipt?: unknown } | null
  const receipt = b !== null && typeof b === 'object' && b.cached === true ? b.receipt : undefined
  if (receipt === null || typeof receipt !== 'object' || lastMemberOf(b!) !== 'receipt') return JSON.stringify(body)
  let text = cachedReceiptTexts.get(receipt)
  if (text === undefined) {
    text = JSON.stringify(receipt)
    cachedReceiptTexts.set(receipt, text)
  }
  // JSON.stringify leaves an undefined member out: the body without its receipt, then the receipt
  b!.receipt = undefined
  const head = JSON.stringify(b)
  b!.receipt = receipt
  return head === '{}' ? `{"receipt":${text}}` : `${head.slice(0, -1)},"receipt":${text}}`
}

function lastMemberOf(o: object): string | undefined {
  let last: string | undefined
  for (const k in o) last = k
  return last
}

/** The execution record of decisions.md ("Execution record"), `tenant_id` with its deprecated alias `tenant`. */
export function executionRecordBody(record: ExecutionRecord): Body<typeof executionRecordSchema> {
  return {
    execution_id: record.execution_id,
    rufid: record.rufid,
    rufid_short: record.rufid_short,
    full_rufid: record.rufid,
    version: `v${record.version}`,
    tenant_id: record.tenant_id,
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
    cached: record.cached === true,
    receipt: record.receipt ?? null,
  }
}

export function executionLogsBody(record: ExecutionRecord): Body<typeof executionLogsSchema> {
  return { execution_id: record.execution_id, rufid_short: record.rufid_short, full_rufid: record.rufid, status: record.status, logs: record.logs }
}

/** A branch head as the REST door shows it (never the key hash). */
export function branchHeadBody(h: BranchHead): Body<typeof branchHeadSchema> {
  const full = fullRufidOf(h)
  return {
    function_name: h.function_name,
    branch: h.branch,
    version: `v${h.version}`,
    rufid: full,
    rufid_short: h.rufid_short,
    full_rufid: full,
    created_at: h.created_at,
    updated_at: h.updated_at,
    updated_by: h.updated_by,
  }
}

export function deploymentBody(r: DeployResult): Body<typeof deploymentSchema> {
  return {
    ...creationBody(r),
    function_name: r.fn.function_name,
    branch: r.branch,
    branch_created: r.branch_created,
    ...(r.branch_key !== undefined ? { branch_key: r.branch_key } : {}),
    moved: r.moved,
    previous_version: r.previous_version === null ? null : `v${r.previous_version}`,
    head: branchHeadBody(r.head),
    manifest: r.fn.manifest,
    lockfile: r.fn.lockfile,
  }
}

/** How a body names one version: `rufid` and `full_rufid` the full RUFID, `rufid_short`, `version` as `v<n>`. */
function versionNamesOf(fn: Pick<FunctionVersion, 'rufid_short' | 'version' | 'tenant_id'>) {
  const full = fullRufidOf(fn)
  return { rufid: full, rufid_short: fn.rufid_short, full_rufid: full, version: `v${fn.version}` }
}

export function exportBody(fn: FunctionVersion): Body<typeof exportSchema> {
  return {
    ...versionNamesOf(fn),
    function_name: fn.function_name,
    manifest: fn.manifest,
    lockfile: fn.lockfile,
    // the files as they were sent (null: not sent as text, or a generated lockfile)
    manifest_text: fn.manifest_text ?? null,
    lockfile_text: fn.lockfile_text ?? null,
  }
}

/** A version's source with its signature, digest and each client's import statement (decisions.md "Import statements"). */
export function sourceBody(fn: FunctionVersion): Body<typeof functionSourceSchema> {
  return {
    ...versionNamesOf(fn),
    function_name: fn.function_name,
    language: fn.language,
    signature: fn.signature,
    content_digest: fn.content_digest,
    source_code: fn.source_code,
    imports: {
      typescript: importStatement('typescript', fn.rufid_short, fn.function_name),
      python: importStatement('python', fn.rufid_short, fn.function_name),
      go: importStatement('go', fn.rufid_short, fn.function_name),
    },
  }
}
