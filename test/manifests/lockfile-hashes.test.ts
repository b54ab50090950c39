// A generated lockfile records the sha256 the index lists for the pinned version's pure-Python
// wheel: that hash is what lets a node install exactly that wheel, and fetch it from a
// federation peer (issue 7).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { checkLockfile, LockfileGenerator, type FunctionManifest } from '../../src/engine/index.js'
import { startPackageIndex, type PackageIndexServer } from '../fixtures/package-index.js'

const SHA = (c: string) => c.repeat(64)

describe('lockfile pins carry the wheel hash the index lists', () => {
  let index: PackageIndexServer
  beforeAll(async () => {
    index = await startPackageIndex({
      pypi: {
        hashed: {
          '1.0.0': [{ filename: 'hashed-1.0.0-py3-none-any.whl', digests: { sha256: SHA('a') } }],
          '1.1.0': [
            { filename: 'hashed-1.1.0.tar.gz', digests: { sha256: SHA('b') } },
            { filename: 'hashed-1.1.0-cp312-cp312-manylinux_2_17_x86_64.whl', digests: { sha256: SHA('c') } },
            { filename: 'hashed-1.1.0-py2.py3-none-any.whl', digests: { sha256: SHA('D') } },
          ],
        },
        nowheel: { '2.0.0': [{ filename: 'nowheel-2.0.0.tar.gz', digests: { sha256: SHA('e') } }] },
      },
      npm: {},
    })
  })
  afterAll(async () => {
    await index.close()
  })

  it("records the pure-Python wheel's sha256 (lower case), and none when the version has no such wheel", async () => {
    const gen = new LockfileGenerator({ pipIndexUrl: index.pipIndexUrl, timeoutMs: 2000 })
    const manifest: FunctionManifest = {
      schemaVersion: '1.0', name: 'f',
      dependencies: { pip: [{ name: 'hashed', version: '>=1.1' }, { name: 'nowheel' }] },
    }
    const lock = await gen.generate(manifest)
    expect(lock.dependencies.pip).toEqual([
      { name: 'hashed', version: '1.1.0', source: index.pipIndexUrl, sha256: SHA('d') },
      { name: 'nowheel', version: '2.0.0', source: index.pipIndexUrl },
    ])
    // the lockfile schema accepts it, and refuses a malformed hash
    expect(() => checkLockfile(lock, manifest)).not.toThrow()
    const bad = { ...lock, dependencies: { ...lock.dependencies, pip: [{ ...lock.dependencies.pip![0]!, sha256: 'xyz' }] } }
    expect(() => checkLockfile(bad, manifest)).toThrow()
  })
})
