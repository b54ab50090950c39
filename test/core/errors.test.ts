// The error registry every door maps from (src/core/errors.ts): codes, names, messages, details and
// the options an adapter reads (reason, retryAfterSeconds, cause). Adapters render these fields as
// they are, so a changed message or a lost detail is a changed contract.
import { describe, expect, it } from 'vitest'
import {
  ERROR_CODES, errorNameOf, invalidRufid, isSvcError, notFound, rufidNotFound, SvcError, toSvcError, validationFailed,
} from '../../src/core/errors.js'

describe('ERROR_CODES and errorNameOf', () => {
  it('maps every code back to its one name, and nothing else to a name', () => {
    for (const [name, code] of Object.entries(ERROR_CODES)) expect(errorNameOf(code)).toBe(name)
    expect(errorNameOf(1001)).toBe('INVALID_RUFID')
    expect(errorNameOf(2002)).toBe('SYNC_CONFLICT')
    expect(errorNameOf(1011)).toBe('NOT_FOUND')
    for (const code of [0, 1000, 1012, 2000, 2003, 404]) expect(errorNameOf(code)).toBeUndefined()
  })
})

describe('SvcError', () => {
  it('carries the code of its name and every option given', () => {
    const cause = new Error('disk full')
    const err = new SvcError('RATE_LIMITED', 'slow down', { details: { limit: 5 }, cause, reason: 'unauthenticated', retryAfterSeconds: 3 })
    expect(err).toBeInstanceOf(Error)
    expect(err.name).toBe('RATE_LIMITED')
    expect(err.code).toBe(1005)
    expect(err.message).toBe('slow down')
    expect(err.details).toEqual({ limit: 5 })
    expect(err.cause).toBe(cause)
    expect(err.reason).toBe('unauthenticated')
    expect(err.retryAfterSeconds).toBe(3)
  })

  it('without options: empty details, no cause, reason or retry time', () => {
    const err = new SvcError('INTERNAL_ERROR', 'boom')
    expect(err.code).toBe(1009)
    expect(err.details).toEqual({})
    expect('cause' in err).toBe(false)
    expect(err.reason).toBeUndefined()
    expect(err.retryAfterSeconds).toBeUndefined()
    // an explicit undefined cause is no cause either
    expect('cause' in new SvcError('INTERNAL_ERROR', 'boom', { cause: undefined })).toBe(false)
  })

  it('serializes as {code, name, message, details} only', () => {
    const err = new SvcError('RUFID_NOT_FOUND', 'gone', { details: { rufid: 'x' }, reason: 'unprocessable', retryAfterSeconds: 1, cause: 'c' })
    expect(err.toJSON()).toStrictEqual({ code: 1002, name: 'RUFID_NOT_FOUND', message: 'gone', details: { rufid: 'x' } })
    expect(JSON.parse(JSON.stringify(err))).toStrictEqual({ code: 1002, name: 'RUFID_NOT_FOUND', message: 'gone', details: { rufid: 'x' } })
  })
})

describe('isSvcError and toSvcError', () => {
  it('keeps an SvcError as it is and wraps anything else as 1009 with its cause', () => {
    const own = new SvcError('PERMISSION_DENIED', 'no')
    expect(isSvcError(own)).toBe(true)
    expect(toSvcError(own)).toBe(own)
    for (const thrown of [new Error('x'), 'text', null, undefined, { code: 1001 }]) {
      expect(isSvcError(thrown)).toBe(false)
      const wrapped = toSvcError(thrown)
      expect(wrapped).toBeInstanceOf(SvcError)
      expect(wrapped.code).toBe(1009)
      expect(wrapped.name).toBe('INTERNAL_ERROR')
      expect(wrapped.message).toBe('internal error')
      expect(wrapped.details).toEqual({})
      if (thrown !== undefined) expect(wrapped.cause).toBe(thrown)
    }
  })
})

describe('error helpers', () => {
  it('invalidRufid: 1001 naming the value, with a default or given reason', () => {
    const a = invalidRufid('nope')
    expect(a.code).toBe(1001)
    expect(a.message).toBe('malformed RUFID: "nope"')
    expect(a.details).toStrictEqual({ rufid: 'nope' })
    const b = invalidRufid(12, 'RUFID must be a string')
    expect(b.message).toBe('RUFID must be a string: 12')
    expect(b.details).toStrictEqual({ rufid: 12 })
  })

  it('rufidNotFound: 1002 with the version only when one is given', () => {
    const a = rufidNotFound('AbC123xyz789')
    expect(a.code).toBe(1002)
    expect(a.message).toBe('RUFID AbC123xyz789 does not exist')
    expect(a.details).toStrictEqual({ rufid: 'AbC123xyz789' })
    const b = rufidNotFound('AbC123xyz789', 'v2')
    expect(b.message).toBe('RUFID AbC123xyz789 v2 does not exist')
    expect(b.details).toStrictEqual({ rufid: 'AbC123xyz789', version: 'v2' })
  })

  it('notFound: 1011 naming the resource first, then the details given', () => {
    const a = notFound('execution', 'execution ex_1 does not exist', { execution_id: 'ex_1' })
    expect(a.code).toBe(1011)
    expect(a.name).toBe('NOT_FOUND')
    expect(a.message).toBe('execution ex_1 does not exist')
    expect(a.details).toStrictEqual({ resource: 'execution', execution_id: 'ex_1' })
    expect(notFound('branch', 'no branch').details).toStrictEqual({ resource: 'branch' })
  })

  it('validationFailed: 1006 with problems only when there are some', () => {
    const a = validationFailed('bad input')
    expect(a.code).toBe(1006)
    expect(a.name).toBe('VALIDATION_FAILED')
    expect(a.message).toBe('bad input')
    expect(a.details).toStrictEqual({})
    expect(validationFailed('bad input', []).details).toStrictEqual({})
    const problems = [{ pointer: '/name', message: 'required' }]
    expect(validationFailed('bad input', problems).details).toStrictEqual({ problems })
  })
})
