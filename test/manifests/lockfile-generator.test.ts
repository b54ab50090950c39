import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { canonicalJson } from '../../src/core/canonical-json.js'
import { LockfileGenerator, checkLockfile, manifestDigest, type FunctionManifest, type ResolutionProgress } from '../../src/engine/index.js'
import { startPackageIndex, unreachableUrl, type PackageIndexServer } from '../fixtures/package-index.js'
import { pointersOf, rejectionOf, sampleManifest } from './helpers.js'

const manifestWith = (deps: FunctionManifest['dependencies']): FunctionManifest => ({ schemaVersion: '1.0', name: 'f', dependencies: deps })

describe('lockfile generation against a fixture index on loopback', () => {
  let index: PackageIndexServer
  let gen: LockfileGenerator

  beforeAll(async () => {
    index = await startPackageIndex()
  })
  afterAll(async () => {
    await index.close()
  })
  beforeEach(() => {
    index.requests.length = 0
    index.delays.clear()
    index.failing.clear()
    gen = new LockfileGenerator({ pipIndexUrl: index.pipIndexUrl, npmRegistryUrl: index.npmRegistryUrl, timeoutMs: 2000 })
  })

  it('pins requests>=2.28,<3 and an npm range to exact versions, sorted, with the manifest digest', async () => {
    const manifest = sampleManifest() as unknown as FunctionManifest
    const progress: ResolutionProgress[] = []
    const lock = await gen.generate(manifest, { onProgress: (p) => progress.push(p) })
    expect(lock).toMatchObject({
      schemaVersion: '1.0',
      generator: expect.stringMatching(/^svc-node\/\d+\.\d+\.\d+/),
      manifest_digest: manifestDigest(manifest),
      dependencies: {
        pip: [
          { name: 'numpy', version: '2.1.0', source: index.pipIndexUrl },
          { name: 'requests', version: '2.32.3', source: index.pipIndexUrl },
        ],
        npm: [{ name: 'lodash', version: '4.17.21', source: index.npmRegistryUrl }],
        system: ['libpq-dev', 'zlib'],
      },
    })
    expect(new Date(lock.generated_at).toISOString()).toBe(lock.generated_at)
    expect(progress.map((p) => p.done)).toEqual([1, 2, 3])
    expect(progress.every((p) => p.total === 3)).toBe(true)
    // the lockfile it writes passes its own checks
    expect(canonicalJson(checkLockfile(lock, manifest))).toBe(canonicalJson(lock))
  })

  it('is deterministic: the same manifest gives byte-identical lockfiles but for generated_at', async () => {
    const manifest = sampleManifest() as unknown as FunctionManifest
    const now = new Date('2025-06-01T12:00:00Z')
    const a = await gen.generate(manifest, { now })
    const b = await gen.generate(JSON.parse(JSON.stringify(manifest)) as FunctionManifest, { now })
    expect(JSON.stringify(a, null, 2)).toBe(JSON.stringify(b, null, 2))
  })

  it('leaves out yanked releases, releases without files and pre-releases unless the specifier asks for them', async () => {
    const pins = async (deps: FunctionManifest['dependencies']): Promise<string[]> => {
      const lock = await gen.generate(manifestWith(deps))
      return [...(lock.dependencies.pip ?? []), ...(lock.dependencies.npm ?? [])].map((d) => `${d.name}==${d.version}`)
    }
    expect(await pins({ pip: [{ name: 'requests', version: '>=2.32' }] })).toEqual(['requests==3.0.0'])
    expect(await pins({ pip: [{ name: 'requests', version: '==2.32.4' }] })).toEqual(['requests==2.32.4']) // an exact pin may take a yanked release
    expect(await pins({ pip: [{ name: 'requests', version: '>=2.33.0rc1,<3' }] })).toEqual(['requests==2.33.0rc1'])
    expect(await pins({ pip: [{ name: 'numpy', version: '~=2.0' }] })).toEqual(['numpy==2.1.0'])
    expect(await pins({ pip: [{ name: 'Typing_Extensions' }] })).toEqual(['typing-extensions==4.12.2'])
    expect(await pins({ npm: [{ name: 'lodash' }] })).toEqual(['lodash==4.17.21'])
    expect(await pins({ npm: [{ name: 'lodash', version: 'next' }] })).toEqual(['lodash==5.0.0-beta.1'])
    expect(await pins({ npm: [{ name: 'lodash', version: '>=4' }] })).toEqual(['lodash==4.17.21'])
    expect(await pins({ npm: [{ name: 'lodash', version: '^5.0.0-beta.0' }] })).toEqual(['lodash==5.0.0-beta.1'])
    expect(await pins({ npm: [{ name: 'left-pad', version: '^1.0.0' }] })).toEqual(['left-pad==1.2.0']) // deprecated latest avoided
    expect(await pins({ npm: [{ name: '@scope/util', version: '^1.0.0' }] })).toEqual(['@scope/util==1.0.0']) // latest satisfies: taken
    expect(index.requests).toContain('/npm/@scope/util')
  })

  it('names the dependency that does not exist or has no fitting release (1006, 422, pointer)', async () => {
    const missing = await rejectionOf(gen.generate(manifestWith({ pip: [{ name: 'requests' }, { name: 'no-such-package' }] }), { pointerPrefix: '/manifest' }))
    expect(missing.code).toBe(1006)
    expect(missing.reason).toBe('unprocessable')
    expect(missing.message).toMatch(/no-such-package/)
    expect(pointersOf(missing)).toEqual(['/manifest/dependencies/pip/1/name'])

    const nothing = await rejectionOf(gen.generate(manifestWith({ pip: [{ name: 'onlypre' }], npm: [{ name: 'lodash', version: '^9' }] })))
    expect(pointersOf(nothing)).toEqual(['/dependencies/pip/0/version', '/dependencies/npm/0/version'])
    expect(nothing.message).toMatch(/onlypre/)
  })

  it('says which dependency could not be resolved when the index is unreachable (1010)', async () => {
    const down = new LockfileGenerator({ pipIndexUrl: `${await unreachableUrl()}/pypi`, npmRegistryUrl: index.npmRegistryUrl })
    const err = await rejectionOf(down.generate(manifestWith({ pip: [{ name: 'requests', version: '>=2.28,<3' }] })))
    expect(err.code).toBe(1010)
    expect(err.message).toMatch(/cannot resolve pip dependency requests >=2.28,<3: package index http:\/\/127\.0\.0\.1:\d+\/pypi is unreachable/)
    expect(err.details).toMatchObject({ dependency: 'requests', ecosystem: 'pip' })

    index.failing.add('/npm/lodash')
    const failing = await rejectionOf(gen.generate(manifestWith({ npm: [{ name: 'lodash' }] })))
    expect(failing.code).toBe(1010)
    expect(failing.message).toMatch(/lodash.*HTTP 500/)
  })

  it('bounds each index request in time', async () => {
    index.delays.set('/pypi/requests/json', 5000)
    const quick = new LockfileGenerator({ pipIndexUrl: index.pipIndexUrl, npmRegistryUrl: index.npmRegistryUrl, timeoutMs: 200 })
    const started = Date.now()
    const err = await rejectionOf(quick.generate(manifestWith({ pip: [{ name: 'requests' }] })))
    expect(Date.now() - started).toBeLessThan(3000)
    expect(err.code).toBe(1010)
    expect(err.message).toMatch(/no answer within 200 ms/)

    // and the whole generation in time: the rest fail fast once the deadline has passed
    index.delays.set('/pypi/numpy/json', 5000)
    const bounded = new LockfileGenerator({ pipIndexUrl: index.pipIndexUrl, npmRegistryUrl: index.npmRegistryUrl, timeoutMs: 5000, deadlineMs: 300, concurrency: 1 })
    const t0 = Date.now()
    const late = await rejectionOf(bounded.generate(manifestWith({ pip: [{ name: 'requests' }, { name: 'numpy' }] })))
    expect(Date.now() - t0).toBeLessThan(3000)
    expect(late.code).toBe(1010)
    expect(late.details.problems).toEqual([
      expect.objectContaining({ pointer: '/dependencies/pip/0', message: expect.stringMatching(/no answer within (29\d|300) ms/) }),
      expect.objectContaining({ pointer: '/dependencies/pip/1', message: expect.stringMatching(/exceeded its deadline of 300 ms/) }),
    ])
  })

  it('resolves only against the configured index unless source URLs are allowed', async () => {
    const viaName = await gen.generate(manifestWith({ pip: [{ name: 'numpy', source: 'pypi' }, { name: 'requests', source: `${index.pipIndexUrl}/` }] }))
    expect(viaName.dependencies.pip!.map((d) => d.source)).toEqual([index.pipIndexUrl, index.pipIndexUrl])
    const other = manifestWith({ pip: [{ name: 'numpy', source: 'https://example.invalid/pypi' }] })
    const err = await rejectionOf(gen.generate(other, { pointerPrefix: '/manifest' }))
    expect(err.code).toBe(1006)
    expect(pointersOf(err)).toEqual(['/manifest/dependencies/pip/0/source'])
    expect(index.requests).toHaveLength(2)

    const permissive = new LockfileGenerator({ pipIndexUrl: 'https://example.invalid/pypi', npmRegistryUrl: index.npmRegistryUrl, allowSourceUrls: true })
    const lock = await permissive.generate(manifestWith({ pip: [{ name: 'numpy', source: index.pipIndexUrl }] }))
    expect(lock.dependencies.pip).toEqual([{ name: 'numpy', version: '2.1.0', source: index.pipIndexUrl }])
  })

  it('needs no request for a manifest without dependencies', async () => {
    const lock = await gen.generate({ schemaVersion: '1.0', name: 'f' })
    expect(lock.dependencies).toEqual({ pip: [], npm: [], system: [] })
    expect(index.requests).toHaveLength(0)
  })
})
