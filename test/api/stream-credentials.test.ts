// A stream lives as long as the credential that opened it, on every door: /ws, graphql-ws, GraphQL
// over SSE and gRPC StreamExecutions. Revoking the key, or the credential expiring (an API key's
// expiry, a JWT's exp), ends each stream with its door's code, and no event is delivered after;
// the end is audited with the result `revoked` / `expired`. In-process node, real clients on 127.0.0.1.
import { exportSPKI, generateKeyPair, SignJWT } from 'jose'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGrpcServer, type GrpcServer } from '../../src/api/grpc/server.js'
import { ApiKeyService, createLevelKeyStorage, type AuditEntry, type ExecutionEvent } from '../../src/engine/index.js'
import { addJs } from '../fixtures/functions.js'
import { startNode, type TestNode } from './graphql/node.js'
import { awaitEnded, awaitEverywhere, openEveryDoor, type DoorStream, type StreamEnd } from './stream-doors.js'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** What each door must end a stream with when its credential `ended` ('revoked' or 'expired'). */
function expectEndedFor(streams: readonly DoorStream[], ended: 'revoked' | 'expired', message: RegExp): void {
  const byDoor = Object.fromEntries(streams.map((s) => [s.door, s.end])) as Record<string, StreamEnd>
  expect(byDoor.ws).toMatchObject({ code: 4401, svcCode: 1003 })
  expect(byDoor.ws!.reason).toMatch(message)
  expect(byDoor['graphql-ws']).toMatchObject({ code: 4403, svcCode: 1003 })
  expect(byDoor['graphql-ws']!.reason).toMatch(message)
  expect(byDoor.sse).toMatchObject({ code: 'complete', svcCode: 1003, details: expect.objectContaining({ credential: ended }) })
  expect(byDoor.sse!.reason).toMatch(message)
  expect(byDoor.grpc).toMatchObject({ code: 'UNAUTHENTICATED', svcCode: 1003, details: expect.objectContaining({ credential: ended }) })
  expect(byDoor.grpc!.reason).toMatch(message)
}

