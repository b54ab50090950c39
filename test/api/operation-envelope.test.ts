// Every operation of every door goes through the one operation envelope (admit, audit, meter, map
// errors). The operations are listed from the doors' own definitions — the REST app's router, the
// GraphQL schema's root fields, the gRPC service definition loaded from the .proto, the /ws
// socket's message table — never from a hand list, and each is then called through its real
// transport: the envelope is what audits and meters, so an operation that skipped it leaves no
// audit entry or no svc_protocol_requests_total sample and fails here.
import * as grpc from '@grpc/grpc-js'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import type { GraphQLObjectType } from 'graphql/index.js'
import { createGraphqlDoor } from '../../src/api/graphql/door.js'
import { OPERATIONS } from '../../src/api/graphql/schema.js'
import { createGrpcDoor } from '../../src/api/grpc/operation.js'
import { loadProtos } from '../../src/api/grpc/proto.js'
import { createGrpcServer, type GrpcServer } from '../../src/api/grpc/server.js'
import { svcProtocolHandlers } from '../../src/api/grpc/service.js'
import { executionStreams } from '../../src/api/grpc/stream-executions.js'
import { createRestApi } from '../../src/api/rest/app.js'
import { CONSOLE_OPERATION } from '../../src/api/rest/console.js'
import { CLIENT_MESSAGES, EVENT_SOCKET_OPERATIONS } from '../../src/api/ws/event-socket.js'
import { envelopedOperationOf, type Engine } from '../../src/engine/index.js'
import { bearer, svcClient } from './grpc/helpers.js'
import { first, startNode, type TestNode } from './graphql/node.js'

const silent = pino({ level: 'silent' })
const SHORT = 'AAAAAAAAAAAA'

interface Counted {
  metered: number
  audited: number
}

/** How often an operation was metered (svc_protocol_requests_total) and audited so far. */
async function countOf(engine: Engine, protocol: string, operation: string): Promise<Counted> {
  const samples = (await engine.metrics.protocolRequests.get()).values
  const metered = samples.filter((s) => s.labels.protocol === protocol && s.labels.operation === operation).reduce((n, s) => n + s.value, 0)
  const audited = (await engine.auditLog.query({ operation, limit: 1000 })).items.length
  return { metered, audited }
}

/** Waits (bounded) until `check` holds: a stream's audit entry is written after it ends. */
async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`timed out waiting for ${what}`)
}

/** Calls `act` and checks that the envelope recorded `operation` exactly once more (audited unless `audited` is false). */
async function expectEnveloped(engine: Engine, protocol: string, operation: string, act: () => Promise<unknown>, audited = true): Promise<void> {
  const before = await countOf(engine, protocol, operation)
  await act()
  const expected = { metered: before.metered + 1, audited: before.audited + (audited ? 1 : 0) }
  await eventually(async () => {
    const now = await countOf(engine, protocol, operation)
    return now.metered >= expected.metered && now.audited >= expected.audited
  }, `${protocol} ${operation} to be metered${audited ? ' and audited' : ''}`).catch(() => undefined)
  expect(await countOf(engine, protocol, operation), `${protocol} ${operation}`).toEqual(expected)
}

