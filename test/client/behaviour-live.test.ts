/**
 * The shared behaviour list (`clients/behaviour.json`) run by the TypeScript client against a real
 * node (`svc-node start` from dist/, native auth, test mode), plus the check of the shared
 * vocabulary (`clients/operations.json`) against the /openapi.json that node serves. The Python
 * (tests/test_behaviour_live.py) and Go (behaviour_live_test.go) suites run the same list.
 * Needs `npm run build`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ExecutionFailedError, InvalidRufidError, NotFoundError, PermissionDeniedError, PROTOCOL_VERSION, RufidNotFoundError, SvcClient,
  ValidationFailedError, computeRufid, type SvcError,
} from '../../src/client/index.js'
import { removeDir, startDaemonProcess, type DaemonProcess } from '../fixtures/daemon-process.js'
import { loadBehaviour, loadVocabulary, routeKey } from './vocabulary.js'

const ADMIN_KEY = 'svck_ts-behaviour-test_0123456789abcdefghijklmn'
const TENANT = 'default'

let daemon: DaemonProcess
let admin: SvcClient

beforeAll(async () => {
  daemon = await startDaemonProcess({
    env: { AUTH_PROVIDER: 'native', ENABLE_TEST_MODE: 'true', DEPLOYMENT_MODE: 'test', ADMIN_API_KEY: ADMIN_KEY, SVC_SANDBOX_WORKERS: '1' },
  })
  admin = new SvcClient({ url: daemon.url, token: ADMIN_KEY, timeoutMs: 20_000 })
})

afterAll(async () => {
  await daemon?.stop()
  if (daemon) removeDir(daemon.dataDir)
})

/** The error a promise rejects with (fails when it resolves). */
async function rejectionOf(promise: Promise<unknown>): Promise<SvcError> {
  try {
    await promise
  } catch (err) {
    return err as SvcError
  }
  throw new Error('expected a rejection, the call succeeded')
}

const js = (name: string, params: string, body: string): { function_name: string; signature: string; language: string; source_code: string } => ({
  function_name: name, signature: `(${params})`, language: 'javascript', source_code: `function ${name}(${params}) {\n  ${body}\n}\n`,
})

const manifestOf = (name: string): Record<string, unknown> => ({
  schemaVersion: '1.0', name, entrypoint: `main:${name}`, runtime: { language: 'javascript', version: '20' },
})

