import { existsSync, mkdirSync, readdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { ClassicLevel } from 'classic-level'
import { isValidTenantId } from '../core/rufid.js'
import { ConfigError, loadConfig } from '../daemon/config.js'
import { catalogLocation } from '../daemon/data-directory.js'
import { EXIT_CODES } from '../daemon/exit-codes.js'
import { ApiKeyService, createLevelKeyStorage, type LevelDatabase } from '../engine/index.js'
import { CliError } from './connection.js'

export interface AdminKeyOptions {
  admin?: boolean
  tenant?: string
  name?: string
  dataDir?: string
  expiresDays?: string
  json?: boolean
  /** create the database when the data directory holds none (a node that has not started yet) */
  init?: boolean
}

/**
 * Exit codes of `svc keys create --admin`: 0 minted; 2 nothing minted (what to do is on standard
 * error); 4 nothing minted because another process (a running node) holds the data directory, the
 * code `svc-node start` exits with for the same cause (EXIT_CODES.data_dir_in_use).
 */
export const ADMIN_KEY_EXIT = { ok: 0, cannot: 2, inUse: EXIT_CODES.data_dir_in_use } as const

function cannot(message: string): CliError {
  return new CliError(1006, 'VALIDATION_FAILED', message, {}, ADMIN_KEY_EXIT.cannot)
}

/** Which setting chose the data directory, in the words an operator types. */
function dataDirSource(opts: AdminKeyOptions, env: NodeJS.ProcessEnv): string {
  if (opts.dataDir) return '--data-dir'
  if (env.SVC_DATA_DIR) return 'SVC_DATA_DIR'
  if (env.SVC_CONFIG) return `data_dir of the node config SVC_CONFIG names (${resolve(env.SVC_CONFIG)}), else the default data_dir`
  return 'the default data_dir of config/default.yaml (~/.svc-node/data): none of --data-dir, SVC_DATA_DIR, SVC_CONFIG is set'
}

/** How a running node's data directory is found: what the refusals tell the operator. */
const WHERE_THE_NODE_KEEPS_ITS_DATA =
  "A node keeps its database in <data_dir>/catalog; its data_dir is svc node start's --data-dir, else SVC_DATA_DIR, else data_dir in the YAML file SVC_CONFIG names, else ~/.svc-node/data"

/**
 * `svc keys create --admin`: mints an administrator key straight into a node's database, for the
 * first key of a node or to recover access. The node must be stopped (LevelDB is single-writer); a
 * running node mints keys through `POST /api/v1/auth/v2/api-keys`. A data directory that holds
 * no database is refused unless `init` (a key minted into a new database at a wrong path would be
 * a key no node knows): the refusal names the directory and the setting that chose it.
 */
export async function createAdminKeyOffline(opts: AdminKeyOptions, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  let config
  try {
    config = loadConfig({ env, overrides: opts.dataDir ? { data_dir: resolve(opts.dataDir) } : {} })
  } catch (err) {
    if (err instanceof ConfigError) throw cannot(err.message)
    throw err
  }
  const tenant = opts.tenant ?? config.auth.default_tenant
  if (!isValidTenantId(tenant)) throw cannot('--tenant must be 1–64 characters of A-Z a-z 0-9 _ . -')
  const days = opts.expiresDays === undefined ? null : Number(opts.expiresDays)
  if (days !== null && (!Number.isInteger(days) || days < 1 || days > config.auth.keys.max_expires_days)) {
    throw cannot(`--expires-days must be an integer from 1 to ${config.auth.keys.max_expires_days}`)
  }
  const dataDir = config.data_dir
  const location = catalogLocation(dataDir)
  // LevelDB's CURRENT names the live manifest: a directory without it holds no database
  const exists = existsSync(join(location, 'CURRENT'))
  if (!exists && !opts.init) {
    throw cannot([
      `no database in ${dataDir} (looked for ${location}; the directory comes from ${dataDirSource(opts, env)}): nothing minted.`,
      `${WHERE_THE_NODE_KEEPS_ITS_DATA}: point --data-dir (or SVC_DATA_DIR) at the directory the node runs with,`,
      'or add --init to create a new database there, for a node that has not started yet.',
    ].join('\n'))
  }
  if (!exists && existsSync(location) && readdirSync(location).length > 0) {
    throw cannot(`${location} holds files but no database (no CURRENT): nothing minted, nothing created. Check it with svc node check --data-dir ${dataDir}`)
  }
  if (!exists) mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  const db = new ClassicLevel<string, unknown>(location, { valueEncoding: 'json', createIfMissing: !exists })
  try {
    await db.open()
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause
    if (cause?.code === 'LEVEL_LOCKED') {
      throw new CliError(1006, 'VALIDATION_FAILED', [
        `the data directory ${dataDir} is in use by a running node (or another svc command holds it): nothing minted.`,
        'A running node mints keys itself: svc keys create --name <name> --scopes admin --token <an admin key of the tenant>',
        '(POST /api/v1/auth/v2/api-keys). Without any admin key left, stop the node, then run this again.',
      ].join('\n'), {}, ADMIN_KEY_EXIT.inUse)
    }
    throw cannot(`cannot open the database in ${location}: ${cause?.message ?? (err as Error).message}`)
  }
  try {
    const keys = new ApiKeyService(
      { defaultExpiresDays: config.auth.keys.default_expires_days, maxExpiresDays: config.auth.keys.max_expires_days },
      createLevelKeyStorage(db as unknown as LevelDatabase),
    )
    const minted = await keys.mintFor(tenant, 'cli:svc keys create --admin', { name: opts.name ?? 'admin', scopes: ['admin'], expires_days: days })
    if (!exists) process.stderr.write(`svc: created a new database in ${location} (--init)\n`)
    if (config.auth.provider !== 'standard') {
      process.stderr.write(`svc: note: this configuration's auth.provider is ${config.auth.provider}; only a node in standard mode reads keys from its database\n`)
    }
    if (opts.json) {
      process.stdout.write(JSON.stringify(minted) + '\n')
    } else {
      process.stdout.write(`administrator key for tenant "${tenant}" (key id ${minted.key_id}) in ${dataDir}; shown once, stored only as a hash:\n${minted.api_key}\n`)
    }
  } finally {
    await db.close()
  }
}
