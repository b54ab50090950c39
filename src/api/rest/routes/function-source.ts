import type { Router } from '@koa/router'
import { fullRufidOf, importStatement } from '../../../engine/index.js'
import type { RestApiComponents, RestState } from '../app.js'
import { principalOf } from '../app.js'
import { queryString } from '../request.js'

/**
 * `GET /api/v1/functions/{rufid}/source`: the source code of a version (the newest live one without
 * `version`), with what a reader needs beside it (signature, digest, each client's import statement). Needs rufid.read, like resolve; a node that lacks
 * the code (replicated metadata) fetches it from a member first, digest-checked.
 */
export function registerFunctionSourceRoutes(router: Router<RestState>, { engine }: RestApiComponents): void {
  router.get('/api/v1/functions/:rufid/source', async (ctx) => {
    ctx.state.operation = 'rufid.source'
    ctx.state.rufid = ctx.params.rufid
    const principal = await principalOf(ctx, engine)
    const target = engine.functions.target(principal, ctx.params.rufid, queryString(ctx.query.version))
    const { fn } = await engine.functions.resolve(principal, target)
    ctx.body = {
      rufid: fullRufidOf(fn),
      rufid_short: fn.rufid_short,
      version: `v${fn.version}`,
      function_name: fn.function_name,
      language: fn.language,
      signature: fn.signature,
      content_digest: fn.content_digest,
      source_code: fn.source_code,
      // how each client imports it (decisions.md "Import statements")
      imports: {
        typescript: importStatement('typescript', fn.rufid_short, fn.function_name),
        python: importStatement('python', fn.rufid_short, fn.function_name),
        go: importStatement('go', fn.rufid_short, fn.function_name),
      },
    }
  })
}
