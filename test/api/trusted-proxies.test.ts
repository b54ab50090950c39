// server.trusted_proxies on every door that has an address: REST (Koa routes and the direct
// routes), GraphQL over HTTP, graphql-ws, /ws and gRPC. A trusted proxy's X-Forwarded-For /
// Forwarded names the caller for the per-IP limit and the audit entry's `ip`; an untrusted
// client's is ignored. In-process node trusting 127.0.0.1; untrusted clients connect from 127.0.0.2.
import * as grpc from '@grpc/grpc-js'
import { request } from 'node:http'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createClient } from 'graphql-ws'
import WebSocket from 'ws'
import { CONNECTION_ADDRESSES, createClientAddresses, type ClientAddresses } from '../../src/api/client-address.js'
import { createGrpcServer, type GrpcServer } from '../../src/api/grpc/server.js'
import { addJs } from '../fixtures/functions.js'
import { startNode, type TestNode } from './graphql/node.js'
import { resolveRufid, svcClient } from './grpc/helpers.js'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const TRUSTED = '127.0.0.1'
const UNTRUSTED = '127.0.0.2'

/** An HTTP request from a chosen local address; resolves with the status. */
function send(url: string, options: { from: string; method?: string; path: string; headers?: Record<string, string>; body?: unknown }): Promise<number> {
  const u = new URL(options.path, url)
  const body = options.body === undefined ? undefined : JSON.stringify(options.body)
  return new Promise((resolve, reject) => {
    const req = request({
      host: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, method: options.method ?? 'GET', localAddress: options.from, agent: false,
      headers: { ...options.headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** A WebSocket (ws) class that connects from `from` with extra upgrade headers, for graphql-ws's webSocketImpl. */
function webSocketFrom(from: string, headers: Record<string, string>): typeof WebSocket {
  return class extends WebSocket {
    constructor(url: string, protocols?: string | string[]) {
      super(url, protocols, { localAddress: from, headers })
    }
  } as unknown as typeof WebSocket
}

describe('trusted proxies on every door', () => {
  let node: TestNode
  let grpcTrusting: GrpcServer
  let grpcNotTrusting: GrpcServer
  let short = ''

  /** The `ip` of the audit entries of `operation` written from now on by `act`. */
  const auditedIps = async (operation: string, act: () => Promise<unknown>): Promise<string[]> => {
    const before = new Set((await node.engine.auditLog.query({ operation, limit: 1000 })).items.map((e) => e.id))
    await act()
    for (let i = 0; i < 100; i++) {
      const fresh = (await node.engine.auditLog.query({ operation, limit: 1000 })).items.filter((e) => !before.has(e.id))
      if (fresh.length > 0) return fresh.map((e) => e.ip)
      await sleep(20)
    }
    return []
  }
  const grpcServer = async (addresses: ClientAddresses): Promise<[GrpcServer, string]> => {
    const server = createGrpcServer({ host: '127.0.0.1', port: 0, maxMessageBytes: 1 << 20, shutdownGraceMs: 500 }, { engine: node.engine, logger: pino({ level: 'silent' }), addresses })
    return [server, `127.0.0.1:${(await server.start()).port}`]
  }
  let trustingAddress = ''
  let notTrustingAddress = ''

  beforeAll(async () => {
    node = await startNode({
      addresses: createClientAddresses({ trustedProxies: [`${TRUSTED}/32`] }),
      rateLimits: { perIpUnauthenticated: { points: 5, windowSeconds: 300 } },
    })
    ;[grpcTrusting, trustingAddress] = await grpcServer(createClientAddresses({ trustedProxies: [`${TRUSTED}/32`] }))
    ;[grpcNotTrusting, notTrustingAddress] = await grpcServer(CONNECTION_ADDRESSES)
    short = (await node.rest('/api/v1/functions/create', 'POST', addJs)).body.rufid_short as string
  }, 60_000)
  afterAll(async () => {
    await grpcTrusting?.stop()
    await grpcNotTrusting?.stop()
    await node?.stop()
  })

  it('REST: a Koa route and a direct route audit the forwarded address from the trusted proxy, the connection from anyone else', async () => {
    const auth = { authorization: `Bearer ${node.keys.acme}` }
    expect(await auditedIps('auth.whoami', () => send(node.url, { from: TRUSTED, path: '/api/v1/auth/whoami', headers: { ...auth, 'x-forwarded-for': '198.51.100.1, 203.0.113.1' } }))).toEqual(['203.0.113.1'])
    expect(await auditedIps('auth.whoami', () => send(node.url, { from: TRUSTED, path: '/api/v1/auth/whoami', headers: { ...auth, forwarded: 'for=203.0.113.2;proto=https' } }))).toEqual(['203.0.113.2'])
    expect(await auditedIps('auth.whoami', () => send(node.url, { from: UNTRUSTED, path: '/api/v1/auth/whoami', headers: { ...auth, 'x-forwarded-for': '203.0.113.3' } }))).toEqual([UNTRUSTED])
    expect(await auditedIps('auth.whoami', () => send(node.url, { from: TRUSTED, path: '/api/v1/auth/whoami', headers: { ...auth, 'x-forwarded-for': 'not an address' } }))).toEqual([TRUSTED])
    // the direct route (answered before Koa)
    const resolve = (from: string) => send(node.url, { from, method: 'POST', path: '/api/v1/functions/resolve', headers: { ...auth, 'x-forwarded-for': '203.0.113.4' }, body: { rufid: short } })
    expect(await auditedIps('rufid.resolve', () => resolve(TRUSTED))).toEqual(['203.0.113.4'])
    expect(await auditedIps('rufid.resolve', () => resolve(UNTRUSTED))).toEqual([UNTRUSTED])
  })

  it('GraphQL over HTTP, graphql-ws and /ws audit the forwarded address from the trusted proxy only', async () => {
    const auth = { authorization: `Bearer ${node.keys.acme}` }
    const query = (from: string) => send(node.url, { from, method: 'POST', path: '/graphql', headers: { ...auth, 'x-forwarded-for': '203.0.113.5' }, body: { query: '{ listFunctions { pagination { total } } }' } })
    expect(await auditedIps('rufid.list', () => query(TRUSTED))).toEqual(['203.0.113.5'])
    expect(await auditedIps('rufid.list', () => query(UNTRUSTED))).toEqual([UNTRUSTED])

    const graphqlWs = async (from: string) => {
      const client = createClient({
        url: `${node.wsUrl}/graphql`, webSocketImpl: webSocketFrom(from, { 'x-forwarded-for': '203.0.113.6' }), connectionParams: auth, retryAttempts: 0, lazy: true,
      })
      await new Promise<void>((resolve, reject) => client.subscribe({ query: '{ listFunctions { pagination { total } } }' }, { next: () => undefined, error: reject, complete: resolve }))
      await client.dispose()
    }
    expect(await auditedIps('graphql.connect', () => graphqlWs(TRUSTED))).toEqual(['203.0.113.6'])
    expect(await auditedIps('graphql.connect', () => graphqlWs(UNTRUSTED))).toEqual([UNTRUSTED])

    const eventSocket = async (from: string) => {
      const ws = new WebSocket(`${node.wsUrl}/ws`, { localAddress: from, headers: { ...auth, 'x-forwarded-for': '203.0.113.7' } })
      await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject))
      ws.close()
    }
    expect(await auditedIps('events.connect', () => eventSocket(TRUSTED))).toEqual(['203.0.113.7'])
    expect(await auditedIps('events.connect', () => eventSocket(UNTRUSTED))).toEqual([UNTRUSTED])
  })

  it('gRPC: the forwarding metadata of a trusted peer names the caller; a server trusting nobody ignores it', async () => {
    const md = () => {
      const m = new grpc.Metadata()
      m.set('authorization', `Bearer ${node.keys.acme}`)
      m.set('x-forwarded-for', '203.0.113.8')
      return m
    }
    const call = (address: string) => async () => {
      const client = svcClient(address)
      try {
        await resolveRufid(client, { rufid: short }, md())
      } finally {
        client.close()
      }
    }
    expect(await auditedIps('rufid.resolve', call(trustingAddress))).toEqual(['203.0.113.8'])
    expect(await auditedIps('rufid.resolve', call(notTrustingAddress))).toEqual([TRUSTED])
  })

  it("per-IP limit: bad tokens through the trusted proxy exhaust the forwarded client's budget only; an untrusted client's header does not move its own", async () => {
    const whoami = (from: string, token: string, forwardedFor: string) =>
      send(node.url, { from, path: '/api/v1/auth/whoami', headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': forwardedFor } })
    // the budget is 5 failed authentications per address
    const flood: number[] = []
    for (let i = 0; i < 7; i++) flood.push(await whoami(TRUSTED, `svck_${'x'.repeat(16)}_${'y'.repeat(43)}`, '203.0.113.70'))
    expect(flood).toEqual([401, 401, 401, 401, 401, 429, 429])
    // another client behind the same proxy is served; the flooded one waits even with a good key
    expect(await whoami(TRUSTED, node.keys.acme, '203.0.113.71')).toBe(200)
    expect(await whoami(TRUSTED, node.keys.acme, '203.0.113.70')).toBe(429)

    // from an untrusted address the header is ignored: its budget is its own, whatever it claims
    const claimed: number[] = []
    for (let i = 0; i < 6; i++) claimed.push(await whoami(UNTRUSTED, 'bad-token', `198.51.100.${i}`))
    expect(claimed).toEqual([401, 401, 401, 401, 401, 429])
    expect(await whoami(UNTRUSTED, node.keys.acme, '198.51.100.99')).toBe(429)
  })
})
