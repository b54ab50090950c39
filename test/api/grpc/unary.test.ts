// CreateRUFID, ResolveRUFID and ExecuteFunction through a real grpc-js client, with every error path.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as grpc from '@grpc/grpc-js'
import type { CreateRUFIDRequest } from '../../../src/api/grpc/generated/svc/v1/CreateRUFIDRequest.js'
import type { ExecuteFunctionRequest } from '../../../src/api/grpc/generated/svc/v1/ExecuteFunctionRequest.js'
import type { ResolveRUFIDRequest } from '../../../src/api/grpc/generated/svc/v1/ResolveRUFIDRequest.js'
import { notFound } from '../../../src/core/errors.js'
import { computeRufid } from '../../../src/core/rufid.js'
import { grpcErrorOf } from '../../../src/api/grpc/errors.js'
import { realSandbox } from '../../fixtures/engine.js'
import { addJs, spinJs, throwsJs } from '../../fixtures/functions.js'
import { bearer, createRufid, executeFunction, failure, resolveRufid, startGrpcHarness, statusOf, type GrpcHarness, type SvcClient } from './helpers.js'

describe('gRPC door: unary RPCs', () => {
  let h: GrpcHarness
  let client: SvcClient
  const admin = () => bearer(h.adminKey)
  const create = (req: CreateRUFIDRequest, md = admin()) => createRufid(client, req, md)
  const resolve = (req: ResolveRUFIDRequest, md = admin()) => resolveRufid(client, req, md)
  const execute = (req: ExecuteFunctionRequest, md = admin()) => executeFunction(client, req, md)
  const expected = computeRufid(addJs)

  beforeAll(async () => {
    h = await startGrpcHarness({ sandbox: await realSandbox(1) })
    client = h.client()
  })
  afterAll(async () => {
    await h?.close()
  })

  it('create → resolve → execute answers 5 for add(2, 3), with the fields of §2.3, §2.7 and §4.1', async () => {
    const created = await create(addJs)
    expect(created).toEqual({
      rufid: `rufid:${expected.rufid_short}:v1:acme`,
      import_statement: `const add = (await import('svc://${expected.rufid_short}')).default`,
      share_url: `https://share.test/f/${expected.rufid_short}`,
      rufid_short: expected.rufid_short,
      version: 'v1',
      content_digest: expected.content_digest,
      api_endpoint: `/api/v1/functions/${expected.rufid_short}/execute`,
      created: true,
      // proto3 `optional`: present on the wire (the virtual oneof names it)
      _created: 'created',
      full_rufid: `rufid:${expected.rufid_short}:v1:acme`,
    })
    // identical content is idempotent, and `created: false` is sent (explicit presence), not left out
    const repeat = await create(addJs)
    expect(repeat).toMatchObject({ rufid: created.rufid, created: false, _created: 'created' })

    const resolved = await resolve({ rufid: expected.rufid_short, version: 'v1' })
    expect(resolved).toMatchObject({
      rufid: created.rufid,
      rufid_short: expected.rufid_short,
      version: 'v1',
      accessible: true,
      cached: false,
      content_digest: expected.content_digest,
      function_name: 'add',
      signature: '(a, b)',
      language: 'javascript',
      manifest_json: '',
      lockfile_json: '',
    })
    expect(resolved.function_id).not.toBe('')
    expect(resolved.resolution_time_ms).toBeTypeOf('number')
    expect((await resolve({ rufid: created.rufid })).cached).toBe(true)

    const run = await execute({ rufid: expected.rufid_short, arguments_json: JSON.stringify({ a: 2, b: 3 }) })
    expect(JSON.parse(run.result_json)).toBe(5)
    expect(run.status).toBe('success')
    expect(run.execution_id).toMatch(/^ex_/)
    expect(run.execution_time_ms).toBeGreaterThan(0)
    const positional = await execute({ rufid: created.rufid, arguments_json: '[40, 2]' })
    expect(positional.result_json).toBe('42')
  })

  it('carries manifest and lockfile as JSON text, and limits', async () => {
    const manifest = { schemaVersion: '1.0', name: 'mul', entrypoint: 'mul:mul', runtime: { language: 'javascript', version: '20' } }
    const def = { function_name: 'mul', signature: '(a, b)', language: 'javascript', source_code: 'function mul(a, b) { return a * b }' }
    const created = await create({ ...def, description: 'multiplies', tags: ['math'], manifest_json: JSON.stringify(manifest), limits: { timeout_ms: 500 } })
    const resolved = await resolve({ rufid: created.rufid })
    expect(JSON.parse(resolved.manifest_json)).toMatchObject(manifest)
    expect(resolved.lockfile_json === '' ? null : JSON.parse(resolved.lockfile_json)).toSatisfy((l: unknown) => l === null || typeof l === 'object')
    expect((await execute({ rufid: created.rufid_short, arguments_json: '{"a": 6, "b": 7}' })).result_json).toBe('42')
  })

  it('gives the manifest back as the text it was sent as (export is byte for byte through gRPC too)', async () => {
    const text = '{\n\t"name": "mul3",  "schemaVersion": "1.0",\n\t"runtime": {"language": "javascript", "version": "20"}\n}\n'
    const def = { function_name: 'mul3', signature: '(a, b)', language: 'javascript', source_code: 'function mul3(a, b) { return a * b * 3 }' }
    const created = await create({ ...def, manifest_json: text })
    const resolved = await resolve({ rufid: created.rufid })
    expect(resolved.manifest_json).toBe(text)
    expect(JSON.parse(resolved.lockfile_json)).toMatchObject({ schemaVersion: '1.0' }) // generated: its object as JSON
  })

  it('1001 malformed RUFID → INVALID_ARGUMENT', async () => {
    const err = await failure(resolve({ rufid: 'not-a-rufid!' }))
    expect(statusOf(err)).toEqual({ code: 'INVALID_ARGUMENT', svcCode: '1001', svcName: 'INVALID_RUFID' })
    expect(err.details).toMatch(/malformed RUFID/)
    expect(JSON.parse(String(err.metadata.get('svc-error-details')[0]))).toEqual({ rufid: 'not-a-rufid!' })
    expect(statusOf(await failure(execute({ rufid: 'short' })))).toMatchObject({ code: 'INVALID_ARGUMENT', svcCode: '1001' })
  })

  it('1002 unknown RUFID → NOT_FOUND (also another tenant\'s full RUFID)', async () => {
    const err = await failure(resolve({ rufid: 'AAAAAAAAAAAA' }))
    expect(statusOf(err)).toEqual({ code: 'NOT_FOUND', svcCode: '1002', svcName: 'RUFID_NOT_FOUND' })
    const other = await failure(execute({ rufid: `rufid:${expected.rufid_short}:v1:globex` }))
    expect(statusOf(other)).toEqual({ code: 'NOT_FOUND', svcCode: '1002', svcName: 'RUFID_NOT_FOUND' })
    expect(statusOf(await failure(resolve({ rufid: expected.rufid_short, version: 'v9' })))).toMatchObject({ code: 'NOT_FOUND' })
  })

  it('1011 (something not found that is not a function) → NOT_FOUND with its code, name and details.resource', () => {
    // no RPC of the proto looks up an execution, a receipt, a key or a branch: the door's one mapping is checked directly
    const { status } = grpcErrorOf(notFound('execution', 'execution ex_00000000000000000000000000 does not exist', { execution_id: 'ex_00000000000000000000000000' }))
    expect(grpc.status[status.code]).toBe('NOT_FOUND')
    expect(status.metadata.get('svc-error-code')).toEqual(['1011'])
    expect(status.metadata.get('svc-error-name')).toEqual(['NOT_FOUND'])
    expect(JSON.parse(String(status.metadata.get('svc-error-details')[0]))).toEqual({ resource: 'execution', execution_id: 'ex_00000000000000000000000000' })
  })

  it('1003 without credentials → UNAUTHENTICATED; with a wrong scope → PERMISSION_DENIED', async () => {
    const none = await failure(resolve({ rufid: expected.rufid_short }, bearer(undefined)))
    expect(statusOf(none)).toEqual({ code: 'UNAUTHENTICATED', svcCode: '1003', svcName: 'PERMISSION_DENIED' })
    const bad = await failure(resolve({ rufid: expected.rufid_short }, bearer('sk_not_a_real_key')))
    expect(statusOf(bad)).toEqual({ code: 'UNAUTHENTICATED', svcCode: '1003', svcName: 'PERMISSION_DENIED' })

    const reader = await h.mint('acme', ['functions:read'])
    const denied = await failure(create({ ...addJs, function_name: 'add2', source_code: 'function add2(a, b) { return a + b }' }, bearer(reader)))
    expect(statusOf(denied)).toEqual({ code: 'PERMISSION_DENIED', svcCode: '1003', svcName: 'PERMISSION_DENIED' })
    expect(statusOf(await failure(execute({ rufid: expected.rufid_short, arguments_json: '[1, 2]' }, bearer(reader))))).toMatchObject({ code: 'PERMISSION_DENIED' })
    // the reader may resolve
    expect((await resolve({ rufid: expected.rufid_short }, bearer(reader))).function_name).toBe('add')
    // a namespace outside the key's tenant is denied
    const outside = await failure(resolve({ rufid: expected.rufid_short }, bearer(h.adminKey, 'globex')))
    expect(statusOf(outside)).toEqual({ code: 'PERMISSION_DENIED', svcCode: '1003', svcName: 'PERMISSION_DENIED' })
  })

  it('x-svc-namespace narrows the tenant to a child namespace', async () => {
    const created = await create(addJs, bearer(h.adminKey, 'acme.team'))
    expect(created.rufid).toBe(`rufid:${expected.rufid_short}:v1:acme.team`)
    expect(created.created).toBe(true)
  })

  it('1004 an endless loop past its timeout → DEADLINE_EXCEEDED', async () => {
    const created = await create({ ...spinJs, limits: { timeout_ms: 200 } })
    const err = await failure(execute({ rufid: created.rufid_short }))
    expect(statusOf(err)).toEqual({ code: 'DEADLINE_EXCEEDED', svcCode: '1004', svcName: 'EXECUTION_TIMEOUT' })
    expect(JSON.parse(String(err.metadata.get('svc-error-details')[0])).execution_id).toMatch(/^ex_/)
  })

  it('1006 bad arguments and bad definitions → INVALID_ARGUMENT', async () => {
    const notJson = await failure(execute({ rufid: expected.rufid_short, arguments_json: '{not json' }))
    expect(statusOf(notJson)).toEqual({ code: 'INVALID_ARGUMENT', svcCode: '1006', svcName: 'VALIDATION_FAILED' })
    expect(notJson.details).toMatch(/arguments_json/)
    const notArgs = await failure(execute({ rufid: expected.rufid_short, arguments_json: '"a string"' }))
    expect(statusOf(notArgs)).toEqual({ code: 'INVALID_ARGUMENT', svcCode: '1006', svcName: 'VALIDATION_FAILED' })
    const badDef = await failure(create({ ...addJs, function_name: '' }))
    expect(statusOf(badDef)).toEqual({ code: 'INVALID_ARGUMENT', svcCode: '1006', svcName: 'VALIDATION_FAILED' })
    const badManifest = await failure(create({ ...addJs, manifest_json: '[1' }))
    expect(statusOf(badManifest)).toMatchObject({ code: 'INVALID_ARGUMENT', svcCode: '1006' })
  })

  it('1007 a throwing function → ABORTED', async () => {
    const created = await create(throwsJs)
    const err = await failure(execute({ rufid: created.rufid_short }))
    expect(statusOf(err)).toEqual({ code: 'ABORTED', svcCode: '1007', svcName: 'EXECUTION_FAILED' })
    expect(err.details).toMatch(/kaboom/)
  })

  it('audits every RPC and records svc_protocol_* metrics with protocol="grpc"', async () => {
    const { items } = await h.engine.auditLog.query({ tenant: 'acme', limit: 1000 })
    const ops = new Set(items.map((e) => `${e.operation}:${e.result}`))
    for (const op of ['rufid.create:success', 'rufid.resolve:success', 'rufid.execute:success', 'rufid.resolve:error', 'rufid.create:denied', 'rufid.execute:error']) {
      expect(ops, op).toContain(op)
    }
    const unauthenticated = (await h.engine.auditLog.query({ operation: 'rufid.resolve', limit: 1000 })).items.filter((e) => e.result === 'unauthenticated')
    expect(unauthenticated.length).toBeGreaterThanOrEqual(2)
    expect(items.every((e) => e.ip === '127.0.0.1')).toBe(true)
    // refused calls still name the RUFID they asked for
    expect(items.find((e) => e.operation === 'rufid.execute' && e.result === 'denied')).toMatchObject({ rufid: expected.rufid_short, code: 1003 })

    const text = await h.engine.metrics.registry.metrics()
    expect(text).toMatch(/svc_protocol_requests_total\{protocol="grpc",operation="rufid.execute",status="OK"\} \d+/)
    expect(text).toMatch(/svc_protocol_requests_total\{protocol="grpc",operation="rufid.resolve",status="NOT_FOUND"\} \d+/)
    expect(text).toMatch(/svc_protocol_errors_total\{protocol="grpc",code="1007"\} 1/)
    expect(text).toMatch(/svc_protocol_request_duration_seconds_count\{protocol="grpc",operation="rufid.create"\} \d+/)
  })
})
