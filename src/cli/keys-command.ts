import { Command, Option } from 'commander'
import { SCOPES } from '../engine/auth/permissions.js'
import { CliError, action, clientFor, printJson, withConnection, type ConnectionOptions } from './connection.js'

/** What `svc keys create` received; `admin`, `tenant` and `dataDir` exist when an admin handler is given. */
export interface KeyCreateOptions extends ConnectionOptions {
  admin?: boolean
  tenant?: string
  dataDir?: string
  init?: boolean
  name?: string
  scopes?: string
  expiresDays?: string
  json?: boolean
}

export interface KeysCommandOptions {
  /**
   * Handles `svc keys create --admin` (an administrator key minted offline into a stopped node's
   * data directory). Without it, `--admin` is not offered.
   */
  admin?: (opts: KeyCreateOptions) => Promise<void>
}

const say = (line: string): void => {
  process.stdout.write(line + '\n')
}

async function createOnline(opts: KeyCreateOptions): Promise<void> {
  if (!opts.name) throw new CliError(1006, 'VALIDATION_FAILED', '--name is required')
  const scopes = (opts.scopes ?? '').split(',').map((s) => s.trim()).filter(Boolean)
  if (scopes.length === 0) throw new CliError(1006, 'VALIDATION_FAILED', `--scopes is required (comma-separated: ${SCOPES.join(', ')})`)
  let expires_days: number | undefined
  if (opts.expiresDays !== undefined) {
    expires_days = Number(opts.expiresDays)
    if (!Number.isInteger(expires_days) || expires_days < 1) throw new CliError(1006, 'VALIDATION_FAILED', '--expires-days must be a whole number of days, at least 1')
  }
  const r = await clientFor(opts).createApiKey({ name: opts.name, scopes, ...(expires_days !== undefined ? { expires_days } : {}) })
  if (opts.json) return printJson(r)
  say(`api key ${r.key_id} "${r.name}" for tenant ${r.tenant_id}; scopes ${r.scopes.join(', ')}; expires ${r.expires_at === null ? 'never' : r.expires_at}`)
  say('the key (shown once, stored only as a hash):')
  say(`  ${r.api_key}`)
}

/** `svc keys …`: API keys of a running node (create, list, revoke), plus `create --admin` when a handler is injected. */
export function keysCommand(options: KeysCommandOptions = {}): Command {
  const keys = new Command('keys').description('API keys')

  const create = withConnection(keys.command('create'))
    .description(`mint an API key on a node (needs an admin credential); the key is printed once. Scopes: ${SCOPES.join(', ')}${options.admin ? '. With --admin: an administrator key written straight into a stopped node\'s data directory' : ''}`)
    .option('--name <name>', 'a name for the key')
    .option('--scopes <list>', `comma-separated scopes (${SCOPES.join(', ')})`)
    .option('--expires-days <n>', `days until the key expires (default: the node's auth.keys.default_expires_days${options.admin ? '; with --admin: never' : ''})`)
    .option('--json', 'print JSON')
  if (options.admin) {
    create
      .addOption(new Option('--admin', 'administrator key, minted offline into the data directory (the node must be stopped)'))
      .addOption(new Option('--tenant <tenant_id>', 'with --admin: tenant of the key (default: auth.default_tenant)'))
      .addOption(new Option('--data-dir <dir>', "with --admin: the node's data directory (default: SVC_DATA_DIR, else data_dir of the SVC_CONFIG file, else ~/.svc-node/data)"))
      .addOption(new Option('--init', 'with --admin: create the database when the data directory holds none (a node not started yet); without it such a directory is refused'))
      .addHelpText('after', `
With --admin the key is written into the database in <data_dir>/catalog of a stopped node: the
directory the node runs with (svc node start --data-dir, SVC_DATA_DIR, or data_dir in the YAML file
SVC_CONFIG names). A directory holding no database is refused unless --init. Exit 0: minted;
2: nothing minted (the reason, and what to do, on standard error); 4: nothing minted, a running node
holds the directory (as svc-node start exits 4 for it). A running node mints keys itself:
  svc keys create --name ops --scopes admin --token <an admin key>`)
  }
  create.action(action(async (opts: KeyCreateOptions) => {
    if (opts.admin && options.admin) return options.admin(opts)
    const offlineOnly = (['tenant', 'dataDir', 'init'] as const).filter((k) => opts[k] !== undefined)
    if (offlineOnly.length > 0) {
      const flags = offlineOnly.map((k) => (k === 'dataDir' ? '--data-dir' : `--${k}`)).join(', ')
      throw new CliError(1006, 'VALIDATION_FAILED', `${flags} ${offlineOnly.length === 1 ? 'applies' : 'apply'} only with --admin (an administrator key minted offline into a stopped node's data directory)`)
    }
    await createOnline(opts)
  }))

  withConnection(keys.command('list'))
    .description('list the API keys of your tenant (never their secrets)')
    .option('--json', 'print JSON')
    .action(action(async (opts: ConnectionOptions & { json?: boolean }) => {
      const items = await clientFor(opts).listApiKeys()
      if (opts.json) return printJson({ items })
      for (const k of items) {
        const state = k.revoked_at ? `revoked ${k.revoked_at}` : k.expires_at ? `expires ${k.expires_at}` : 'never expires'
        say(`${k.key_id}  ${k.name}  ${(k.scopes ?? []).join(',')}  ${state}`)
      }
      if (items.length === 0) say('no keys')
    }))

  withConnection(keys.command('revoke'))
    .description('revoke an API key by id')
    .argument('<key_id>', 'the key id (from svc keys list)')
    .option('--json', 'print JSON')
    .action(action(async (keyId: string, opts: ConnectionOptions & { json?: boolean }) => {
      const r = await clientFor(opts).revokeApiKey(keyId)
      if (opts.json) return printJson(r)
      say(`revoked ${r.key_id} at ${r.revoked_at}`)
    }))
  return keys
}
