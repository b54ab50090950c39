// Pinned Python wheels across a federation (issue 7): a node that lacks a wheel a lockfile pins
// fetches it from a member that provides it, accepts it only when its bytes hash to the pin's
// sha256, and imports exactly that version. In process: real engines, real sandboxes (Pyodide),
// real libp2p members on loopback.
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { canonicalJson } from '../../src/core/canonical-json.js'
import { createSandbox } from '../../src/engine/sandbox/index.js'
import type { Engine } from '../../src/engine/index.js'
import { issueNodeCertificate } from '../../src/federation/certificates.js'
import { createFederation, type Federation } from '../../src/federation/federation.js'
import { tinyPackage, writeWheel } from '../engine/sandbox/fixtures/python-wheel.js'
import { createTestEngine, principal } from '../fixtures/engine.js'
import { newIdentity, testCa, waitFor } from './fixtures.js'

const tenant = principal('acme')
const root = mkdtempSync(join(tmpdir(), 'svc-wheels-'))

interface Member {
  engine: Engine
  federation: Federation
  cache: string
}

const members: Member[] = []

async function member(name: string, options: { wheelhouse?: string; bootstrap?: string[]; patch?: (f: Federation) => void } = {}): Promise<Member> {
  const cache = join(root, name, 'wheels')
  const sandbox = createSandbox({
    workers: 1, maxWarmIsolatesPerWorker: 8, maxLogBytes: 4096, queueLimit: 20, pythonWheelCache: cache,
    ...(options.wheelhouse ? { pythonWheelhouse: options.wheelhouse } : {}),
  })
  const { engine } = await createTestEngine({ sandbox, wheels: { cacheDir: cache, ...(options.wheelhouse ? { wheelhouse: options.wheelhouse } : {}) } })
  const identity = await newIdentity()
  const federation = createFederation({
    privateKey: identity.privateKey, listen: ['/ip4/127.0.0.1/tcp/0'], bootstrap: options.bootstrap ?? [],
    caCertPem: testCa().certPem, certPem: issueNodeCertificate(testCa(), identity.peerId).certPem,
    endpoint: `http://127.0.0.1/${name}`, syncIntervalMs: 500, wheelDirs: [...(options.wheelhouse ? [options.wheelhouse] : []), cache],
  }, { engine, metrics: engine.metrics })
  options.patch?.(federation)
  await federation.start()
  const m = { engine, federation, cache }
  members.push(m)
  return m
}

const addr = (m: Member): string => m.federation.node.multiaddrs()[0]!

/** A Python function whose lockfile pins svc-tinypkg at `version` (with `sha256` when given). */
function definition(name: string, version: string, sha256?: string) {
  const manifest = {
    schemaVersion: '1.0', name, entrypoint: `main:${name}`, runtime: { language: 'python', version: '3.12' },
    dependencies: { pip: [{ name: 'svc-tinypkg', version: `==${version}` }], system: [] },
  }
  const lockfile = {
    schemaVersion: '1.0', generated_at: '2026-11-23T00:00:00.000Z', generator: 'test',
    manifest_digest: createHash('sha256').update(canonicalJson(manifest), 'utf8').digest('hex'),
    dependencies: { pip: [{ name: 'svc-tinypkg', version, source: 'wheelhouse', ...(sha256 ? { sha256 } : {}) }], system: [] },
  }
  return {
    function_name: name, signature: '(who)', language: 'python', manifest, lockfile,
    source_code: `import svc_tinypkg\n\ndef ${name}(who):\n    return [svc_tinypkg.__version__, svc_tinypkg.greet(who)]\n`,
  }
}

const sha256Of = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex')

