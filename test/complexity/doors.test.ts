// Issue 27: the doors a hostile tenant sends its inputs through, in process (the REST app with the
// GraphQL middleware mounted after it, as the daemon runs them, on 127.0.0.1): each request's time
// grows linearly with the input it carries, up to the door's real limit (registry.max_source_bytes
// 524288, the 1 MiB body limit, graphql.max_document_bytes 100000). Measured as in growth.ts: the
// client's and the server's CPU time together (both are this process).
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { MemoryLevel } from 'memory-level'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createGraphqlMiddleware } from '../../src/api/graphql/http.js'
import { createRestApi } from '../../src/api/rest/app.js'
import { loadConfig } from '../../src/daemon/config.js'
import { createCatalogStore, createEngine, createMetrics, EventBus, type Engine, type LevelDatabase } from '../../src/engine/index.js'
import { noSandbox } from '../fixtures/engine.js'
import { describeGrowth, growth, isLinear, type Call } from './growth.js'

vi.setConfig({ testTimeout: 300_000, hookTimeout: 60_000 })

const config = loadConfig({ env: {} })
const MAX_SOURCE_BYTES = config.registry.max_source_bytes
const BODY_LIMIT = config.server.body_limit_bytes
const MAX_DOCUMENT_BYTES = config.graphql.max_document_bytes

async function expectLinear<T>(label: string, n: number, make: (size: number) => T, call: Call<T>): Promise<void> {
  const g = await growth(label, n, make, call)
  console.log(describeGrowth(g))
  expect(isLinear(g), describeGrowth(g)).toBe(true)
}

