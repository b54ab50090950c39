// The gRPC server around the service: health, reflection, message limits, TLS/mTLS, local mode,
// rate limits and graceful stop.
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import * as grpc from '@grpc/grpc-js'
import * as protoLoader from '@grpc/proto-loader'
import { protoPath as healthProtoPath } from 'grpc-health-check'
import { pino } from 'pino'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createGrpcServer } from '../../../src/api/grpc/server.js'
import { computeRufid } from '../../../src/core/rufid.js'
import { createTestEngine } from '../../fixtures/engine.js'
import { addJs } from '../../fixtures/functions.js'
import { createTestCa } from '../../fixtures/test-ca.js'
import { bearer, createRufid, failure, resolveRufid, startGrpcHarness, statusOf, svcClient, type GrpcHarness } from './helpers.js'

const reflectionProtoPath = join(dirname(createRequire(import.meta.url).resolve('@grpc/reflection/package.json')), 'build', 'proto', 'grpc', 'reflection', 'v1', 'reflection.proto')

type AnyClient = grpc.Client & Record<string, (...args: unknown[]) => unknown>
type ClientCtor = new (address: string, credentials: grpc.ChannelCredentials) => AnyClient

function constructorOf(file: string, includeDir: string, name: string): ClientCtor {
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(file, { keepCase: true, defaults: true, enums: String, includeDirs: [includeDir] }))
  return name.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], pkg) as ClientCtor
}
const HealthClient = constructorOf(healthProtoPath, dirname(healthProtoPath), 'grpc.health.v1.Health')
const ReflectionClient = constructorOf(reflectionProtoPath, dirname(reflectionProtoPath), 'grpc.reflection.v1.ServerReflection')

function healthCheck(address: string, service: string): Promise<string> {
  const c = new HealthClient(address, grpc.credentials.createInsecure())
  return new Promise((resolve, reject) => {
    c.Check!({ service }, (err: grpc.ServiceError | null, res?: { status: string }) => {
      c.close()
      if (err) reject(err)
      else resolve(res!.status)
    })
  })
}

describe('gRPC server: health and reflection', () => {
  let h: GrpcHarness
  beforeAll(async () => {
    h = await startGrpcHarness()
  })
  afterAll(async () => {
    await h?.close()
  })

  it('health answers SERVING for "" and for svc.v1.SvcProtocolService; NOT_FOUND for others', async () => {
    expect(await healthCheck(h.address, '')).toBe('SERVING')
    expect(await healthCheck(h.address, 'svc.v1.SvcProtocolService')).toBe('SERVING')
    const err = (await healthCheck(h.address, 'no.such.Service').catch((e: unknown) => e)) as grpc.ServiceError
    expect(err.code).toBe(grpc.status.NOT_FOUND)
  })

  it('reflection lists the service and describes it', async () => {
    const c = new ReflectionClient(h.address, grpc.credentials.createInsecure())
    const call = c.ServerReflectionInfo!() as grpc.ClientDuplexStream<object, Record<string, { service?: Array<{ name: string }>; file_descriptor_proto?: Buffer[] }>>
    const responses: Array<Record<string, { service?: Array<{ name: string }>; file_descriptor_proto?: Buffer[] }>> = []
    const done = new Promise<void>((resolve, reject) => {
      call.on('data', (r) => responses.push(r))
      call.on('end', resolve)
      call.on('error', reject)
    })
    call.write({ list_services: '' })
    call.write({ file_containing_symbol: 'svc.v1.SvcProtocolService' })
    call.end()
    await done
    c.close()
    const names = responses[0]!.list_services_response!.service!.map((s) => s.name)
    expect(names).toEqual(expect.arrayContaining(['svc.v1.SvcProtocolService', 'grpc.health.v1.Health']))
    const files = responses[1]!.file_descriptor_response!.file_descriptor_proto!
    expect(files.length).toBeGreaterThan(0)
    expect(Buffer.concat(files).toString('latin1')).toContain('CreateRUFIDRequest')
  })
})

