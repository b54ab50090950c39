import type { Router } from '@koa/router'
import { z } from 'zod'
import { requirePermission } from '../../../engine/index.js'
// the one signature derivation of rufid-v1 §10 and the one parameter reader the sandbox binds with
import { deriveSignature } from '../../../core/signature.js'
import { parseSignature } from '../../../engine/execution/signature.js'
import type { RestApiComponents, RestState } from '../app.js'
import { principalOf } from '../app.js'
import { bodyOf } from '../request.js'
import { parseRequest } from './request-schemas.js'

/** POST /api/v1/functions/signature: either a source to derive the signature from, or a signature to read. */
export const signatureRequestSchema = z.union([
  z.object({
    function_name: z.string().min(1).max(128),
    language: z.string().min(1).max(32),
    source_code: z.string().min(1).max(1024 * 1024),
  }).strict(),
  z.object({ signature: z.string().max(1024) }).strict(),
])

/**
 * `POST /api/v1/functions/signature`: the signature the node derives from a source when a publish
 * names none (rufid-v1 §10), and its parameters as an execution binds named arguments to them, so
 * a form (the console's Publish and Run pages) shows what the node will do without a second copy
 * of either rule. Reads and stores nothing; any credential with rufid.read may ask.
 */
export function registerSignatureRoutes(router: Router<RestState>, { engine }: RestApiComponents): void {
  router.post('/api/v1/functions/signature', async (ctx) => {
    ctx.state.operation = 'rufid.signature'
    requirePermission(await principalOf(ctx, engine), 'rufid.read')
    const body = parseRequest(signatureRequestSchema, bodyOf(ctx), 'signature request')
    const signature = 'signature' in body ? body.signature : deriveSignature(body)
    ctx.body = {
      signature,
      parameters: parseSignature(signature).map((p) => ({ name: p.name, optional: p.optional, rest: p.rest })),
    }
  })
}
