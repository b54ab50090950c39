/**
 * The derived signature of rufid-v1 §10 (`src/core/signature.ts`, the very code the daemon and
 * the CLI use), raising the client's `ValidationFailedError` (no request is sent).
 */
import { deriveSignature as coreDeriveSignature, type SignatureSource } from '../core/signature.js'
import { ValidationFailedError } from './errors.js'

/** `(a, b = g(1))` for `def add(a, b = g(1)):`; `ValidationFailedError` (1006) when none can be derived. */
export function deriveSignature(input: SignatureSource): string {
  try {
    return coreDeriveSignature(input)
  } catch (err) {
    const e = err as { message?: string; details?: Record<string, unknown> }
    throw new ValidationFailedError({ message: e.message ?? 'cannot derive the signature', details: e.details ?? { function_name: input.function_name } })
  }
}
