import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { canonicalJson } from '../../src/core/canonical-json.js'
import {
  checkLockfile, checkManifest, lockIdentity, manifestDigest, manifestSchemaProblems, lockfileSchemaProblems, sortedLockfile,
  MANIFEST_SCHEMA_URL, type FunctionLockfile, type FunctionManifest,
} from '../../src/engine/index.js'
import { thrownBy as thrown } from '../fixtures/engine.js'
import { pointersOf, sampleManifest } from './helpers.js'

function lockFor(manifest: Record<string, unknown>, over: Partial<FunctionLockfile> = {}): FunctionLockfile {
  return {
    schemaVersion: '1.0',
    generated_at: '2025-01-01T00:00:00.000Z',
    generator: 'test/1',
    manifest_digest: manifestDigest(manifest),
    dependencies: {
      pip: [{ name: 'numpy', version: '2.1.0', source: 'https://pypi.org/pypi' }, { name: 'requests', version: '2.32.3', source: 'https://pypi.org/pypi' }],
      npm: [{ name: 'lodash', version: '4.17.21', source: 'https://registry.npmjs.org' }],
      system: ['libpq-dev', 'zlib'],
    },
    ...over,
  }
}

describe('manifest schema (schemas/function_manifest.schema.json, JSON Schema 2020-12)', () => {
  it('is a 2020-12 schema and accepts a full §2.4 manifest', () => {
    const schema = JSON.parse(readFileSync(MANIFEST_SCHEMA_URL, 'utf8')) as Record<string, unknown>
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema')
    expect(manifestSchemaProblems(sampleManifest())).toEqual([])
    expect(checkManifest(sampleManifest(), { functionName: 'add' })).toEqual(sampleManifest())
  })

  it('accepts execution.context warm or fresh, and nothing else under execution', () => {
    for (const context of ['warm', 'fresh']) expect(manifestSchemaProblems({ ...sampleManifest(), execution: { context } })).toEqual([])
    const pointers = [
      ...manifestSchemaProblems({ ...sampleManifest(), execution: { context: 'shared' } }, '/manifest'),
      ...manifestSchemaProblems({ ...sampleManifest(), execution: { reuse: true } }, '/manifest'),
    ].map((p) => p.pointer)
    expect(pointers).toEqual(['/manifest/execution/context', '/manifest/execution/reuse'])
  })

  it('reports every problem with its JSON pointer', () => {
    const bad = {
      schemaVersion: '2.0',
      entrypoint: 'no-callable',
      runtime: { language: 'python' },
      dependencies: { pip: [{ name: 'requests', version: 3 }, { version: '>=1' }], npm: [{ name: 'Bad Name' }], system: [''] },
      environment: { API_TOKEN: 'maybe', 'bad name': 'required' },
      extra: true,
    }
    const pointers = manifestSchemaProblems(bad, '/manifest').map((p) => p.pointer)
    expect(pointers).toEqual(expect.arrayContaining([
      '/manifest/schemaVersion',
      '/manifest/name',
      '/manifest/entrypoint',
      '/manifest/runtime/version',
      '/manifest/dependencies/pip/0/version',
      '/manifest/dependencies/pip/1/name',
      '/manifest/dependencies/npm/0/name',
      '/manifest/dependencies/system/0',
      '/manifest/environment/API_TOKEN',
      '/manifest/environment/bad name',
      '/manifest/extra',
    ]))
    const err = thrown(() => checkManifest(bad, { prefix: '/manifest' }))
    expect(err.code).toBe(1006)
    expect(err.reason).toBe('unprocessable')
    expect(pointersOf(err)).toContain('/manifest/name')
  })

  it('checks what the schema cannot: specifiers, duplicates, the function name', () => {
    const m = sampleManifest() as { dependencies: { pip: Array<Record<string, string>>; npm: Array<Record<string, string>> } }
    m.dependencies.pip.push({ name: 'Requests', version: '>=>2' })
    m.dependencies.npm.push({ name: 'lodash', version: '^^1' })
    const err = thrown(() => checkManifest(m, { prefix: '/manifest', functionName: 'sum' }))
    expect(pointersOf(err)).toEqual(expect.arrayContaining([
      '/manifest/name',
      '/manifest/dependencies/pip/2/version',
      '/manifest/dependencies/pip/2/name',
      '/manifest/dependencies/npm/1/version',
      '/manifest/dependencies/npm/1/name',
    ]))
  })
})

