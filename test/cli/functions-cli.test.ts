// The `svc functions` and `svc keys` commands against a real `svc-node start` (native test mode,
// fixed admin key) with lockfile generation pointed at a fixture index. Needs `npm run build`.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { call, removeDir, startDaemonProcess, tempDataDir, type DaemonProcess } from '../fixtures/daemon-process.js'
import { startPackageIndex, unreachableUrl, type PackageIndexServer } from '../fixtures/package-index.js'
import { runSvc } from './run-svc.js'

const ADMIN = 'svc-cli-test-admin-key-0123456789abcdef'

const manifest = {
  schemaVersion: '1.0',
  name: 'addStaged',
  description: 'adds two numbers and a constant',
  entrypoint: 'main:addStaged',
  runtime: { language: 'javascript', version: '20' },
  dependencies: {
    pip: [{ name: 'requests', version: '>=2.28,<3' }],
    npm: [{ name: 'lodash', version: '^4.17.0' }],
    system: ['zlib'],
  },
  metadata: { owner: 'team-math', tags: ['math'] },
}
/** function.svc.json as a person writes it: own key order, spacing, tabs, a blank line at the end. */
const manifestText = `{
\t"name":   "addStaged", "schemaVersion": "1.0",
  "entrypoint" : "main:addStaged",
  "description": "adds two numbers and a constant",
  "runtime": { "version": "20", "language": "javascript" },
  "dependencies": {
     "system": [ "zlib" ],
     "npm": [ { "version": "^4.17.0", "name": "lodash" } ],
     "pip": [ { "name": "requests", "version": ">=2.28,<3" } ]
  },
  "metadata": {"tags": ["math"], "owner": "team-math"}
}

`
const code = (n: number): string => `// version ${n}\nfunction addStaged(a, b) {\n  return a + b + ${n}\n}\n`

