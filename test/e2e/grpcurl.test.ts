// The gRPC door through a real external client: grpcurl (Go), using server reflection only.
// grpcurl is installed by scripts/ensure-grpcurl.sh into .tools/bin; without it these tests fail.
// JSON field names are the proto's own (snake_case): the reflected descriptors carry json_name = name.
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGrpcServer, type GrpcServer } from '../../src/api/grpc/server.js'
import { computeRufid } from '../../src/core/rufid.js'
import type { Engine } from '../../src/engine/index.js'
import { createTestEngine, principal, realSandbox } from '../fixtures/engine.js'
import { addJs } from '../fixtures/functions.js'
import { GRPCURL, GRPCURL_MISSING as MISSING, grpcurl } from '../fixtures/grpcurl.js'

describe('gRPC door with grpcurl', () => {
  let engine: Engine
  let server: GrpcServer
  let address: string
  let key: string
  const rufidShort = computeRufid(addJs).rufid_short
  const auth = () => ['-H', `authorization: Bearer ${key}`]

  // a missing grpcurl fails every test below (with MISSING), it never skips them
  beforeAll(async () => {
    ;({ engine } = await createTestEngine({ sandbox: await realSandbox(1) }))
    server = createGrpcServer({ host: '127.0.0.1', port: 0, maxMessageBytes: 1024 * 1024, shutdownGraceMs: 500 }, { engine, logger: pino({ level: 'silent' }) })
    address = `127.0.0.1:${(await server.start()).port}`
    key = (await engine.keys.mintFor('acme', 'test', { name: 'grpcurl', scopes: ['admin'] })).api_key
  })
  afterAll(async () => {
    await server?.stop()
    await engine?.stop()
  })

  it('grpcurl is installed in .tools/bin', () => {
    expect(existsSync(GRPCURL), MISSING).toBe(true)
  })

  it('list shows svc.v1.SvcProtocolService (and the health service)', async () => {
    const r = await grpcurl(['-plaintext', address, 'list'])
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout.split('\n')).toEqual(expect.arrayContaining(['svc.v1.SvcProtocolService', 'grpc.health.v1.Health']))
  })

  it('describe shows the four RPCs and the spec\'s field numbers', async () => {
    const svc = await grpcurl(['-plaintext', address, 'describe', 'svc.v1.SvcProtocolService'])
    expect(svc.code, svc.stderr).toBe(0)
    expect(svc.stdout).toContain('rpc CreateRUFID ( .svc.v1.CreateRUFIDRequest ) returns ( .svc.v1.CreateRUFIDResponse );')
    expect(svc.stdout).toContain('rpc ResolveRUFID ( .svc.v1.ResolveRUFIDRequest ) returns ( .svc.v1.ResolveRUFIDResponse );')
    expect(svc.stdout).toContain('rpc ExecuteFunction ( .svc.v1.ExecuteFunctionRequest ) returns ( .svc.v1.ExecuteFunctionResponse );')
    expect(svc.stdout).toContain('rpc StreamExecutions ( .svc.v1.StreamRequest ) returns ( stream .svc.v1.ExecutionEvent );')
    const req = await grpcurl(['-plaintext', address, 'describe', 'svc.v1.CreateRUFIDRequest'])
    for (const field of ['string function_name = 1;', 'string source_code = 2;', 'string signature = 3;', 'string language = 4;', 'repeated string tags = 5;']) {
      expect(req.stdout).toContain(field)
    }
    const res = await grpcurl(['-plaintext', address, 'describe', 'svc.v1.CreateRUFIDResponse'])
    for (const field of ['string rufid = 1;', 'string import_statement = 2;', 'string share_url = 3;']) expect(res.stdout).toContain(field)
  })

  it('CreateRUFID → ResolveRUFID → ExecuteFunction (add(2, 3) = 5)', async () => {
    const created = await grpcurl(['-plaintext', ...auth(), '-d', JSON.stringify(addJs), address, 'svc.v1.SvcProtocolService/CreateRUFID'])
    expect(created.code, created.stderr).toBe(0)
    expect(JSON.parse(created.stdout)).toMatchObject({ rufid: `rufid:${rufidShort}:v1:acme`, rufid_short: rufidShort, full_rufid: `rufid:${rufidShort}:v1:acme`, version: 'v1', created: true })
    // a repeat create of identical content: grpcurl (no -emit-defaults) prints `created: false`
    // only because the field has explicit presence (proto3 drops an implicit false)
    const repeat = await grpcurl(['-plaintext', ...auth(), '-d', JSON.stringify(addJs), address, 'svc.v1.SvcProtocolService/CreateRUFID'])
    expect(repeat.code, repeat.stderr).toBe(0)
    expect(JSON.parse(repeat.stdout)).toMatchObject({ rufid: `rufid:${rufidShort}:v1:acme`, created: false })

    const resolved = await grpcurl(['-plaintext', ...auth(), '-d', JSON.stringify({ rufid: rufidShort, version: 'v1' }), address, 'svc.v1.SvcProtocolService/ResolveRUFID'])
    expect(resolved.code, resolved.stderr).toBe(0)
    expect(JSON.parse(resolved.stdout)).toMatchObject({ rufid: `rufid:${rufidShort}:v1:acme`, accessible: true, function_name: 'add' })

    const body = JSON.stringify({ rufid: rufidShort, arguments_json: JSON.stringify({ a: 2, b: 3 }) })
    const run = await grpcurl(['-plaintext', ...auth(), '-d', body, address, 'svc.v1.SvcProtocolService/ExecuteFunction'])
    expect(run.code, run.stderr).toBe(0)
    expect(JSON.parse(run.stdout)).toMatchObject({ result_json: '5', status: 'success', rufid_short: rufidShort, full_rufid: `rufid:${rufidShort}:v1:acme` })
  })

  it('errors carry the gRPC status and the svc-error-* trailers', async () => {
    const r = await grpcurl(['-plaintext', '-v', ...auth(), '-d', '{"rufid": "not a rufid"}', address, 'svc.v1.SvcProtocolService/ResolveRUFID'])
    expect(r.code).toBe(64 + 3) // grpcurl exits with 64 + the status code (INVALID_ARGUMENT)
    expect(r.stderr).toMatch(/Code: InvalidArgument/)
    expect(r.stdout).toMatch(/svc-error-code: 1001/)
    expect(r.stdout).toMatch(/svc-error-name: INVALID_RUFID/)
    const anonymous = await grpcurl(['-plaintext', '-d', '{"rufid": "AAAAAAAAAAAA"}', address, 'svc.v1.SvcProtocolService/ResolveRUFID'])
    expect(anonymous.stderr).toMatch(/Code: Unauthenticated/)
  })

  it('StreamExecutions (-max-time) prints the event of an execution', async () => {
    if (!existsSync(GRPCURL)) throw new Error(MISSING)
    const child = spawn(GRPCURL, ['-plaintext', '-v', '-max-time', '10', ...auth(), '-d', JSON.stringify({ rufid: rufidShort }), address, 'svc.v1.SvcProtocolService/StreamExecutions'])
    let stdout = ''
    let stderr = ''
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve))
    const waitFor = (pattern: RegExp) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${pattern} in grpcurl output:\n${stdout}\n${stderr}`)), 10_000)
        const check = () => {
          if (pattern.test(stdout)) {
            clearTimeout(timer)
            resolve()
          }
        }
        child.stdout.on('data', (d: Buffer) => {
          stdout += d.toString()
          check()
        })
        check()
      })
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    try {
      // the server sends the response headers once the subscription is live
      await waitFor(/Response headers received/)
      const acme = principal('acme')
      const record = await engine.executions.execute(acme, engine.functions.target(acme, rufidShort), { a: 20, b: 22 })
      await waitFor(new RegExp(record.execution_id))
      const json = stdout.slice(stdout.indexOf('{', stdout.indexOf('Response contents:')))
      const event = JSON.parse(json.slice(0, json.indexOf('\n}') + 2)) as Record<string, unknown>
      expect(event).toMatchObject({ execution_id: record.execution_id, rufid_short: rufidShort, tenant_id: 'acme', function_name: 'add', status: 'success' })
    } finally {
      child.kill('SIGTERM')
      await exited
    }
  })

  it('grpc.health.v1.Health/Check answers SERVING', async () => {
    const all = await grpcurl(['-plaintext', address, 'grpc.health.v1.Health/Check'])
    expect(all.code, all.stderr).toBe(0)
    expect(JSON.parse(all.stdout)).toEqual({ status: 'SERVING' })
    const svc = await grpcurl(['-plaintext', '-d', '{"service": "svc.v1.SvcProtocolService"}', address, 'grpc.health.v1.Health/Check'])
    expect(JSON.parse(svc.stdout)).toEqual({ status: 'SERVING' })
  })
})
