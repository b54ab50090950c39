import { readFileSync } from 'node:fs'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import * as core from '../../src/core/rufid.js'
import {
  ERROR_CODES, ExecutionFailedError, ExecutionTimeoutError, FederationUnreachableError, InternalError, InvalidRufidError,
  NotFoundError, PermissionDeniedError, RateLimitedError, RufidCollisionError, RufidNotFoundError, ServiceUnavailableError,
  SvcClient, SvcConnectionError, SvcError, SyncConflictError, ValidationFailedError, WaitTimeoutError,
  computeRufid, isSvcError, normalizeSource, parseRufid,
} from '../../src/client/index.js'
import { FakeNode, errorBody, type Recorded } from './fake-node.js'

const SHORT = 'tUwBWSc8Nozv'

let node: FakeNode
let client: SvcClient

beforeEach(async () => {
  node = await new FakeNode().start()
  client = new SvcClient({ url: node.url, token: 'tok-123', namespace: 'team-a', timeoutMs: 5000 })
})

afterEach(async () => {
  vi.unstubAllEnvs()
  await node.stop()
})

describe('RUFID computation is the daemon\'s own code', () => {
  const vectorsPath = process.env.SVC_VECTORS ?? new URL('../vectors/rufid-v1.json', import.meta.url)
  const vectors = JSON.parse(readFileSync(vectorsPath, 'utf8')) as {
    cases: Array<{ id: string; function_name: string; signature: string; language: string; source_code: string; normalized_code: string; sha256_hex: string; rufid_short: string }>
  }

  it('re-exports core/rufid.ts, not a copy', () => {
    expect(computeRufid).toBe(core.computeRufid)
    expect(normalizeSource).toBe(core.normalizeSource)
  })

  it('has vectors to check', () => expect(vectors.cases.length).toBeGreaterThan(0))

  for (const v of vectors.cases) {
    it(`vector ${v.id}`, () => {
      const got = computeRufid(v)
      expect([got.normalized_code, got.content_digest, got.rufid_short]).toEqual([v.normalized_code, v.sha256_hex, v.rufid_short])
    })
  }
})

