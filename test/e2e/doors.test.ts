// Every protocol door of one real daemon process: GraphQL (HTTP and graphql-ws), /ws, and the
// refusal of WebSocket upgrades on other paths.
import * as grpc from '@grpc/grpc-js'
import { createClient } from 'graphql-ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { computeRufid } from '../../src/core/rufid.js'
import { call, removeDir, startDaemonProcess, type DaemonProcess } from '../fixtures/daemon-process.js'
import { addJs } from '../fixtures/functions.js'
import { bearer, executeFunction, resolveRufid, svcClient } from '../api/grpc/helpers.js'

const ADMIN = 'svck_doorsAdminKey01_doorsAdminSecretdoorsAdminSecretdoorsAdmi'
const auth = { authorization: `Bearer ${ADMIN}` }

describe('protocol doors of one daemon', () => {
  let d: DaemonProcess
  let short: string
  const wsUrl = (path: string) => d.url.replace(/^http/, 'ws') + path

  beforeAll(async () => {
    d = await startDaemonProcess({ env: { AUTH_PROVIDER: 'native', ENABLE_TEST_MODE: 'true', DEPLOYMENT_MODE: 'test', ADMIN_API_KEY: ADMIN } })
    short = (await call(`${d.url}/api/v1/functions/create`, 'POST', addJs, auth)).body.rufid_short as string
  })
  afterAll(async () => {
    await d?.stop()
    if (d) removeDir(d.dataDir)
  })

  it('answers GraphQL over HTTP with the same RUFID and result as REST', async () => {
    const res = await call<{ data: { executeFunction: { result: number; status: string } ; resolveRUFID: { shortRufid: string; contentDigest: string } } }>(
      `${d.url}/graphql`, 'POST',
      { query: `mutation { executeFunction(rufid: "${short}", args: {a: 2, b: 3}) { result status } }` }, auth,
    )
    expect(res.body.data.executeFunction).toEqual({ result: 5, status: 'success' })
    const resolved = await call<{ data: { resolveRUFID: { shortRufid: string; contentDigest: string } } }>(
      `${d.url}/graphql`, 'POST', { query: `{ resolveRUFID(rufid: "${short}") { shortRufid contentDigest } }` }, auth,
    )
    expect(resolved.body.data.resolveRUFID).toEqual({ shortRufid: computeRufid(addJs).rufid_short, contentDigest: computeRufid(addJs).content_digest })
  })

  it('delivers an execution started over REST to graphql-ws and /ws subscribers', async () => {
    const gql = createClient({ url: wsUrl('/graphql'), webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${ADMIN}` }, retryAttempts: 0, lazy: false })
    const gqlEvent = new Promise<{ shortRufid: string; status: string }>((resolve, reject) => {
      gql.subscribe<{ functionExecutions: { shortRufid: string; status: string } }>(
        { query: `subscription { functionExecutions(rufid: "${short}") { shortRufid status } }` },
        { next: (m) => resolve(m.data!.functionExecutions), error: reject, complete: () => undefined },
      )
    })
    const socket = new WebSocket(wsUrl('/ws'), { headers: auth })
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject))
    const subscribed = new Promise<void>((resolve) => {
      socket.on('message', (raw) => {
        if ((JSON.parse(String(raw)) as { type: string }).type === 'subscribed') resolve()
      })
    })
    const wsEvent = new Promise<{ rufid_short: string }>((resolve) => {
      socket.on('message', (raw) => {
        const msg = JSON.parse(String(raw)) as { type: string; payload?: { rufid_short: string } }
        if (msg.type === 'event') resolve(msg.payload!)
      })
    })
    socket.send(JSON.stringify({ type: 'subscribe', id: '1', channel: 'executions', rufid: short }))
    await subscribed
    // graphql-ws does not acknowledge a subscription: execute until its first event arrives (bounded)
    let received: { shortRufid: string; status: string } | undefined
    void gqlEvent.then((e) => (received = e))
    for (let i = 0; i < 40 && received === undefined; i++) {
      const run = await call(`${d.url}/api/v1/functions/${short}/execute`, 'POST', { arguments: [1, 1] }, auth)
      expect(run.body.result).toBe(2)
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(await gqlEvent).toEqual({ shortRufid: short, status: 'success' })
    expect((await wsEvent).rufid_short).toBe(short)
    socket.close()
    await gql.dispose()
  })

  it('answers gRPC on its own port with the same RUFID and result', async () => {
    expect(d.grpcAddress).toMatch(/^127\.0\.0\.1:\d+$/)
    const client = svcClient(d.grpcAddress!)
    try {
      const resolved = await resolveRufid(client, { rufid: short }, bearer(ADMIN))
      expect(resolved.content_digest).toBe(computeRufid(addJs).content_digest)
      const run = await executeFunction(client, { rufid: short, arguments_json: '{"a":20,"b":22}' }, bearer(ADMIN))
      expect(JSON.parse(run.result_json)).toBe(42)
      const denied = await executeFunction(client, { rufid: short, arguments_json: '[]' }).catch((e: grpc.ServiceError) => e)
      expect((denied as grpc.ServiceError).code).toBe(grpc.status.UNAUTHENTICATED)
    } finally {
      client.close()
    }
  })

  it('every door names the protocol version 2.0.0 (service-spec §9), apart from the package version', async () => {
    const info = await call(`${d.url}/api/v1/node/info`, 'GET')
    expect(info.body).toMatchObject({ protocol_version: '2.0.0', version: expect.any(String) })
    // every HTTP answer, a refusal and an unknown path included
    for (const path of ['/api/v1/node/info', '/api/v1/functions/list', '/nowhere', '/graphql']) {
      const res = await fetch(`${d.url}${path}`, { signal: AbortSignal.timeout(10_000) })
      expect(res.headers.get('svc-protocol-version'), path).toBe('2.0.0')
      await res.arrayBuffer()
    }
    const direct = await fetch(`${d.url}/api/v1/functions/${short}/execute`, {
      method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"arguments":{"a":1,"b":2}}', signal: AbortSignal.timeout(10_000),
    })
    expect(direct.status).toBe(200)
    expect(direct.headers.get('svc-protocol-version')).toBe('2.0.0')
    const openapi = await call<{ info: Record<string, unknown> }>(`${d.url}/openapi.json`, 'GET')
    expect(openapi.body.info).toMatchObject({ 'x-svc-protocol-version': '2.0.0', version: info.body.version })
    // graphql-ws: the connection_ack payload
    const acked = new Promise<unknown>((resolve, reject) => {
      const gql = createClient({
        url: wsUrl('/graphql'), webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${ADMIN}` }, retryAttempts: 0, lazy: false,
        on: { connected: (_socket, payload) => { resolve(payload); void gql.dispose() }, error: reject },
      })
    })
    expect(await withTimeout(acked)).toEqual({ protocol_version: '2.0.0' })
    // gRPC: the response headers of a reply, the trailers of an answer that is only a status
    const client = svcClient(d.grpcAddress!)
    try {
      const headers = new Promise<grpc.Metadata>((resolve, reject) => {
        const c = client.ResolveRUFID({ rufid: short }, bearer(ADMIN), { deadline: Date.now() + 10_000 }, (err) => err && reject(err))
        c.on('metadata', resolve)
      })
      expect((await headers).get('svc-protocol-version')).toEqual(['2.0.0'])
      const denied = await executeFunction(client, { rufid: short, arguments_json: '[]' }).catch((e: grpc.ServiceError) => e)
      expect((denied as grpc.ServiceError).code).toBe(grpc.status.UNAUTHENTICATED)
      expect((denied as grpc.ServiceError).metadata.get('svc-protocol-version')).toEqual(['2.0.0'])
    } finally {
      client.close()
    }
  })

  it('refuses WebSocket upgrades on other paths', async () => {
    const socket = new WebSocket(wsUrl('/nowhere'), { headers: auth })
    const outcome = await new Promise<string>((resolve) => {
      socket.once('open', () => resolve('open'))
      socket.once('error', () => resolve('refused'))
    })
    expect(outcome).toBe('refused')
  })
})

/** `promise`, or a rejection after `ms` (every wait of this file is bounded). */
function withTimeout<T>(promise: Promise<T>, ms = 10_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([promise, new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
  })]).finally(() => clearTimeout(timer))
}
