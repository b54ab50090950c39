// svc node backup / restore / check with real processes: a backup taken while clients write is one
// consistent snapshot; restore checks the whole archive before it writes, refuses a used data
// directory unless forced, and refuses damaged archives; check finds damage and repairs what it can.
import { cpSync, existsSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ClassicLevel } from 'classic-level'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runSvc } from '../cli/run-svc.js'
import { call, removeDir, startDaemonProcess, tempDataDir, type DaemonProcess } from '../fixtures/daemon-process.js'
import { recordFault } from './fault-record.js'
import { adminKeyOf, sleep } from './fault-fixtures.js'

const fn = (name: string, n: number) => ({ function_name: name, signature: '(a)', language: 'javascript', source_code: `function ${name}(a) {\n  return a + ${n}\n}\n` })

describe('operator tools: svc node backup, restore, check (real processes)', () => {
  const root = tempDataDir()
  const source = join(root, 'source')
  const archive = join(root, 'backup.svcbak')
  let d: DaemonProcess
  let adminKey = ''
  let auth: Record<string, string> = {}
  const before: string[] = []
  let revokedKey = ''
  let readerKey = ''
  let writtenDuringBackup = 0

  beforeAll(async () => {
    d = await startDaemonProcess({ dataDir: source, env: { AUTH_PROVIDER: 'standard', SVC_SANDBOX_WORKERS: '1' } })
    adminKey = adminKeyOf(d.output())
    auth = { authorization: `Bearer ${adminKey}` }
    for (let i = 0; i < 10; i++) {
      const r = await call(`${d.url}/api/v1/functions/create`, 'POST', fn(`kept${i}`, i), auth)
      expect(r.status).toBe(201)
      before.push(r.body.rufid_short as string)
    }
    expect((await call(`${d.url}/api/v1/functions/deploy`, 'POST', { ...fn('shipped', 1), branch: 'main' }, auth)).status).toBe(201)
    expect((await call(`${d.url}/api/v1/functions/${before[0]}/execute`, 'POST', { arguments: { a: 1 } }, auth)).status).toBe(200)
    const minted = await call(`${d.url}/api/v1/auth/v2/api-keys`, 'POST', { name: 'soon revoked', scopes: ['functions:read'], expires_days: 30 }, auth)
    revokedKey = minted.body.api_key as string
    expect((await call(`${d.url}/api/v1/auth/v2/api-keys/${minted.body.key_id as string}`, 'DELETE', undefined, auth)).status).toBe(200)
    readerKey = (await call(`${d.url}/api/v1/auth/v2/api-keys`, 'POST', { name: 'reader', scopes: ['functions:read'], expires_days: 30 }, auth)).body.api_key as string
  }, 120_000)

  afterAll(async () => {
    await d?.stop('SIGKILL')
    removeDir(root)
  })

  it('backup of a running node while clients write, restored into an empty directory: a consistent node with every earlier write', async () => {
    const rec = recordFault('tools.backup-restore', {
      fault: 'svc node backup of a running node while 2 clients keep creating functions; svc node restore into an empty data directory; svc node check; start',
      expectation: 'a verified archive; the restored node holds every write acknowledged before the backup, its keys (revoked ones refused) and branch heads; check finds it consistent',
    })
    let writing = true
    // the clients write with their own credential, a few ms apart (the operator's backup has its
    // own budget: on a fast host two unpaced loops on the admin key used up its 200 requests/s and
    // the backup was refused with 1005)
    const writer = { authorization: `Bearer ${(await call(`${d.url}/api/v1/auth/v2/api-keys`, 'POST', { name: 'writer', scopes: ['functions:create'], expires_days: 30 }, auth)).body.api_key as string}` }
    const writers = [0, 1].map(async (w) => {
      for (let i = 0; writing; i++) {
        const r = await call(`${d.url}/api/v1/functions/create`, 'POST', fn(`during_${w}_${i}`, i), writer)
        if (r.status === 201) writtenDuringBackup++
        await sleep(5)
      }
    })
    await sleep(300)
    const started = Date.now()
    const backup = await runSvc(['node', 'backup', '--out', archive, '--url', d.url, '--token', adminKey, '--json'])
    const backupMs = Date.now() - started
    writing = false
    await Promise.all(writers)
    expect(backup.status, backup.stderr).toBe(0)
    const summary = JSON.parse(backup.stdout) as { records: number; bytes: number }
    expect(summary.records).toBeGreaterThan(20)
    expect(statSync(archive).size).toBe(summary.bytes)
    expect(existsSync(`${archive}.partial`)).toBe(false)

    const restored = join(root, 'restored')
    const restore = await runSvc(['node', 'restore', archive, '--data-dir', restored])
    expect(restore.status, restore.stderr).toBe(0)
    expect(restore.stdout).toMatch(new RegExp(`restored ${summary.records} records`))
    const check = await runSvc(['node', 'check', '--data-dir', restored, '--json'])
    expect(check.status, check.stdout + check.stderr).toBe(0)
    const report = JSON.parse(check.stdout) as { ok: boolean; checked: { functions: number }; problems: unknown[] }
    expect(report.problems).toEqual([])
    expect(report.checked.functions).toBeGreaterThanOrEqual(11)

    const r = await startDaemonProcess({ dataDir: restored, env: { AUTH_PROVIDER: 'standard', SVC_SANDBOX_WORKERS: '1' } })
    try {
      expect(r.output()).not.toContain('ADMIN_API_KEY=') // the restored node has keys: no new bootstrap key
      for (const short of before) expect((await call(`${r.url}/api/v1/functions/resolve`, 'POST', { rufid: short }, auth)).status, short).toBe(200)
      const heads = (await call(`${r.url}/api/v1/functions/branches?function_name=shipped`, 'GET', undefined, auth)).body.items as Array<{ version: string }>
      expect(heads.map((h) => h.version)).toEqual(['v1'])
      expect((await call(`${r.url}/api/v1/auth/whoami`, 'GET', undefined, { authorization: `Bearer ${revokedKey}` })).status).toBe(401)
      expect((await call(`${r.url}/api/v1/auth/whoami`, 'GET', undefined, { authorization: `Bearer ${readerKey}` })).status).toBe(200)
      const run = await call(`${r.url}/api/v1/functions/${before[3]}/execute`, 'POST', { arguments: { a: 1 } }, auth)
      expect(run.body.result).toBe(4)
      expect((await call(`${r.url}/api/v1/functions/create`, 'POST', fn('afterRestore', 1), auth)).status).toBe(201)
    } finally {
      await r.stop('SIGKILL')
    }
    rec.figures({ records: summary.records, archive_bytes: summary.bytes, backup_ms: backupMs, created_during_backup: writtenDuringBackup })
    rec.summary(`${summary.records} records (${Math.round(summary.bytes / 1024)} KiB) in ${(backupMs / 1000).toFixed(1)} s while ${writtenDuringBackup} creates ran; restored node consistent with every earlier write, key and head`)
  }, 120_000)

  it('a backup is for operators only: 1003 for a non-admin and for an admin narrowed to a child namespace', async () => {
    const reader = await call(`${d.url}/api/v1/admin/backup`, 'GET', undefined, { authorization: `Bearer ${readerKey}` })
    expect(reader.status).toBe(403)
    expect((reader.body.error as { code: number }).code).toBe(1003)
    const narrowed = await call(`${d.url}/api/v1/admin/backup`, 'GET', undefined, { ...auth, 'x-svc-namespace': 'default.team1' })
    expect(narrowed.status).toBe(403)
    const anonymous = await call(`${d.url}/api/v1/admin/backup`, 'GET')
    expect(anonymous.status).toBe(401)
    const cli = await runSvc(['node', 'backup', '--out', join(root, 'refused.svcbak'), '--url', d.url, '--token', readerKey])
    expect(cli.status).not.toBe(0)
    expect(cli.stderr).toMatch(/error 1003 PERMISSION_DENIED/)
    expect(existsSync(join(root, 'refused.svcbak'))).toBe(false)
  }, 60_000)

  it('restore refuses a data directory that holds a database unless --force, which keeps the old one and sets the federation identity aside', async () => {
    const target = join(root, 'occupied')
    expect((await runSvc(['node', 'restore', archive, '--data-dir', target])).status).toBe(0)
    const again = await runSvc(['node', 'restore', archive, '--data-dir', target])
    expect(again.status).toBe(2)
    expect(again.stderr).toMatch(/already holds a database/)
    // a federation identity there is set aside: the restored node joins as a new member, so its new
    // changes never reuse sequence numbers its federation already holds
    writeFileSync(join(target, 'peer-key'), 'an identity')
    const forced = await runSvc(['node', 'restore', archive, '--data-dir', target, '--force'])
    expect(forced.status, forced.stderr).toBe(0)
    expect(readdirSync(target).some((n) => n.startsWith('catalog.replaced-'))).toBe(true)
    expect(existsSync(join(target, 'peer-key'))).toBe(false)
    expect(readdirSync(target).some((n) => n.startsWith('peer-key.before-restore-'))).toBe(true)
    expect(forced.stdout).toMatch(/new PeerId/)
    writeFileSync(join(target, 'peer-key'), 'an identity')
    const kept = await runSvc(['node', 'restore', archive, '--data-dir', target, '--force', '--keep-identity'])
    expect(kept.status, kept.stderr).toBe(0)
    expect(readFileSync(join(target, 'peer-key'), 'utf8')).toBe('an identity')
  }, 60_000)

  it('restore refuses a damaged or cut archive and writes nothing', async () => {
    const rec = recordFault('tools.damaged-archive', {
      fault: 'svc node restore of a backup cut to half its length, and of one with a byte changed',
      expectation: 'exit 1 naming the damage; the data directory stays empty',
    })
    const bytes = readFileSync(archive)
    const cut = join(root, 'cut.svcbak')
    writeFileSync(cut, bytes)
    truncateSync(cut, Math.floor(bytes.length / 2))
    const flipped = join(root, 'flipped.svcbak')
    const changed = Buffer.from(bytes)
    changed[Math.floor(changed.length / 2)] = changed[Math.floor(changed.length / 2)]! ^ 0x10
    writeFileSync(flipped, changed)
    for (const [file, name] of [[cut, 'cut'], [flipped, 'flipped']] as const) {
      const target = join(root, `from-${name}`)
      const r = await runSvc(['node', 'restore', file, '--data-dir', target])
      expect(r.status, `${name}: ${r.stdout}${r.stderr}`).toBe(1)
      expect(r.stderr).toMatch(/cannot be restored: (the archive is cut short or damaged|the SHA-256|line \d+)/)
      expect(existsSync(join(target, 'catalog'))).toBe(false)
    }
    const dry = await runSvc(['node', 'restore', archive, '--data-dir', join(root, 'dry'), '--dry-run'])
    expect(dry.status).toBe(0)
    expect(existsSync(join(root, 'dry', 'catalog'))).toBe(false)
    rec.summary('both refused with exit 1 (cut short / damaged), nothing written; --dry-run checks a good archive without writing')
  }, 60_000)

  it('check finds a damaged catalog and repairs what is repairable; damaged files are not opened without --repair', async () => {
    const rec = recordFault('tools.check-repair', {
      fault: "svc node check on a stopped node's copy with: a moved branch head, a lost digest index entry, then a truncated LevelDB table",
      expectation: 'exit 1 naming each problem; --repair fixes head and index (exit 0 after); damaged files refused without --repair, salvaged with it (the original kept)',
    })
    const dir = join(root, 'damaged')
    cpSync(join(root, 'restored'), dir, { recursive: true })
    const db = new ClassicLevel<string, unknown>(join(dir, 'catalog'), { valueEncoding: 'json' })
    const heads = db.sublevel<string, Record<string, unknown>>('branch_heads', { valueEncoding: 'json' })
    const head = (await heads.get('default:shipped:main'))!
    await heads.put('default:shipped:main', { ...head, version: 9 })
    await db.sublevel('digests').del(before[2]!)
    await db.close()
    const found = await runSvc(['node', 'check', '--data-dir', dir])
    expect(found.status, found.stdout).toBe(1)
    expect(found.stdout).toMatch(/repairable branch_head default:shipped:main/)
    expect(found.stdout).toMatch(new RegExp(`repairable digest_index ${before[2]}`))
    const repaired = await runSvc(['node', 'check', '--data-dir', dir, '--repair'])
    expect(repaired.status, repaired.stdout).toBe(0)
    expect(repaired.stdout).toMatch(/consistent after 2 repairs/)
    expect((await runSvc(['node', 'check', '--data-dir', dir])).status).toBe(0)

    // damaged files: compact the log into a table, then cut the table
    const compact = new ClassicLevel(join(dir, 'catalog'))
    await compact.open()
    await compact.close()
    const table = readdirSync(join(dir, 'catalog')).find((n) => n.endsWith('.ldb'))!
    truncateSync(join(dir, 'catalog', table), Math.floor(statSync(join(dir, 'catalog', table)).size / 2))
    const refused = await runSvc(['node', 'check', '--data-dir', dir])
    expect(refused.status).toBe(1)
    expect(refused.stdout).toMatch(new RegExp(`file ${table}: no table magic number`))
    expect(refused.stdout).toMatch(/not opened/)
    const salvaged = await runSvc(['node', 'check', '--data-dir', dir, '--repair', '--json'])
    const report = JSON.parse(salvaged.stdout) as { salvaged_copy: string; files: unknown[] }
    expect(report.salvaged_copy).toMatch(/catalog\.before-repair-/)
    expect(existsSync(report.salvaged_copy)).toBe(true)
    expect(report.files).toEqual([])
    rec.summary(`found both catalog problems (exit 1), repaired them (exit 0, then clean); a cut table refused unopened, then salvaged by --repair with the original kept (exit ${salvaged.status})`)
  }, 90_000)

  it('check and restore refuse a data directory a running node holds', async () => {
    const check = await runSvc(['node', 'check', '--data-dir', source])
    expect(check.status).toBe(2)
    expect(check.stderr).toMatch(/in use by a running node/)
    const restore = await runSvc(['node', 'restore', archive, '--data-dir', source, '--force'])
    expect(restore.status).toBe(2)
    expect(restore.stderr).toMatch(/in use by a running node/)
    expect((await call(`${d.url}/api/v1/functions/resolve`, 'POST', { rufid: before[0] }, auth)).status).toBe(200)
  }, 60_000)
})