describe('the operation envelope covers every operation of every door', () => {
  let node: TestNode
  let grpcServer: GrpcServer
  let grpcAddress: string

  beforeAll(async () => {
    node = await startNode()
    grpcServer = createGrpcServer({ host: '127.0.0.1', port: 0, maxMessageBytes: 1 << 20, shutdownGraceMs: 500 }, { engine: node.engine, logger: silent })
    grpcAddress = `127.0.0.1:${(await grpcServer.start()).port}`
  })
  afterAll(async () => {
    await grpcServer?.stop()
    await node?.stop()
  })

  it('REST: every route the router registers is an enveloped operation, metered and audited when called', async () => {
    const app = createRestApi({ bodyLimitBytes: 1 << 20, metricsAccess: 'public' }, { engine: node.engine, logger: silent })
    const dispatch = app.middleware.find((m) => 'router' in m) as unknown as {
      router: { stack: Array<{ path: string; methods: string[]; name?: string; stack: unknown[] }> }
    }
    const layers = dispatch.router.stack.filter((l) => l.methods.length > 0)
    expect(layers.length).toBeGreaterThan(30)
    for (const layer of layers) {
      const handler = layer.stack[layer.stack.length - 1]
      expect(envelopedOperationOf(handler), `${layer.methods.join(',')} ${layer.path} runs through the envelope`).toBe(layer.name)
      const method = layer.methods.find((m) => m !== 'HEAD')!
      const path = layer.path.replace(':rufid', SHORT).replace(':branch', 'main').replace(':id', 'ex_missing').replace(':keyId', 'k_missing')
      // without credentials: a caller operation is refused (401) by the envelope, a public one answered; both recorded
      await expectEnveloped(node.engine, 'rest', layer.name!, async () => {
        const res = await fetch(`${node.url}${path}`, { method, ...(method === 'POST' ? { headers: { 'content-type': 'application/json' }, body: '{}' } : {}) })
        await res.arrayBuffer()
      }, !layer.name!.startsWith('system.'))
    }
  })

  it('REST: the console\'s static files are metered as system.console and never audited (files, not operations)', async () => {
    // the console middleware sits beside the router: it serves files that need no credential and
    // name no tenant, so like /healthz it is metered only; the API calls the console makes are audited routes
    const directory = mkdtempSync(join(tmpdir(), 'svc-console-'))
    writeFileSync(join(directory, 'index.html'), '<!doctype html><title>console</title>')
    const app = createRestApi({ bodyLimitBytes: 1 << 20, metricsAccess: 'public', console: { directory } }, { engine: node.engine, logger: silent })
    const server = http.createServer(app.callback())
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    try {
      for (const [path, status] of [['/', 302], ['/console', 302], ['/console/', 200], ['/console/missing.js', 404]] as const) {
        await expectEnveloped(node.engine, 'rest', CONSOLE_OPERATION.name, async () => {
          const res = await fetch(`${base}${path}`, { redirect: 'manual' })
          await res.arrayBuffer()
          expect(res.status, path).toBe(status)
        }, false)
      }
      // answered through the envelope with the transport's status label
      const samples = (await node.engine.metrics.protocolRequests.get()).values.filter((v) => v.labels.operation === CONSOLE_OPERATION.name)
      expect(samples.map((v) => v.labels.status).sort()).toEqual(['200', '302', '404'])
    } finally {
      await new Promise((resolve) => server.close(resolve))
      rmSync(directory, { recursive: true, force: true })
    }
  })

  it('GraphQL: every root field of the schema is an enveloped operation, over HTTP, SSE and graphql-ws', async () => {
    const door = createGraphqlDoor({ engine: node.engine, logger: silent })
    const roots = [door.schema.getQueryType(), door.schema.getMutationType(), door.schema.getSubscriptionType()] as GraphQLObjectType[]
    const fields = roots.flatMap((type) => Object.values(type.getFields()).map((field) => ({ type: type.name, field })))
    expect(fields.map((f) => f.field.name).sort()).toEqual(Object.keys(OPERATIONS).sort())
    for (const { type, field } of fields) {
      const resolver = type === 'Subscription' ? field.subscribe : field.resolve
      expect(envelopedOperationOf(resolver), `${type}.${field.name} runs through the envelope`).toBe(OPERATIONS[field.name])
    }
    // each field called by an admitted caller: the resolver's envelope audits and meters it
    const calls: Record<string, string> = {
      resolveRUFID: `{ resolveRUFID(rufid: "${SHORT}") { rufid } }`,
      listFunctions: '{ listFunctions { pagination { total } } }',
      getFunctionMetrics: `{ getFunctionMetrics(rufid: "${SHORT}") { usageCount } }`,
      executionReceipt: '{ executionReceipt(executionId: "ex_01JD8X9R6Q4M2N0P5S7T3V1W9Y") }',
      createFunction: 'mutation { createFunction(input: {functionName: "1bad", sourceCode: "x", signature: "()", language: "javascript"}) { rufid } }',
      executeFunction: `mutation { executeFunction(rufid: "${SHORT}", args: {}) { result } }`,
      deleteFunction: `mutation { deleteFunction(rufid: "${SHORT}") }`,
    }
    for (const { field } of fields.filter((f) => f.type !== 'Subscription')) {
      await expectEnveloped(node.engine, 'graphql', OPERATIONS[field.name]!, () => node.gql(calls[field.name]!))
    }
    const subscriptions: Record<string, string> = {
      functionExecutions: `subscription { functionExecutions(rufid: "${SHORT}") { executionId } }`,
      systemEvents: 'subscription { systemEvents { type } }',
    }
    for (const { field } of fields.filter((f) => f.type === 'Subscription')) {
      // over graphql-ws: the subscribe resolver runs once the socket is admitted (expectEnveloped waits for it)
      const client = node.wsClient()
      let sub: ReturnType<typeof first> | undefined
      await expectEnveloped(node.engine, 'graphql', OPERATIONS[field.name]!, async () => {
        sub = first(client, subscriptions[field.name]!)
        sub.value.catch(() => undefined)
      })
      sub!.cancel()
      // over HTTP as server-sent events
      await expectEnveloped(node.engine, 'graphql', OPERATIONS[field.name]!, async () => {
        const abort = new AbortController()
        const res = await fetch(`${node.url}/graphql`, {
          method: 'POST', signal: abort.signal,
          headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${node.keys.acme}` },
          body: JSON.stringify({ query: subscriptions[field.name] }),
        })
        expect(res.status).toBe(200)
        await res.body!.getReader().read()
        abort.abort()
      })
    }
  })

  it('gRPC: every RPC of the service definition is an enveloped operation, metered and audited when called', async () => {
    const { proto } = loadProtos()
    const definition = proto.svc.v1.SvcProtocolService.service
    const door = createGrpcDoor({ engine: node.engine, logger: silent })
    const handlers = svcProtocolHandlers(door, executionStreams(door, { maxBufferedEvents: 8 })) as unknown as Record<string, unknown>
    const rpcs = Object.keys(definition)
    expect(rpcs.sort()).toEqual(['CreateRUFID', 'ExecuteFunction', 'ResolveRUFID', 'StreamExecutions'])
    const client = svcClient(grpcAddress)
    try {
      for (const rpc of rpcs) {
        const operation = envelopedOperationOf(handlers[rpc])
        expect(operation, `${rpc} runs through the envelope`).toBeDefined()
        const request = rpc === 'CreateRUFID' ? {} : { rufid: SHORT }
        // without credentials: UNAUTHENTICATED from the envelope, recorded once
        await expectEnveloped(node.engine, 'grpc', operation!, () => new Promise<void>((resolve) => {
          const method = (client as unknown as Record<string, (...args: unknown[]) => unknown>)[rpc]!.bind(client)
          if (definition[rpc as keyof typeof definition]!.responseStream) {
            const stream = method(request, bearer(undefined)) as grpc.ClientReadableStream<unknown>
            stream.on('error', () => resolve())
            stream.on('end', () => resolve())
            stream.on('data', () => undefined)
          } else {
            method(request, bearer(undefined), () => resolve())
          }
        }))
      }
    } finally {
      client.close()
    }
  })

  it('/ws: connecting and every client message that reaches the engine are enveloped operations', async () => {
    // refused upgrade (no credentials) and accepted upgrade: both are events.connect
    await expectEnveloped(node.engine, 'ws', EVENT_SOCKET_OPERATIONS.connect.name, async () => {
      const refused = new WebSocket(`${node.wsUrl}/ws`)
      await new Promise((resolve) => refused.once('error', resolve).once('unexpected-response', (_req, res) => resolve(res.statusCode)))
    })
    const socket = new WebSocket(`${node.wsUrl}/ws`, { headers: { authorization: `Bearer ${node.keys.acme}` } })
    await expectEnveloped(node.engine, 'ws', EVENT_SOCKET_OPERATIONS.connect.name, () =>
      new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject)))
    const frames: Array<Record<string, unknown>> = []
    socket.on('message', (raw) => frames.push(JSON.parse(String(raw)) as Record<string, unknown>))
    try {
      let n = 0
      for (const [type, operation] of Object.entries(CLIENT_MESSAGES)) {
        const id = `m${++n}`
        const message = type === 'subscribe' ? { type, id, channel: 'executions', rufid: SHORT } : { type, id: type === 'unsubscribe' ? 'm1' : id }
        const answered = () => eventually(async () => frames.some((f) => f.id === message.id && f.type !== 'event'), `an answer to ${type}`)
        if (operation === undefined) {
          // stays within the connection: answered, nothing audited
          const before = (await node.engine.auditLog.query({ limit: 1000 })).items.length
          socket.send(JSON.stringify(message))
          await answered()
          expect((await node.engine.auditLog.query({ limit: 1000 })).items.length, `${type} is not an engine operation`).toBe(before)
        } else {
          await expectEnveloped(node.engine, 'ws', operation.name, async () => {
            socket.send(JSON.stringify(message))
            await answered()
          })
        }
      }
    } finally {
      socket.close()
    }
  })
})