describe('gRPC server: message size limit', () => {
  let h: GrpcHarness
  beforeAll(async () => {
    h = await startGrpcHarness({ server: { maxMessageBytes: 64 * 1024 } })
    const c = h.client()
    await createRufid(c, addJs, bearer(h.adminKey))
  })
  afterAll(async () => {
    await h?.close()
  })

  it('refuses a message over the limit with RESOURCE_EXHAUSTED while another client keeps working', async () => {
    const big = h.client()
    const other = h.client()
    const huge = { ...addJs, source_code: `function add(a, b) { return a + b }\n//${'x'.repeat(100 * 1024)}` }
    const [refused, ...answers] = await Promise.all([
      failure(createRufid(big, huge, bearer(h.adminKey))),
      ...[1, 2, 3].map(() => resolveRufid(other, { rufid: computeRufid(addJs).rufid_short }, bearer(h.adminKey))),
    ])
    expect(grpc.status[refused!.code]).toBe('RESOURCE_EXHAUSTED')
    for (const a of answers) expect(a.function_name).toBe('add')
    // the refused client's channel still works too
    expect((await resolveRufid(big, { rufid: computeRufid(addJs).rufid_short }, bearer(h.adminKey))).function_name).toBe('add')
  })
})

describe('gRPC server: local mode and rate limits', () => {
  const harnesses: GrpcHarness[] = []
  afterEach(async () => {
    for (const h of harnesses.splice(0)) await h.close()
  })

  it('local mode (auth none) needs no credentials; x-svc-namespace picks the tenant', async () => {
    const h = await startGrpcHarness({ auth: { mode: 'none' } })
    harnesses.push(h)
    const c = h.client()
    const md = new grpc.Metadata()
    md.set('x-svc-namespace', 'team-a')
    expect((await createRufid(c, addJs, md)).rufid).toBe(`rufid:${computeRufid(addJs).rufid_short}:v1:team-a`)
    expect((await createRufid(c, addJs)).rufid).toBe(`rufid:${computeRufid(addJs).rufid_short}:v1:default`)
  })

  it('1005 rate limited → RESOURCE_EXHAUSTED with retry-after', async () => {
    const h = await startGrpcHarness({ rateLimits: { perKey: { points: 2, windowSeconds: 60 } } })
    harnesses.push(h)
    const c = h.client()
    const resolve = () => resolveRufid(c, { rufid: 'AAAAAAAAAAAA' }, bearer(h.adminKey))
    await failure(resolve())
    await failure(resolve())
    const err = await failure(resolve())
    expect(statusOf(err)).toEqual({ code: 'RESOURCE_EXHAUSTED', svcCode: '1005', svcName: 'RATE_LIMITED' })
    expect(Number(err.metadata.get('retry-after')[0])).toBeGreaterThan(0)
  })
})

describe('gRPC server: TLS and mutual TLS', () => {
  const ca = createTestCa('grpc test CA')
  const serverCert = ca.issue({ CN: 'localhost' }, { serverNames: ['localhost'], ips: ['127.0.0.1'] })
  const alice = ca.issue({ CN: 'alice', O: 'acme', OU: 'developer' })
  const stranger = createTestCa('another CA').issue({ CN: 'mallory', O: 'acme', OU: 'admin' })
  const cleanups: Array<() => Promise<void>> = []
  afterAll(async () => {
    for (const c of cleanups) await c()
  })

  async function tlsServer(clientCa: boolean) {
    const { engine } = await createTestEngine({ auth: { mtls: { roles: ['consumer'] } } })
    const server = createGrpcServer(
      {
        host: '127.0.0.1', port: 0, maxMessageBytes: 1024 * 1024, shutdownGraceMs: 500,
        tls: { cert: Buffer.from(serverCert.certPem), key: Buffer.from(serverCert.keyPem), ...(clientCa ? { clientCa: Buffer.from(ca.certPem) } : {}) },
      },
      { engine, logger: pino({ level: 'silent' }) },
    )
    const { port } = await server.start()
    cleanups.push(async () => {
      await server.stop()
      await engine.stop()
    })
    const key = (await engine.keys.mintFor('acme', 'test', { name: 'k', scopes: ['admin'] })).api_key
    const client = (cert?: { certPem: string; keyPem: string }) => {
      const c = svcClient(
        `127.0.0.1:${port}`,
        grpc.credentials.createSsl(Buffer.from(ca.certPem), cert ? Buffer.from(cert.keyPem) : null, cert ? Buffer.from(cert.certPem) : null),
        // verify the server as "localhost" (an IP address is not a valid TLS server name)
        { 'grpc.ssl_target_name_override': 'localhost' },
      )
      cleanups.push(async () => c.close())
      return c
    }
    return { engine, key, client }
  }

  it('TLS without a client CA: bearer credentials over an encrypted channel', async () => {
    const { key, client } = await tlsServer(false)
    const c = client()
    expect((await createRufid(c, addJs, bearer(key))).rufid).toMatch(/:acme$/)
    expect(statusOf(await failure(resolveRufid(c, { rufid: 'AAAAAAAAAAAA' })))).toMatchObject({ code: 'UNAUTHENTICATED' })
  })

  it('mTLS: a verified client certificate is the principal (O = tenant, CN = user, OU = role); others need a bearer', async () => {
    const { engine, key, client } = await tlsServer(true)
    const withCert = client(alice)
    const created = await createRufid(withCert, addJs)
    expect(created.rufid).toBe(`rufid:${computeRufid(addJs).rufid_short}:v1:acme`)
    const run = await resolveRufid(withCert, { rufid: created.rufid })
    expect(run.function_name).toBe('add')
    const { items } = await engine.auditLog.query({ operation: 'rufid.create' })
    expect(items.at(-1)).toMatchObject({ user: 'alice', method: 'mtls', tenant: 'acme', result: 'success' })

    // no certificate: the bearer decides
    const plain = client()
    expect((await resolveRufid(plain, { rufid: created.rufid }, bearer(key))).function_name).toBe('add')
    expect(statusOf(await failure(resolveRufid(plain, { rufid: created.rufid })))).toMatchObject({ code: 'UNAUTHENTICATED', svcCode: '1003' })

    // a certificate from another CA identifies nobody
    const foreign = client(stranger)
    expect(statusOf(await failure(resolveRufid(foreign, { rufid: created.rufid })))).toMatchObject({ code: 'UNAUTHENTICATED', svcCode: '1003' })
  })
})

