import { join } from 'node:path'
import { ClassicLevel } from 'classic-level'
import { isValidTenantId } from '../core/rufid.js'
import { ConfigError, loadConfig } from '../daemon/config.js'
import { ApiKeyService, createLevelKeyStorage, type LevelDatabase } from '../engine/index.js'

export interface AdminKeyOptions {
  admin?: boolean
  tenant?: string
  name?: string
  dataDir?: string
  expiresDays?: string
  json?: boolean
}

/**
 * `svc keys create --admin`: mints an administrator key straight into a node's data directory,
 * for the first key of a node or to recover access. The node must be stopped (LevelDB is
 * single-writer); a running node mints keys through `POST /api/v1/auth/v2/api-keys`.
 */
export async function createAdminKeyOffline(opts: AdminKeyOptions): Promise<void> {
  let config
  try {
    config = loadConfig({ overrides: opts.dataDir ? { data_dir: opts.dataDir } : {} })
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message)
    throw err
  }
  const tenant = opts.tenant ?? config.auth.default_tenant
  if (!isValidTenantId(tenant)) fail(`--tenant must be 1–64 characters of A-Z a-z 0-9 _ . -`)
  const days = opts.expiresDays === undefined ? null : Number(opts.expiresDays)
  if (days !== null && (!Number.isInteger(days) || days < 1 || days > config.auth.keys.max_expires_days)) {
    fail(`--expires-days must be an integer from 1 to ${config.auth.keys.max_expires_days}`)
  }
  const db = new ClassicLevel<string, unknown>(join(config.data_dir, 'catalog'), { valueEncoding: 'json' })
  try {
    await db.open()
  } catch (err) {
    const locked = /lock/i.test(String((err as { cause?: unknown }).cause ?? err))
    fail(locked
      ? `the data directory ${config.data_dir} is in use by a running node: stop it first, or mint keys through POST /api/v1/auth/v2/api-keys`
      : `cannot open ${config.data_dir}: ${(err as Error).message}`)
  }
  try {
    const keys = new ApiKeyService(
      { defaultExpiresDays: config.auth.keys.default_expires_days, maxExpiresDays: config.auth.keys.max_expires_days },
      createLevelKeyStorage(db as unknown as LevelDatabase),
    )
    const minted = await keys.mintFor(tenant, 'cli:svc keys create --admin', { name: opts.name ?? 'admin', scopes: ['admin'], expires_days: days })
    if (opts.json) {
      process.stdout.write(JSON.stringify(minted) + '\n')
    } else {
      process.stdout.write(`administrator key for tenant "${tenant}" (key id ${minted.key_id}); shown once, stored only as a hash:\n${minted.api_key}\n`)
    }
  } finally {
    await db.close()
  }
}

function fail(message: string): never {
  process.stderr.write(`svc: ${message}\n`)
  process.exit(2)
}
