/**
 * The one registry of svc-node error codes. Every failure the engine can report is a
 * `SvcError` carrying one of these codes; each protocol adapter maps codes to its own
 * status space in exactly one place (see `api/<protocol>/errors.ts`).
 *
 * 1001–1005 and 2001–2002 are the interface's codes (service-spec §7). 1006–1008 are fixed by
 * decisions.md. 1009, 1010 and 1011 are this project's additions for failures the interface does
 * not name (an internal fault, a node that is draining or overloaded, something not found that
 * is not a function: 1002 stays for RUFIDs and their versions).
 */
export const ERROR_CODES = {
  INVALID_RUFID: 1001,
  RUFID_NOT_FOUND: 1002,
  PERMISSION_DENIED: 1003,
  EXECUTION_TIMEOUT: 1004,
  RATE_LIMITED: 1005,
  VALIDATION_FAILED: 1006,
  EXECUTION_FAILED: 1007,
  RUFID_COLLISION: 1008,
  INTERNAL_ERROR: 1009,
  SERVICE_UNAVAILABLE: 1010,
  NOT_FOUND: 1011,
  FEDERATION_UNREACHABLE: 2001,
  SYNC_CONFLICT: 2002,
} as const

export type ErrorName = keyof typeof ERROR_CODES
export type ErrorCode = (typeof ERROR_CODES)[ErrorName]

const NAMES_BY_CODE = new Map<number, ErrorName>(
  (Object.entries(ERROR_CODES) as Array<[ErrorName, ErrorCode]>).map(([name, code]) => [code, name]),
)

export function errorNameOf(code: number): ErrorName | undefined {
  return NAMES_BY_CODE.get(code)
}

/**
 * A refinement of a code that some protocols render differently (e.g. HTTP 401 rather than 403
 * for 1003 when no valid credential was presented, 413 rather than 400 for 1006 on an oversized body,
 * 409 rather than 400 for 1006 asking a node without federation for a federation resource).
 */
export type ErrorReason = 'unauthenticated' | 'payload_too_large' | 'unprocessable' | 'federation_disabled' | undefined

export interface SvcErrorOptions {
  details?: Record<string, unknown>
  cause?: unknown
  reason?: ErrorReason
  /** Seconds after which a retry may succeed (1005, 1010). */
  retryAfterSeconds?: number
}

export class SvcError extends Error {
  readonly code: ErrorCode
  override readonly name: ErrorName
  readonly details: Record<string, unknown>
  readonly reason: ErrorReason
  readonly retryAfterSeconds: number | undefined

  constructor(name: ErrorName, message: string, options: SvcErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = name
    this.code = ERROR_CODES[name]
    this.details = options.details ?? {}
    this.reason = options.reason
    this.retryAfterSeconds = options.retryAfterSeconds
  }

  toJSON(): { code: ErrorCode; name: ErrorName; message: string; details: Record<string, unknown> } {
    return { code: this.code, name: this.name, message: this.message, details: this.details }
  }
}

export function isSvcError(err: unknown): err is SvcError {
  return err instanceof SvcError
}

/** Wraps anything thrown into an SvcError, keeping SvcErrors as they are. */
export function toSvcError(err: unknown): SvcError {
  if (isSvcError(err)) return err
  return new SvcError('INTERNAL_ERROR', 'internal error', { cause: err })
}

export const invalidRufid = (value: unknown, why = 'malformed RUFID'): SvcError =>
  new SvcError('INVALID_RUFID', `${why}: ${JSON.stringify(value)}`, { details: { rufid: value } })

export const rufidNotFound = (rufid: string, version?: string): SvcError =>
  new SvcError('RUFID_NOT_FOUND', `RUFID ${rufid}${version ? ` ${version}` : ''} does not exist`, {
    details: version ? { rufid, version } : { rufid },
  })

/**
 * 1011: something that is not a function does not exist (or is not the caller's tenant's).
 * `details.resource` names what (`execution`, `receipt`, `api_key`, `branch`), beside the
 * identifiers asked for.
 */
export const notFound = (resource: string, message: string, details: Record<string, unknown> = {}): SvcError =>
  new SvcError('NOT_FOUND', message, { details: { resource, ...details } })

export const validationFailed = (message: string, problems: Array<{ pointer: string; message: string }> = []): SvcError =>
  new SvcError('VALIDATION_FAILED', message, { details: problems.length ? { problems } : {} })
