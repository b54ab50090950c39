import { SvcError, toSvcError } from '../../core/errors.js'
import { httpStatusOf } from '../http-status.js'

export { httpStatusOf }

export interface RestErrorBody {
  error: { code: number; name: string; message: string; details: Record<string, unknown> }
}

export function errorBody(err: SvcError): RestErrorBody {
  return { error: err.toJSON() }
}

/**
 * Turns whatever a handler or a Koa middleware threw into an SvcError: body-parser failures
 * (oversized or malformed bodies) become 1006, anything unknown 1009 (its text is not exposed).
 */
export function restErrorOf(err: unknown): SvcError {
  if (err instanceof SvcError) return err
  const e = err as { status?: number; type?: string; expose?: boolean; message?: string }
  if (e && typeof e === 'object' && typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
    if (e.status === 413) {
      return new SvcError('VALIDATION_FAILED', 'request body exceeds the size limit', {
        reason: 'payload_too_large', details: { limit: 'see server.body_limit_bytes' },
      })
    }
    return new SvcError('VALIDATION_FAILED', e.expose && e.message ? e.message : 'malformed request', {
      details: e.type ? { type: e.type } : {},
    })
  }
  return toSvcError(err)
}