const scenarios: Record<string, () => Promise<void>> = {
  async create_resolve_execute_delete() {
    const def = js('bhAdd', 'a, b', 'return a + b')
    const local = computeRufid(def)
    const created = await admin.create(def)
    expect(created).toMatchObject({ created: true, rufid_short: local.rufid_short, full_rufid: `rufid:${local.rufid_short}:v1:${TENANT}`, version: 'v1' })
    expect(await admin.create(def)).toMatchObject({ created: false, rufid_short: local.rufid_short, full_rufid: created.full_rufid })
    const resolved = await admin.resolve(created.rufid_short)
    expect(resolved).toMatchObject({ rufid_short: local.rufid_short, full_rufid: created.full_rufid, function_name: 'bhAdd', version: 'v1' })
    expect(await admin.execute(created.rufid_short, { a: 2, b: 3 })).toMatchObject({ result: 5, rufid_short: local.rufid_short, full_rufid: created.full_rufid })
    expect((await admin.execute(created.rufid_short, [2, 3])).result).toBe(5)
    const v2 = await admin.create(js('bhAdd', 'a, b', 'return a + b + 0'))
    expect(v2).toMatchObject({ version: 'v2', created: true })
    expect(v2.rufid_short).not.toBe(created.rufid_short)
    expect((await admin.execute(created.rufid_short, { a: 2, b: 3 }, { version: 'v1' })).result).toBe(5)
    expect(await rejectionOf(admin.execute(created.rufid_short, { a: 2, b: 3 }, { version: 'v2' }))).toBeInstanceOf(RufidNotFoundError)
    const deleted = await admin.deleteFunction(created.rufid_short)
    expect(deleted.deleted).toContain(created.full_rufid)
    const gone = await rejectionOf(admin.resolve(created.rufid_short))
    expect(gone).toBeInstanceOf(RufidNotFoundError)
    expect(gone).toMatchObject({ code: 1002, httpStatus: 404 })
  },

  async errors_by_class() {
    const local = await rejectionOf(admin.resolve('not a rufid'))
    expect(local).toBeInstanceOf(InvalidRufidError)
    expect(local).toMatchObject({ code: 1001, httpStatus: undefined })
    const remote = await rejectionOf(admin.request('POST', '/api/v1/functions/resolve', { body: { rufid: 'bad!' } }))
    expect(remote).toBeInstanceOf(InvalidRufidError)
    expect(remote).toMatchObject({ code: 1001, name: 'INVALID_RUFID', httpStatus: 400 })
    const missing = await rejectionOf(admin.resolve('AAAAAAAAAAAA'))
    expect(missing).toBeInstanceOf(RufidNotFoundError)
    expect(missing).toMatchObject({ code: 1002, name: 'RUFID_NOT_FOUND', httpStatus: 404 })
    const noExecution = await rejectionOf(admin.getExecution('ex_00000000000000000000000000'))
    expect(noExecution).toBeInstanceOf(NotFoundError)
    expect(noExecution).toMatchObject({ code: 1011, name: 'NOT_FOUND', httpStatus: 404, details: { resource: 'execution' } })
    const anonymous = await rejectionOf(admin.with({ token: '' }).listFunctions())
    expect(anonymous).toBeInstanceOf(PermissionDeniedError)
    expect(anonymous).toMatchObject({ code: 1003, httpStatus: 401, unauthenticated: true })
    const invalid = await rejectionOf(admin.create({ function_name: 'bhBad', signature: '()', language: 'javascript' } as never))
    expect(invalid).toBeInstanceOf(ValidationFailedError)
    expect(invalid).toMatchObject({ code: 1006, name: 'VALIDATION_FAILED' })
    expect(invalid.message).not.toBe('')
    const boom = await admin.create(js('bhBoom', '', "throw new Error('boom')"))
    const failed = await rejectionOf(admin.execute(boom.rufid_short))
    expect(failed).toBeInstanceOf(ExecutionFailedError)
    expect(failed).toMatchObject({ code: 1007, name: 'EXECUTION_FAILED' })
    expect(failed.httpStatus).toBeGreaterThanOrEqual(400)
  },

  async remote_function_call() {
    const created = await admin.create(js('bhSum', 'a, b', 'return a + b'))
    const sum = admin.function<number>(created.rufid_short)
    expect(await sum(2, 3)).toBe(5)
    expect(await sum.named({ a: 20, b: 22 })).toBe(42)
    const unknown = await rejectionOf(admin.importFunction('AAAAAAAAAAAA'))
    expect(unknown).toBeInstanceOf(RufidNotFoundError)
    expect(unknown.message).toContain('AAAAAAAAAAAA')
  },

  async publish() {
    const published = await admin.publish({ name: 'bhTriple', runtime: 'node20', source: 'function bhTriple(x) {\n  return 3 * x\n}\n' })
    expect(published.rufid_short).toMatch(/^[A-Za-z0-9]{12}$/)
    expect(published.full_rufid).toBe(`rufid:${published.rufid_short}:${published.version}:${TENANT}`)
    const resolved = await admin.resolve(published.rufid_short)
    expect(resolved).toMatchObject({ function_name: 'bhTriple', language: 'javascript', full_rufid: published.full_rufid })
    expect((await admin.execute(published.rufid_short, [14])).result).toBe(42)
  },

  async async_execution_logs() {
    const created = await admin.create(js('bhGreet', 'event', "console.log('hello ' + event.name)\n  return 'hi ' + event.name"))
    const ref = await admin.executeAsync(created.rufid_short, { name: 'ada' })
    expect(ref.execution_id).toMatch(/^ex_/)
    expect(ref.rufid_short).toBe(created.rufid_short)
    const done = await admin.waitExecution(ref.execution_id, { timeoutMs: 20_000 })
    expect(done).toMatchObject({ status: 'success', result: 'hi ada' })
    const record = await admin.getExecution(ref.execution_id)
    expect(record).toMatchObject({ tenant_id: TENANT, rufid_short: created.rufid_short, full_rufid: created.full_rufid })
    const logs = await admin.executionLogs(ref.execution_id)
    expect(JSON.stringify(logs.logs)).toContain('hello ada')
    expect(logs).toMatchObject({ rufid_short: created.rufid_short, full_rufid: created.full_rufid })
  },

  async metadata_list_telemetry() {
    const def = js('bhSquare', 'x', 'return x * x')
    const created = await admin.create({ ...def, tags: ['bh-meta'] })
    expect((await admin.execute(created.rufid_short, [7])).result).toBe(49)
    const meta = await admin.getFunction(created.rufid_short)
    expect(meta).toMatchObject({ rufid: created.rufid_short, rufid_short: created.rufid_short, full_rufid: created.full_rufid, function_name: 'bhSquare' })
    expect(meta.metrics?.usage_count).toBeGreaterThanOrEqual(1)
    const listed = await admin.listFunctions({ search: 'bhSquare' })
    expect(listed.items.map((f) => f.rufid_short)).toContain(created.rufid_short)
    const source = await admin.getFunctionSource(created.rufid_short)
    expect(source).toMatchObject({
      source_code: def.source_code, signature: def.signature, rufid_short: created.rufid_short, full_rufid: created.full_rufid, version: 'v1',
    })
    expect(source.imports.typescript).toContain(created.rufid_short)
    expect(source.imports.python).toContain(created.rufid_short)
    expect(source.imports.go).toContain(created.rufid_short)
    const t = await admin.telemetry(created.rufid_short, '5m')
    expect(t).toMatchObject({ window: '5m', rufid_short: created.rufid_short, full_rufid: created.full_rufid })
    expect(t.executions).toBeGreaterThanOrEqual(1)
    const series = await admin.telemetrySeries(created.rufid_short, { window: '1h', buckets: 6 })
    expect(series).toMatchObject({ window: '1h', rufid_short: created.rufid_short, full_rufid: created.full_rufid })
    expect(series.buckets).toHaveLength(6)
    expect(series.buckets.reduce((n, b) => n + b.executions, 0)).toBeGreaterThanOrEqual(1)
  },

  async search_paging() {
    for (const n of ['One', 'Two', 'Three']) await admin.create({ ...js(`bhPage${n}`, 'x', 'return x'), tags: ['bh-paging'] })
    const first = await admin.search('', { tags: ['bh-paging'], limit: 2 })
    expect(first.items).toHaveLength(2)
    expect(first.pagination).toMatchObject({ total: 3, limit: 2, offset: 0, next_offset: 2 })
    const second = await admin.search('', { tags: ['bh-paging'], limit: 2, offset: 2 })
    expect(second.items).toHaveLength(1)
    expect(second.pagination.next_offset).toBeNull()
    expect(first.aggregations.language.javascript).toBe(3)
    expect(new Set([...first.items, ...second.items].map((f) => f.rufid_short)).size).toBe(3)
    const [author, count] = Object.entries(first.aggregations.author)[0]!
    expect(count).toBe(3)
    expect((await admin.search('', { tags: ['bh-paging'], author })).pagination.total).toBe(3)
    expect((await admin.search('', { tags: ['bh-paging'], author: `${author}-other` })).pagination.total).toBe(0)
  },

  async deploy_invoke_branch() {
    const name = 'bhMul'
    const first = await admin.deploy({ ...js(name, 'a, b', 'return a * b'), manifest: manifestOf(name), branch: 'staging' })
    expect(first).toMatchObject({ branch: 'staging', branch_created: true, moved: true, previous_version: null, version: 'v1' })
    expect(first.branch_key).toMatch(/^svcbk_/)
    expect((await admin.invoke<number>(name, 'staging', { a: 6, b: 7 })).result).toBe(42)
    const second = await admin.deploy({ ...js(name, 'a, b', 'return a * b * 10'), manifest: manifestOf(name), branch: 'staging', branch_key: first.branch_key })
    expect(second).toMatchObject({ moved: true, previous_version: 'v1', version: 'v2', branch_created: false })
    const invoked = await admin.invoke<number>(name, 'staging', [6, 7])
    expect(invoked).toMatchObject({ result: 420, version: 'v2', branch: 'staging', rufid_short: second.rufid_short, full_rufid: second.full_rufid })
    const refused = await rejectionOf(admin.deploy({ ...js(name, 'a, b', 'return 0'), manifest: manifestOf(name), branch: 'staging' }))
    expect(refused).toBeInstanceOf(PermissionDeniedError)
  },

  async versions_branches_export() {
    const name = 'bhVer'
    const manifest = manifestOf(name)
    const v1 = await admin.deploy({ ...js(name, 'x', 'return x + 1'), manifest, branch: 'main' })
    const v2 = await admin.deploy({ ...js(name, 'x', 'return x + 2'), manifest, branch: 'main', branch_key: v1.branch_key })
    const versions = await admin.listVersions(v2.rufid_short)
    expect(versions.function_name).toBe(name)
    expect(versions.versions.map((v) => v.version)).toEqual(['v1', 'v2'])
    expect(versions.versions.map((v) => v.rufid_short)).toEqual([v1.rufid_short, v2.rufid_short])
    expect(versions.heads).toEqual([expect.objectContaining({ branch: 'main', version: 'v2', full_rufid: v2.full_rufid })])
    const heads = await admin.listBranches(name)
    expect(heads).toEqual([expect.objectContaining({ function_name: name, branch: 'main', version: 'v2', rufid_short: v2.rufid_short })])
    const exported = await admin.exportFunction(v1.rufid_short, 'v1')
    expect(exported).toMatchObject({ version: 'v1', function_name: name, manifest, rufid_short: v1.rufid_short, full_rufid: v1.full_rufid })
    expect(exported.lockfile).toMatchObject({ schemaVersion: '1.0' })
  },

  async subscription_execution_event() {
    const created = await admin.create(js('bhEvent', 'x', 'return x'))
    const executions = await admin.subscribeExecutions(created.rufid_short)
    const system = await admin.subscribeSystem()
    try {
      const run = await admin.execute(created.rufid_short, [1])
      const event = await executions.nextEvent(20_000)
      expect(event).toMatchObject({
        execution_id: run.execution_id, rufid_short: created.rufid_short, full_rufid: created.full_rufid, status: 'success', tenant_id: TENANT,
      })
      expect((await system.nextEvent(20_000))?.type).toBe('node.started')
    } finally {
      await executions.close()
      await system.close()
    }
  },

  async api_key_mint_revoke() {
    const target = await admin.create(js('bhKeyed', 'x', 'return x + 1'))
    const minted = await admin.createApiKey({ name: 'bh-exec', scopes: ['functions:execute'], expires_days: 1 })
    expect(minted.api_key).toMatch(/^svck_/)
    const keyed = admin.with({ token: minted.api_key })
    expect((await keyed.execute(target.rufid_short, [1])).result).toBe(2)
    const denied = await rejectionOf(keyed.create(js('bhNope', '', 'return 1')))
    expect(denied).toBeInstanceOf(PermissionDeniedError)
    expect(denied).toMatchObject({ httpStatus: 403, unauthenticated: false })
    const listed = await admin.listApiKeys()
    const mine = listed.find((k) => k.key_id === minted.key_id)
    expect(mine).toMatchObject({ name: 'bh-exec', scopes: ['functions:execute'] })
    expect(JSON.stringify(listed)).not.toContain(minted.api_key)
    const revoked = await admin.revokeApiKey(minted.key_id)
    expect(revoked).toMatchObject({ key_id: minted.key_id })
    expect(revoked.revoked_at).toMatch(/^\d{4}-/)
    const refused = await rejectionOf(keyed.execute(target.rufid_short, [1]))
    expect(refused).toBeInstanceOf(PermissionDeniedError)
    expect(refused).toMatchObject({ httpStatus: 401, unauthenticated: true })
  },

  async native_execute() {
    const def = js('bhNative', 'a, b', 'return a * b')
    const short = computeRufid(def).rufid_short
    const run = await admin.executeNative({ rufid: `rufid:${short}`, function_name: def.function_name, source_code: def.source_code, input_data: { a: 6, b: 7 } })
    expect(run).toMatchObject({ result: 42, registered: true })
  },

  async node_and_federation_reads() {
    expect((await admin.health()).status).toBe('ok')
    expect((await admin.readiness()).status).toBe('ready')
    const about = await admin.nodeInfo()
    expect(about).toMatchObject({ name: 'svc-node', ready: true, status: 'ready', auth_mode: 'native', federation: { enabled: false }, protocol_version: PROTOCOL_VERSION })
    const me = await admin.whoami()
    expect(me).toMatchObject({ tenant_id: TENANT, admin: true })
    expect(me.permissions).toContain('rufid.admin')
    const audit = await admin.listAuditEntries({ limit: 5 })
    expect(audit.items.length).toBeGreaterThan(0)
    expect(audit.items.length).toBeLessThanOrEqual(5)
    // a node without federation: 409 federation_disabled (nothing was unreachable: not 2001)
    for (const refused of [await rejectionOf(admin.listNodes()), await rejectionOf(admin.federationMembers())]) {
      expect(refused).toBeInstanceOf(ValidationFailedError)
      expect(refused).toMatchObject({ httpStatus: 409, details: { reason: 'federation_disabled' } })
    }
  },
}