describe('every problem of a manifest at once', () => {
  it('reports rule problems beside schema problems, each with its pointer', () => {
    const m = sampleManifest() as Record<string, unknown> & { dependencies: { pip: Array<Record<string, unknown>>; npm: Array<Record<string, unknown>> } }
    m.extra = true // schema: not a known field
    m.dependencies.pip[0]!.version = '>=>2' // rule: not a PEP 440 specifier
    m.dependencies.pip.push({ name: 'Requests' }) // rule: listed twice
    m.dependencies.npm[0]!.version = '^^1' // rule: not a semver range
    const err = thrown(() => checkManifest(m, { prefix: '/manifest', functionName: 'sum' }))
    expect(err.code).toBe(1006)
    expect(err.message).toBe('invalid manifest: /manifest/extra is not a known field')
    expect(pointersOf(err)).toEqual([
      '/manifest/extra',
      '/manifest/name',
      '/manifest/dependencies/pip/0/version',
      '/manifest/dependencies/pip/2/name',
      '/manifest/dependencies/npm/0/version',
    ])
  })

  it('skips only the rules a schema problem leaves nothing to evaluate, and never repeats a pointer', () => {
    const m = sampleManifest() as Record<string, unknown> & { dependencies: { pip: Array<Record<string, unknown>> } }
    m.name = 42 // schema: not a string, so the function-name rule cannot be evaluated
    m.dependencies.pip[0]!.version = 3 // schema: not a string, so the specifier rule cannot be evaluated
    m.dependencies.pip[1]!.version = '=!1' // rule
    const err = thrown(() => checkManifest(m, { prefix: '/manifest', functionName: 'sum' }))
    const pointers = pointersOf(err)
    expect(pointers).toEqual(['/manifest/name', '/manifest/dependencies/pip/0/version', '/manifest/dependencies/pip/1/version'])
    expect(new Set(pointers).size).toBe(pointers.length)
    expect(thrown(() => checkManifest('not an object')).details.problems).toEqual([{ pointer: '', message: 'must be object' }])
  })

  it('shows a lockfile\'s wrong digest beside its schema problems', () => {
    const m = sampleManifest()
    const lock = { ...lockFor(m), manifest_digest: 'f'.repeat(64), generator: undefined }
    const err = thrown(() => checkLockfile(JSON.parse(JSON.stringify(lock)), m as unknown as FunctionManifest, { prefix: '/lockfile' }))
    expect(pointersOf(err)).toEqual(['/lockfile/generator', '/lockfile/manifest_digest'])
  })
})

describe('manifest digest (RFC 8785)', () => {
  it('is the SHA-256 of the canonical JSON, whatever the key order', () => {
    const m = sampleManifest()
    const reverse = (v: unknown): unknown => Array.isArray(v)
      ? v.map(reverse)
      : v !== null && typeof v === 'object' ? Object.fromEntries(Object.entries(v).reverse().map(([k, x]) => [k, reverse(x)])) : v
    const reordered = reverse(m) as Record<string, unknown>
    expect(JSON.stringify(reordered)).not.toBe(JSON.stringify(m))
    const expected = createHash('sha256').update(canonicalJson(m)).digest('hex')
    expect(manifestDigest(m)).toBe(expected)
    expect(manifestDigest(reordered)).toBe(expected)
    expect(manifestDigest({ ...m, description: 'adds two numbers!' })).not.toBe(expected)
  })
})

