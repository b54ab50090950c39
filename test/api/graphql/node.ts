// An in-process node for the GraphQL and /ws tests: the engine (real sandbox, API keys), the REST
// app with the GraphQL middleware mounted after it, one HTTP server on 127.0.0.1 with graphql-ws
// and the /ws event socket attached to it.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { pino } from 'pino'
import { createClient, type Client } from 'graphql-ws'
import WebSocket from 'ws'
import type { ClientAddresses } from '../../../src/api/client-address.js'
import { createRestApi } from '../../../src/api/rest/app.js'
import { createGraphqlMiddleware, type GraphqlInit } from '../../../src/api/graphql/http.js'
import { attachGraphqlWs } from '../../../src/api/graphql/ws.js'
import { attachEventSocket, type EventSocketInit } from '../../../src/api/ws/event-socket.js'
import { loadConfig } from '../../../src/daemon/config.js'
import type { Engine, EngineInit, LevelDatabase } from '../../../src/engine/index.js'
import { createTestEngine, realSandbox } from '../../fixtures/engine.js'

const defaults = loadConfig({ env: {} }).graphql
/** The GraphQL settings of config/default.yaml: what a node runs with unless configured otherwise. */
export const DEFAULT_GRAPHQL: GraphqlInit = {
  maxDepth: defaults.max_depth, maxCost: defaults.max_cost, maxDocumentBytes: defaults.max_document_bytes, introspection: defaults.introspection,
}
export const DEFAULT_WS: EventSocketInit = {
  maxConnectionsPerTenant: 100, maxMessagesPerSecond: 50, maxBufferedBytes: 1 << 20, maxPayloadBytes: 64 * 1024,
}

export interface GraphqlResponse {
  status: number
  headers: Headers
  body: {
    data?: Record<string, unknown> | null
    errors?: Array<{ message: string; path?: unknown[]; extensions?: { code: number; name: string; details?: Record<string, unknown> } }>
  }
}

export interface TestNode {
  engine: Engine
  /** the engine's in-memory LevelDB */
  db: LevelDatabase
  /** http://127.0.0.1:<port> */
  url: string
  /** ws://127.0.0.1:<port> */
  wsUrl: string
  /** admin keys of two tenants, and a read-only key of acme */
  keys: { acme: string; globex: string; acmeReader: string }
  /** POST /graphql; `token: null` sends no credentials */
  gql(query: string, variables?: Record<string, unknown>, options?: { token?: string | null; headers?: Record<string, string> }): Promise<GraphqlResponse>
  /** a graphql-ws client (closed by stop()) */
  wsClient(token?: string | null, options?: { retryAttempts?: number }): Client
  rest(path: string, method: string, body?: unknown, token?: string): Promise<{ status: number; body: Record<string, unknown> }>
  stop(): Promise<void>
}

export async function startNode(
  options: {
    graphql?: Partial<GraphqlInit>
    ws?: Partial<EventSocketInit>
    rateLimits?: Partial<EngineInit['rateLimits']>
    auth?: Partial<EngineInit['auth']>
    /** the caller's address on every door (trusted proxies); default: the connection's */
    addresses?: ClientAddresses
  } = {},
): Promise<TestNode> {
  const { engine, db } = await createTestEngine({
    sandbox: await realSandbox(1), auth: { mode: 'standard', ...options.auth }, ...(options.rateLimits ? { rateLimits: options.rateLimits } : {}),
  })
  const logger = pino({ level: 'silent' })
  const addresses = options.addresses
  const app = createRestApi({ bodyLimitBytes: 1 << 20, metricsAccess: 'public' }, { engine, logger, ...(addresses ? { addresses } : {}) })
  const graphqlInit = { ...DEFAULT_GRAPHQL, ...options.graphql }
  const graphql = createGraphqlMiddleware(graphqlInit, { engine, logger })
  app.use(graphql)
  const server = http.createServer(app.callback())
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const graphqlWs = attachGraphqlWs(server, graphqlInit, { engine, logger, ...(addresses ? { addresses } : {}) })
  const events = attachEventSocket(server, { ...DEFAULT_WS, ...options.ws }, { engine, logger, ...(addresses ? { addresses } : {}) })
  const port = (server.address() as AddressInfo).port
  const url = `http://127.0.0.1:${port}`
  const wsUrl = `ws://127.0.0.1:${port}`

  const mint = async (tenant: string, scopes: string[]): Promise<string> =>
    (await engine.keys.mintFor(tenant, 'test', { name: 'k', scopes })).api_key
  const keys = { acme: await mint('acme', ['admin']), globex: await mint('globex', ['admin']), acmeReader: await mint('acme', ['functions:read']) }
  const clients: Client[] = []

  return {
    engine,
    db,
    url,
    wsUrl,
    keys,
    async gql(query, variables, opts = {}) {
      const token = opts.token === undefined ? keys.acme : opts.token
      const res = await fetch(`${url}/graphql`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(token === null ? {} : { authorization: `Bearer ${token}` }),
          ...opts.headers,
        },
        body: JSON.stringify({ query, variables }),
      })
      return { status: res.status, headers: res.headers, body: (await res.json()) as GraphqlResponse['body'] }
    },
    wsClient(token, opts = {}) {
      const t = token === undefined ? keys.acme : token
      const client = createClient({
        url: `${wsUrl}/graphql`,
        webSocketImpl: WebSocket,
        connectionParams: t === null ? {} : { authorization: `Bearer ${t}` },
        retryAttempts: opts.retryAttempts ?? 0,
        lazy: true,
      })
      clients.push(client)
      return client
    },
    async rest(path, method, body, token = keys.acme) {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
      return { status: res.status, body: (await res.json()) as Record<string, unknown> }
    },
    async stop() {
      await Promise.all(clients.map((c) => c.dispose()))
      await events.close()
      await graphqlWs.close()
      await graphql.close()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await engine.stop()
    },
  }
}

/** The first value of a graphql-ws subscription (or query) that satisfies `accept`. */
export function first<T>(client: Client, query: string, variables: Record<string, unknown> = {}, accept: (v: T) => boolean = () => true): {
  value: Promise<T>
  cancel: () => void
} {
  let cancel = (): void => undefined
  const value = new Promise<T>((resolve, reject) => {
    cancel = client.subscribe<T>({ query, variables }, {
      next: (v) => {
        if (v.errors) reject(Object.assign(new Error(v.errors[0]!.message), { errors: v.errors }))
        else if (accept(v.data as T)) resolve(v.data as T)
      },
      // graphql-ws reports operation errors as the array of GraphQL errors, connection failures as close events
      error: (err) => reject(Array.isArray(err)
        ? Object.assign(new Error((err[0] as { message?: string } | undefined)?.message ?? 'GraphQL error'), { errors: err })
        : err instanceof Error ? err : Object.assign(new Error('graphql-ws connection failed'), { detail: err })),
      complete: () => undefined,
    })
  })
  return { value, cancel: () => cancel() }
}
