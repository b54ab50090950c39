import { Metadata, status, type StatusObject } from '@grpc/grpc-js'
import { type ErrorName, type SvcError, toSvcError } from '../../core/errors.js'
import { publicErrorOf } from '../../engine/index.js'

/** gRPC status of each svc error code: the one place the gRPC door maps codes (decisions.md). */
const STATUS: Record<ErrorName, status> = {
  INVALID_RUFID: status.INVALID_ARGUMENT,
  RUFID_NOT_FOUND: status.NOT_FOUND,
  PERMISSION_DENIED: status.PERMISSION_DENIED,
  EXECUTION_TIMEOUT: status.DEADLINE_EXCEEDED,
  RATE_LIMITED: status.RESOURCE_EXHAUSTED,
  VALIDATION_FAILED: status.INVALID_ARGUMENT,
  EXECUTION_FAILED: status.ABORTED,
  RUFID_COLLISION: status.ALREADY_EXISTS,
  INTERNAL_ERROR: status.INTERNAL,
  SERVICE_UNAVAILABLE: status.UNAVAILABLE,
  NOT_FOUND: status.NOT_FOUND,
  FEDERATION_UNREACHABLE: status.UNAVAILABLE,
  SYNC_CONFLICT: status.ABORTED,
}

/** Trailing metadata keys every svc error carries. */
export const ERROR_CODE_KEY = 'svc-error-code'
export const ERROR_NAME_KEY = 'svc-error-name'
/** `details` as JSON (ASCII-escaped), when it fits in DETAILS_LIMIT_BYTES */
export const ERROR_DETAILS_KEY = 'svc-error-details'
/** seconds before a retry may succeed (1005, 1010) */
export const RETRY_AFTER_KEY = 'retry-after'
const DETAILS_LIMIT_BYTES = 4096

export function grpcStatusOf(err: SvcError): status {
  if (err.code === 1003 && err.reason === 'unauthenticated') return status.UNAUTHENTICATED
  return STATUS[err.name]
}

/** The status name for metrics labels (`OK`, `NOT_FOUND`, …). */
export function statusName(code: status): string {
  return status[code] ?? String(code)
}

/**
 * What a handler answers for anything it caught: the status of decisions.md, the message as the
 * status details, and the svc code and name (plus details and retry-after when present) as
 * trailing metadata. Unknown errors become 1009 without their text (`publicErrorOf`).
 */
export function grpcErrorOf(thrown: unknown): { svc: SvcError; status: Partial<StatusObject> & { code: status; details: string; metadata: Metadata } } {
  const svc = publicErrorOf(toSvcError(thrown))
  const metadata = new Metadata()
  metadata.set(ERROR_CODE_KEY, String(svc.code))
  metadata.set(ERROR_NAME_KEY, svc.name)
  const details = detailsText(svc.details)
  if (details !== undefined) metadata.set(ERROR_DETAILS_KEY, details)
  if (svc.retryAfterSeconds !== undefined) metadata.set(RETRY_AFTER_KEY, String(Math.ceil(svc.retryAfterSeconds)))
  return { svc, status: { code: grpcStatusOf(svc), details: svc.message, metadata } }
}

/** JSON of the details, ASCII only (metadata values must be printable ASCII); logs are dropped when too big. */
function detailsText(details: Record<string, unknown>): string | undefined {
  if (Object.keys(details).length === 0) return undefined
  for (const candidate of [details, withoutLogs(details)]) {
    let text: string
    try {
      text = JSON.stringify(candidate).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
    } catch {
      return undefined
    }
    if (text.length <= DETAILS_LIMIT_BYTES) return text
  }
  return undefined
}

function withoutLogs(details: Record<string, unknown>): Record<string, unknown> {
  const { logs: _logs, ...rest } = details
  return rest
}
