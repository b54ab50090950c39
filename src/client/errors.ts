/**
 * Typed errors of the TypeScript client. A node's error body
 * `{"error": {"code", "name", "message", "details"}}` becomes an `SvcError` subclass chosen by
 * `code` (the registry is core's `ERROR_CODES`, the same the daemon uses). Failures that never got
 * an answer from the node (connection refused, request timeout, a body that is not JSON, a wait
 * that gave up) are `SvcError`s with `code: null`.
 */
import { ERROR_CODES, errorNameOf } from '../core/errors.js'

export { ERROR_CODES }

export interface SvcErrorInit {
  code: number | null
  name: string
  message: string
  details?: Record<string, unknown>
  /** the HTTP status of the node's answer; undefined when the client raised the error itself */
  httpStatus?: number
  /** seconds from `Retry-After` (1005, 1010) */
  retryAfterSeconds?: number
  cause?: unknown
}

export class SvcError extends Error {
  /** 1001 … 2002, or null for failures with no answer from the node */
  readonly code: number | null
  /** the wire name, e.g. `RUFID_NOT_FOUND` */
  override readonly name: string
  readonly details: Record<string, unknown>
  readonly httpStatus: number | undefined
  readonly retryAfterSeconds: number | undefined

  constructor(init: SvcErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause })
    this.code = init.code
    this.name = init.name
    this.details = init.details ?? {}
    this.httpStatus = init.httpStatus
    this.retryAfterSeconds = init.retryAfterSeconds
  }

  /** 401: no or invalid credentials (code 1003); 403 is a missing permission. */
  get unauthenticated(): boolean {
    return this.httpStatus === 401
  }

  toJSON(): { code: number | null; name: string; message: string; details: Record<string, unknown>; httpStatus?: number } {
    return { code: this.code, name: this.name, message: this.message, details: this.details, httpStatus: this.httpStatus }
  }
}

/** What a subclass constructor takes: everything but the code (and the name defaults to the code's). */
export type SvcErrorSubclassInit = Omit<SvcErrorInit, 'code' | 'name'> & { name?: string }

/** 1001: a malformed RUFID or version label (also raised locally, before any request). */
export class InvalidRufidError extends SvcError {
  constructor(init: SvcErrorSubclassInit) {
    super({ ...init, code: ERROR_CODES.INVALID_RUFID, name: init.name ?? 'INVALID_RUFID' })
  }
}

/** 1002: no such RUFID (or version) in the caller's tenant. */
export class RufidNotFoundError extends SvcError {
  constructor(init: SvcErrorSubclassInit) {
    super({ ...init, code: ERROR_CODES.RUFID_NOT_FOUND, name: init.name ?? 'RUFID_NOT_FOUND' })
  }
}

/** 1003: 403 missing permission, or 401 (`unauthenticated`) no or invalid credentials. */
export class PermissionDeniedError extends SvcError {
  constructor(init: SvcErrorSubclassInit) {
    super({ ...init, code: ERROR_CODES.PERMISSION_DENIED, name: init.name ?? 'PERMISSION_DENIED' })
  }
}

/** 1004: the function ran past its wall-time limit. */
export class ExecutionTimeoutError extends SvcError {
  constructor(init: SvcErrorSubclassInit) {
    super({ ...init, code: ERROR_CODES.EXECUTION_TIMEOUT, name: init.name ?? 'EXECUTION_TIMEOUT' })
  }
}

/** 1005: too many requests; `retryAfterSeconds` from `Retry-After`. */
export class RateLimitedError extends SvcError {
  constructor(init: SvcErrorSubclassInit) {
    super({ ...init, code: ERROR_CODES.RATE_LIMITED, name: init.name ?? 'RATE_LIMITED' })
  }
}

/** 1006: the request is malformed or invalid (`details.problems` lists JSON pointers). */
export class ValidationFailedError extends SvcError {
  constructor(init: SvcErrorSubclassInit) {
    super({ ...init, code: ERROR_CODES.VALIDATION_FAILED, name: init.name ?? 'VALIDATION_FAILED' })
  }
}

/** 1007: the function threw, ran out of memory or CPU, or returned a non-JSON value. */
export class ExecutionFailedError extends SvcError {
  constructor(init: SvcErrorSubclassInit) {
    super({ ...init, code: ERROR_CODES.EXECUTION_FAILED, name: init.name ?? 'EXECUTION_FAILED' })
  }
}

/** 1008: a different canonical string already has this short hash. */
export class RufidCollisionError extends SvcError {
  constructor(init: SvcErrorSubclassInit) {
    super({ ...init, code: ERROR_CODES.RUFID_COLLISION, name: init.name ?? 'RUFID_COLLISION' })
  }
}

/** 1009: a fault in the node. */
export class InternalError extends SvcError {
  constructor(init: SvcErrorSubclassInit) {
    super({ ...init, code: ERROR_CODES.INTERNAL_ERROR, name: init.name ?? 'INTERNAL_ERROR' })
  }
}

/** 1010: the node is draining or its execution queue is full. */
export class ServiceUnavailableError extends SvcError {
  constructor(init: SvcErrorSubclassInit) {
    super({ ...init, code: ERROR_CODES.SERVICE_UNAVAILABLE, name: init.name ?? 'SERVICE_UNAVAILABLE' })
  }
}

