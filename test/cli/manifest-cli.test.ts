// `svc functions manifest install|verify` against a fixture index on loopback (no node needed).
import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { canonicalJson } from '../../src/core/canonical-json.js'
import { startPackageIndex, unreachableUrl, type PackageIndexServer } from '../fixtures/package-index.js'
import { runSvc } from './run-svc.js'

const manifest = {
  schemaVersion: '1.0',
  name: 'fetchJson',
  description: 'fetches a document',
  entrypoint: 'main:fetchJson',
  runtime: { language: 'python', version: '3.12' },
  dependencies: {
    pip: [{ name: 'requests', version: '>=2.28,<3' }, { name: 'numpy', version: '~=2.0' }],
    npm: [{ name: 'lodash', version: '^4.17.0' }, { name: '@scope/util', version: '~0.9.0' }],
    system: ['zlib', 'ca-certificates'],
  },
  environment: { API_TOKEN: 'required' },
}
const manifestText = JSON.stringify(manifest, null, 2) + '\n'

describe('svc functions manifest install / verify', () => {
  let index: PackageIndexServer
  let dir: string
  let flags: string[]

  beforeAll(async () => {
    index = await startPackageIndex()
    flags = ['--pip-index-url', index.pipIndexUrl, '--npm-registry-url', index.npmRegistryUrl]
  })
  afterAll(async () => {
    await index.close()
  })
  beforeEach(() => {
    index.requests.length = 0
    dir = mkdtempSync(join(tmpdir(), 'svc-manifest-'))
    writeFileSync(join(dir, 'function.svc.json'), manifestText)
    return () => rmSync(dir, { recursive: true, force: true })
  })

  it('install writes a sorted lockfile with exact versions from the index and the manifest SHA-256; verify passes, then fails after one byte changes', async () => {
    const r = await runSvc(['functions', 'manifest', 'install', '--path', dir, ...flags])
    expect(r.stderr).toBe('')
    expect(r.status).toBe(0)
    const lockPath = join(dir, 'function.lock.json')
    const text = readFileSync(lockPath, 'utf8')
    const lock = JSON.parse(text) as Record<string, unknown>
    expect(text).toBe(JSON.stringify(lock, null, 2) + '\n')
    expect(lock).toEqual({
      schemaVersion: '1.0',
      generated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      generator: expect.stringMatching(/^svc-node\//),
      manifest_digest: createHash('sha256').update(canonicalJson(manifest)).digest('hex'),
      dependencies: {
        pip: [
          { name: 'numpy', version: '2.1.0', source: index.pipIndexUrl },
          { name: 'requests', version: '2.32.3', source: index.pipIndexUrl },
        ],
        npm: [
          { name: '@scope/util', version: '0.9.0', source: index.npmRegistryUrl },
          { name: 'lodash', version: '4.17.21', source: index.npmRegistryUrl },
        ],
        system: ['ca-certificates', 'zlib'],
      },
    })
    expect(r.stdout).toContain(`wrote ${lockPath}`)
    expect(r.stdout).toMatch(/pip\s+requests 2\.32\.3/)
    expect(r.stdout).toMatch(/npm\s+lodash 4\.17\.21/)

    const ok = await runSvc(['functions', 'manifest', 'verify', '--path', join(dir, 'function.svc.json')])
    expect(ok.status).toBe(0)
    expect(ok.stdout).toContain('ok: function.lock.json matches function.svc.json')

    // one byte of the manifest changes: verify fails with the error code and a non-zero exit
    writeFileSync(join(dir, 'function.svc.json'), manifestText.replace('fetches a document', 'fetches a documenT'))
    const bad = await runSvc(['functions', 'manifest', 'verify'], { cwd: dir })
    expect(bad.status).toBe(1)
    expect(bad.stderr).toMatch(/^error 1006 VALIDATION_FAILED: lockfile does not belong to this manifest/)
    expect(bad.stderr).toContain('/manifest_digest: does not match the manifest')
    const badJson = await runSvc(['functions', 'manifest', 'verify', '--json'], { cwd: dir })
    expect(badJson.status).toBe(1)
  })

  it('takes the indexes from the environment or the config file, and leaves an unchanged lockfile alone', async () => {
    const r = await runSvc(['functions', 'manifest', 'install', '--json'], {
      cwd: dir,
      env: { SVC_PIP_INDEX_URL: index.pipIndexUrl, SVC_NPM_REGISTRY_URL: index.npmRegistryUrl },
    })
    expect(r.status).toBe(0)
    expect(JSON.parse(r.stdout)).toMatchObject({ written: true })
    const first = readFileSync(join(dir, 'function.lock.json'), 'utf8')

    const config = join(dir, 'svc-config.json')
    writeFileSync(config, JSON.stringify({ pip_index_url: index.pipIndexUrl, npm_registry_url: index.npmRegistryUrl }))
    const again = await runSvc(['functions', 'manifest', 'install', '--config', config, '--path', dir])
    expect(again.status).toBe(0)
    expect(again.stdout).toContain('up to date')
    expect(readFileSync(join(dir, 'function.lock.json'), 'utf8')).toBe(first)

    const elsewhere = join(dir, 'out.lock.json')
    const custom = await runSvc(['functions', 'manifest', 'install', '--path', dir, '--lockfile', elsewhere, ...flags])
    expect(custom.status).toBe(0)
    expect((await runSvc(['functions', 'manifest', 'verify', '--path', dir, '--lockfile', elsewhere])).status).toBe(0)
  })

  it('names the dependency it could not resolve and writes nothing', async () => {
    const down = await unreachableUrl()
    const r = await runSvc(['functions', 'manifest', 'install', '--path', dir, '--pip-index-url', `${down}/pypi`, '--npm-registry-url', index.npmRegistryUrl])
    expect(r.status).toBe(1)
    expect(r.stderr).toMatch(/^error 1010 SERVICE_UNAVAILABLE: cannot resolve pip dependency (requests >=2\.28,<3|numpy ~=2\.0): package index http:\/\/127\.0\.0\.1:\d+\/pypi is unreachable/)
    expect(existsSync(join(dir, 'function.lock.json'))).toBe(false)

    writeFileSync(join(dir, 'function.svc.json'), JSON.stringify({ ...manifest, dependencies: { pip: [{ name: 'requests', version: '>=9' }] } }))
    const none = await runSvc(['functions', 'manifest', 'install', '--path', dir, ...flags])
    expect(none.status).toBe(1)
    expect(none.stderr).toMatch(/^error 1006 VALIDATION_FAILED: cannot resolve pip dependency requests >=9: no release of requests/)
    expect(none.stderr).toContain('  /dependencies/pip/0/version: ')
  })

  it('refuses an invalid manifest with a pointer per problem', async () => {
    writeFileSync(join(dir, 'function.svc.json'), JSON.stringify({ schemaVersion: '1.0', runtime: { language: 'python' }, extra: 1 }))
    const r = await runSvc(['functions', 'manifest', 'install', '--path', dir, ...flags])
    expect(r.status).toBe(1)
    expect(r.stderr).toMatch(/^error 1006 VALIDATION_FAILED: invalid manifest/)
    for (const p of ['/name: is required', '/runtime/version: is required', '/extra: is not a known field']) expect(r.stderr).toContain(`  ${p}`)
    expect(index.requests).toEqual([])
    const missing = await runSvc(['functions', 'manifest', 'verify', '--path', join(dir, 'nope.json')])
    expect(missing.status).toBe(1)
    expect(missing.stderr).toMatch(/^error 1006 VALIDATION_FAILED: cannot read manifest/)
  })
})

describe('svc --help', () => {
  it('runs the installed entry (bin/svc.js): every top-level command, and the package version', async () => {
    const help = await runSvc(['--help'])
    expect(help.stderr).toBe('')
    expect(help.status).toBe(0)
    expect(help.stdout).toMatch(/^Usage: svc /)
    for (const c of ['node', 'rufid', 'functions', 'keys', 'federation']) expect(help.stdout).toMatch(new RegExp(`\\n  ${c} `))
    const version = await runSvc(['--version'])
    expect(version.status).toBe(0)
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
    expect(version.stdout.trim()).toBe(pkg.version)
  })

  it('documents every functions and keys subcommand and its options', async () => {
    const top = await runSvc(['functions', '--help'])
    expect(top.status).toBe(0)
    for (const c of ['manifest', 'deploy', 'invoke', 'export', 'create', 'resolve', 'execute', 'list', 'delete', 'versions', 'branches']) {
      expect(top.stdout).toMatch(new RegExp(`\\n  ${c} `))
    }
    const expectations: Array<[string[], string[]]> = [
      [['functions', 'manifest', 'install'], ['--path', '--lockfile', '--pip-index-url', '--npm-registry-url', '--json']],
      [['functions', 'manifest', 'verify'], ['--path', '--lockfile']],
      [['functions', 'deploy'], ['--code <dir>', '--branch <name>', '--branch-key <key>', '--url', '--token', '--json']],
      [['functions', 'invoke'], ['--branch <name>', '--args <json>', '--name']],
      [['functions', 'export'], ['<rufid>', '--out <dir>', '--version']],
      [['functions', 'resolve'], ['<rufid>', '--version']],
      [['functions', 'execute'], ['--args <json>']],
      [['keys', 'create'], ['--name', '--scopes', '--expires-days', '--admin']],
      [['keys', 'revoke'], ['<key_id>']],
    ]
    const runs = await Promise.all(expectations.map(([cmd]) => runSvc([...cmd, '--help'])))
    runs.forEach((r, i) => {
      expect(r.status).toBe(0)
      for (const text of expectations[i]![1]) expect(r.stdout).toContain(text)
    })
  })
})