describe('configuration', () => {
  it('sends the token, the namespace and a user agent', async () => {
    node.on('GET', '/api/v1/functions', { status: 200, body: { items: [], pagination: {} } })
    await client.listFunctions()
    expect(node.last.headers.authorization).toBe('Bearer tok-123')
    expect(node.last.headers['x-svc-namespace']).toBe('team-a')
    expect(node.last.headers['user-agent']).toMatch(/^svc-ts\//)
  })

  it('reads SVC_URL, SVC_TOKEN and SVC_NAMESPACE when options leave them out', async () => {
    vi.stubEnv('SVC_URL', `${node.url}/`)
    vi.stubEnv('SVC_TOKEN', 'env-token')
    vi.stubEnv('SVC_NAMESPACE', 'env-ns')
    const c = new SvcClient()
    expect(c.url).toBe(node.url)
    expect(c.namespace).toBe('env-ns')
    node.on('GET', '/api/v1/functions', { status: 200, body: { items: [] } })
    await c.listFunctions()
    expect(node.last.headers.authorization).toBe('Bearer env-token')
    expect(node.last.headers['x-svc-namespace']).toBe('env-ns')
  })

  it('sends no Authorization header without a token, and never shows the token', () => {
    vi.stubEnv('SVC_TOKEN', '')
    const c = new SvcClient({ url: node.url })
    expect(c.headers().authorization).toBeUndefined()
    expect(JSON.stringify(client)).not.toContain('tok-123')
    expect(client.hasToken).toBe(true)
  })

  it('refuses a URL that is not http(s)', () => {
    expect(() => new SvcClient({ url: 'ftp://x' })).toThrow(TypeError)
    expect(() => new SvcClient({ url: 'nope' })).toThrow(TypeError)
  })

  it('with() copies the client with other options', async () => {
    const other = client.with({ token: 'other' })
    node.on('GET', '/api/v1/functions', { status: 200, body: { items: [] } })
    await other.listFunctions()
    expect(node.last.headers.authorization).toBe('Bearer other')
    expect(node.last.headers['x-svc-namespace']).toBe('team-a')
  })
})

describe('requests', () => {
  it('create posts the definition', async () => {
    const answer = { rufid: `rufid:${SHORT}:v1:t`, rufid_short: SHORT, version: 'v1', created: true }
    node.on('POST', '/api/v1/functions/create', { status: 201, body: answer })
    const input = { function_name: 'add', signature: '(a, b)', language: 'javascript', source_code: 'function add(a, b) { return a + b }', tags: ['math'] }
    // a node that sends only `rufid` (full) and `rufid_short`: the client adds `full_rufid`
    expect(await client.create(input)).toEqual({ ...answer, full_rufid: answer.rufid })
    expect(node.last.body).toEqual(input)
    expect(node.last.headers['content-type']).toBe('application/json')
  })

  it('resolve sends the RUFID and a normalized version label', async () => {
    node.on('POST', '/api/v1/functions/resolve', { status: 200, body: { rufid: `rufid:${SHORT}:v2:t` } })
    await client.resolve(SHORT)
    expect(node.last.body).toEqual({ rufid: SHORT })
    await client.resolve(SHORT, 2)
    expect(node.last.body).toEqual({ rufid: SHORT, version: 'v2' })
    await client.resolve(`rufid:${SHORT}:v2:t`, 'v2')
    expect(node.last.body).toEqual({ rufid: `rufid:${SHORT}:v2:t`, version: 'v2' })
  })

  it('execute sends named or positional arguments and a version', async () => {
    node.on('POST', `/api/v1/functions/${SHORT}/execute`, { status: 200, body: { result: 5, status: 'success', execution_time_ms: 1, execution_id: 'ex_1' } })
    expect((await client.execute(SHORT, { a: 2, b: 3 })).result).toBe(5)
    expect(node.last.body).toEqual({ arguments: { a: 2, b: 3 } })
    await client.execute(SHORT, [2, 3], { version: 'v1' })
    expect(node.last.body).toEqual({ arguments: [2, 3], version: 'v1' })
  })

  it('a full RUFID travels in the path with its colons', async () => {
    node.on('POST', `/api/v1/functions/rufid:${SHORT}:v1:acme/execute`, { status: 200, body: { result: 1, status: 'success' } })
    await client.execute(`rufid:${SHORT}:v1:acme`, [])
    expect(node.last.path).toBe(`/api/v1/functions/rufid:${SHORT}:v1:acme/execute`)
  })

  it('getFunction, listFunctions and deleteFunction', async () => {
    node.on('GET', `/api/v1/functions/${SHORT}`, { status: 200, body: { rufid: SHORT } })
    node.on('GET', '/api/v1/functions', { status: 200, body: { items: [], pagination: {} } })
    node.on('DELETE', `/api/v1/functions/${SHORT}`, { status: 200, body: { deleted: [`rufid:${SHORT}:v1:t`] } })
    expect((await client.getFunction(SHORT)).rufid).toBe(SHORT)
    await client.getFunction(SHORT, 3)
    expect(node.last.query.get('version')).toBe('v3')
    await client.listFunctions({ search: 'add', tags: ['math', 'demo'], limit: 5, offset: 10 })
    expect(Object.fromEntries(node.last.query)).toEqual({ search: 'add', tags: 'math,demo', limit: '5', offset: '10' })
    await client.listFunctions()
    expect([...node.last.query.keys()]).toEqual([])
    expect((await client.deleteFunction(SHORT)).deleted).toHaveLength(1)
  })

  it('publish sends the source base64-encoded', async () => {
    node.on('POST', '/v1/functions', { status: 201, body: { rufid_short: SHORT } })
    await client.publish({ name: 'add', runtime: 'javascript', source: 'function add(a, b) { return a + b }', tags: ['x'] })
    const body = node.last.body as { source: string }
    expect(Buffer.from(body.source, 'base64').toString()).toBe('function add(a, b) { return a + b }')
    expect(node.last.body).toMatchObject({ name: 'add', runtime: 'javascript', tags: ['x'] })
  })

  it('executeAsync, getExecution, executionLogs', async () => {
    node.on('POST', `/v1/functions/${SHORT}/executions`, { status: 202, body: { execution_id: 'ex_1', status: 'queued' } })
    node.on('GET', '/v1/executions/ex_1', { status: 200, body: { execution_id: 'ex_1', status: 'success', result: 5 } })
    node.on('GET', '/v1/executions/ex_1/logs', { status: 200, body: { execution_id: 'ex_1', status: 'success', logs: ['hi'] } })
    expect(await client.executeAsync(SHORT, { a: 2, b: 3 })).toEqual({ execution_id: 'ex_1', status: 'queued' })
    expect(node.last.body).toEqual({ a: 2, b: 3 })
    expect((await client.getExecution('ex_1')).result).toBe(5)
    expect((await client.executionLogs('ex_1')).logs).toEqual(['hi'])
  })

  it('waitExecution polls until the run is over', async () => {
    let polls = 0
    node.on('GET', '/v1/executions/ex_2', () => ({ status: 200, body: { execution_id: 'ex_2', status: ++polls < 3 ? 'running' : 'success', result: 7 } }))
    const record = await client.waitExecution('ex_2', { intervalMs: 10 })
    expect(record).toMatchObject({ status: 'success', result: 7 })
    expect(polls).toBe(3)
  })

  it('waitExecution gives up after timeoutMs with WaitTimeoutError', async () => {
    node.on('GET', '/v1/executions/ex_3', { status: 200, body: { execution_id: 'ex_3', status: 'queued' } })
    const err = await client.waitExecution('ex_3', { timeoutMs: 100, intervalMs: 10 }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(WaitTimeoutError)
    expect(err).toMatchObject({ code: null, name: 'WAIT_TIMEOUT', details: { execution_id: 'ex_3', status: 'queued' } })
  })

  it('search and telemetry send their query parameters', async () => {
    node.on('GET', '/v1/marketplace/functions/search', { status: 200, body: { items: [], pagination: {}, aggregations: {} } })
    node.on('GET', `/v1/telemetry/functions/${SHORT}`, { status: 200, body: { rufid: SHORT, window: '5m' } })
    await client.search('add', { language: 'javascript', tags: ['math'], limit: 3 })
    expect(Object.fromEntries(node.last.query)).toEqual({ q: 'add', language: 'javascript', tags: 'math', limit: '3' })
    await client.search('', { author: 'key:bob' })
    expect(node.last.query.get('author')).toBe('key:bob')
    // an older node names the function by `rufid` only: rufid_short is derived from it
    expect(await client.telemetry(SHORT, '5m')).toEqual({ rufid: SHORT, rufid_short: SHORT, window: '5m' })
    expect(node.last.query.get('window')).toBe('5m')
    await client.telemetry(SHORT)
    expect(node.last.query.get('window')).toBe('15m')
  })

  it('telemetry series sends window, buckets and version; the console reads call their routes', async () => {
    const full = `rufid:${SHORT}:v2:acme`
    node.on('GET', `/v1/telemetry/functions/${SHORT}/series`, { status: 200, body: { rufid: full, rufid_short: SHORT, full_rufid: full, window: '6h', bucket_ms: 1, buckets: [] } })
    expect(await client.telemetrySeries(SHORT, { window: '6h', buckets: 12, version: 2 })).toMatchObject({ rufid_short: SHORT, full_rufid: full })
    expect(Object.fromEntries(node.last.query)).toEqual({ window: '6h', buckets: '12', version: 'v2' })
    await client.telemetrySeries(SHORT)
    expect([...node.last.query.keys()]).toEqual([])
    await expect(client.telemetrySeries(SHORT, { version: 'x2' })).rejects.toBeInstanceOf(InvalidRufidError)
    node.on('GET', `/api/v1/functions/${SHORT}/source`, { status: 200, body: { rufid: full, version: 'v2', source_code: 'x' } })
    expect(await client.getFunctionSource(SHORT, 'v2')).toMatchObject({ rufid_short: SHORT, full_rufid: full })
    expect(node.last.query.get('version')).toBe('v2')
    for (const [path, call] of [
      ['/api/v1/node/info', () => client.nodeInfo()],
      ['/api/v1/auth/whoami', () => client.whoami()],
      ['/api/v1/federation/members', () => client.federationMembers()],
    ] as const) {
      node.on('GET', path, { status: 200, body: { ok: path } })
      expect(await call()).toEqual({ ok: path })
      expect(node.last.path).toBe(path)
    }
  })

  it('API keys: create, list, revoke', async () => {
    node.on('POST', '/api/v1/auth/v2/api-keys', { status: 201, body: { api_key: 'svck_x', key_id: 'k1', scopes: ['functions:read'] } })
    node.on('GET', '/api/v1/auth/v2/api-keys', { status: 200, body: { items: [{ key_id: 'k1' }] } })
    node.on('DELETE', '/api/v1/auth/v2/api-keys/k1', { status: 200, body: { key_id: 'k1', revoked_at: 'now' } })
    expect((await client.createApiKey({ name: 'ro', scopes: ['functions:read'], expires_days: 1 })).api_key).toBe('svck_x')
    expect(node.last.body).toEqual({ name: 'ro', scopes: ['functions:read'], expires_days: 1 })
    expect(await client.listApiKeys()).toEqual([{ key_id: 'k1' }])
    expect((await client.revokeApiKey('k1')).revoked_at).toBe('now')
  })

  it('executeNative posts the native body', async () => {
    node.on('POST', '/api/v1/execution/execute', { status: 200, body: { result: 5, status: 'success', registered: false } })
    await client.executeNative({ rufid: `rufid:${SHORT}`, function_name: 'add', input_data: { a: 2, b: 3 } })
    expect(node.last.body).toEqual({ rufid: `rufid:${SHORT}`, function_name: 'add', input_data: { a: 2, b: 3 } })
  })
})

describe('field names: rufid_short, full_rufid and tenant_id whatever the node sends', () => {
  it('an execution record from a node that says `tenant` gets tenant_id and both RUFID forms', async () => {
    node.on('GET', '/v1/executions/ex_1', { status: 200, body: { execution_id: 'ex_1', rufid: `rufid:${SHORT}:v2:acme`, version: 'v2', tenant: 'acme', status: 'success' } })
    const record = await client.getExecution('ex_1')
    expect(record).toMatchObject({ tenant_id: 'acme', tenant: 'acme', rufid_short: SHORT, full_rufid: `rufid:${SHORT}:v2:acme` })
  })

  it('a node that already sends the new names is read as is', async () => {
    node.on('GET', '/v1/executions/ex_2', { status: 200, body: { execution_id: 'ex_2', rufid: `rufid:${SHORT}:v2:acme`, version: 'v2', tenant_id: 'new', rufid_short: SHORT, full_rufid: `rufid:${SHORT}:v2:new` } })
    expect(await client.getExecution('ex_2')).toMatchObject({ tenant_id: 'new', full_rufid: `rufid:${SHORT}:v2:new` })
  })

  it('metadata (rufid is the short form) and list items get rufid_short; a short-only body gets full_rufid from version and tenant', async () => {
    node.on('GET', `/api/v1/functions/${SHORT}`, { status: 200, body: { rufid: SHORT, full_rufid: `rufid:${SHORT}:v1:t` } })
    expect(await client.getFunction(SHORT)).toMatchObject({ rufid: SHORT, rufid_short: SHORT, full_rufid: `rufid:${SHORT}:v1:t` })
    node.on('GET', '/v1/marketplace/functions/search', { status: 200, body: { items: [{ rufid: SHORT, version: 'v3', tenant_id: 'x' }], pagination: {}, aggregations: {} } })
    expect((await client.search('a')).items[0]).toMatchObject({ rufid_short: SHORT, full_rufid: `rufid:${SHORT}:v3:x` })
  })

  it('nothing is invented when a form cannot be derived', async () => {
    node.on('GET', '/api/v1/functions/branches', { status: 200, body: { items: [{ rufid: SHORT }] } })
    const [head] = await client.listBranches()
    expect(head).toEqual({ rufid: SHORT, rufid_short: SHORT })
  })
})

describe('typed errors', () => {
  const cases: Array<[number, string, number, new (...a: never[]) => SvcError]> = [
    [1001, 'INVALID_RUFID', 400, InvalidRufidError],
    [1002, 'RUFID_NOT_FOUND', 404, RufidNotFoundError],
    [1003, 'PERMISSION_DENIED', 403, PermissionDeniedError],
    [1004, 'EXECUTION_TIMEOUT', 408, ExecutionTimeoutError],
    [1005, 'RATE_LIMITED', 429, RateLimitedError],
    [1006, 'VALIDATION_FAILED', 400, ValidationFailedError],
    [1007, 'EXECUTION_FAILED', 422, ExecutionFailedError],
    [1008, 'RUFID_COLLISION', 409, RufidCollisionError],
    [1009, 'INTERNAL_ERROR', 500, InternalError],
    [1010, 'SERVICE_UNAVAILABLE', 503, ServiceUnavailableError],
    [1011, 'NOT_FOUND', 404, NotFoundError],
    [2001, 'FEDERATION_UNREACHABLE', 502, FederationUnreachableError],
    [2002, 'SYNC_CONFLICT', 409, SyncConflictError],
  ]
  for (const [code, name, status, cls] of cases) {
    it(`${code} ${name} → ${cls.name}`, async () => {
      node.on('POST', '/api/v1/functions/resolve', { status, body: errorBody(code, name, `msg ${code}`, { rufid: SHORT }) })
      const err = await client.resolve(SHORT).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(cls)
      expect(err).toBeInstanceOf(SvcError)
      expect(err).toBeInstanceOf(Error)
      expect(err).toMatchObject({ code, name, message: `msg ${code}`, details: { rufid: SHORT }, httpStatus: status, unauthenticated: false })
      expect(isSvcError(err, code)).toBe(true)
      expect(ERROR_CODES[name as keyof typeof ERROR_CODES]).toBe(code)
    })
  }

  it('401 is 1003 with unauthenticated: true', async () => {
    node.on('GET', '/api/v1/functions', { status: 401, body: errorBody(1003, 'PERMISSION_DENIED', 'credentials required') })
    const err = await client.listFunctions().catch((e: unknown) => e)
    expect(err).toBeInstanceOf(PermissionDeniedError)
    expect(err).toMatchObject({ code: 1003, httpStatus: 401, unauthenticated: true })
  })

  it('Retry-After becomes retryAfterSeconds', async () => {
    node.on('GET', '/api/v1/functions', { status: 429, body: errorBody(1005, 'RATE_LIMITED'), headers: { 'retry-after': '3' } })
    const err = await client.listFunctions().catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RateLimitedError)
    expect((err as SvcError).retryAfterSeconds).toBe(3)
  })

  it('an unknown code is a plain SvcError keeping code and name', async () => {
    node.on('GET', '/api/v1/functions', { status: 418, body: errorBody(4242, 'TEAPOT', 'short and stout') })
    const err = await client.listFunctions().catch((e: unknown) => e)
    expect(err).toBeInstanceOf(SvcError)
    expect(err).toMatchObject({ code: 4242, name: 'TEAPOT', message: 'short and stout', httpStatus: 418 })
  })

  it('an answer without an svc body keeps its status; 403 still means 1003', async () => {
    node.on('GET', '/api/v1/functions', { status: 502, body: '<html>bad gateway</html>', headers: { 'content-type': 'text/html' } })
    const err = await client.listFunctions().catch((e: unknown) => e)
    expect(err).toMatchObject({ code: null, name: 'HTTP_ERROR', httpStatus: 502 })
    expect((err as Error).message).toContain('bad gateway')
    node.on('GET', '/api/v1/functions', { status: 403, body: 'forbidden', headers: { 'content-type': 'text/plain' } })
    expect(await client.listFunctions().catch((e: unknown) => e)).toBeInstanceOf(PermissionDeniedError)
  })

  it('a malformed RUFID is refused locally with 1001 and no request', async () => {
    const calls: Array<() => Promise<unknown>> = [
      () => client.resolve('bad!'), () => client.execute('short', []), () => client.getFunction('rufid:x'),
      () => client.telemetry('AAAAAAAAAAAAA'), () => client.executeAsync(''), () => client.resolve(SHORT, 'x2'),
      () => client.subscribeExecutions('nope'),
    ]
    for (const call of calls) {
      // every method rejects (never throws synchronously)
      const err = await call().catch((e: unknown) => e)
      expect(err).toBeInstanceOf(InvalidRufidError)
      expect(err).toMatchObject({ code: 1001, name: 'INVALID_RUFID', httpStatus: undefined })
    }
    expect(() => parseRufid('nope')).toThrow(InvalidRufidError)
    expect(parseRufid(`rufid:${SHORT}:v2:acme`)).toEqual({ short: SHORT, version: 2, tenant_id: 'acme' })
    expect(node.requests).toHaveLength(0)
  })

  it('request() sends anything as is, so the node\'s own 1001 can be seen', async () => {
    node.on('POST', '/api/v1/functions/resolve', (req: Recorded) => ({ status: 400, body: errorBody(1001, 'INVALID_RUFID', 'malformed', { rufid: (req.body as { rufid: string }).rufid }) }))
    const err = await client.request('POST', '/api/v1/functions/resolve', { body: { rufid: 'bad!' } }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(InvalidRufidError)
    expect(err).toMatchObject({ httpStatus: 400, details: { rufid: 'bad!' } })
  })

  it('an unreachable node is an SvcConnectionError', async () => {
    const url = node.url
    await node.stop()
    const err = await new SvcClient({ url, timeoutMs: 2000 }).listFunctions().catch((e: unknown) => e)
    expect(err).toBeInstanceOf(SvcConnectionError)
    expect(err).toMatchObject({ code: null, name: 'CONNECTION_FAILED' })
    expect((err as Error).message).toContain(url)
    node = await new FakeNode().start()
  })

  it('timeoutMs bounds a request', async () => {
    node.on('GET', '/api/v1/functions', { status: 200, body: {}, delayMs: 1000 })
    const err = await client.with({ timeoutMs: 100 }).listFunctions().catch((e: unknown) => e)
    expect(err).toBeInstanceOf(SvcConnectionError)
    expect(err).toMatchObject({ name: 'REQUEST_TIMEOUT' })
  })

  it('an aborted signal rejects with its reason', async () => {
    node.on('GET', '/slow', { status: 200, body: {}, delayMs: 1000 })
    const ac = new AbortController()
    setTimeout(() => ac.abort(new Error('stop')), 50)
    await expect(client.request('GET', '/slow', { signal: ac.signal })).rejects.toThrow('stop')
  })

  it('a 2xx body that is not JSON is a BAD_RESPONSE', async () => {
    node.on('GET', '/api/v1/functions', { status: 200, body: 'hello', headers: { 'content-type': 'text/plain' } })
    await expect(client.listFunctions()).rejects.toMatchObject({ code: null, name: 'BAD_RESPONSE', httpStatus: 200 })
  })
})

describe('callables', () => {
  it('function(rufid) executes with positional or named arguments', async () => {
    node.on('POST', `/api/v1/functions/${SHORT}/execute`, (req) => {
      const args = (req.body as { arguments: unknown }).arguments
      const [a, b] = Array.isArray(args) ? args as number[] : [(args as { a: number }).a, (args as { b: number }).b]
      return { status: 200, body: { result: a! + b!, status: 'success', execution_time_ms: 1, execution_id: 'ex' } }
    })
    const add = client.function<number>(SHORT)
    expect(add.rufid).toBe(SHORT)
    expect(add.resolution).toBeUndefined()
    expect(await add(2, 3)).toBe(5)
    expect(node.last.body).toEqual({ arguments: [2, 3] })
    expect(await add.named({ a: 4, b: 5 })).toBe(9)
    expect(node.last.body).toEqual({ arguments: { a: 4, b: 5 } })
    expect(await add.execute([1, 1])).toMatchObject({ result: 2, status: 'success', execution_id: 'ex' })
  })

  it('a run reported with another status rejects with 1007 (1004 for timeout)', async () => {
    node.on('POST', `/api/v1/functions/${SHORT}/execute`, { status: 200, body: { result: null, status: 'error', error: { message: 'it threw' } } })
    const err = await client.function(SHORT)().catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ExecutionFailedError)
    expect((err as Error).message).toBe('it threw')
    node.on('POST', `/api/v1/functions/${SHORT}/execute`, { status: 200, body: { result: null, status: 'timeout' } })
    expect(await client.function(SHORT)().catch((e: unknown) => e)).toBeInstanceOf(ExecutionTimeoutError)
  })

  it('a node error on call is the typed error', async () => {
    node.on('POST', `/api/v1/functions/${SHORT}/execute`, { status: 422, body: errorBody(1007, 'EXECUTION_FAILED', 'Error: nope') })
    await expect(client.function(SHORT)(1)).rejects.toBeInstanceOf(ExecutionFailedError)
  })

  it('function() refuses a malformed RUFID at once', () => {
    expect(() => client.function('x')).toThrow(InvalidRufidError)
  })

  it('importFunction resolves first; its callable is named after the function', async () => {
    node.on('POST', '/api/v1/functions/resolve', { status: 200, body: { rufid: `rufid:${SHORT}:v1:t`, function_name: 'add', version: 'v1' } })
    node.on('POST', `/api/v1/functions/${SHORT}/execute`, { status: 200, body: { result: 5, status: 'success' } })
    const add = await client.importFunction<number>(SHORT)
    expect(add.name).toBe('add')
    expect(add.resolution).toMatchObject({ function_name: 'add' })
    expect(await add(2, 3)).toBe(5)
  })

  it('importFunction of an unknown RUFID rejects with 1002 naming it', async () => {
    node.on('POST', '/api/v1/functions/resolve', { status: 404, body: errorBody(1002, 'RUFID_NOT_FOUND', 'RUFID AAAAAAAAAAAA does not exist') })
    const err = await client.importFunction('AAAAAAAAAAAA').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RufidNotFoundError)
    expect((err as Error).message).toContain('AAAAAAAAAAAA')
    expect((err as Error).message).toContain(node.url)
    expect((err as SvcError).details).toMatchObject({ rufid: 'AAAAAAAAAAAA' })
    expect((err as Error).cause).toBeInstanceOf(RufidNotFoundError)
  })

  it('importFunction of a malformed RUFID rejects with 1001 naming it, without a request', async () => {
    const err = await client.importFunction('no-such-thing').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(InvalidRufidError)
    expect((err as Error).message).toContain('"no-such-thing" is not a RUFID')
    expect(node.requests).toHaveLength(0)
  })
})
