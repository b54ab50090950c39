// One conformance suite: the same cases against REST, GraphQL and gRPC of one node. Every protocol
// must give the same RUFIDs, the same results, the same svc error codes and names, and the
// transport status decisions.md assigns to each code. The expected statuses are written below from
// decisions.md ("Errors"), not imported from the code under test: a door that maps a code
// differently fails here.
import * as grpc from '@grpc/grpc-js'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGrpcServer } from '../../src/api/grpc/server.js'
import { computeRufid } from '../../src/core/rufid.js'
import type { EngineInit } from '../../src/engine/index.js'
import { bearer, createRufid, executeFunction, resolveRufid, svcClient, type SvcClient } from '../api/grpc/helpers.js'
import { startNode, type TestNode } from '../api/graphql/node.js'
import { addJs, spinJs, throwsJs } from '../fixtures/functions.js'

/**
 * decisions.md "Errors": the name, HTTP status and gRPC status of each code. 1003 answers 401 /
 * UNAUTHENTICATED when no or invalid credentials were presented; 1006 answers 422 for an
 * unprocessable manifest or lockfile, 400 for any other bad input.
 */
interface Expected { name: string; http: number; grpc: grpc.status }
const DECISIONS: Record<number, Expected & { variants?: Record<string, Partial<Expected>> }> = {
  1001: { name: 'INVALID_RUFID', http: 400, grpc: grpc.status.INVALID_ARGUMENT },
  1002: { name: 'RUFID_NOT_FOUND', http: 404, grpc: grpc.status.NOT_FOUND },
  1003: { name: 'PERMISSION_DENIED', http: 403, grpc: grpc.status.PERMISSION_DENIED, variants: { unauthenticated: { http: 401, grpc: grpc.status.UNAUTHENTICATED } } },
  1004: { name: 'EXECUTION_TIMEOUT', http: 408, grpc: grpc.status.DEADLINE_EXCEEDED },
  1005: { name: 'RATE_LIMITED', http: 429, grpc: grpc.status.RESOURCE_EXHAUSTED },
  1006: { name: 'VALIDATION_FAILED', http: 400, grpc: grpc.status.INVALID_ARGUMENT, variants: { unprocessable: { http: 422 } } },
  1007: { name: 'EXECUTION_FAILED', http: 422, grpc: grpc.status.ABORTED },
  1008: { name: 'RUFID_COLLISION', http: 409, grpc: grpc.status.ALREADY_EXISTS },
}

/** How a protocol answered a failure: the svc code and name, and its own transport status. */
interface Failure {
  ok: false
  code: number
  name: string
  /** REST: the HTTP status; GraphQL: the HTTP status (200 for an error of an executed field); gRPC: the status code */
  status: number
  /** GraphQL: the error belongs to an executed field (it has a `path`), so the request itself succeeded */
  field?: boolean
  /** a Retry-After was given (header, or gRPC `retry-after` trailer) */
  retryAfter: boolean
}
/** What every driver answers: a value, or how it failed. */
type Outcome<T> = { ok: true; value: T } | Failure

interface Definition { function_name: string; signature: string; language: string; source_code: string; limits?: { timeout_ms?: number } }
interface Driver {
  name: 'rest' | 'graphql' | 'grpc'
  create(def: Definition, token?: string | null): Promise<Outcome<{ rufid: string; rufid_short: string; version: string }>>
  resolve(rufid: string, token?: string | null): Promise<Outcome<{ rufid: string; version: string; content_digest: string }>>
  execute(rufid: string, args: unknown, token?: string | null): Promise<Outcome<unknown>>
  list?(): Promise<Outcome<string[]>>
  delete?(rufid: string): Promise<Outcome<boolean>>
  /** a request this protocol cannot decode (malformed JSON body, GraphQL syntax, arguments that are not JSON) */
  malformed(): Promise<Outcome<unknown>>
}

interface Doors { node: TestNode; drivers: Driver[]; stop(): Promise<void> }