describe('the shared behaviour list (clients/behaviour.json), TypeScript client, live node', () => {
  const listed = loadBehaviour().scenarios.map((s) => s.id)

  it('implements exactly the scenarios of the list', () => {
    expect(Object.keys(scenarios).sort()).toEqual([...listed].sort())
  })

  for (const id of listed) {
    it(id, async () => {
      const run = scenarios[id]
      if (!run) throw new Error(`scenario ${id} of clients/behaviour.json has no TypeScript implementation`)
      await run()
    }, 60_000)
  }
})

describe('clients/operations.json against the /openapi.json of a live node', () => {
  it('every route the node documents is a client operation or listed with its reason, and every operation route exists', async () => {
    const vocabulary = loadVocabulary()
    const doc = await admin.request<{ paths: Record<string, Record<string, unknown>> }>('GET', '/openapi.json')
    const methods = new Set(['get', 'post', 'put', 'patch', 'delete'])
    const served = new Set<string>()
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const method of Object.keys(item)) if (methods.has(method)) served.add(routeKey(method, path))
    }
    const covered = new Set([
      ...vocabulary.operations.flatMap((o) => (o.http ? [routeKey(...o.http)] : [])),
      ...vocabulary.not_client_operations.map((o) => routeKey(...o.http)),
    ])
    const uncovered = [...served].filter((r) => !covered.has(r))
    expect(uncovered, 'routes of /openapi.json that no client operation calls: add them to clients/operations.json (and the three clients)').toEqual([])
    const missing = vocabulary.operations.flatMap((o) => (o.http && !served.has(routeKey(...o.http)) ? [`${o.id}: ${o.http.join(' ')}`] : []))
    expect(missing, 'operations whose route the node does not document').toEqual([])
  })
})
