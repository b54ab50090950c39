import type { Router } from '@koa/router'
import type { RestApiComponents, RestApiInit, RestState } from '../app.js'
import { principalOf } from '../app.js'

export const BACKUP_PATH = '/api/v1/admin/backup'

/**
 * `GET /api/v1/admin/backup` (`svc node backup`): the node's whole database from one LevelDB
 * snapshot, streamed as a gzip archive (engine/storage/backup.ts), so no one copies the files of an
 * open database. Operators only: an admin of the node's admin tenant (1003 otherwise). Audited as
 * `node.backup`. An archive cut short (the connection dropped) has no trailer and is refused by
 * `svc node restore`.
 */
export function registerNodeBackupRoutes(router: Router<RestState>, init: Pick<RestApiInit, 'node'>, { engine }: RestApiComponents): void {
  router.get(BACKUP_PATH, async (ctx) => {
    ctx.state.operation = 'node.backup'
    const principal = await principalOf(ctx, engine)
    const stream = engine.backup(principal, init.node?.version ?? '0.0.0')
    const stamp = new Date().toISOString().replace(/[:.]/g, '-')
    ctx.set('Cache-Control', 'no-store')
    ctx.set('Content-Disposition', `attachment; filename="svc-node-backup-${stamp}.svcbak"`)
    ctx.type = 'application/gzip'
    ctx.body = stream
  })
}
