// Issue 27: size and permission are checked before any work that grows with the source
// (decisions.md: "Size and permission are checked before the source is hashed"). The RUFID
// computation and the signature derivation are counted (the modules are wrapped, every caller sees
// the wrapper), and each refused request must leave both counts at zero: a refusal that came after
// the work would still have cost it. A request that passes the checks is counted too, so a count
// that never moves cannot pass for a check.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { pino } from 'pino'
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'

const counts = vi.hoisted(() => ({ computeRufid: 0, deriveSignature: 0 }))
vi.mock('../../src/core/rufid.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/core/rufid.js')>()
  return {
    ...original,
    computeRufid: (...args: Parameters<typeof original.computeRufid>) => {
      counts.computeRufid++
      return original.computeRufid(...args)
    },
  }
})
vi.mock('../../src/core/signature.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/core/signature.js')>()
  return {
    ...original,
    deriveSignature: (...args: Parameters<typeof original.deriveSignature>) => {
      counts.deriveSignature++
      return original.deriveSignature(...args)
    },
  }
})

const { createRestApi } = await import('../../src/api/rest/app.js')
const { fetchMissingCode } = await import('../../src/engine/replication/remote-code.js')
const { createTestEngine } = await import('../fixtures/engine.js')
const { computeRufid: realComputeRufid } = await vi.importActual<typeof import('../../src/core/rufid.js')>('../../src/core/rufid.js')
type Engine = import('../../src/engine/index.js').Engine

/** registry.max_source_bytes of the test engine (test/fixtures/engine.ts) */
const MAX_SOURCE_BYTES = 64 * 1024

