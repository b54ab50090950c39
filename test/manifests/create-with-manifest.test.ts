// The create path with manifests and lockfiles, in process (memory-level), against a fixture index.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { canonicalJson } from '../../src/core/canonical-json.js'
import { manifestDigest, type FunctionLockfile } from '../../src/engine/index.js'
import { principal, type TestEngine } from '../fixtures/engine.js'
import { addJs } from '../fixtures/functions.js'
import { startPackageIndex, unreachableUrl, type PackageIndexServer } from '../fixtures/package-index.js'
import { createManifestTestEngine, pointersOf, rejectionOf, sampleManifest } from './helpers.js'

describe('create with a manifest (in-process engine)', () => {
  let index: PackageIndexServer
  let t: TestEngine
  const dev = principal('acme')

  beforeAll(async () => {
    index = await startPackageIndex()
  })
  afterAll(async () => {
    await index.close()
  })
  beforeEach(async () => {
    index.requests.length = 0
    t = await createManifestTestEngine({ pipIndexUrl: index.pipIndexUrl, npmRegistryUrl: index.npmRegistryUrl, timeoutMs: 2000 })
  })
  afterEach(async () => {
    await t.engine.stop()
  })

  it('stores a generated lockfile when a manifest comes alone; resolve returns both; the ledger snapshots both', async () => {
    const manifest = sampleManifest()
    const created = await t.engine.functions.create(dev, { ...addJs, manifest })
    expect(created.created).toBe(true)
    const lock = created.fn.lockfile as unknown as FunctionLockfile
    expect(lock.manifest_digest).toBe(manifestDigest(manifest))
    expect(lock.dependencies.pip).toEqual([
      { name: 'numpy', version: '2.1.0', source: index.pipIndexUrl },
      { name: 'requests', version: '2.32.3', source: index.pipIndexUrl },
    ])
    expect(lock.dependencies.npm).toEqual([{ name: 'lodash', version: '4.17.21', source: index.npmRegistryUrl }])

    for (const pass of [false, true]) {
      const resolved = await t.engine.functions.resolve(dev, { short: created.rufid_short })
      expect(resolved.cached).toBe(pass)
      expect(resolved.fn.manifest).toEqual(manifest)
      expect(resolved.fn.lockfile).toEqual(lock)
    }
    const [entry] = await t.engine.functions.ledger(dev, 'add')
    expect(entry!.manifest_snapshot).toEqual({ manifest, lockfile: lock })
  })

  it('republishing the same manifest without a lockfile is idempotent and asks no index', async () => {
    const a = await t.engine.functions.create(dev, { ...addJs, manifest: sampleManifest() })
    const asked = index.requests.length
    expect(asked).toBe(3)
    // the same manifest with its keys in another order is the same manifest (canonical JSON)
    const reordered = Object.fromEntries(Object.entries(sampleManifest()).reverse())
    const b = await t.engine.functions.create(dev, { ...addJs, manifest: reordered })
    expect(b.created).toBe(false)
    expect(b.rufid).toBe(a.rufid)
    expect(index.requests.length).toBe(asked)
    // the stored lockfile supplied again, regenerated at another time, is the same lock too
    const relocked = { ...(a.fn.lockfile as object), generated_at: '2031-01-01T00:00:00.000Z' }
    const c = await t.engine.functions.create(dev, { ...addJs, manifest: sampleManifest(), lockfile: relocked })
    expect(c.created).toBe(false)
    expect(await t.engine.functions.ledger(dev, 'add')).toHaveLength(1)
  })

  it('same code with a new lockfile is a new version of the same hash', async () => {
    const a = await t.engine.functions.create(dev, { ...addJs, manifest: sampleManifest() })
    const lock = a.fn.lockfile as unknown as FunctionLockfile
    const older: FunctionLockfile = {
      ...lock,
      dependencies: { ...lock.dependencies, pip: [{ name: 'numpy', version: '1.26.4', source: index.pipIndexUrl }, lock.dependencies.pip![1]!] },
    }
    const b = await t.engine.functions.create(dev, { ...addJs, manifest: sampleManifest(), lockfile: older })
    expect(b.created).toBe(true)
    expect(b.rufid_short).toBe(a.rufid_short)
    expect(b.rufid).toBe(`rufid:${a.rufid_short}:v2:acme`)
    expect(canonicalJson(b.fn.lockfile)).toBe(canonicalJson(older))
    const ledger = await t.engine.functions.ledger(dev, 'add')
    expect(ledger.map((e) => e.version)).toEqual([1, 2])
    expect(ledger[1]!.manifest_snapshot.lockfile).toEqual(older)
    // without a lockfile, the newest version with this manifest lends its lock: idempotent, v2
    const again = await t.engine.functions.create(dev, { ...addJs, manifest: sampleManifest() })
    expect(again.created).toBe(false)
    expect(again.version).toBe('v2')
  })

  it('refuses a lockfile that does not match the manifest (1006, 422) and stores nothing', async () => {
    const a = await t.engine.functions.create(dev, { ...addJs, manifest: sampleManifest() })
    const other = { ...sampleManifest(), description: 'something else' }
    const err = await rejectionOf(t.engine.functions.create(dev, { ...addJs, manifest: other, lockfile: a.fn.lockfile }))
    expect(err.code).toBe(1006)
    expect(err.reason).toBe('unprocessable')
    expect(pointersOf(err)[0]).toBe('/lockfile/manifest_digest')
    expect(await t.engine.functions.ledger(dev, 'add')).toHaveLength(1)
    // on a fresh lineage too: nothing at all
    const fresh = { ...addJs, function_name: 'sum', source_code: 'function sum(a, b) { return a + b }' }
    const err2 = await rejectionOf(t.engine.functions.create(dev, { ...fresh, manifest: sampleManifest('sum'), lockfile: a.fn.lockfile }))
    expect(err2.code).toBe(1006)
    expect(await t.engine.functions.ledger(dev, 'sum')).toHaveLength(0)
    expect((await t.engine.functions.list(dev)).items.map((f) => f.function_name)).toEqual(['add'])
  })

  it('refuses a bad manifest with 1006 and the JSON pointer of each problem', async () => {
    const bad = { schemaVersion: '1.0', name: 'other', runtime: { language: 'js' }, dependencies: { pip: [{ name: 'requests', version: '>>2' }] }, bogus: 1 }
    const err = await rejectionOf(t.engine.functions.create(dev, { ...addJs, manifest: bad }))
    expect(err.code).toBe(1006)
    expect(err.reason).toBe('unprocessable')
    expect(pointersOf(err)).toEqual(expect.arrayContaining(['/manifest/runtime/version', '/manifest/bogus']))
    const err2 = await rejectionOf(t.engine.functions.create(dev, { ...addJs, manifest: { ...bad, runtime: { language: 'js', version: '20' }, bogus: undefined } }))
    expect(pointersOf(err2)).toEqual(['/manifest/name', '/manifest/dependencies/pip/0/version'])
    const err3 = await rejectionOf(t.engine.functions.create(dev, { ...addJs, lockfile: { schemaVersion: '1.0' } }))
    expect(pointersOf(err3)).toEqual(['/manifest'])
    expect(index.requests).toHaveLength(0)
    expect(await t.engine.functions.ledger(dev)).toHaveLength(0)
  })

  it('stores nothing when an index cannot be reached, and says which dependency failed', async () => {
    await t.engine.stop()
    t = await createManifestTestEngine({ pipIndexUrl: `${await unreachableUrl()}/pypi`, npmRegistryUrl: index.npmRegistryUrl, timeoutMs: 2000 })
    const err = await rejectionOf(t.engine.functions.create(dev, { ...addJs, manifest: sampleManifest() }))
    expect(err.code).toBe(1010)
    expect(err.message).toMatch(/cannot resolve pip dependency (requests|numpy)/)
    expect(await t.engine.functions.ledger(dev)).toHaveLength(0)
  })

  it('keeps the text a manifest and lockfile were sent as, on the version and its ledger snapshot', async () => {
    const manifest = sampleManifest()
    const manifestText = `{"name":"add",  "schemaVersion" : "1.0",\n\t"description":"adds two numbers","entrypoint":"main:add",
 "runtime":{"version":"20","language":"javascript"},"dependencies":{"system":["zlib","libpq-dev"],
 "pip":[{"version":">=2.28,<3","name":"requests"},{"name":"numpy"}],"npm":[{"name":"lodash","version":"^4.17.0"}]},
 "environment":{"API_TOKEN":"required"},"scripts":{"post_install":"echo done"},"metadata":{"tier":"gold","owner":"team-math"}}\r\n`
    expect(JSON.parse(manifestText)).toEqual(manifest)
    const generated = await t.engine.functions.create(dev, { ...addJs, manifest, manifest_text: manifestText })
    expect(generated.fn.manifest_text).toBe(manifestText)
    expect(generated.fn.lockfile_text).toBeUndefined() // generated: no text of its own
    const lock = generated.fn.lockfile as unknown as FunctionLockfile
    const older = { ...lock, dependencies: { ...lock.dependencies, pip: [{ name: 'numpy', version: '1.26.4', source: index.pipIndexUrl }, lock.dependencies.pip![1]!] } }
    const lockText = '{ "generator": "by hand", ' + JSON.stringify(older).slice(1).replace('"generator":"' + older.generator + '",', '') + '\n'
    const lockValue = { ...older, generator: 'by hand' }
    expect(JSON.parse(lockText)).toEqual(lockValue)
    const supplied = await t.engine.functions.create(dev, { ...addJs, manifest, manifest_text: manifestText, lockfile: lockValue, lockfile_text: lockText })
    expect(supplied.version).toBe('v2')
    const resolved = await t.engine.functions.resolve(dev, { short: supplied.rufid_short, version: 2 })
    expect(resolved.fn).toMatchObject({ manifest_text: manifestText, lockfile_text: lockText })
    const ledger = await t.engine.functions.ledger(dev, 'add')
    expect(ledger.map((e) => [e.manifest_snapshot.manifest_text, e.manifest_snapshot.lockfile_text])).toEqual([[manifestText, undefined], [manifestText, lockText]])
    // the text is not content: the same manifest sent as other text is the same version, its first text kept
    const again = await t.engine.functions.create(dev, { ...addJs, manifest, manifest_text: JSON.stringify(manifest), lockfile: lockValue })
    expect(again).toMatchObject({ created: false, version: 'v2' })
    expect(again.fn.manifest_text).toBe(manifestText)
  })

  it('refuses a manifest_text or lockfile_text that does not parse to the object sent with it (1006), storing nothing', async () => {
    const manifest = sampleManifest()
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ manifest, manifest_text: JSON.stringify({ ...manifest, description: 'other' }) }, '/manifest_text', /differ at \/manifest\/description/],
      [{ manifest, manifest_text: JSON.stringify({ ...manifest, extra: 1 }) }, '/manifest_text', /differ at \/manifest\/extra/],
      [{ manifest, manifest_text: JSON.stringify({ ...manifest, dependencies: { ...(manifest.dependencies as object), system: ['zlib'] } }) }, '/manifest_text', /differ at \/manifest\/dependencies\/system\/1/],
      [{ manifest, manifest_text: '{"schemaVersion": "1.0",' }, '/manifest_text', /is not JSON/],
      [{ manifest_text: JSON.stringify(manifest) }, '/manifest_text', /send the manifest with it/],
      [{ manifest, lockfile_text: '{}' }, '/lockfile_text', /send the lockfile with it/],
    ]
    for (const [fields, pointer, message] of cases) {
      const err = await rejectionOf(t.engine.functions.create(dev, { ...addJs, ...fields }))
      expect(err.code).toBe(1006)
      expect(err.details.problems).toEqual([{ pointer, message: expect.stringMatching(message) }])
      expect(err.message).toMatch(new RegExp(`^${pointer.slice(1)} `))
    }
    expect(index.requests).toHaveLength(0)
    expect(await t.engine.functions.ledger(dev)).toHaveLength(0)
  })

  it('keeps creating functions without a manifest as before (no lockfile, no request)', async () => {
    const r = await t.engine.functions.create(dev, addJs)
    expect(r.fn.manifest).toBeNull()
    expect(r.fn.lockfile).toBeNull()
    expect(index.requests).toHaveLength(0)
  })
})