describe('pinned wheels fetched from federation members', () => {
  let provider: Member
  let fetcher: Member
  let one: { file: string; sha256: string }
  let three: { file: string; sha256: string }

  beforeAll(async () => {
    const wheelhouse = join(root, 'provider-wheelhouse')
    mkdirSync(wheelhouse, { recursive: true })
    one = writeWheel(wheelhouse, tinyPackage('1.0.0'))
    three = writeWheel(wheelhouse, tinyPackage('3.0.0'))
    provider = await member('provider', { wheelhouse })
    fetcher = await member('fetcher', { bootstrap: [addr(provider)] })
    await waitFor(() => provider.federation.node.members().length === 1 && fetcher.federation.node.members().length === 1)
  }, 120_000)

  afterAll(async () => {
    for (const m of members) {
      await m.federation.stop()
      await m.engine.stop()
    }
    rmSync(root, { recursive: true, force: true })
  })

  it('a node without the wheel fetches it from a provider, checks its sha256, keeps it and imports the pinned version', async () => {
    const created = await provider.engine.functions.create(tenant, definition('greets', '1.0.0', one.sha256))
    await waitFor(async () => (await fetcher.engine.functions.ledger(tenant, 'greets')).length === 1)
    expect(existsSync(join(fetcher.cache, one.file))).toBe(false)
    const record = await fetcher.engine.executions.execute(tenant, { short: created.rufid_short }, { who: 'ada' })
    expect(record.result).toEqual(['1.0.0', 'hello ada from svc-tinypkg 1.0.0'])
    expect(sha256Of(join(fetcher.cache, one.file))).toBe(one.sha256)
    expect(readdirSync(fetcher.cache).filter((f) => f.endsWith('.part'))).toEqual([])
  }, 120_000)

  it('refuses a wheel whose bytes do not match the pin, and names the pin; nothing is kept', async () => {
    // the genuine 2.0.0 wheel exists only here; the liar serves other bytes under its name
    const elsewhere = join(root, 'nobody-serves-this')
    mkdirSync(elsewhere, { recursive: true })
    const two = writeWheel(elsewhere, tinyPackage('2.0.0'))
    const impostor = writeWheel(join(root, 'provider-wheelhouse'), { ...tinyPackage('2.0.0'), files: { 'svc_tinypkg/__init__.py': "__version__ = 'evil'\n" } })
    let lies = 0
    await member('liar', {
      bootstrap: [addr(provider), addr(fetcher)],
      patch: (f) => {
        (f.wheels as unknown as { serveWheel: () => unknown }).serveWheel = () => {
          lies++
          return { filename: impostor.file, bytes: readFileSync(join(root, 'provider-wheelhouse', impostor.file)).toString('base64') }
        }
      },
    })
    await waitFor(() => fetcher.federation.node.members().length === 2)
    const created = await provider.engine.functions.create(tenant, definition('greetsTwo', '2.0.0', two.sha256))
    await waitFor(async () => (await fetcher.engine.functions.ledger(tenant, 'greetsTwo')).length === 1)
    const failed = await fetcher.engine.executions.execute(tenant, { short: created.rufid_short }, { who: 'x' }).catch((e: unknown) => e)
    expect(failed).toMatchObject({ code: 1007, details: { reason: 'dependency_unavailable', missingDependencies: ['svc-tinypkg==2.0.0'] } })
    expect(lies).toBeGreaterThan(0)
    expect(readdirSync(fetcher.cache).filter((f) => f.includes('2.0.0'))).toEqual([])
  }, 120_000)

  it('does not fetch a pin without a sha256 (nothing could verify it), and says so', async () => {
    const created = await provider.engine.functions.create(tenant, definition('greetsThree', '3.0.0'))
    await waitFor(async () => (await fetcher.engine.functions.ledger(tenant, 'greetsThree')).length === 1)
    const failed = await fetcher.engine.executions.execute(tenant, { short: created.rufid_short }, { who: 'x' }).catch((e: unknown) => e) as { code: number; message: string }
    expect(failed.code).toBe(1007)
    expect(failed.message).toContain('svc-tinypkg==3.0.0')
    expect(failed.message).toContain('no sha256')
    expect(existsSync(join(fetcher.cache, three.file))).toBe(false)
    // the provider itself runs it from its wheelhouse
    expect((await provider.engine.executions.execute(tenant, { short: created.rufid_short }, { who: 'x' })).result).toEqual(['3.0.0', 'hello x from svc-tinypkg 3.0.0'])
  }, 120_000)
})