describe('gRPC server: graceful stop', () => {
  it('turns health NOT_SERVING, ends open streams with UNAVAILABLE (1010), then closes', async () => {
    const h = await startGrpcHarness({ server: { shutdownGraceMs: 500 } })
    const c = h.client()
    const stream = c.StreamExecutions({ rufid: '' }, bearer(h.adminKey))
    stream.on('data', () => undefined)
    stream.on('error', () => undefined)
    const streamStatus = new Promise<grpc.StatusObject>((resolve) => stream.on('status', resolve))
    await new Promise((resolve) => stream.once('metadata', resolve))

    const health = new HealthClient(h.address, grpc.credentials.createInsecure())
    const watch = health.Watch!({ service: 'svc.v1.SvcProtocolService' }) as grpc.ClientReadableStream<{ status: string }>
    const seen: string[] = []
    watch.on('error', () => undefined)
    const notServing = new Promise<void>((resolve) =>
      watch.on('data', (r) => {
        seen.push(r.status)
        if (r.status === 'NOT_SERVING') resolve()
      }),
    )
    await new Promise<void>((resolve) => {
      const check = () => (seen.includes('SERVING') ? resolve() : setTimeout(check, 10))
      check()
    })

    const started = Date.now()
    await h.server.stop()
    expect(Date.now() - started).toBeLessThan(3000)
    await notServing
    expect(seen).toEqual(['SERVING', 'NOT_SERVING'])
    const s = await streamStatus
    expect(grpc.status[s.code]).toBe('UNAVAILABLE')
    expect(s.metadata.get('svc-error-code')).toEqual(['1010'])
    expect(h.engine.events.listenerCount('execution')).toBe(0)

    const after = await failure(resolveRufid(c, { rufid: 'AAAAAAAAAAAA' }, bearer(h.adminKey)))
    expect(grpc.status[after.code]).toBe('UNAVAILABLE')
    health.close()
    await h.server.stop() // idempotent
    await h.close()
  })

  it('start is idempotent, and a stopped server starts again', async () => {
    const h = await startGrpcHarness({ server: { shutdownGraceMs: 200 } })
    const port = Number(h.address.split(':')[1])
    expect((await h.server.start()).port).toBe(port)
    await h.server.stop()
    const again = await h.server.start()
    const c = svcClient(`127.0.0.1:${again.port}`)
    const stream = c.StreamExecutions({ rufid: '' }, bearer(h.adminKey))
    stream.on('error', () => undefined)
    await new Promise((resolve, reject) => {
      stream.once('metadata', resolve)
      stream.once('status', reject)
    })
    stream.cancel()
    expect(await healthCheck(`127.0.0.1:${again.port}`, '')).toBe('SERVING')
    c.close()
    await h.close()
  })
})
