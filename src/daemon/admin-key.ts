import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import type { Logger } from 'pino'
import type { Engine } from '../engine/index.js'
import type { SvcConfig } from './config.js'

/**
 * The one-time administrator key. Native test mode (service-spec §4.3): generated at every start
 * (or fixed by ADMIN_API_KEY / ADMIN_TENANT_ID) and printed once; WRITE_ADMIN_KEY_FILE=true also
 * writes it to a 0600 file whose path is printed (ADMIN_KEY_FILE, else a fresh 0700 directory in
 * the system's temporary directory, removed when the node exits: never the data directory, which
 * holds no key in clear). Standard mode: minted on the first start of an empty key store (when
 * `auth.bootstrap_admin_key`), printed once, never stored in clear. Both never expire: a node
 * must not lock out its only administrator after the default key lifetime. True when a key was printed.
 */
export async function announceAdminKey(
  engine: Engine,
  config: Readonly<SvcConfig>,
  { env, logger, announce = (t: string) => process.stdout.write(t) }: { env: NodeJS.ProcessEnv; logger: Logger; announce?: ((text: string) => void) | undefined },
): Promise<boolean> {
  const tenant = config.auth.default_tenant
  const request = { name: 'admin', scopes: ['admin'], expires_days: null }
  if (engine.authMode === 'native') {
    const fixed = env.ADMIN_API_KEY || undefined
    const minted = await engine.keys.mintFor(tenant, 'system:native-test-mode', request, fixed)
    if (env.WRITE_ADMIN_KEY_FILE === 'true') {
      const file = writeAdminKeyFile(minted.api_key, env.ADMIN_KEY_FILE)
      announce(`svc-node admin API key file (tenant ${tenant}): ${file}\n`)
    }
    if (fixed) {
      logger.info({ tenant, key_id: minted.key_id }, 'native test mode: admin key taken from ADMIN_API_KEY')
    } else {
      announce(adminKeyBanner(minted.api_key, tenant, 'native test mode'))
    }
    logger.warn('native test mode: API keys live in memory and are lost at shutdown')
    return !fixed
  }
  if (engine.authMode === 'standard' && config.auth.bootstrap_admin_key && (await engine.keys.count()) === 0) {
    const minted = await engine.keys.mintFor(tenant, 'system:bootstrap', request)
    announce(adminKeyBanner(minted.api_key, tenant, 'first start, no key existed'))
    return true
  }
  return false
}

/**
 * Writes the key to a 0600 file: the operator's ADMIN_KEY_FILE as given, else `admin-api-key` in a
 * new private directory under the temporary directory, removed at exit (the key lives in memory
 * and is worthless once this node stops).
 */
function writeAdminKeyFile(key: string, chosen: string | undefined): string {
  if (chosen) {
    const file = resolve(chosen)
    writeFileSync(file, key + '\n', { mode: 0o600 })
    return file
  }
  const file = join(mkdtempSync(join(tmpdir(), 'svc-node-admin-')), 'admin-api-key')
  writeFileSync(file, key + '\n', { mode: 0o600 })
  process.once('exit', () => rmSync(dirname(file), { recursive: true, force: true }))
  return file
}

function adminKeyBanner(key: string, tenant: string, why: string): string {
  return [
    '',
    `svc-node: administrator API key for tenant "${tenant}" (${why}). It is shown once and stored only as a hash:`,
    `ADMIN_API_KEY=${key}`,
    '',
  ].join('\n') + '\n'
}
