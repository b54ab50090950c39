// The TypeScript client's deriveSignature: core's derivation (the daemon's and the CLI's), raising
// the client's own ValidationFailedError.
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { SvcError as CoreSvcError } from '../../src/core/errors.js'
import { SvcError, ValidationFailedError, computeRufid, deriveSignature } from '../../src/client/index.js'
import type { SignatureVector } from '../core/signature.test.js'

const { cases } = JSON.parse(readFileSync(new URL('../vectors/signature-v1.json', import.meta.url), 'utf8')) as { cases: SignatureVector[] }

describe('client deriveSignature', () => {
  for (const v of cases) {
    it(v.id, () => {
      if (v.signature !== undefined) {
        const signature = deriveSignature(v)
        expect(signature).toBe(v.signature)
        expect(computeRufid({ ...v, signature }).rufid_short).toBe(v.rufid_short)
        return
      }
      let caught: unknown
      try {
        deriveSignature(v)
      } catch (err) {
        caught = err
      }
      expect(caught).toBeInstanceOf(ValidationFailedError)
      expect(caught).toBeInstanceOf(SvcError)
      expect(caught).not.toBeInstanceOf(CoreSvcError)
      const err = caught as ValidationFailedError
      expect([err.code, err.name, err.httpStatus]).toEqual([1006, 'VALIDATION_FAILED', undefined])
      expect(err.details).toMatchObject({ reason: v.error!.reason, function_name: v.function_name })
      expect(err.message).toMatch(/explicit signature/)
    })
  }
})
