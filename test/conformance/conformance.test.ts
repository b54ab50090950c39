// One conformance suite: the same cases against REST, GraphQL and gRPC of one node. Every protocol
// must give the same RUFIDs, the same results and the same svc error codes.
import type * as grpc from '@grpc/grpc-js'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGrpcServer } from '../../src/api/grpc/server.js'
import { computeRufid } from '../../src/core/rufid.js'
import { bearer, createRufid, executeFunction, resolveRufid, svcClient, type SvcClient } from '../api/grpc/helpers.js'
import { startNode, type TestNode } from '../api/graphql/node.js'
import { addJs, spinJs, throwsJs } from '../fixtures/functions.js'

/** What every driver answers: a value, or the svc error code. */
type Outcome<T> = { ok: true; value: T } | { ok: false; code: number }

interface Definition { function_name: string; signature: string; language: string; source_code: string; limits?: { timeout_ms?: number } }
interface Driver {
  name: string
  create(def: Definition, token?: string | null): Promise<Outcome<{ rufid: string; rufid_short: string; version: string }>>
  resolve(rufid: string, token?: string | null): Promise<Outcome<{ rufid: string; version: string; content_digest: string }>>
  execute(rufid: string, args: unknown, token?: string | null): Promise<Outcome<unknown>>
  list?(): Promise<Outcome<string[]>>
  delete?(rufid: string): Promise<Outcome<boolean>>
}

const restDriver = (node: TestNode): Driver => {
  const req = async (path: string, method: string, body: unknown, token: string | null | undefined) => {
    const t = token === undefined ? node.keys.acme : token
    const res = await fetch(`${node.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(t === null ? {} : { authorization: `Bearer ${t}` }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    const json = (await res.json()) as Record<string, unknown> & { error?: { code: number } }
    return json.error ? { ok: false as const, code: json.error.code } : { ok: true as const, value: json }
  }
  const map = <T>(o: Outcome<Record<string, unknown>>, f: (v: Record<string, unknown>) => T): Outcome<T> => (o.ok ? { ok: true, value: f(o.value) } : o)
  return {
    name: 'rest',
    create: async (def, token) => map(await req('/api/v1/functions/create', 'POST', def, token), (v) => ({ rufid: v.rufid as string, rufid_short: v.rufid_short as string, version: v.version as string })),
    resolve: async (rufid, token) => map(await req('/api/v1/functions/resolve', 'POST', { rufid }, token), (v) => ({ rufid: v.rufid as string, version: v.version as string, content_digest: v.content_digest as string })),
    execute: async (rufid, args, token) => map(await req(`/api/v1/functions/${encodeURIComponent(rufid)}/execute`, 'POST', { arguments: args }, token), (v) => v.result),
    list: async () => map(await req('/api/v1/functions?limit=500', 'GET', undefined, undefined), (v) => (v.items as Array<{ full_rufid: string }>).map((i) => i.full_rufid).sort()),
    delete: async (rufid) => map(await req(`/api/v1/functions/${encodeURIComponent(rufid)}`, 'DELETE', undefined, undefined), () => true),
  }
}

const graphqlDriver = (node: TestNode): Driver => {
  const run = async <T>(query: string, variables: Record<string, unknown>, pick: (d: Record<string, unknown>) => T, token?: string | null): Promise<Outcome<T>> => {
    const res = await node.gql(query, variables, { token })
    const err = res.body.errors?.[0]
    if (err) return { ok: false, code: err.extensions!.code }
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
  }
}

const grpcDriver = (client: SvcClient, node: TestNode): Driver => {
  const md = (token: string | null | undefined) => (token === null ? undefined : bearer(token ?? node.keys.acme))
  const call = async <T>(p: () => Promise<T>): Promise<Outcome<T>> => {
    try {
      return { ok: true, value: await p() }
    } catch (err) {
      const code = (err as grpc.ServiceError).metadata?.get('svc-error-code')[0]
      if (code === undefined) throw err
      return { ok: false, code: Number(code) }
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
  }
}

describe('conformance: REST, GraphQL and gRPC give the same answers', () => {
  let node: TestNode
  let client: SvcClient
  let stopGrpc: () => Promise<void>
  let drivers: Driver[]

  beforeAll(async () => {
    node = await startNode()
    const server = createGrpcServer({ host: '127.0.0.1', port: 0, maxMessageBytes: 1 << 20 }, { engine: node.engine, logger: pino({ level: 'silent' }) })
    const { port } = await server.start()
    stopGrpc = () => server.stop()
    client = svcClient(`127.0.0.1:${port}`)
    drivers = [restDriver(node), graphqlDriver(node), grpcDriver(client, node)]
  })
  afterAll(async () => {
    client?.close()
    await stopGrpc?.()
    await node?.stop()
  })

  /** Runs `f` on every driver and checks they all agree; returns the common outcome. */
  const agree = async <T>(f: (d: Driver) => Promise<Outcome<T>>, only?: (d: Driver) => boolean): Promise<Outcome<T>> => {
    const outcomes: Array<[string, Outcome<T>]> = []
    for (const d of drivers.filter(only ?? (() => true))) outcomes.push([d.name, await f(d)])
    for (const [name, o] of outcomes.slice(1)) expect(o, `${name} differs from ${outcomes[0]![0]}`).toEqual(outcomes[0]![1])
    return outcomes[0]![1]
  }
  const expectCode = async (code: number, f: (d: Driver) => Promise<Outcome<unknown>>, only?: (d: Driver) => boolean) => {
    expect(await agree(f, only)).toEqual({ ok: false, code })
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

  it('maps every error code the same way', async () => {
    const short = computeRufid(addJs).rufid_short
    await expectCode(1001, (d) => d.resolve('not-a-rufid'))
    await expectCode(1001, (d) => d.execute('rufid:short', {}))
    await expectCode(1002, (d) => d.resolve('AbCdEfGhIjKl'))
    await expectCode(1002, (d) => d.execute('AbCdEfGhIjKl', {}))
    await expectCode(1002, (d) => d.resolve(short, node.keys.globex))
    await expectCode(1003, (d) => d.resolve(short, null))
    await expectCode(1003, (d) => d.create({ ...addJs, function_name: 'nope', source_code: 'function nope() {}' }, node.keys.acmeReader))
    await expectCode(1003, (d) => d.execute(short, {}, 'svck_AAAAAAAAAAAAAAAA_' + 'B'.repeat(43)))
    await expectCode(1006, (d) => d.create({ ...addJs, function_name: 'bad name' }))
    await expectCode(1006, (d) => d.execute(short, { a: 1, zzz: 2 }))
    const spin = await agree((d) => d.create({ ...spinJs, limits: { timeout_ms: 300 } }), (d) => d.name === 'rest')
    const spinShort = (spin as { value: { rufid_short: string } }).value.rufid_short
    await expectCode(1004, (d) => d.execute(spinShort, {}))
    const boom = await agree((d) => d.create(throwsJs))
    await expectCode(1007, (d) => d.execute((boom as { value: { rufid_short: string } }).value.rufid_short, {}))
  })
})
