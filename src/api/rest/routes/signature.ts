// the one signature derivation of rufid-v1 §10 and the one parameter reader the sandbox binds with
import { deriveSignature } from '../../../core/signature.js'
import { parseSignature } from '../../../engine/sandbox/signature.js'
import { requirePermission } from '../../../engine/index.js'
import { BODY_ERRORS, CALLER_ERRORS, defineRoute, type RestRoute } from '../operation.js'
import { bodyOf } from '../request.js'
import { parseRequest, signatureRequestSchema } from './request-schemas.js'
import { signatureSchema } from './response-schemas.js'

/**
 * `POST /api/v1/functions/signature`: the signature the node derives from a source when a publish
 * names none (rufid-v1 §10), and its parameters as an execution binds named arguments to them, so
 * a form (the console's Publish and Run pages) shows what the node will do without a second copy
 * of either rule. Reads and stores nothing; any credential with rufid.read may ask.
 */
export function signatureRoutes(): RestRoute<never, unknown>[] {
  return [
    defineRoute({
      method: 'post', path: '/api/v1/functions/signature', operation: 'rufid.signature',
      summary: 'The signature the node derives from a source (rufid-v1 §10), or the parameters of a given signature; stores nothing',
      request: signatureRequestSchema,
      responses: { 200: signatureSchema },
      errors: [...CALLER_ERRORS, ...BODY_ERRORS],
      async handle(principal, ctx) {
        requirePermission(principal!, 'rufid.read')
        const body = parseRequest(signatureRequestSchema, bodyOf(ctx), 'signature request')
        const signature = 'signature' in body ? body.signature : deriveSignature(body)
        return {
          signature,
          parameters: parseSignature(signature).map((p) => ({ name: p.name, optional: p.optional, rest: p.rest })),
        }
      },
    }),
  ]
}