describe('size and permission before hashing (issue 27)', () => {
  let engine: Engine
  let server: http.Server
  let base: string
  let admin: string
  let executeOnly: string
  let readOnly: string

  beforeAll(async () => {
    engine = (await createTestEngine({ auth: { mode: 'standard' } })).engine
    const app = createRestApi({ bodyLimitBytes: 1024 * 1024, metricsAccess: 'public' }, { engine, logger: pino({ level: 'silent' }), isDraining: () => false })
    server = http.createServer(app.callback())
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    admin = (await engine.keys.mintFor('acme', 'test', { name: 'admin', scopes: ['admin'] })).api_key
    executeOnly = (await engine.keys.mintFor('acme', 'test', { name: 'runner', scopes: ['functions:execute'] })).api_key
    readOnly = (await engine.keys.mintFor('acme', 'test', { name: 'reader', scopes: ['functions:read'] })).api_key
  })
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve))
    await engine?.stop()
  })
  beforeEach(() => {
    counts.computeRufid = 0
    counts.deriveSignature = 0
  })

  async function post(path: string, token: string, body: unknown): Promise<{ status: number; code: number | undefined; message: string; details: Record<string, unknown> }> {
    const res = await fetch(`${base}${path}`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
    })
    const parsed = (await res.json()) as { error?: { code?: number; message?: string; details?: Record<string, unknown> } }
    return { status: res.status, code: parsed.error?.code, message: parsed.error?.message ?? '', details: parsed.error?.details ?? {} }
  }

  // the freezing shape of issue 27 (a long blank run in a plain-family source), over the limit
  const oversize = 'puts 1' + ' '.repeat(MAX_SOURCE_BYTES) + 'x'
  const unknownRufid = 'rufid:AAAAAAAAAAAA'

  it('native execute: a key without rufid.execute gets 403 for an over-size source, nothing hashed or derived', async () => {
    const r = await post('/api/v1/execution/execute', readOnly, { rufid: unknownRufid, function_name: 'f', source_code: oversize })
    expect(r).toMatchObject({ status: 403, code: 1003 })
    expect(counts).toEqual({ computeRufid: 0, deriveSignature: 0 })
  })

  it('native execute: an execute-only key may register (decisions.md), and its over-size source is 1006 before it is hashed', async () => {
    const r = await post('/api/v1/execution/execute', executeOnly, { rufid: unknownRufid, function_name: 'f', source_code: oversize })
    expect(r).toMatchObject({ status: 400, code: 1006 })
    expect(counts).toEqual({ computeRufid: 0, deriveSignature: 0 })
  })

  it('native execute: an over-size source is 1006 before it is hashed, language guessed or signature derived', async () => {
    const r = await post('/api/v1/execution/execute', admin, { rufid: unknownRufid, function_name: 'f', source_code: oversize })
    expect(r.code).toBe(1006)
    expect(r.message).toContain(`at most ${MAX_SOURCE_BYTES} bytes`)
    expect(counts).toEqual({ computeRufid: 0, deriveSignature: 0 })
    // multi-byte characters count in UTF-8 bytes: within the limit in characters, over it in bytes
    const wide = await post('/api/v1/execution/execute', admin, { rufid: unknownRufid, function_name: 'f', source_code: 'é'.repeat(MAX_SOURCE_BYTES / 2 + 1) })
    expect(wide.code).toBe(1006)
    expect(counts).toEqual({ computeRufid: 0, deriveSignature: 0 })
  })

  it('native execute: a function name that is not an identifier is 1006 before the source is searched for it', async () => {
    const r = await post('/api/v1/execution/execute', admin, { rufid: unknownRufid, function_name: 'a '.repeat(5000), source_code: 'a '.repeat(10_000) })
    expect(r.code).toBe(1006)
    expect(r.message).toContain('/function_name')
    expect(counts).toEqual({ computeRufid: 0, deriveSignature: 0 })
  })

  it('native execute: a source within the limit is derived and hashed once (the counts work)', async () => {
    const r = await post('/api/v1/execution/execute', admin, { rufid: unknownRufid, function_name: 'f', source_code: 'function f(a) { return a }' })
    expect(r.code).toBe(1001) // hashes to another RUFID
    expect(counts).toEqual({ computeRufid: 1, deriveSignature: 1 })
  })

  it('REST create: a key without rufid.create gets 403 for an over-size source, nothing hashed', async () => {
    const r = await post('/api/v1/functions/create', executeOnly, { function_name: 'f', signature: '()', language: 'ruby', source_code: oversize })
    expect(r).toMatchObject({ status: 403, code: 1003 })
    const big = await post('/api/v1/functions/create', admin, { function_name: 'f', signature: '()', language: 'ruby', source_code: oversize })
    expect(big.code).toBe(1006)
    expect(counts.computeRufid).toBe(0)
  })

  it('a language this node cannot run is refused at every local create path (400/1006, naming it and what the node runs), nothing hashed or derived or stored', async () => {
    const ruby = { function_name: 'f', signature: '()', language: 'ruby', source_code: 'puts 1' }
    const paths: Array<[string, string, unknown]> = [
      ['/api/v1/functions/create', admin, ruby],
      ['/api/v1/functions/deploy', admin, { ...ruby, branch: 'main' }],
      ['/api/v1/execution/execute', admin, { rufid: unknownRufid, ...ruby }],
      ['/api/v1/execution/execute', executeOnly, { rufid: unknownRufid, ...ruby, language: 'go', source_code: 'func f() {}' }],
    ]
    for (const [path, token, body] of paths) {
      const r = await post(path, token, body)
      expect(r, path).toMatchObject({ status: 400, code: 1006, details: { language: (body as { language: string }).language, languages: ['javascript', 'typescript', 'python'] } })
      expect(r.message, path).toContain(`"${(body as { language: string }).language}"`)
      expect(r.message, path).toContain('javascript, typescript, python')
    }
    expect(counts).toEqual({ computeRufid: 0, deriveSignature: 0 })
    const list = await fetch(`${base}/api/v1/functions`, { headers: { authorization: `Bearer ${admin}` } })
    expect(((await list.json()) as { items: Array<{ language: string }> }).items.filter((f) => f.language === 'ruby' || f.language === 'go')).toEqual([])
    // the languages it runs, aliases too, pass the check (and are hashed)
    for (const language of ['javascript', 'js', 'typescript', 'python', 'python3.12']) {
      const source_code = language.startsWith('py') ? 'def f():\n  return 1\n' : 'function f() { return 1 }'
      const r = await post('/api/v1/functions/create', admin, { function_name: 'f', signature: '()', language, source_code })
      expect([200, 201], `${language}: ${r.message}`).toContain(r.status)
    }
    expect(counts.computeRufid).toBe(5)
  })

  it('/v1 publish: 403 without rufid.create and 1006 for over-size base64, before it is decoded or a signature derived', async () => {
    const base64 = Buffer.from(oversize).toString('base64')
    const denied = await post('/v1/functions', executeOnly, { name: 'f', runtime: 'node20', source: base64 })
    expect(denied).toMatchObject({ status: 403, code: 1003 })
    const from = vi.spyOn(Buffer, 'from')
    try {
      const big = await post('/v1/functions', admin, { name: 'f', runtime: 'node20', source: base64 })
      expect(big.code).toBe(1006)
      expect(big.message).toContain(`at most ${MAX_SOURCE_BYTES} bytes`)
      expect(from.mock.calls.filter((args) => (args as unknown[])[1] === 'base64')).toEqual([])
    } finally {
      from.mockRestore()
    }
    // base64 within the bound whose text decodes over the limit (each invalid byte becomes U+FFFD, 3 bytes)
    const binary = await post('/v1/functions', admin, { name: 'f', runtime: 'node20', source: Buffer.alloc(MAX_SOURCE_BYTES - 3, 0xff).toString('base64') })
    expect(binary.code).toBe(1006)
    expect(counts).toEqual({ computeRufid: 0, deriveSignature: 0 })
    const fits = await post('/v1/functions', admin, { name: 'f', runtime: 'node20', source: Buffer.from('function f(a) { return a }').toString('base64') })
    expect(fits.status).toBe(201)
    expect(counts).toEqual({ computeRufid: 1, deriveSignature: 1 })
  })

  it('code fetched from a federation member: longer than registry.max_source_bytes is refused (2001) unhashed', async () => {
    const fn = { function_name: 'f', signature: '()', language: 'ruby', source_code: '' }
    const digestOf = (source_code: string): string => realComputeRufid({ ...fn, source_code }).content_digest
    const version = { tenant_id: 'acme', rufid_short: 'AAAAAAAAAAAA', version: 1, content_digest: digestOf(oversize), ...fn } as never
    const stored: unknown[] = []
    const components = (code: string) => ({
      maxSourceBytes: MAX_SOURCE_BYTES,
      federation: { fetchCode: async () => code } as never,
      store: { getFunction: async () => undefined, putReplicatedVersion: async (v: unknown) => void stored.push(v) } as never,
    })
    await expect(fetchMissingCode(version, components(oversize))).rejects.toMatchObject({ code: 2001 })
    expect(counts.computeRufid).toBe(0)
    expect(stored).toEqual([])
    // within the limit it is hashed, and kept when it matches
    const small = 'puts 1'
    await expect(fetchMissingCode({ ...(version as object), content_digest: digestOf(small) } as never, components(small))).resolves.toMatchObject({ source_code: small })
    expect(counts.computeRufid).toBe(1)
    expect(stored).toHaveLength(1)
  })
})