describe('the doors take time linear in what a request carries (in process)', () => {
  let engine: Engine
  let server: http.Server
  let base: string
  let admin: string
  let readOnly: string

  beforeAll(async () => {
    // the engine of test/fixtures/engine.ts with the default registry.max_source_bytes, no sandbox
    const db = new MemoryLevel<string, unknown>({ valueEncoding: 'json' }) as unknown as LevelDatabase
    engine = createEngine({
      registry: { cache: { maxEntries: 1000, ttlMs: 60_000 }, maxSourceBytes: MAX_SOURCE_BYTES, shareBase: 'https://share.test/f/' },
      execution: { defaults: { timeoutMs: 1000, memoryMb: 32, cpuMs: 1000 }, max: { timeoutMs: 2000, memoryMb: 64, cpuMs: 2000 } },
      auth: { mode: 'standard', defaultTenant: 'default', keys: { defaultExpiresDays: 90, maxExpiresDays: 3650 } },
      rateLimits: { perKey: { points: 0, windowSeconds: 1 }, perTenant: { points: 0, windowSeconds: 1 }, perIpUnauthenticated: { points: 0, windowSeconds: 1 } },
      audit: { retentionDays: 0, sweepIntervalMs: 60_000 },
    }, { db, store: createCatalogStore({ db }), sandbox: noSandbox, metrics: createMetrics(), events: new EventBus() })
    await engine.start()
    const logger = pino({ level: 'silent' })
    const app = createRestApi({ bodyLimitBytes: BODY_LIMIT, metricsAccess: 'public' }, { engine, logger, isDraining: () => false })
    app.use(createGraphqlMiddleware({
      maxDepth: config.graphql.max_depth, maxCost: config.graphql.max_cost, maxDocumentBytes: MAX_DOCUMENT_BYTES, introspection: config.graphql.introspection,
    }, { engine, logger }))
    server = http.createServer({ keepAlive: true }, app.callback())
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    admin = (await engine.keys.mintFor('acme', 'test', { name: 'admin', scopes: ['admin'] })).api_key
    // a key that may execute may also register (decisions.md): one that may only read is refused first
    readOnly = (await engine.keys.mintFor('acme', 'test', { name: 'reader', scopes: ['functions:read'] })).api_key
  })
  afterAll(async () => {
    server?.closeAllConnections()
    await new Promise((resolve) => server?.close(resolve))
    await engine?.stop()
  })

  /** POSTs a JSON text; resolves with the status and the svc error code (if any). */
  async function post(path: string, body: string, token = admin): Promise<{ status: number; code: number | undefined; text: string }> {
    const res = await fetch(`${base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body })
    const text = await res.text()
    const parsed = JSON.parse(text) as { error?: { code?: number }; errors?: Array<{ extensions?: { code?: number } }> }
    return { status: res.status, code: parsed.error?.code ?? parsed.errors?.[0]?.extensions?.code, text }
  }

  const n = MAX_SOURCE_BYTES / 8

  // the plain family's normalization (the freeze of issue 27) is measured in engine-inputs.test.ts:
  // since issue 28 no create reaches it, a language this node cannot run being refused unhashed
  it('REST create: a ruby source whose last line follows a long blank run is refused (1006) before it is hashed', async () => {
    await expectLinear('POST /api/v1/functions/create: ruby blank run, refused', n, (size) => JSON.stringify({
      function_name: 'f', signature: '()', language: 'ruby', source_code: 'puts 1' + ' '.repeat(size - 8) + 'x',
    }), async (body) => {
      const r = await post('/api/v1/functions/create', body)
      expect({ status: r.status, code: r.code }, r.text.slice(0, 200)).toEqual({ status: 400, code: 1006 })
    })
  })

  it('REST create: a python source whose last line follows a long blank run', async () => {
    await expectLinear('POST /api/v1/functions/create: python blank run', n, (size) => JSON.stringify({
      function_name: 'f', signature: '()', language: 'python', source_code: 'def f():\n  return 1\n' + ' '.repeat(size - 24) + 'x',
    }), async (body) => {
      const r = await post('/api/v1/functions/create', body)
      expect([200, 201], r.text.slice(0, 200)).toContain(r.status)
    })
  })

  it('REST create: javascript and python shapes (block comments, unterminated strings)', async () => {
    await expectLinear('POST /api/v1/functions/create: js block comments', n, (size) => JSON.stringify({
      function_name: 'f', signature: '()', language: 'javascript', source_code: 'function f() {}' + '/**/'.repeat(size / 4 - 4),
    }), async (body) => {
      const r = await post('/api/v1/functions/create', body)
      expect([200, 201], r.text.slice(0, 200)).toContain(r.status)
    })
    await expectLinear('POST /api/v1/functions/create: python unterminated strings', n, (size) => JSON.stringify({
      function_name: 'f', signature: '()', language: 'python', source_code: 'def f():\n  return 1\n' + "'".repeat(size - 24),
    }), async (body) => {
      const r = await post('/api/v1/functions/create', body)
      expect([200, 201], r.text.slice(0, 200)).toContain(r.status)
    })
  })

  it('native execute: an unknown RUFID with a source to hash (language guessed, signature derived)', async () => {
    await expectLinear('POST /api/v1/execution/execute: blank lines, no language', n, (size) => JSON.stringify({
      // (an LF is 2 bytes in JSON: half the size in LFs keeps 8n within the body limit)
      rufid: 'rufid:AAAAAAAAAAAA', function_name: 'f', source_code: 'function f(a) { return a }' + '\n'.repeat(size / 2 - 32) + 'x',
    }), async (body) => {
      const r = await post('/api/v1/execution/execute', body)
      expect(r.code, r.text.slice(0, 300)).toBe(1001) // hashes to another RUFID
    })
    await expectLinear('POST /api/v1/execution/execute: python blank run', n, (size) => JSON.stringify({
      rufid: 'rufid:AAAAAAAAAAAA', function_name: 'f', signature: '()', language: 'python', source_code: 'def f():\n  return 1\n' + ' '.repeat(size - 24) + 'x',
    }), async (body) => {
      expect((await post('/api/v1/execution/execute', body)).code).toBe(1001)
    })
    await expectLinear('POST /api/v1/execution/execute: ruby blank run, refused unhashed', n, (size) => JSON.stringify({
      rufid: 'rufid:AAAAAAAAAAAA', function_name: 'f', signature: '()', language: 'ruby', source_code: 'puts 1' + ' '.repeat(size - 8) + 'x',
    }), async (body) => {
      expect((await post('/api/v1/execution/execute', body)).code).toBe(1006)
    })
  })

  it('native execute with a key that may not execute: refused before the source is read', async () => {
    await expectLinear('POST /api/v1/execution/execute (functions:read only): ruby blank run', BODY_LIMIT / 8, (size) => JSON.stringify({
      rufid: 'rufid:AAAAAAAAAAAA', function_name: 'f', signature: '()', language: 'ruby', source_code: 'puts 1' + ' '.repeat(size - 200) + 'x',
    }), async (body) => {
      expect((await post('/api/v1/execution/execute', body, readOnly)).code).toBe(1003)
    })
  })

  it('/v1 publish: base64 of a source with a long blank run (decoded, signature derived, hashed)', async () => {
    await expectLinear('POST /v1/functions: base64 javascript', n * 3 / 4, (size) => JSON.stringify({
      name: 'f', runtime: 'node20', source: Buffer.from('function f(a) { return a }' + ' '.repeat(size - 32) + '\n').toString('base64'),
    }), async (body) => {
      const r = await post('/v1/functions', body)
      expect([200, 201], r.text.slice(0, 200)).toContain(r.status)
    })
  })

  it('signature derivation route: a source of nested lists', async () => {
    await expectLinear('POST /api/v1/functions/signature: nested binding lists', n, (size) => JSON.stringify({
      function_name: 'add', language: 'javascript', source_code: 'add = ('.repeat(size / 14) + ')'.repeat(size / 14),
    }), async (body) => {
      expect((await post('/api/v1/functions/signature', body)).code).toBe(1006)
    })
  })

  it('GraphQL: documents up to graphql.max_document_bytes and a createFunction source', async () => {
    const gql = (query: string, variables?: unknown): string => JSON.stringify({ query, ...(variables ? { variables } : {}) })
    const m = MAX_DOCUMENT_BYTES / 8
    await expectLinear('POST /graphql: many aliased fields', m, (size) => gql(`{ ${Array.from({ length: Math.floor(size / 20) }, (_, i) => `t${i}: __typename`).join(' ')} }`), async (body) => {
      const r = await post('/graphql', body)
      expect(r.status, r.text.slice(0, 200)).toBe(200)
    })
    await expectLinear('POST /graphql: many aliases of one field with other arguments', m, (size) => gql(`{ ${Array.from({ length: Math.floor(size / 40) }, (_, i) => `a${i}: listFunctions(limit: ${i % 7 + 1}) { pagination { total } }`).join(' ')} }`), async (body) => {
      expect((await post('/graphql', body)).status).toBeLessThan(500)
    })
    await expectLinear('POST /graphql: deep nesting', m, (size) => gql('{ a'.repeat(size / 4 - 1) + ' }'.repeat(size / 4 - 1)), async (body) => {
      expect((await post('/graphql', body)).status).toBeLessThan(500)
    })
    await expectLinear('POST /graphql: a comment and a string of escapes', m, (size) => gql(`#${' '.repeat(size / 2)}\n{ __type(name: "${'\\u0041'.repeat(size / 14)}") { name } }`), async (body) => {
      expect((await post('/graphql', body)).status).toBeLessThan(500)
    })
    await expectLinear('POST /graphql: createFunction with a python blank run', n, (size) => gql(
      'mutation($input: CreateFunctionInput!) { createFunction(input: $input) { shortRufid } }',
      { input: { functionName: 'f', signature: '()', language: 'python', sourceCode: 'def f():\n  return 1\n' + ' '.repeat(size - 24) + 'x' } },
    ), async (body) => {
      const r = await post('/graphql', body)
      expect(r.code, r.text.slice(0, 200)).toBeUndefined()
    })
    await expectLinear('POST /graphql: createFunction with a ruby blank run, refused unhashed', n, (size) => gql(
      'mutation($input: CreateFunctionInput!) { createFunction(input: $input) { shortRufid } }',
      { input: { functionName: 'f', signature: '()', language: 'ruby', sourceCode: 'puts 1' + ' '.repeat(size - 8) + 'x' } },
    ), async (body) => {
      const r = await post('/graphql', body)
      expect(r.code, r.text.slice(0, 200)).toBe(1006)
    })
  })
})
