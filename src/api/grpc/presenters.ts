import { validationFailed } from '../../core/errors.js'
import type { CreateResult, ExecutionEvent, ExecutionRecord, Resolution } from '../../engine/index.js'
import { fullRufidOf } from '../../engine/index.js'
import type { CreateRUFIDRequest__Output } from './generated/svc/v1/CreateRUFIDRequest.js'
import type { CreateRUFIDResponse } from './generated/svc/v1/CreateRUFIDResponse.js'
import type { ExecuteFunctionResponse } from './generated/svc/v1/ExecuteFunctionResponse.js'
import type { ExecutionEvent as ExecutionEventMessage } from './generated/svc/v1/ExecutionEvent.js'
import type { ResolveRUFIDResponse } from './generated/svc/v1/ResolveRUFIDResponse.js'

/**
 * JSON text of a `*_json` field; empty means absent. Malformed JSON is 1006 naming the field.
 */
export function parseJsonField(text: string, field: string): unknown {
  if (text === '') return undefined
  try {
    return JSON.parse(text) as unknown
  } catch (err) {
    throw validationFailed(`${field} is not valid JSON`, [{ pointer: `/${field}`, message: (err as Error).message }])
  }
}

const jsonOrEmpty = (value: unknown): string => (value === null || value === undefined ? '' : JSON.stringify(value))

/** CreateRUFIDRequest as the engine's create input (the REST body of service-spec §2.3). */
export function createInputOf(request: CreateRUFIDRequest__Output): Record<string, unknown> {
  const input: Record<string, unknown> = {
    function_name: request.function_name,
    source_code: request.source_code,
    signature: request.signature,
    language: request.language,
  }
  if (request.tags.length > 0) input.tags = request.tags
  if (request.description !== '') input.description = request.description
  // the JSON fields are the files' own text: kept as sent, so export gives them back byte for byte
  const manifest = parseJsonField(request.manifest_json, 'manifest_json')
  if (manifest !== undefined) Object.assign(input, { manifest, manifest_text: request.manifest_json })
  const lockfile = parseJsonField(request.lockfile_json, 'lockfile_json')
  if (lockfile !== undefined) Object.assign(input, { lockfile, lockfile_text: request.lockfile_json })
  if (request.limits) {
    const limits: Record<string, number> = {}
    for (const key of ['timeout_ms', 'memory_mb', 'cpu_ms'] as const) {
      const v = request.limits[key]
      if (v !== undefined && v !== null) limits[key] = v
    }
    input.limits = limits
  }
  return input
}

/** service-spec §2.3 CreateRUFIDResponse (fields 1–3) plus the rest of the REST create body. */
export function creationMessage(r: CreateResult): CreateRUFIDResponse {
  return {
    rufid: r.rufid,
    import_statement: r.import_statement,
    share_url: r.share_url,
    rufid_short: r.rufid_short,
    version: r.version,
    content_digest: r.fn.content_digest,
    api_endpoint: r.api_endpoint,
    // explicit presence: `false` is sent too (a repeat create of identical content)
    created: r.created,
    full_rufid: r.rufid,
  }
}

/** service-spec §2.7 resolution response plus the definition, manifest and lockfile. */
export function resolutionMessage(r: Resolution): ResolveRUFIDResponse {
  const fn = r.fn
  return {
    function_id: fn.function_id,
    rufid: fullRufidOf(fn),
    version: `v${fn.version}`,
    accessible: true,
    cached: r.cached,
    resolution_time_ms: Math.round(r.resolution_time_ms * 1000) / 1000,
    content_digest: fn.content_digest,
    function_name: fn.function_name,
    signature: fn.signature,
    language: fn.language,
    // the text the files were published as, when it was sent; else the stored objects as JSON
    manifest_json: fn.manifest === null ? '' : (fn.manifest_text ?? jsonOrEmpty(fn.manifest)),
    lockfile_json: fn.lockfile === null ? '' : (fn.lockfile_text ?? jsonOrEmpty(fn.lockfile)),
    rufid_short: fn.rufid_short,
    created_at: fn.created_at,
    full_rufid: fullRufidOf(fn),
  }
}

/** service-spec §2.7 core execution response plus the record's id; the result as JSON text. */
export function executionMessage(record: ExecutionRecord): ExecuteFunctionResponse {
  return {
    result_json: JSON.stringify(record.result ?? null),
    execution_time_ms: record.execution_time_ms ?? 0,
    status: record.status,
    execution_id: record.execution_id,
    rufid_short: record.rufid_short,
    full_rufid: record.rufid,
    cached: record.cached === true,
    receipt_json: record.receipt ? JSON.stringify(record.receipt) : '',
  }
}

/** The engine's ExecutionEvent; `error_code` is left unset on success. */
export function executionEventMessage(e: ExecutionEvent): ExecutionEventMessage {
  return {
    execution_id: e.execution_id,
    rufid: e.rufid,
    rufid_short: e.rufid_short,
    version: e.version,
    tenant_id: e.tenant_id,
    function_name: e.function_name,
    status: e.status,
    execution_time_ms: e.execution_time_ms,
    ...(e.error_code === null ? {} : { error_code: e.error_code }),
    timestamp: e.timestamp,
    full_rufid: e.rufid,
    receipt_digest: e.receipt_digest ?? '',
    cached: e.cached,
  }
}
