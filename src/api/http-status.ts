import { type SvcError, type ErrorName } from '../core/errors.js'

/**
 * The HTTP status of each svc error code (decisions.md "Errors"): the one table of the HTTP family
 * of doors — REST, GraphQL over HTTP (and graphql-ws close codes derived from it), and the `/ws`
 * upgrade's refusals. gRPC maps codes in its own `api/grpc/errors.ts`.
 */
const STATUS: Record<ErrorName, number> = {
  INVALID_RUFID: 400,
  RUFID_NOT_FOUND: 404,
  PERMISSION_DENIED: 403,
  EXECUTION_TIMEOUT: 408,
  RATE_LIMITED: 429,
  VALIDATION_FAILED: 400,
  EXECUTION_FAILED: 422,
  RUFID_COLLISION: 409,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
  NOT_FOUND: 404,
  FEDERATION_UNREACHABLE: 502,
  SYNC_CONFLICT: 409,
}

export function httpStatusOf(err: SvcError): number {
  if (err.reason === 'unauthenticated') return 401
  if (err.reason === 'payload_too_large') return 413
  if (err.reason === 'unprocessable') return 422
  // a well-formed request a node without federation cannot serve: its configuration, not a fault
  if (err.reason === 'federation_disabled') return 409
  return STATUS[err.name]
}

/** The REST error body, `{"error": {code, name, message, details}}` (decisions.md "Errors"). */
export interface ErrorBody {
  error: { code: number; name: string; message: string; details: Record<string, unknown> }
}

export function errorBody(err: SvcError): ErrorBody {
  return { error: err.toJSON() }
}
