// `svc keys create --admin` mints offline only into a data directory that holds a database, unless
// told to create one (--init): without --data-dir it used to create a new empty database at the
// default path and print a key the running node did not know (issue 28). The refusals say where
// the CLI looked, which setting chose the directory, and what to do. Needs `npm run build`.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ClassicLevel } from 'classic-level'
import { afterEach, describe, expect, it } from 'vitest'
import { runSvc } from './run-svc.js'

const dirs: string[] = []
const scratch = (): string => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-admin-key-'))
  dirs.push(dir)
  return dir
}

describe('svc keys create --admin (offline)', () => {
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
  })

  it('without --data-dir, refuses the default directory when it holds no database: names the path, the setting and --init; creates nothing', async () => {
    const home = scratch()
    const r = await runSvc(['keys', 'create', '--admin'], { env: { HOME: home } })
    expect(r.status).toBe(2)
    expect(r.stdout).toBe('')
    expect(r.stderr).toMatch(/^error 1006 VALIDATION_FAILED: no database in /)
    expect(r.stderr).toContain(join(home, '.svc-node', 'data', 'catalog'))
    expect(r.stderr).toContain('the default data_dir of config/default.yaml')
    expect(r.stderr).toContain('SVC_DATA_DIR')
    expect(r.stderr).toContain('--init')
    expect(existsSync(join(home, '.svc-node'))).toBe(false)
  })

  it('names SVC_DATA_DIR or --data-dir as the setting that chose an empty directory', async () => {
    const dir = scratch()
    const byEnv = await runSvc(['keys', 'create', '--admin'], { env: { SVC_DATA_DIR: dir } })
    expect(byEnv.status).toBe(2)
    expect(byEnv.stderr).toContain(`no database in ${dir} (looked for ${join(dir, 'catalog')}; the directory comes from SVC_DATA_DIR)`)
    const byFlag = await runSvc(['keys', 'create', '--admin', '--data-dir', dir])
    expect(byFlag.status).toBe(2)
    expect(byFlag.stderr).toContain('the directory comes from --data-dir')
    expect(existsSync(join(dir, 'catalog'))).toBe(false)
  })

  it('with --init creates the database and says so; later keys go into it without --init', async () => {
    const dir = join(scratch(), 'node-a')
    const first = await runSvc(['keys', 'create', '--admin', '--init', '--data-dir', dir, '--tenant', 'acme', '--json'])
    expect(first.status).toBe(0)
    expect(first.stderr).toBe(`svc: created a new database in ${join(dir, 'catalog')} (--init)\n`)
    expect(JSON.parse(first.stdout)).toMatchObject({ tenant_id: 'acme', scopes: ['admin'], expires_at: null })
    const second = await runSvc(['keys', 'create', '--admin', '--data-dir', dir])
    expect(second.stderr).toBe('')
    expect(second.status).toBe(0)
    expect(second.stdout).toMatch(new RegExp(`^administrator key for tenant "default" \\(key id \\w+\\) in ${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}; shown once`))
    // --init on a directory that holds a database mints into it (nothing is replaced)
    const third = await runSvc(['keys', 'create', '--admin', '--init', '--data-dir', dir, '--json'])
    expect(third.status).toBe(0)
    expect(third.stderr).toBe('')
  })

  it('refuses a catalog directory that holds files but no database, even with --init', async () => {
    const dir = scratch()
    mkdirSync(join(dir, 'catalog'))
    writeFileSync(join(dir, 'catalog', '000005.ldb'), 'not a table')
    const r = await runSvc(['keys', 'create', '--admin', '--init', '--data-dir', dir])
    expect(r.status).toBe(2)
    expect(r.stderr).toContain('holds files but no database')
    expect(r.stderr).toContain('svc node check')
  })

  it('says what to do when a running node holds the directory (the LevelDB lock)', async () => {
    const dir = scratch()
    expect((await runSvc(['keys', 'create', '--admin', '--init', '--data-dir', dir])).status).toBe(0)
    // this process holds the database, as a running node does
    const db = new ClassicLevel(join(dir, 'catalog'))
    await db.open()
    try {
      const r = await runSvc(['keys', 'create', '--admin', '--data-dir', dir])
      // 4, as svc-node start exits when another process holds its data directory
      expect(r.status).toBe(4)
      expect(r.stdout).toBe('')
      expect(r.stderr).toContain(`the data directory ${dir} is in use by a running node`)
      expect(r.stderr).toContain('svc keys create --name <name> --scopes admin --token')
      expect(r.stderr).toContain('stop the node')
    } finally {
      await db.close()
    }
  })

  it('refuses the offline flags without --admin instead of ignoring them', async () => {
    const r = await runSvc(['keys', 'create', '--init', '--name', 'x', '--scopes', 'admin', '--url', 'http://127.0.0.1:9'])
    expect(r.status).toBe(1)
    expect(r.stderr).toMatch(/^error 1006 VALIDATION_FAILED: --init applies only with --admin/)
  })
})
