import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSandbox, type PipPin, type Sandbox } from '../../../src/engine/sandbox/index.js'
import { checkPins, lockDigest } from '../../../src/engine/sandbox/python-wheelhouse.js'
import { tinyPackage, writeWheel, zip } from './fixtures/python-wheel.js'
import { py, PYTHON_HOOK_TIMEOUT_MS } from './fixtures/python.js'

let wheelhouse: string
let sandbox: Sandbox
const hashes = new Map<string, string>()

const USES_TINYPKG = `import importlib.metadata
import svc_tinypkg

print('svc_tinypkg', svc_tinypkg.__version__)

def f(name='Ada'):
    svc_tinypkg.calls.append(name)
    return {
        'version': svc_tinypkg.__version__,
        'metadata': importlib.metadata.version('svc-tinypkg'),
        'greeting': svc_tinypkg.greet(name),
        'calls': len(svc_tinypkg.calls),
    }
`

function pinned(version: string, extra: Partial<PipPin> = {}): { dependencies: { pip: PipPin[] } } {
  return { dependencies: { pip: [{ name: 'svc-tinypkg', version, ...extra }] } }
}

beforeAll(async () => {
  wheelhouse = mkdtempSync(join(tmpdir(), 'svc-wheelhouse-'))
  for (const version of ['1.0.0', '2.0.0', '3.0.0']) hashes.set(version, writeWheel(wheelhouse, tinyPackage(version)).sha256)
  writeFileSync(join(wheelhouse, 'svc_evil-1.0-py3-none-any.whl'), zip({ '../escape.py': 'x = 1\n' }))
  writeFileSync(join(wheelhouse, 'svc_native-1.0-cp313-cp313-emscripten_3_1_58_wasm32.whl'), zip({ 'svc_native/__init__.py': '' }))
  sandbox = createSandbox({ workers: 1, maxWarmIsolatesPerWorker: 8, maxLogBytes: 4096, queueLimit: 20, pythonWheelhouse: wheelhouse })
  await sandbox.start()
}, PYTHON_HOOK_TIMEOUT_MS)

afterAll(async () => {
  await sandbox?.stop()
  if (wheelhouse) rmSync(wheelhouse, { recursive: true, force: true })
})

describe('pinned pure-Python packages', () => {
  it('imports the pinned version of a wheel from the wheelhouse', async () => {
    const out = await sandbox.execute(py('tenant-a/uses-v1/v1', USES_TINYPKG, pinned('1.0.0')))
    expect(out.error?.message).toBeUndefined()
    expect(out.result).toEqual({ version: '1.0.0', metadata: '1.0.0', greeting: 'hello Ada from svc-tinypkg 1.0.0', calls: 1 })
    expect(out.logs.map((l) => l.message)).toEqual(['svc_tinypkg 1.0.0'])
  })

  it('gives two functions pinning different versions each their own, alternately in one worker', async () => {
    for (let round = 0; round < 2; round++) {
      const v1 = await sandbox.execute(py('tenant-a/uses-v1/v1', USES_TINYPKG, pinned('1.0.0')))
      const v2 = await sandbox.execute(py('tenant-a/uses-v2/v1', USES_TINYPKG, pinned('2.0.0')))
      expect(v1.result).toMatchObject({ version: '1.0.0', metadata: '1.0.0' })
      expect(v2.result).toMatchObject({ version: '2.0.0', metadata: '2.0.0', greeting: 'hello Ada from svc-tinypkg 2.0.0' })
      expect(v1.workerPid).toBe(v2.workerPid)
    }
  })

  it('keeps a set imported between calls of one tenant, but not across tenants', async () => {
    const first = await sandbox.execute(py('tenant-b/uses-v3/v1', USES_TINYPKG, pinned('3.0.0')))
    const again = await sandbox.execute(py('tenant-b/uses-v3/v1', USES_TINYPKG, pinned('3.0.0')))
    const other = await sandbox.execute(py('tenant-c/uses-v3/v1', USES_TINYPKG, pinned('3.0.0')))
    expect(first.result).toMatchObject({ version: '3.0.0', calls: 1 })
    expect(again.result).toMatchObject({ version: '3.0.0', calls: 2 })
    expect(other.result).toMatchObject({ version: '3.0.0', calls: 1 })
  })

  it('does not let a function without pins import a pinned package', async () => {
    const out = await sandbox.execute(py('tenant-a/no-pins/v1', 'def f():\n    import svc_tinypkg\n    return 1\n'))
    expect(out.error?.code).toBe(1007)
    expect(out.error?.message).toMatch(/ModuleNotFoundError/)
  })

  it('installs a set once per lockfile digest (cached even when the wheel later disappears)', async () => {
    const spare = writeWheel(wheelhouse, tinyPackage('4.0.0'))
    const first = await sandbox.execute(py('tenant-a/uses-v4/v1', USES_TINYPKG, pinned('4.0.0')))
    expect(first.result).toMatchObject({ version: '4.0.0' })
    unlinkSync(join(wheelhouse, spare.file))
    const second = await sandbox.execute(py('tenant-a/uses-v4-again/v1', USES_TINYPKG, pinned('4.0.0')))
    expect(second.result).toMatchObject({ version: '4.0.0' })
  })

  it('verifies a pin that carries a sha256', async () => {
    const ok = await sandbox.execute(py('tenant-a/hash-ok/v1', USES_TINYPKG, pinned('1.0.0', { sha256: hashes.get('1.0.0') as string })))
    expect(ok.result).toMatchObject({ version: '1.0.0' })
    const bad = await sandbox.execute(py('tenant-a/hash-bad/v1', USES_TINYPKG, pinned('2.0.0', { sha256: 'a'.repeat(64) })))
    expect(bad.error?.code).toBe(1007)
    expect(bad.error?.message).toContain('svc-tinypkg==2.0.0')
    expect(bad.error?.message).toMatch(/sha256/)
  })
})

