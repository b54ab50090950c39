import type { Engine } from '../../../engine/index.js'
import { CALLER_ERRORS, defineRoute, type RestRoute } from '../operation.js'

export const BACKUP_PATH = '/api/v1/admin/backup'

/**
 * The archive's media types: gzip, or the generic octet-stream for a client that asks for it
 * (Accept: application/octet-stream). Both are declared in /openapi.json, so generators that keep
 * only the generic binary type (openapi-python-client) still give their users the archive.
 */
const ARCHIVE_TYPES = ['application/gzip', 'application/octet-stream'] as const

/**
 * `GET /api/v1/admin/backup` (`svc node backup`): the node's whole database from one LevelDB
 * snapshot, streamed as a gzip archive (engine/storage/backup.ts), so no one copies the files of an
 * open database. Operators only: an admin of the node's admin tenant (1003 otherwise). Audited as
 * `node.backup`. An archive cut short (the connection dropped) has no trailer and is refused by
 * `svc node restore`.
 */
export function nodeBackupRoutes(engine: Engine, node: { version?: string } | undefined): RestRoute<never, unknown>[] {
  return [
    defineRoute({
      method: 'get', path: BACKUP_PATH, operation: 'node.backup',
      summary: "The node's whole database from one snapshot, as a gzip archive of JSON lines (svc node backup; operators only: admins of the node's admin tenant)",
      responses: { 200: { contentType: ARCHIVE_TYPES, schema: { type: 'string', format: 'binary' }, description: 'the archive (gzip; application/octet-stream when the request asks for it)' } },
      errors: [...CALLER_ERRORS],
      async handle(principal, ctx) {
        const stream = engine.backup(principal!, node?.version ?? '0.0.0')
        const stamp = new Date().toISOString().replace(/[:.]/g, '-')
        ctx.set('Cache-Control', 'no-store')
        ctx.set('Content-Disposition', `attachment; filename="svc-node-backup-${stamp}.svcbak"`)
        ctx.type = ctx.accepts(...ARCHIVE_TYPES) || ARCHIVE_TYPES[0]
        return stream
      },
    }),
  ]
}