/**
 * 1011: something that is not a function does not exist in the caller's tenant: an execution, its
 * receipt (not yet, or none), an API key, a branch. `details.resource` names which.
 */
export class NotFoundError extends SvcError {
  constructor(init: SvcErrorSubclassInit) {
    super({ ...init, code: ERROR_CODES.NOT_FOUND, name: init.name ?? 'NOT_FOUND' })
  }
}

/** 2001: no federation node could be reached. */
export class FederationUnreachableError extends SvcError {
  constructor(init: SvcErrorSubclassInit) {
    super({ ...init, code: ERROR_CODES.FEDERATION_UNREACHABLE, name: init.name ?? 'FEDERATION_UNREACHABLE' })
  }
}

/** 2002: the caller acts on the losing side of a catalog conflict. */
export class SyncConflictError extends SvcError {
  constructor(init: SvcErrorSubclassInit) {
    super({ ...init, code: ERROR_CODES.SYNC_CONFLICT, name: init.name ?? 'SYNC_CONFLICT' })
  }
}

/** The node could not be reached, did not answer in time, or the request was aborted (`code` null). */
export class SvcConnectionError extends SvcError {
  constructor(message: string, options: { details?: Record<string, unknown>; cause?: unknown; name?: string } = {}) {
    super({ code: null, name: options.name ?? 'CONNECTION_FAILED', message, details: options.details, cause: options.cause })
  }
}

/** `waitExecution` gave up before the execution finished; the execution itself may still complete. */
export class WaitTimeoutError extends SvcError {
  constructor(message: string, details: Record<string, unknown>) {
    super({ code: null, name: 'WAIT_TIMEOUT', message, details })
  }
}

const CLASSES = new Map<number, new (init: SvcErrorSubclassInit) => SvcError>([
  [1001, InvalidRufidError],
  [1002, RufidNotFoundError],
  [1003, PermissionDeniedError],
  [1004, ExecutionTimeoutError],
  [1005, RateLimitedError],
  [1006, ValidationFailedError],
  [1007, ExecutionFailedError],
  [1008, RufidCollisionError],
  [1009, InternalError],
  [1010, ServiceUnavailableError],
  [1011, NotFoundError],
  [2001, FederationUnreachableError],
  [2002, SyncConflictError],
])

/** The error for `code` (its subclass when the code is known, else a plain `SvcError`). */
export function svcError(code: number | null, init: Omit<SvcErrorInit, 'code' | 'name'> & { name?: string }): SvcError {
  const cls = code === null ? undefined : CLASSES.get(code)
  if (cls) return new cls(init)
  const name = init.name ?? (code === null ? 'SVC_ERROR' : errorNameOf(code) ?? `ERROR_${code}`)
  return new SvcError({ ...init, code, name })
}

/** Statuses that name a code even without an svc error body (e.g. from a proxy). */
const CODE_OF_STATUS: Record<number, number> = { 401: 1003, 403: 1003, 408: 1004, 429: 1005 }

/** `Retry-After` as seconds (a number of seconds or an HTTP date), or undefined. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined
  const trimmed = value.trim()
  if (/^\d+(\.\d+)?$/.test(trimmed)) {
    // a wait a caller can honour: 400 nines are a number, but not a finite one
    const seconds = Number(trimmed)
    return Number.isFinite(seconds) ? seconds : undefined
  }
  const at = Date.parse(trimmed)
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000))
}

/** Turns a non-2xx answer into the typed error of its code. */
export function errorFromResponse(status: number, bodyText: string, retryAfter?: string | null): SvcError {
  let parsed: unknown
  try {
    parsed = bodyText ? JSON.parse(bodyText) : undefined
  } catch {
    parsed = undefined
  }
  const e = (parsed as { error?: unknown } | undefined)?.error as
    | { code?: unknown; name?: unknown; message?: unknown; details?: unknown }
    | undefined
  const retryAfterSeconds = parseRetryAfter(retryAfter)
  if (e && typeof e === 'object' && typeof e.code === 'number') {
    return svcError(e.code, {
      name: typeof e.name === 'string' ? e.name : undefined,
      message: typeof e.message === 'string' ? e.message : `HTTP ${status}`,
      details: e.details && typeof e.details === 'object' && !Array.isArray(e.details) ? (e.details as Record<string, unknown>) : {},
      httpStatus: status,
      retryAfterSeconds,
    })
  }
  const code = CODE_OF_STATUS[status] ?? null
  const snippet = bodyText.length > 200 ? `${bodyText.slice(0, 200)}…` : bodyText
  return svcError(code, {
    name: code === null ? 'HTTP_ERROR' : undefined,
    message: `the node answered HTTP ${status} without an svc error body${snippet ? `: ${snippet}` : ''}`,
    details: {},
    httpStatus: status,
    retryAfterSeconds,
  })
}

/** True when `err` is an `SvcError`, and has `code` when one is given. */
export function isSvcError(err: unknown, code?: number): err is SvcError {
  return err instanceof SvcError && (code === undefined || err.code === code)
}