describe('pins the node cannot provide', () => {
  it('fails with 1007 naming every missing name==version, before any code runs', async () => {
    const source = 'print("top level ran")\n\ndef f():\n    return 1\n'
    const out = await sandbox.execute(py('tenant-a/missing/v1', source, {
      dependencies: { pip: [{ name: 'svc-absent', version: '9.9' }, { name: 'svc-tinypkg', version: '1.0.0' }, { name: 'other_pkg', version: '0.1' }] },
    }))
    expect(out.status).toBe('error')
    expect(out.error?.code).toBe(1007)
    expect(out.error?.message).toContain('svc-absent==9.9')
    expect(out.error?.message).toContain('other_pkg==0.1')
    expect(out.error?.message).not.toContain('svc-tinypkg==1.0.0')
    expect(out.error?.details).toMatchObject({ missingDependencies: ['other_pkg==0.1', 'svc-absent==9.9'] })
    expect(out.logs).toEqual([])
  })

  it('does not install platform wheels or wheels with unsafe paths', async () => {
    const native = await sandbox.execute(py('tenant-a/native/v1', 'def f():\n    return 1\n', { dependencies: { pip: [{ name: 'svc-native', version: '1.0' }] } }))
    expect(native.error?.message).toContain('svc-native==1.0')
    const evil = await sandbox.execute(py('tenant-a/evil/v1', 'def f():\n    return 1\n', { dependencies: { pip: [{ name: 'svc-evil', version: '1.0' }] } }))
    expect(evil.error?.code).toBe(1007)
    expect(evil.error?.message).toMatch(/svc-evil==1.0.*unsafe path/)
  })

  it('rejects malformed pins with 1006', async () => {
    const range = await sandbox.execute(py('tenant-a/range/v1', 'def f():\n    return 1\n', { dependencies: { pip: [{ name: 'svc-tinypkg', version: '>=1.0' }] } }))
    expect(range.error?.code).toBe(1006)
    expect(range.error?.message).toMatch(/exact version/)
  })

  it('fails every pin when no wheelhouse is configured', async () => {
    const bare = createSandbox({ workers: 1, maxWarmIsolatesPerWorker: 2, maxLogBytes: 1024, queueLimit: 4 })
    await bare.start()
    try {
      const out = await bare.execute(py('tenant-a/bare/v1', USES_TINYPKG, pinned('1.0.0')))
      expect(out.error?.code).toBe(1007)
      expect(out.error?.message).toMatch(/svc-tinypkg==1.0.0 is not available on this node \(no Python wheelhouse is configured\)/)
    } finally {
      await bare.stop()
    }
  }, PYTHON_HOOK_TIMEOUT_MS)
})

describe('pin checks', () => {
  it('sorts and normalises pins and names a set by its digest', () => {
    const a = checkPins([{ name: 'Zeta_pkg', version: '1.0' }, { name: 'alpha', version: 'V2.0' }])
    expect(a.map((p) => p.name)).toEqual(['alpha', 'Zeta_pkg'])
    expect(lockDigest(a)).toBe(lockDigest(checkPins([{ name: 'zeta-pkg', version: '1.0' }, { name: 'Alpha', version: '2.0' }])))
    expect(lockDigest(a)).not.toBe(lockDigest(checkPins([{ name: 'alpha', version: '2.0.1' }, { name: 'zeta-pkg', version: '1.0' }])))
  })

  it.each([
    [[{ name: 'x', version: '^1' }], /exact version/],
    [[{ name: 'x', version: '1.0' }, { name: 'X', version: '2.0' }], /pinned twice/],
    [[{ name: '../x', version: '1.0' }], /invalid pinned package name/],
    [[{ name: 'x', version: '1.0', sha256: 'nothex' }], /sha256/],
    ['not a list', /must be an array/],
  ])('rejects %j', (pins, message) => {
    expect(() => checkPins(pins)).toThrow(message)
  })
})