const restDriver = (node: TestNode): Driver => {
  const req = async (path: string, method: string, body: unknown, token: string | null | undefined): Promise<Outcome<Record<string, unknown>>> => {
    const t = token === undefined ? node.keys.acme : token
    const res = await fetch(`${node.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(t === null ? {} : { authorization: `Bearer ${t}` }) },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    })
    const json = (await res.json()) as Record<string, unknown> & { error?: { code: number; name: string } }
    if (!json.error) return { ok: true, value: json }
    return { ok: false, code: json.error.code, name: json.error.name, status: res.status, retryAfter: res.headers.has('retry-after') }
  }
  const map = <T>(o: Outcome<Record<string, unknown>>, f: (v: Record<string, unknown>) => T): Outcome<T> => (o.ok ? { ok: true, value: f(o.value) } : o)
  return {
    name: 'rest',
    create: async (def, token) => map(await req('/api/v1/functions/create', 'POST', def, token), (v) => ({ rufid: v.rufid as string, rufid_short: v.rufid_short as string, version: v.version as string })),
    resolve: async (rufid, token) => map(await req('/api/v1/functions/resolve', 'POST', { rufid }, token), (v) => ({ rufid: v.rufid as string, version: v.version as string, content_digest: v.content_digest as string })),
    execute: async (rufid, args, token) => map(await req(`/api/v1/functions/${encodeURIComponent(rufid)}/execute`, 'POST', { arguments: args }, token), (v) => v.result),
    list: async () => map(await req('/api/v1/functions?limit=500', 'GET', undefined, undefined), (v) => (v.items as Array<{ full_rufid: string }>).map((i) => i.full_rufid).sort()),
    delete: async (rufid) => map(await req(`/api/v1/functions/${encodeURIComponent(rufid)}`, 'DELETE', undefined, undefined), () => true),
    malformed: async () => req('/api/v1/functions/create', 'POST', '{"function_name": ', undefined),
  }
}

const graphqlDriver = (node: TestNode): Driver => {
  const run = async <T>(query: string, variables: Record<string, unknown>, pick: (d: Record<string, unknown>) => T, token?: string | null): Promise<Outcome<T>> => {
    const res = await node.gql(query, variables, { token })
    const err = res.body.errors?.[0]
    if (err) {
      return {
        ok: false, code: err.extensions!.code, name: err.extensions!.name, status: res.status,
        field: err.path !== undefined, retryAfter: res.headers.has('retry-after'),
      }
    }
    return { ok: true, value: pick(res.body.data!) }
  }
  return {
    name: 'graphql',
    create: (def, token) => run(
      'mutation C($i: CreateFunctionInput!) { createFunction(input: $i) { rufid shortRufid version } }',
      { i: { functionName: def.function_name, signature: def.signature, language: def.language, sourceCode: def.source_code } },
      (d) => {
        const f = d.createFunction as { rufid: string; shortRufid: string; version: string }
        return { rufid: f.rufid, rufid_short: f.shortRufid, version: f.version }
      }, token),
    resolve: (rufid, token) => run('query R($r: String!) { resolveRUFID(rufid: $r) { rufid version contentDigest } }', { r: rufid }, (d) => {
      const r = d.resolveRUFID as { rufid: string; version: string; contentDigest: string }
      return { rufid: r.rufid, version: r.version, content_digest: r.contentDigest }
    }, token),
    execute: (rufid, args, token) => run('mutation E($r: String!, $a: JSON!) { executeFunction(rufid: $r, args: $a) { result } }', { r: rufid, a: args }, (d) => (d.executeFunction as { result: unknown }).result, token),
    list: () => run('{ listFunctions(limit: 500) { items { rufid } } }', {}, (d) => (d.listFunctions as { items: Array<{ rufid: string }> }).items.map((i) => i.rufid).sort()),
    delete: (rufid) => run('mutation D($r: String!) { deleteFunction(rufid: $r) }', { r: rufid }, (d) => d.deleteFunction as boolean),
    malformed: () => run('{ resolveRUFID(rufid: ', {}, (d) => d),
  }
}

const grpcDriver = (client: SvcClient, node: TestNode): Driver => {
  const md = (token: string | null | undefined) => (token === null ? undefined : bearer(token ?? node.keys.acme))
  const call = async <T>(p: () => Promise<T>): Promise<Outcome<T>> => {
    try {
      return { ok: true, value: await p() }
    } catch (err) {
      const e = err as grpc.ServiceError
      const code = e.metadata?.get('svc-error-code')[0]
      if (code === undefined) throw err
      return {
        ok: false, code: Number(code), name: String(e.metadata.get('svc-error-name')[0]), status: e.code,
        retryAfter: e.metadata.get('retry-after').length > 0,
      }
    }
  }
  return {
    name: 'grpc',
    create: (def, token) => call(async () => {
      const r = await createRufid(client, { ...def, tags: [] }, md(token))
      return { rufid: r.rufid, rufid_short: r.rufid_short, version: r.version }
    }),
    resolve: (rufid, token) => call(async () => {
      const r = await resolveRufid(client, { rufid }, md(token))
      return { rufid: r.rufid, version: r.version, content_digest: r.content_digest }
    }),
    execute: (rufid, args, token) => call(async () => JSON.parse((await executeFunction(client, { rufid, arguments_json: JSON.stringify(args) }, md(token))).result_json) as unknown),
    malformed: () => call(() => executeFunction(client, { rufid: computeRufid(addJs).rufid_short, arguments_json: '{"a": ' }, md(undefined))),
  }
}

/** A node with its REST and GraphQL doors (one HTTP server) and a gRPC door on the same engine. */
async function startDoors(rateLimits?: Partial<EngineInit['rateLimits']>): Promise<Doors> {
  const node = await startNode(rateLimits ? { rateLimits } : {})
  const server = createGrpcServer({ host: '127.0.0.1', port: 0, maxMessageBytes: 1 << 20 }, { engine: node.engine, logger: pino({ level: 'silent' }) })
  const { port } = await server.start()
  const client = svcClient(`127.0.0.1:${port}`)
  return {
    node,
    drivers: [restDriver(node), graphqlDriver(node), grpcDriver(client, node)],
    async stop() {
      client.close()
      await server.stop()
      await node.stop()
    },
  }
}

/** Checks one protocol's failure against decisions.md: code, name, transport status (and Retry-After for 1005). */
function expectDecided(driver: Driver['name'], outcome: Outcome<unknown>, code: number, variant?: string): void {
  const decided = DECISIONS[code]!
  const expected = { ...decided, ...(variant ? decided.variants?.[variant] : {}) }
  const where = `${driver} answering ${code}${variant ? ` (${variant})` : ''}`
  expect(outcome.ok, `${where}: it succeeded`).toBe(false)
  const f = outcome as Failure
  expect({ code: f.code, name: f.name }, where).toEqual({ code, name: expected.name })
  if (driver === 'rest') expect(f.status, `${where}: HTTP status`).toBe(expected.http)
  if (driver === 'grpc') expect(grpc.status[f.status], `${where}: gRPC status`).toBe(grpc.status[expected.grpc])
  // GraphQL: an error of an executed field rides in a 200 answer beside `data`; a refused request answers the HTTP status
  if (driver === 'graphql') expect(f.status, `${where}: HTTP status${f.field ? ' of a field error' : ''}`).toBe(f.field ? 200 : expected.http)
  if (code === 1005) expect(f.retryAfter, `${where}: Retry-After`).toBe(true)
}

describe('conformance: REST, GraphQL and gRPC give the same answers', () => {
  let doors: Doors
  let node: TestNode
  let drivers: Driver[]

  beforeAll(async () => {
    doors = await startDoors()
    node = doors.node
    drivers = doors.drivers
  })
  afterAll(async () => {
    await doors?.stop()
  })

  /** Runs `f` on every driver and checks they all agree; returns the common outcome. */
  const agree = async <T>(f: (d: Driver) => Promise<Outcome<T>>, only?: (d: Driver) => boolean): Promise<Outcome<T>> => {
    const outcomes: Array<[string, Outcome<T>]> = []
    for (const d of drivers.filter(only ?? (() => true))) outcomes.push([d.name, await f(d)])
    for (const [name, o] of outcomes.slice(1)) expect(o, `${name} differs from ${outcomes[0]![0]}`).toEqual(outcomes[0]![1])
    return outcomes[0]![1]
  }
  /** Runs `f` on every driver (of `on`): each must fail with `code` and the transport status decisions.md gives it. */
  const expectCode = async (code: number, f: (d: Driver) => Promise<Outcome<unknown>>, options: { variant?: string; on?: Driver[] } = {}) => {
    for (const d of options.on ?? drivers) expectDecided(d.name, await f(d), code, options.variant)
  }

  it('create gives the same RUFID, equal to the locally computed one', async () => {
    const first = await agree((d) => d.create(addJs))
    expect(first).toEqual({ ok: true, value: { rufid: `rufid:${computeRufid(addJs).rufid_short}:v1:acme`, rufid_short: computeRufid(addJs).rufid_short, version: 'v1' } })
  })

  it('resolve gives the same version and digest (short and full forms)', async () => {
    const short = computeRufid(addJs).rufid_short
    for (const r of [short, `rufid:${short}:v1:acme`]) {
      expect(await agree((d) => d.resolve(r))).toEqual({ ok: true, value: { rufid: `rufid:${short}:v1:acme`, version: 'v1', content_digest: computeRufid(addJs).content_digest } })
    }
  })

  it('execute gives the same results for named and positional arguments', async () => {
    const short = computeRufid(addJs).rufid_short
    expect(await agree((d) => d.execute(short, { a: 2, b: 3 }))).toEqual({ ok: true, value: 5 })
    expect(await agree((d) => d.execute(short, [40, 2]))).toEqual({ ok: true, value: 42 })
  })

  it('list and delete agree where the protocol offers them (REST, GraphQL)', async () => {
    const both = (d: Driver) => d.list !== undefined
    const listed = await agree((d) => d.list!(), both)
    expect(listed.ok && listed.value).toContain(`rufid:${computeRufid(addJs).rufid_short}:v1:acme`)
    for (const d of drivers.filter(both)) {
      const def = { function_name: `gone_${d.name}`, signature: '()', language: 'javascript', source_code: `function gone_${d.name}() { return 1 }` }
      const made = await d.create(def)
      expect(made.ok).toBe(true)
      const rufid = (made as { value: { rufid: string } }).value.rufid
      expect(await d.delete!(rufid)).toEqual({ ok: true, value: true })
      await expectCode(1002, (x) => x.resolve(rufid))
    }
  })

  it('1001 malformed RUFIDs: 400 / INVALID_ARGUMENT', async () => {
    await expectCode(1001, (d) => d.resolve('not-a-rufid'))
    await expectCode(1001, (d) => d.execute('rufid:short', {}))
  })

  it('1002 unknown RUFIDs and other tenants\' ones: 404 / NOT_FOUND', async () => {
    const short = computeRufid(addJs).rufid_short
    await expectCode(1002, (d) => d.resolve('AbCdEfGhIjKl'))
    await expectCode(1002, (d) => d.execute('AbCdEfGhIjKl', {}))
    await expectCode(1002, (d) => d.resolve(short, node.keys.globex))
  })

  it('1003 without or with invalid credentials: 401 / UNAUTHENTICATED; without the permission: 403 / PERMISSION_DENIED', async () => {
    const short = computeRufid(addJs).rufid_short
    await expectCode(1003, (d) => d.resolve(short, null), { variant: 'unauthenticated' })
    await expectCode(1003, (d) => d.execute(short, {}, 'svck_AAAAAAAAAAAAAAAA_' + 'B'.repeat(43)), { variant: 'unauthenticated' })
    await expectCode(1003, (d) => d.create({ ...addJs, function_name: 'nope', source_code: 'function nope() {}' }, node.keys.acmeReader))
  })

  it('1004 a function past its wall time: 408 / DEADLINE_EXCEEDED', async () => {
    const spin = await agree((d) => d.create({ ...spinJs, limits: { timeout_ms: 300 } }), (d) => d.name === 'rest')
    const spinShort = (spin as { value: { rufid_short: string } }).value.rufid_short
    await expectCode(1004, (d) => d.execute(spinShort, {}))
  })

  it('1006 bad input: 400 / INVALID_ARGUMENT', async () => {
    const short = computeRufid(addJs).rufid_short
    await expectCode(1006, (d) => d.create({ ...addJs, function_name: 'bad name' }))
    await expectCode(1006, (d) => d.create({ ...addJs, function_name: 'empty', source_code: '' }))
    await expectCode(1006, (d) => d.execute(short, { a: 1, zzz: 2 }))
    // what each protocol cannot decode: a truncated JSON body, a truncated GraphQL document, arguments_json that is not JSON
    await expectCode(1006, (d) => d.malformed())
  })

  it("1006 GraphQL's own request errors (syntax, validation, variables): 400 with extensions {code, name}", async () => {
    const gql = drivers.find((d) => d.name === 'graphql')!
    const request = async (query: string, variables: Record<string, unknown> = {}): Promise<Outcome<unknown>> => {
      const res = await node.gql(query, variables)
      const err = res.body.errors?.[0]
      if (!err) return { ok: true, value: res.body.data }
      return { ok: false, code: err.extensions!.code, name: err.extensions!.name, status: res.status, field: err.path !== undefined, retryAfter: false }
    }
    for (const [query, variables] of [
      ['{ resolveRUFID(rufid: "x" { rufid } }', {}],
      ['{ noSuchField }', {}],
      ['{ resolveRUFID { rufid } }', {}],
      ['query R($r: String!) { resolveRUFID(rufid: $r) { rufid } }', { r: 7 }],
    ] as Array<[string, Record<string, unknown>]>) {
      const outcome = await request(query, variables)
      expect((outcome as Failure).field, query).toBe(false)
      expectDecided(gql.name, outcome, 1006)
    }
  })

  it('1007 a function that throws: 422 / ABORTED', async () => {
    const boom = await agree((d) => d.create(throwsJs))
    await expectCode(1007, (d) => d.execute((boom as { value: { rufid_short: string } }).value.rufid_short, {}))
  })

  it('1008 a short RUFID that already names other content: 409 / ALREADY_EXISTS', async () => {
    const def = { function_name: 'collides', signature: '()', language: 'javascript', source_code: 'function collides() { return 1 }' }
    // a hash collision cannot be produced honestly: record another digest under this short hash
    const digests = node.db.sublevel<string, string>('digests', { valueEncoding: 'json' })
    await digests.put(computeRufid(def).rufid_short, 'f'.repeat(64))
    await expectCode(1008, (d) => d.create(def))
  })

  describe('1005 on a node with a tiny rate limit', () => {
    let limited: Doors
    beforeAll(async () => {
      limited = await startDoors({ perKey: { points: 1, windowSeconds: 3600 } })
    })
    afterAll(async () => {
      await limited?.stop()
    })

    it('429 with Retry-After / RESOURCE_EXHAUSTED with a retry-after trailer', async () => {
      const short = computeRufid(addJs).rufid_short
      // the key's one request of the hour (keys are minted without spending any)
      const firstCall = await limited.drivers[0]!.resolve(short)
      expect(firstCall).toMatchObject({ ok: false, code: 1002 })
      for (const d of limited.drivers) expectDecided(d.name, await d.resolve(short), 1005)
      for (const d of limited.drivers) expectDecided(d.name, await d.execute(short, {}), 1005)
    })
  })
})
