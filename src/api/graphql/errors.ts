import { GraphQLError, type GraphQLFormattedError } from 'graphql/index.js'
import { SvcError, toSvcError } from '../../core/errors.js'
import { httpStatusOf } from '../http-status.js'

/**
 * The one place the GraphQL door maps svc error codes (decisions.md "Errors"): every error a
 * client sees carries `extensions: { code, name, details }`; request-level failures (authentication,
 * limits, malformed documents) also get an HTTP status, and over graphql-ws a close code.
 */

/** HTTP status of a request the GraphQL door refuses before executing it (shared with REST). */
export { httpStatusOf }

/** HTTP statuses a graphql-ws close code carries as 4000 + status (graphql-ws's own convention). */
const CLOSE_STATUSES = new Set([400, 401, 403, 429])

/**
 * Close code of a graphql-ws connection refused at `connection_init`, from the HTTP family's one
 * table: 4401 (no or invalid credentials; graphql-ws clients do not retry it), 4403 (denied),
 * 4429 (rate limited), 4400 (malformed), else 4500.
 */
export function wsCloseCodeOf(err: SvcError): number {
  const status = httpStatusOf(err)
  return CLOSE_STATUSES.has(status) ? 4000 + status : 4500
}

/** A close reason of at most 123 bytes, e.g. `1003 PERMISSION_DENIED: credentials required`. */
export function wsCloseReasonOf(err: SvcError): string {
  const reason = `${err.code} ${err.name}: ${err.code === 1009 ? 'internal error' : err.message}`
  let out = reason
  while (Buffer.byteLength(out) > 123) out = out.slice(0, -1)
  return out
}

/**
 * The SvcError behind anything a GraphQL operation failed with. Resolvers throw SvcErrors (graphql
 * wraps them); GraphQL's own request errors (syntax, validation, variable coercion) are 1006; any
 * other failure during execution (it has a `path`) is 1009, its text not exposed.
 */
export function svcErrorOf(err: unknown): SvcError {
  if (err instanceof SvcError) return err
  if (err instanceof GraphQLError) {
    let cause: unknown = err.originalError
    while (cause instanceof GraphQLError && cause.originalError !== undefined) cause = cause.originalError
    if (cause instanceof SvcError) return cause
    if (err.path !== undefined) return toSvcError(cause ?? err)
    return new SvcError('VALIDATION_FAILED', err.message, { cause: err })
  }
  return toSvcError(err)
}

/** A GraphQLError carrying an SvcError (for errors raised by the door itself). */
export function graphqlErrorOf(err: SvcError): GraphQLError {
  return new GraphQLError(err.message, { originalError: err, extensions: { code: err.code, name: err.name } })
}

/**
 * The wire form of one error: message, locations, path and `extensions: { code, name, details }`.
 * `details` is what REST puts in `error.details` (e.g. every JSON-pointer problem of a bad
 * manifest), `{}` when there is none; an internal fault (1009) shows neither its text nor details.
 */
export function formatError(err: GraphQLError): GraphQLFormattedError {
  const svc = svcErrorOf(err)
  const internal = svc.code === 1009
  return {
    message: internal ? 'internal error' : err.message,
    ...(err.locations ? { locations: err.locations } : {}),
    ...(err.path ? { path: err.path } : {}),
    extensions: { code: svc.code, name: svc.name, details: internal ? {} : svc.details },
  }
}

/** An execution result with its errors in wire form (data untouched). */
export function formatResult<T extends { errors?: readonly GraphQLError[] | undefined }>(
  result: T,
): Omit<T, 'errors'> & { errors?: GraphQLFormattedError[] } {
  const { errors, ...rest } = result
  return errors && errors.length > 0 ? { ...rest, errors: errors.map(formatError) } : rest
}

/** The internal faults among `errors` (code 1009), for the log. */
export function internalFaultsOf(errors: readonly GraphQLError[] | undefined): unknown[] {
  return (errors ?? []).map(svcErrorOf).filter((e) => e.code === 1009).map((e) => e.cause ?? e)
}