describe('lockfile rules', () => {
  it('accepts a matching lockfile and sorts its lists', () => {
    const m = sampleManifest()
    const lock = lockFor(m)
    const shuffled = { ...lock, dependencies: { ...lock.dependencies, pip: [...lock.dependencies.pip!].reverse(), system: ['zlib', 'libpq-dev', 'zlib'] } }
    const checked = checkLockfile(shuffled, m as unknown as FunctionManifest)
    expect(checked.dependencies.pip!.map((d) => d.name)).toEqual(['numpy', 'requests'])
    expect(checked.dependencies.system).toEqual(['libpq-dev', 'zlib'])
    expect(canonicalJson(checked)).toBe(canonicalJson(sortedLockfile(lock)))
  })

  it('refuses a lockfile whose manifest_digest does not match (1006, pointer /lockfile/manifest_digest)', () => {
    const m = sampleManifest()
    const lock = lockFor({ ...m, description: 'other' })
    const err = thrown(() => checkLockfile(lock, m as unknown as FunctionManifest, { prefix: '/lockfile' }))
    expect(err.code).toBe(1006)
    expect(err.reason).toBe('unprocessable')
    expect(err.message).toMatch(/does not belong to this manifest/)
    expect(pointersOf(err)[0]).toBe('/lockfile/manifest_digest')
  })

  it('refuses ranges, missing pins, pins outside the specifier and other system packages', () => {
    const m = sampleManifest()
    const lock = lockFor(m, {
      dependencies: {
        pip: [{ name: 'requests', version: '2.0', source: 'x' }, { name: 'requests', version: '2.31.0', source: 'x' }],
        npm: [{ name: 'lodash', version: '3.10.1', source: 'x' }],
        system: ['zlib', 'openssl'],
      },
    })
    const err = thrown(() => checkLockfile(lock, m as unknown as FunctionManifest, { prefix: '/lockfile', manifestPrefix: '/manifest' }))
    const messages = (err.details.problems as Array<{ pointer: string; message: string }>).map((p) => `${p.pointer} ${p.message}`)
    expect(messages).toEqual(expect.arrayContaining([
      '/lockfile/dependencies/pip/0/version 2.0 does not satisfy >=2.28,<3 (/manifest/dependencies/pip/0)',
      '/lockfile/dependencies/pip/1/name pins requests twice',
      '/lockfile/dependencies/pip does not pin numpy (/manifest/dependencies/pip/1)',
      '/lockfile/dependencies/npm/0/version 3.10.1 does not satisfy ^4.17.0 (/manifest/dependencies/npm/0)',
      '/lockfile/dependencies/system does not list libpq-dev, which the manifest requires',
      '/lockfile/dependencies/system lists openssl, which the manifest does not',
    ]))
  })

  it('refuses a range where an exact version belongs', () => {
    const m = sampleManifest()
    const lock = lockFor(m, { dependencies: { ...lockFor(m).dependencies, pip: [{ name: 'requests', version: '>=2.28', source: 'x' }] } })
    const err = thrown(() => checkLockfile(lock, m as unknown as FunctionManifest, { prefix: '/lockfile' }))
    expect(pointersOf(err)).toEqual(['/lockfile/dependencies/pip/0/version'])
    const npmRange = lockFor(m, { dependencies: { ...lockFor(m).dependencies, npm: [{ name: 'lodash', version: 'v4.17.21', source: 'x' }] } })
    expect(pointersOf(thrown(() => checkLockfile(npmRange, m as unknown as FunctionManifest, { prefix: '/lockfile' })))).toEqual(['/lockfile/dependencies/npm/0/version'])
  })

  it('validates the lockfile schema with pointers', () => {
    const pointers = lockfileSchemaProblems({ schemaVersion: '1.0', generated_at: 'yesterday', manifest_digest: 'abc', dependencies: { pip: [{ name: 'x' }] } }, '/lockfile').map((p) => p.pointer)
    expect(pointers).toEqual(expect.arrayContaining([
      '/lockfile/generated_at', '/lockfile/generator', '/lockfile/manifest_digest', '/lockfile/dependencies/pip/0/version', '/lockfile/dependencies/pip/0/source',
    ]))
  })

  it('identifies a lock by its pins, not by when or by what it was generated', () => {
    const m = sampleManifest()
    const a = lockFor(m)
    const b = { ...lockFor(m), generated_at: '2030-01-01T00:00:00Z', generator: 'other/2' }
    const c = lockFor(m, { dependencies: { ...a.dependencies, pip: [{ name: 'numpy', version: '2.0.0', source: 'https://pypi.org/pypi' }, a.dependencies.pip![1]!] } })
    expect(lockIdentity(a as unknown as Record<string, unknown>)).toBe(lockIdentity(b as unknown as Record<string, unknown>))
    expect(lockIdentity(a as unknown as Record<string, unknown>)).not.toBe(lockIdentity(c as unknown as Record<string, unknown>))
    expect(lockIdentity(null)).toBe('null')
  })
})
