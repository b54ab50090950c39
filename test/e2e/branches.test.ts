// Manifests, lockfiles, the version ledger and branches through real HTTP against `svc-node start`,
// with lockfile generation pointed at a fixture index on loopback (SVC_PIP_INDEX_URL, SVC_NPM_REGISTRY_URL).
import { join } from 'node:path'
import { ClassicLevel } from 'classic-level'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { canonicalJson } from '../../src/core/canonical-json.js'
import { compareHeads, createCatalogStore, manifestDigest, rebuildHeads, type LevelDatabase } from '../../src/engine/index.js'
import { call, removeDir, startDaemonProcess, type DaemonProcess } from '../fixtures/daemon-process.js'
import { startPackageIndex, type PackageIndexServer } from '../fixtures/package-index.js'

interface ErrorBody {
  error: { code: number; name: string; message: string; details: { problems?: Array<{ pointer: string; message: string }> } }
}
type Body = Record<string, unknown>

const manifestFor = (name: string, description = 'adds two numbers') => ({
  schemaVersion: '1.0',
  name,
  description,
  entrypoint: `main:${name}`,
  runtime: { language: 'javascript', version: '20' },
  dependencies: {
    pip: [{ name: 'requests', version: '>=2.28,<3' }],
    npm: [{ name: 'lodash', version: '^4.17.0' }],
    system: ['zlib'],
  },
})
const source = (name: string, n: number) => ({
  function_name: name,
  signature: '(a, b)',
  language: 'javascript',
  source_code: `function ${name}(a, b) {\n  return a + b + ${n}\n}\n`,
})

