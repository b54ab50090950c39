// Pinned pure-Python packages end to end: a function's lockfile pins svc-tinypkg, the node's
// wheelhouse (SVC_PYTHON_WHEELHOUSE) provides it, and each function imports exactly its version.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { canonicalJson } from '../../src/core/canonical-json.js'
import { createHash } from 'node:crypto'
import { call, removeDir, startDaemonProcess, tempDataDir, type DaemonProcess } from '../fixtures/daemon-process.js'
import { tinyPackage, writeWheel } from '../engine/sandbox/fixtures/python-wheel.js'

const source = (name: string) => `import svc_tinypkg\n\ndef ${name}(who):\n    return [svc_tinypkg.__version__, svc_tinypkg.greet(who)]\n`

function definition(name: string, version: string) {
  const manifest = {
    schemaVersion: '1.0', name, entrypoint: `main:${name}`, runtime: { language: 'python', version: '3.12' },
    dependencies: { pip: [{ name: 'svc-tinypkg', version: `==${version}` }], system: [] },
  }
  const lockfile = {
    schemaVersion: '1.0', generated_at: '2026-11-22T00:00:00.000Z', generator: 'test',
    manifest_digest: createHash('sha256').update(canonicalJson(manifest), 'utf8').digest('hex'),
    dependencies: { pip: [{ name: 'svc-tinypkg', version, source: 'wheelhouse' }], system: [] },
  }
  return { function_name: name, signature: '(who)', language: 'python', source_code: source(name), manifest, lockfile }
}

describe('Python functions with pinned wheels (real daemon)', () => {
  let d: DaemonProcess
  let dir: string

  beforeAll(async () => {
    dir = tempDataDir()
    const wheelhouse = join(dir, 'wheelhouse')
    mkdirSync(wheelhouse)
    writeWheel(wheelhouse, tinyPackage('1.0.0'))
    writeWheel(wheelhouse, tinyPackage('2.0.0'))
    d = await startDaemonProcess({ dataDir: join(dir, 'data'), env: { SVC_PYTHON_WHEELHOUSE: wheelhouse, SVC_SANDBOX_WORKERS: '1' }, startTimeoutMs: 30_000 })
  }, 60_000)
  afterAll(async () => {
    await d?.stop()
    if (dir) removeDir(dir)
  })

  it('each function imports the version its lockfile pins; a pin the node lacks is named, before any code runs', async () => {
    const one = await call(`${d.url}/api/v1/functions/create`, 'POST', definition('usesOne', '1.0.0'))
    const two = await call(`${d.url}/api/v1/functions/create`, 'POST', definition('usesTwo', '2.0.0'))
    expect(one.status).toBe(201)
    expect(two.status).toBe(201)
    for (let round = 0; round < 2; round++) {
      const a = await call(`${d.url}/api/v1/functions/${one.body.rufid_short as string}/execute`, 'POST', { arguments: { who: 'ada' } })
      const b = await call(`${d.url}/api/v1/functions/${two.body.rufid_short as string}/execute`, 'POST', { arguments: { who: 'bob' } })
      expect(a.body.result).toEqual(['1.0.0', 'hello ada from svc-tinypkg 1.0.0'])
      expect(b.body.result).toEqual(['2.0.0', 'hello bob from svc-tinypkg 2.0.0'])
    }
    const missing = await call(`${d.url}/api/v1/functions/create`, 'POST', definition('usesThree', '3.0.0'))
    expect(missing.status).toBe(201)
    const run = await call(`${d.url}/api/v1/functions/${missing.body.rufid_short as string}/execute`, 'POST', { arguments: { who: 'x' } })
    const err = (run.body as { error: { code: number; message: string; details: { logs: unknown[] } } }).error
    expect(err.code).toBe(1007)
    expect(err.message).toContain('svc-tinypkg==3.0.0')
    expect(err.details.logs).toEqual([])
  }, 120_000)
})