describe('revocation and expiry end open streams on every door', () => {
  let node: TestNode
  let grpcServer: GrpcServer
  let grpcAddress = ''
  let addShort = ''
  let signingKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey']
  const opened: DoorStream[] = []

  const run = async (): Promise<string> => {
    const r = await node.rest(`/api/v1/functions/${addShort}/execute`, 'POST', { arguments: [1, 2] })
    expect(r.status).toBe(200)
    return r.body.execution_id as string
  }
  const open = async (token: string): Promise<DoorStream[]> => {
    const streams = await openEveryDoor({ url: node.url, grpcAddress }, token)
    opened.push(...streams)
    // every subscription is live once each door delivered one execution
    const id = await run()
    expect(await awaitEverywhere(streams, id, 10_000), 'doors that did not deliver the first execution').toEqual([])
    return streams
  }
  const auditOf = async (operation: string, result: string): Promise<AuditEntry[]> => {
    for (let i = 0; i < 100; i++) {
      const items = (await node.engine.auditLog.query({ operation, limit: 1000 })).items.filter((e) => e.result === result)
      if (items.length > 0) return items
      await sleep(20)
    }
    return []
  }

  beforeAll(async () => {
    const pair = await generateKeyPair('ES256')
    signingKey = pair.privateKey
    node = await startNode({
      auth: {
        jwt: {
          publicKeyPem: await exportSPKI(pair.publicKey), issuer: 'https://idp.test', audience: 'svc', algorithms: ['ES256'],
          tenantClaim: 'tenant', rolesClaim: 'roles', scopeClaim: 'scope', userClaim: 'sub', clockToleranceSeconds: 0,
        },
      },
    })
    grpcServer = createGrpcServer({ host: '127.0.0.1', port: 0, maxMessageBytes: 1 << 20, shutdownGraceMs: 500 }, { engine: node.engine, logger: pino({ level: 'silent' }) })
    grpcAddress = `127.0.0.1:${(await grpcServer.start()).port}`
    addShort = (await node.rest('/api/v1/functions/create', 'POST', addJs)).body.rufid_short as string
    await run() // warm
  }, 60_000)
  afterAll(async () => {
    for (const s of opened) s.close()
    await grpcServer?.stop()
    await node?.stop()
  })

  it('revoking a minted key ends its streams on /ws (4401), graphql-ws (4403), SSE (error then complete) and gRPC (UNAUTHENTICATED); no event after; audited', async () => {
    const minted = await node.rest('/api/v1/auth/v2/api-keys', 'POST', { name: 'watcher', scopes: ['functions:read'], expires_days: 1 })
    expect(minted.status).toBe(201)
    const streams = await open(minted.body.api_key as string)
    // another key's streams of the same tenant are not touched
    const bystanders = await open(node.keys.acmeReader)

    const revoked = await node.rest(`/api/v1/auth/v2/api-keys/${minted.body.key_id as string}`, 'DELETE')
    expect(revoked.status).toBe(200)
    expect(await awaitEnded(streams, 5000), 'doors still open after the revocation').toEqual([])
    expectEndedFor(streams, 'revoked', /API key revoked/)

    const counts = streams.map((s) => s.events.length)
    const later = [await run(), await run()]
    expect(await awaitEverywhere(bystanders, later[1]!, 10_000), "the other key's doors").toEqual([])
    await sleep(100)
    expect(streams.map((s) => s.events.length), 'events delivered after the revocation').toEqual(counts)
    expect(bystanders.every((s) => s.end === undefined)).toBe(true)

    const keyId = minted.body.key_id as string
    const ws = await auditOf('events.end', 'revoked')
    expect(ws).toEqual([expect.objectContaining({ tenant: 'acme', key_id: keyId, code: 1003, ip: '127.0.0.1' })])
    const graphql = await auditOf('graphql.end', 'revoked')
    for (let i = 0; i < 20 && graphql.length < 2; i++) graphql.splice(0, graphql.length, ...(await auditOf('graphql.end', 'revoked')))
    expect(graphql).toHaveLength(2) // graphql-ws and SSE
    expect(graphql.every((e) => e.key_id === keyId)).toBe(true)
    const grpc = await auditOf('rufid.stream_executions', 'revoked')
    expect(grpc).toEqual([expect.objectContaining({ key_id: keyId, code: 1003 })])
    for (const s of bystanders) s.close()
  }, 60_000)

  it("an admin key that revokes itself ends its own streams too", async () => {
    const minted = await node.rest('/api/v1/auth/v2/api-keys', 'POST', { name: 'second admin', scopes: ['admin'], expires_days: 1 })
    const adminKey = minted.body.api_key as string
    const streams = await open(adminKey)
    const revoked = await node.rest(`/api/v1/auth/v2/api-keys/${minted.body.key_id as string}`, 'DELETE', undefined, adminKey)
    expect(revoked.status).toBe(200)
    expect(await awaitEnded(streams, 5000), 'doors still open after the admin key revoked itself').toEqual([])
    expectEndedFor(streams, 'revoked', /API key revoked/)
  }, 60_000)

  it('an API key that expires ends its streams when it does, on every door', async () => {
    // a key record whose expiry is seconds away (the API mints whole days): written straight into
    // the node's key store by a second key service, so the node's own has not cached it
    const storage = createLevelKeyStorage(node.db)
    const minted = await new ApiKeyService({ defaultExpiresDays: 90, maxExpiresDays: 3650 }, storage)
      .mintFor('acme', 'test', { name: 'short-lived', scopes: ['functions:read'], expires_days: 1 })
    const expiresAt = Date.now() + 4000
    await storage.put({ ...(await storage.get(minted.key_id))!, expires_at: new Date(expiresAt).toISOString() })
    const streams = await open(minted.api_key)
    expect(Date.now(), 'the streams were live before the key expired').toBeLessThan(expiresAt)

    expect(await awaitEnded(streams, expiresAt - Date.now() + 5000), 'doors still open after the expiry').toEqual([])
    expectEndedFor(streams, 'expired', /API key expired/)
    const counts = streams.map((s) => s.events.length)
    await run()
    await sleep(200)
    expect(streams.map((s) => s.events.length), 'events delivered after the expiry').toEqual(counts)
    expect(await auditOf('events.end', 'expired')).toEqual([expect.objectContaining({ key_id: minted.key_id, code: 1003 })])
  }, 60_000)

  it("a JWT's streams end at its exp: an event published after exp, before the timer could run, reaches no door", async () => {
    const exp = Math.ceil(Date.now() / 1000) + 4
    const token = await new SignJWT({ tenant: 'acme', roles: ['consumer'] }).setProtectedHeader({ alg: 'ES256' })
      .setIssuer('https://idp.test').setAudience('svc').setSubject('watcher@acme').setExpirationTime(exp).sign(signingKey)
    const streams = await open(token)
    expect(Date.now(), 'the streams were live before the token expired').toBeLessThan(exp * 1000)

    // hold the event loop past exp (no timer can fire), then publish an execution of the tenant:
    // each door must check the credential before it delivers
    while (Date.now() < exp * 1000 + 20) { /* spin: the expiry timer cannot run */ }
    const late: ExecutionEvent = {
      execution_id: 'ex_published_after_exp', rufid: `rufid:${addShort}:v1:acme`, rufid_short: addShort, version: 'v1', tenant_id: 'acme',
      function_name: 'add', status: 'success', execution_time_ms: 1, error_code: null, timestamp: new Date().toISOString(), receipt_digest: null, cached: false,
    }
    node.engine.events.publishExecution(late)

    expect(await awaitEnded(streams, 5000), 'doors still open after exp').toEqual([])
    expectEndedFor(streams, 'expired', /token expired/)
    await sleep(100)
    const delivered = streams.filter((s) => s.events.some((e) => e.executionId === late.execution_id)).map((s) => s.door)
    expect(delivered, 'doors that delivered an event published after the token expired').toEqual([])
  }, 60_000)
})