describe('manifests, lockfiles and branches over REST (one daemon process)', () => {
  let d: DaemonProcess
  let index: PackageIndexServer
  const api = (path: string): string => `${d.url}${path}`

  beforeAll(async () => {
    index = await startPackageIndex()
    d = await startDaemonProcess({ env: { AUTH_PROVIDER: 'none', SVC_PIP_INDEX_URL: index.pipIndexUrl, SVC_NPM_REGISTRY_URL: index.npmRegistryUrl } })
  })
  afterAll(async () => {
    await d?.stop()
    if (d) removeDir(d.dataDir)
    await index?.close()
  })

  it('create with a manifest and no lockfile stores a generated lockfile; resolve returns both', async () => {
    const manifest = manifestFor('addOne')
    const created = await call(api('/api/v1/functions/create'), 'POST', { ...source('addOne', 1), manifest })
    expect(created.status).toBe(201)
    const resolved = await call<Body>(api('/api/v1/functions/resolve'), 'POST', { rufid: created.body.rufid_short, version: 'v1' })
    expect(resolved.status).toBe(200)
    expect(resolved.body.manifest).toEqual(manifest)
    expect(resolved.body.lockfile).toMatchObject({
      schemaVersion: '1.0',
      manifest_digest: manifestDigest(manifest),
      dependencies: {
        pip: [{ name: 'requests', version: '2.32.3', source: index.pipIndexUrl }],
        npm: [{ name: 'lodash', version: '4.17.21', source: index.npmRegistryUrl }],
        system: ['zlib'],
      },
    })
    // through the cache too
    const cached = await call<Body>(api('/api/v1/functions/resolve'), 'POST', { rufid: created.body.rufid_short, version: 'v1' })
    expect(cached.body.cached).toBe(true)
    expect(cached.body.lockfile).toEqual(resolved.body.lockfile)
    // republishing is idempotent
    const again = await call(api('/api/v1/functions/create'), 'POST', { ...source('addOne', 1), manifest })
    expect(again.status).toBe(200)
    expect(again.body.rufid).toBe(created.body.rufid)
  })

  it('refuses a mismatched lockfile and a bad manifest with 1006 / HTTP 422, storing nothing', async () => {
    const first = await call<Body>(api('/api/v1/functions/create'), 'POST', { ...source('addTwo', 2), manifest: manifestFor('addTwo') })
    const lockfile = (await call<Body>(api('/api/v1/functions/resolve'), 'POST', { rufid: first.body.rufid_short })).body.lockfile
    const mismatched = await call<ErrorBody>(api('/api/v1/functions/create'), 'POST', {
      ...source('addTwo', 22), manifest: manifestFor('addTwo', 'changed'), lockfile,
    })
    expect(mismatched.status).toBe(422)
    expect(mismatched.body.error).toMatchObject({ code: 1006, name: 'VALIDATION_FAILED' })
    expect(mismatched.body.error.details.problems![0]!.pointer).toBe('/lockfile/manifest_digest')

    const bad = await call<ErrorBody>(api('/api/v1/functions/create'), 'POST', {
      ...source('addTwo', 23), manifest: { schemaVersion: '1.0', name: 'addTwo', dependencies: { pip: [{ version: '>=1' }] } },
    })
    expect(bad.status).toBe(422)
    expect(bad.body.error.details.problems!.map((p) => p.pointer)).toEqual(['/manifest/dependencies/pip/0/name'])

    const versions = await call<{ versions: Body[] }>(api(`/api/v1/functions/${first.body.rufid_short as string}/versions`), 'GET')
    expect(versions.body.versions.map((v) => v.version)).toEqual(['v1'])
  })

  it('deploys to staging twice, moving the head; invoke runs the newest; a wrong key is refused (403)', async () => {
    const first = await call<Body>(api('/api/v1/functions/deploy'), 'POST', { ...source('addStaged', 100), manifest: manifestFor('addStaged'), branch: 'staging' })
    expect(first.status).toBe(201)
    expect(first.body).toMatchObject({ version: 'v1', branch: 'staging', branch_created: true, moved: true, previous_version: null })
    expect(first.headers.get('cache-control')).toBe('no-store')
    const key = first.body.branch_key as string
    expect(key).toMatch(/^svcbk_/)
    expect((first.body.lockfile as Body).manifest_digest).toBe(manifestDigest(manifestFor('addStaged')))

    expect((await call<Body>(api('/api/v1/functions/branches/staging/invoke'), 'POST', { function_name: 'addStaged', arguments: { a: 1, b: 2 } })).body.result).toBe(103)

    const second = await call<Body>(api('/api/v1/functions/deploy'), 'POST', { ...source('addStaged', 200), branch: 'staging', branch_key: key })
    expect(second.status).toBe(201)
    expect(second.body).toMatchObject({ version: 'v2', branch_created: false, moved: true, previous_version: 'v1' })
    expect(second.body.branch_key).toBeUndefined()

    const run = await call<Body>(api('/api/v1/functions/branches/staging/invoke'), 'POST', { function_name: 'addStaged', arguments: { a: 1, b: 2 } })
    expect(run.status).toBe(200)
    expect(run.body).toMatchObject({ result: 203, status: 'success', version: 'v2', branch: 'staging' })

    const wrong = await call<ErrorBody>(api('/api/v1/functions/deploy'), 'POST', { ...source('addStaged', 300), branch: 'staging', branch_key: 'not-the-key-0123456789' })
    expect(wrong.status).toBe(403)
    expect(wrong.body.error).toMatchObject({ code: 1003, name: 'PERMISSION_DENIED' })
    const missing = await call<ErrorBody>(api('/api/v1/functions/branches/nope/invoke'), 'POST', { function_name: 'addStaged', arguments: {} })
    expect(missing.status).toBe(404)
    expect(missing.body.error).toMatchObject({ code: 1011, name: 'NOT_FOUND', details: { resource: 'branch', branch: 'nope' } })

    const heads = await call<{ items: Body[] }>(api('/api/v1/functions/branches?function_name=addStaged'), 'GET')
    expect(heads.body.items).toEqual([expect.objectContaining({ branch: 'staging', version: 'v2', function_name: 'addStaged' })])
    expect(JSON.stringify(heads.body)).not.toContain('scrypt')

    const versions = await call<{ function_name: string; versions: Array<Body & { branches: Body[] }> }>(api(`/api/v1/functions/${second.body.rufid_short as string}/versions`), 'GET')
    expect(versions.body.function_name).toBe('addStaged')
    expect(versions.body.versions.map((v) => [v.version, v.branches.map((b) => b.branch)])).toEqual([['v1', ['staging']], ['v2', ['staging']]])
    expect(versions.body.versions[0]!.manifest_snapshot).toMatchObject({ manifest: manifestFor('addStaged') })
    expect(JSON.stringify(versions.body)).not.toContain('scrypt')
  })

  it('exports manifest and lockfile exactly as stored', async () => {
    const manifest = manifestFor('addExported')
    const created = await call<Body>(api('/api/v1/functions/create'), 'POST', { ...source('addExported', 5), manifest })
    const exported = await call<Body>(api(`/api/v1/functions/${created.body.rufid_short as string}/export`), 'GET')
    const resolved = await call<Body>(api('/api/v1/functions/resolve'), 'POST', { rufid: created.body.rufid_short })
    expect(exported.status).toBe(200)
    expect(exported.body).toMatchObject({ rufid: created.body.rufid, version: 'v1', function_name: 'addExported' })
    expect(JSON.stringify(exported.body.manifest)).toBe(JSON.stringify(manifest))
    expect(JSON.stringify(exported.body.lockfile)).toBe(JSON.stringify(resolved.body.lockfile))
  })

  it('returns a manifest and lockfile as the text they were sent as, and refuses a text that is not the object (1006, 422)', async () => {
    const manifest = manifestFor('addWritten')
    const manifestText = '{\n    "name" : "addWritten",\n    "schemaVersion": "1.0", "description": "adds two numbers",\n' +
      `    "entrypoint": "main:addWritten", "runtime": {"language": "javascript", "version": "20"},\n    "dependencies": ${JSON.stringify(manifest.dependencies)}\n}\n\n`
    expect(JSON.parse(manifestText)).toEqual(manifest)

    const refused = await call<ErrorBody>(api('/api/v1/functions/create'), 'POST', {
      ...source('addWritten', 1), manifest, manifest_text: manifestText.replace('adds two', 'adds 2'),
    })
    expect(refused.status).toBe(422)
    expect(refused.body.error).toMatchObject({ code: 1006, name: 'VALIDATION_FAILED', message: 'manifest_text does not parse to the manifest sent with it (they differ at /manifest/description)' })
    expect(refused.body.error.details.problems).toEqual([{ pointer: '/manifest_text', message: expect.any(String) }])
    const stored = await call<{ items: Body[] }>(api('/api/v1/functions?search=addWritten'), 'GET')
    expect(stored.body.items).toEqual([]) // nothing stored

    const created = await call<Body>(api('/api/v1/functions/create'), 'POST', { ...source('addWritten', 1), manifest, manifest_text: manifestText })
    expect(created.status).toBe(201)
    const short = created.body.rufid_short as string
    const exported = await call<Body>(api(`/api/v1/functions/${short}/export`), 'GET')
    expect(exported.body.manifest_text).toBe(manifestText)
    expect(exported.body.lockfile_text).toBeNull() // generated by the node
    const resolved = await call<Body>(api('/api/v1/functions/resolve'), 'POST', { rufid: short })
    expect(resolved.body).toMatchObject({ manifest, manifest_text: manifestText, lockfile_text: null })
    const versions = await call<{ versions: Body[] }>(api(`/api/v1/functions/${short}/versions`), 'GET')
    expect(versions.body.versions).toHaveLength(1)
    expect(versions.body.versions[0]!.manifest_snapshot).toMatchObject({ manifest, manifest_text: manifestText })
  })

  it('rebuilds every branch head from the ledger alone after a restart', async () => {
    const key = (await call<Body>(api('/api/v1/functions/deploy'), 'POST', { ...source('addMany', 1), branch: 'prod' })).body.branch_key as string
    for (let i = 2; i <= 4; i++) await call(api('/api/v1/functions/deploy'), 'POST', { ...source('addMany', i), branch: 'prod', branch_key: key })
    await call(api('/api/v1/functions/deploy'), 'POST', { ...source('addMany', 2), branch: 'prod', branch_key: key })
    await d.stop()
    const db = new ClassicLevel<string, unknown>(join(d.dataDir, 'catalog'), { valueEncoding: 'json' }) as unknown as LevelDatabase
    const store = createCatalogStore({ db })
    await store.start()
    try {
      const stored = (await store.branchHeads()).sort(compareHeads)
      expect(stored.map((h) => `${h.function_name}/${h.branch}`)).toEqual(['addMany/prod', 'addStaged/staging'])
      expect(canonicalJson(rebuildHeads(await store.ledgerEntries()))).toBe(canonicalJson(stored))
      expect(stored.find((h) => h.function_name === 'addMany')).toMatchObject({ branch: 'prod', version: 2, seq: 5 })
    } finally {
      await store.stop()
    }
    d = await startDaemonProcess({ dataDir: d.dataDir, env: { SVC_PIP_INDEX_URL: index.pipIndexUrl, SVC_NPM_REGISTRY_URL: index.npmRegistryUrl } })
    const run = await call<Body>(api('/api/v1/functions/branches/prod/invoke'), 'POST', { function_name: 'addMany', arguments: [1, 1] })
    expect(run.body).toMatchObject({ result: 4, version: 'v2' })
  })
})