describe('svc functions / svc keys against a node', () => {
  let d: DaemonProcess
  let index: PackageIndexServer
  let work: string
  let dir: string
  let conn: string[]
  let devKey: string

  beforeAll(async () => {
    index = await startPackageIndex()
    d = await startDaemonProcess({
      env: {
        AUTH_PROVIDER: 'native', ENABLE_TEST_MODE: 'true', DEPLOYMENT_MODE: 'test', ADMIN_API_KEY: ADMIN,
        SVC_PIP_INDEX_URL: index.pipIndexUrl, SVC_NPM_REGISTRY_URL: index.npmRegistryUrl,
      },
    })
    work = mkdtempSync(join(tmpdir(), 'svc-cli-'))
    dir = join(work, 'addStaged')
    mkdirSync(dir)
    expect(JSON.parse(manifestText)).toEqual(manifest)
    expect(manifestText).not.toBe(JSON.stringify(manifest, null, 2) + '\n') // not what svc would write
    writeFileSync(join(dir, 'function.svc.json'), manifestText)
    writeFileSync(join(dir, 'main.js'), code(1))
  })
  afterAll(async () => {
    await d?.stop()
    if (d) removeDir(d.dataDir)
    await index?.close()
    if (work) rmSync(work, { recursive: true, force: true })
  })

  it('svc keys create / list / revoke', async () => {
    const admin = ['--url', d.url, '--token', ADMIN]
    const created = await runSvc(['keys', 'create', '--name', 'dev', '--scopes', 'functions:create,functions:read,functions:execute,functions:delete', '--expires-days', '7', ...admin])
    expect(created.stderr).toBe('')
    expect(created.status).toBe(0)
    expect(created.stdout).toMatch(/shown once/)
    devKey = created.stdout.trim().split('\n').at(-1)!.trim()
    conn = ['--url', d.url, '--token', devKey]

    const spare = JSON.parse((await runSvc(['keys', 'create', '--name', 'spare', '--scopes', 'functions:read', '--json', ...admin])).stdout) as { key_id: string }
    const listed = await runSvc(['keys', 'list', ...admin])
    expect(listed.status).toBe(0)
    expect(listed.stdout).toContain(spare.key_id)
    expect(listed.stdout).not.toContain(devKey)
    const revoked = await runSvc(['keys', 'revoke', spare.key_id, ...admin])
    expect(revoked.status).toBe(0)
    expect(revoked.stdout).toContain(`revoked ${spare.key_id}`)


    const denied = await runSvc(['keys', 'list', '--url', d.url, '--token', devKey])
    expect(denied.status).toBe(1)
    expect(denied.stderr).toMatch(/^error 1003 PERMISSION_DENIED: /)
  })

  it('svc keys create --admin mints an administrator key offline that a node then accepts', async () => {
    const dataDir = tempDataDir()
    let node: DaemonProcess | undefined
    try {
      const offline = await runSvc(['keys', 'create', '--admin', '--init', '--tenant', 'acme', '--name', 'first', '--data-dir', dataDir, '--json'])
      expect(offline.stderr).toBe(`svc: created a new database in ${join(dataDir, 'catalog')} (--init)\n`)
      expect(offline.status).toBe(0)
      const minted = JSON.parse(offline.stdout) as { api_key: string; key_id: string; tenant_id: string; scopes: string[] }
      expect(minted).toMatchObject({ tenant_id: 'acme', scopes: ['admin'] })

      node = await startDaemonProcess({ dataDir, env: { AUTH_PROVIDER: 'standard' } })
      const listed = await runSvc(['keys', 'list', '--json', '--url', node.url, '--token', minted.api_key])
      expect(listed.stderr).toBe('')
      expect(listed.status).toBe(0)
      expect(listed.stdout).toContain(minted.key_id)
      // a running node holds its data directory: the offline path refuses and says why
      const busy = await runSvc(['keys', 'create', '--admin', '--tenant', 'acme', '--data-dir', dataDir])
      expect(busy.status).not.toBe(0)
      expect(busy.stderr).toContain('in use by a running node')
    } finally {
      await node?.stop()
      removeDir(dataDir)
    }
  })

  it('manifest install, deploy to staging twice, invoke the newest, refuse a wrong key, export both files byte for byte', async () => {
    const install = await runSvc(['functions', 'manifest', 'install', '--path', dir, '--pip-index-url', index.pipIndexUrl, '--npm-registry-url', index.npmRegistryUrl])
    expect(install.status).toBe(0)

    const first = await runSvc(['functions', 'deploy', '--code', dir, '--branch', 'staging', ...conn])
    expect(first.stderr).toBe('')
    expect(first.status).toBe(0)
    expect(first.stdout).toMatch(/deployed addStaged v1 to branch staging \(created at v1\)/)
    expect(first.stdout).toMatch(/pip\s+requests 2\.32\.3/)
    expect(first.stdout).toMatch(/npm\s+lodash 4\.17\.21/)
    expect(first.stdout).toContain('shown once')
    const branchKey = first.stdout.trim().split('\n').at(-1)!.trim()
    expect(branchKey).toMatch(/^svcbk_/)

    writeFileSync(join(dir, 'main.js'), code(2))
    const second = await runSvc(['functions', 'deploy', '--code', dir, '--branch', 'staging', '--branch-key', branchKey, '--json', ...conn])
    expect(second.status).toBe(0)
    const body = JSON.parse(second.stdout) as Record<string, unknown>
    expect(body).toMatchObject({ version: 'v2', branch: 'staging', moved: true, previous_version: 'v1' })

    const run = await runSvc(['functions', 'invoke', '--branch', 'staging', '--code', dir, '--args', '{"a": 1, "b": 2}', ...conn])
    expect(run.status).toBe(0)
    expect(run.stdout).toContain('addStaged v2')
    expect(run.stdout).toMatch(/result {2}5\n/)

    writeFileSync(join(dir, 'main.js'), code(3))
    const wrong = await runSvc(['functions', 'deploy', '--code', dir, '--branch', 'staging', '--branch-key', 'svcbk_wrong-wrong-wrong-wrong'], { env: { SVC_URL: d.url, SVC_TOKEN: devKey } })
    expect(wrong.status).toBe(1)
    expect(wrong.stderr).toMatch(/^error 1003 PERMISSION_DENIED: wrong branch key for branch staging of addStaged/)
    const still = JSON.parse((await runSvc(['functions', 'invoke', '--branch', 'staging', '--name', 'addStaged', '--args', '[1, 2]', '--json', ...conn])).stdout) as Record<string, unknown>
    expect(still).toMatchObject({ result: 5, version: 'v2' })

    const out = join(work, 'exported')
    const exported = await runSvc(['functions', 'export', String(body.rufid_short), '--out', out, ...conn])
    expect(exported.status).toBe(0)
    for (const f of ['function.svc.json', 'function.lock.json']) {
      expect(readFileSync(join(out, f))).toEqual(readFileSync(join(dir, f)))
    }
    // an older version, by label
    const v1 = await runSvc(['functions', 'export', String(body.rufid_short), '--version', 'v1', '--out', join(work, 'v1'), '--json', ...conn])
    expect(v1.status).toBe(1) // v1 is another hash (other code): that hash has no v1
    expect(v1.stderr).toMatch(/^error 1002 RUFID_NOT_FOUND/)

    const versions = await runSvc(['functions', 'versions', String(body.rufid_short), ...conn])
    expect(versions.status).toBe(0)
    expect(versions.stdout).toMatch(/v1 .*\n/)
    expect(versions.stdout).toMatch(/v2 .*← staging/)

    const branches = await runSvc(['functions', 'branches', '--name', 'addStaged', ...conn])
    expect(branches.stdout).toMatch(/addStaged\/staging {2}v2 /)

    // the node audited every deploy and invoke, the refused one too
    const audit = await call<{ items: Array<{ operation: string; result: string }> }>(`${d.url}/api/v1/audit?limit=500`, 'GET', undefined, { authorization: `Bearer ${ADMIN}` })
    const ops = audit.body.items.filter((e) => e.operation === 'rufid.deploy' || e.operation === 'rufid.invoke').map((e) => `${e.operation}:${e.result}`)
    expect(ops).toEqual(expect.arrayContaining(['rufid.deploy:success', 'rufid.invoke:success', 'rufid.deploy:denied']))
    expect(ops.filter((o) => o === 'rufid.deploy:success')).toHaveLength(2)
  })

  it('create, resolve, execute, list and delete, with settings from a config file', async () => {
    const config = join(work, 'config.json')
    writeFileSync(config, JSON.stringify({ url: d.url, token: devKey }))
    const fdir = join(work, 'mul')
    mkdirSync(fdir)
    writeFileSync(join(fdir, 'mul.py'), 'def mul(a: int, b: int) -> int:\n    return a * b\n')
    writeFileSync(join(fdir, 'function.svc.json'), JSON.stringify({ schemaVersion: '1.0', name: 'mulTs', runtime: { language: 'typescript', version: '5' }, dependencies: { npm: [{ name: '@scope/util' }] } }, null, 2))
    writeFileSync(join(fdir, 'mulTs.ts'), 'function mulTs(a: number, b: number): number {\n  return a * b\n}\n')

    const created = await runSvc(['functions', 'create', '--code', fdir, '--config', config])
    expect(created.stderr).toBe('')
    expect(created.status).toBe(0)
    expect(created.stdout).toMatch(/^created rufid:[A-Za-z0-9]{12}:v1:default/)
    expect(created.stdout).toMatch(/npm\s+@scope\/util 1\.0\.0/)
    const rufid = /rufid:([A-Za-z0-9]{12}):v1/.exec(created.stdout)![1]!

    const resolved = JSON.parse((await runSvc(['functions', 'resolve', rufid, '--version', 'v1', '--json', '--config', config])).stdout) as Record<string, unknown>
    expect(resolved).toMatchObject({ function_name: 'mulTs', signature: '(a: number, b: number)' /* rufid-v1 §10: no return annotation */, version: 'v1' })
    expect(resolved.lockfile).toMatchObject({ dependencies: { npm: [{ name: '@scope/util', version: '1.0.0' }] } })

    // the lockfile the node generated exports as `manifest install` writes it, and verifies
    const out = join(work, 'mul-exported')
    expect((await runSvc(['functions', 'export', rufid, '--out', out, '--config', config])).status).toBe(0)
    expect(readFileSync(join(out, 'function.svc.json'))).toEqual(readFileSync(join(fdir, 'function.svc.json')))
    const lockText = readFileSync(join(out, 'function.lock.json'), 'utf8')
    expect(lockText).toBe(JSON.stringify(resolved.lockfile, null, 2) + '\n')
    const verified = await runSvc(['functions', 'manifest', 'verify', '--path', out])
    expect(verified.stderr).toBe('')
    expect(verified.status).toBe(0)

    const ran = await runSvc(['functions', 'execute', rufid, '--args', '{"a": 6, "b": 7}', '--config', config])
    expect(ran.status).toBe(0)
    expect(ran.stdout).toMatch(/result {2}42/)

    const listed = await runSvc(['functions', 'list', '--search', 'mul', '--config', config])
    expect(listed.stdout).toContain('mulTs(a: number, b: number)')
    const deleted = await runSvc(['functions', 'delete', rufid, '--config', config])
    expect(deleted.stdout).toContain(`deleted rufid:${rufid}:v1:default`)
    const gone = await runSvc(['functions', 'resolve', rufid, '--config', config])
    expect(gone.status).toBe(1)
    expect(gone.stderr).toMatch(/^error 1002 RUFID_NOT_FOUND: /)
  })

  it('fails with the error code and message when the node cannot be reached', async () => {
    const r = await runSvc(['functions', 'list', '--url', await unreachableUrl()])
    expect(r.status).toBe(1)
    expect(r.stderr).toMatch(/^error 1010 SERVICE_UNAVAILABLE: cannot reach the svc node at http:\/\/127\.0\.0\.1:\d+/)
  })
})
