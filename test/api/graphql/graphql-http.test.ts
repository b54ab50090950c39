// The GraphQL door over HTTP (POST/GET /graphql), through real sockets on 127.0.0.1.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import Koa from 'koa'
import { getIntrospectionQuery } from 'graphql/index.js'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { computeRufid } from '../../../src/core/rufid.js'
import { createGraphqlMiddleware, type GraphqlInit } from '../../../src/api/graphql/http.js'
import { addJs, greetJs, throwsJs } from '../../fixtures/functions.js'
import { DEFAULT_GRAPHQL, startNode, type GraphqlResponse, type TestNode } from './node.js'

const CREATE = /* GraphQL */ `
  mutation Create($input: CreateFunctionInput!) {
    createFunction(input: $input) {
      rufid shortRufid name signature language version createdAt
      metrics { usageCount avgExecutionTimeMs successRate }
      tags description contentDigest author tenantId importStatement shareUrl apiEndpoint fullRufid
    }
  }`
const EXECUTE = `mutation Run($rufid: String!, $args: JSON!) { executeFunction(rufid: $rufid, args: $args) { result executionTimeMs status executionId shortRufid fullRufid } }`

const inputOf = (def: { function_name: string; source_code: string; signature: string; language: string; tags?: string[]; description?: string }) => ({
  functionName: def.function_name,
  sourceCode: def.source_code,
  signature: def.signature,
  language: def.language,
  ...(def.tags ? { tags: def.tags } : {}),
  ...(def.description ? { description: def.description } : {}),
})

const codesOf = (r: GraphqlResponse) => (r.body.errors ?? []).map((e) => ({ code: e.extensions?.code, name: e.extensions?.name }))

describe('GraphQL over HTTP', () => {
  let node: TestNode
  let addShort: string

  /** The same door with other settings, on its own port, over the same engine. */
  async function door(init: Partial<GraphqlInit>): Promise<{ post: (query: string, token?: string | null) => Promise<GraphqlResponse>; close: () => Promise<void> }> {
    const app = new Koa()
    app.use(createGraphqlMiddleware({ ...DEFAULT_GRAPHQL, ...init }, { engine: node.engine, logger: pino({ level: 'silent' }) }))
    const server = http.createServer(app.callback())
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    return {
      async post(query, token = node.keys.acme) {
        // no body parser in this app: pass the query in the URL (GET)
        const res = await fetch(`${base}/graphql?query=${encodeURIComponent(query)}`, {
          headers: token === null ? {} : { authorization: `Bearer ${token}` },
        })
        return { status: res.status, headers: res.headers, body: (await res.json()) as GraphqlResponse['body'] }
      },
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    }
  }

  beforeAll(async () => {
    node = await startNode()
    const created = await node.gql(CREATE, { input: inputOf(addJs) })
    expect(created.body.errors).toBeUndefined()
    addShort = (created.body.data!.createFunction as { shortRufid: string }).shortRufid
  })
  afterAll(async () => {
    await node?.stop()
  })

  it('createFunction returns the Function with the §2.2 fields; executeFunction runs add(2, 3) = 5', async () => {
    const expected = computeRufid(addJs)
    const again = await node.gql(CREATE, { input: inputOf(addJs) })
    expect(again.status).toBe(200)
    expect(again.body.data!.createFunction).toMatchObject({
      rufid: `rufid:${expected.rufid_short}:v1:acme`,
      shortRufid: expected.rufid_short,
      name: 'add',
      signature: '(a, b)',
      language: 'javascript',
      version: 'v1',
      tags: ['math'],
      description: 'adds two numbers',
      contentDigest: expected.content_digest,
      author: 'key:k',
      tenantId: 'acme',
      importStatement: `const add = (await import('svc://${expected.rufid_short}')).default`,
      apiEndpoint: `/api/v1/functions/${expected.rufid_short}/execute`,
      fullRufid: `rufid:${expected.rufid_short}:v1:acme`,
    })
    const fn = again.body.data!.createFunction as { createdAt: string }
    expect(new Date(fn.createdAt).toISOString()).toBe(fn.createdAt)

    const run = await node.gql(EXECUTE, { rufid: addShort, args: { a: 2, b: 3 } })
    expect(run.status).toBe(200)
    expect(run.body.errors).toBeUndefined()
    expect(run.body.data!.executeFunction).toMatchObject({ result: 5, status: 'success', shortRufid: addShort, fullRufid: `rufid:${addShort}:v1:acme` })
    const r = run.body.data!.executeFunction as { executionTimeMs: number; executionId: string }
    expect(r.executionTimeMs).toBeTypeOf('number')
    expect(r.executionId).toMatch(/^ex_/)

    // inline JSON literals and positional arguments
    const inline = await node.gql(`mutation { executeFunction(rufid: "rufid:${addShort}:v1:acme", args: [40, 2]) { result } }`)
    expect(inline.body.data!.executeFunction).toEqual({ result: 42 })
  })

  it('resolveRUFID returns the resolution (cached the second time) with its Function', async () => {
    const q = `query R($r: String!) { resolveRUFID(rufid: $r) {
      functionId rufid shortRufid version accessible cached resolutionTimeMs contentDigest manifest lockfile
      function { name shortRufid } } }`
    const first = await node.gql(q, { r: addShort })
    expect(first.body.errors).toBeUndefined()
    const res = first.body.data!.resolveRUFID as Record<string, unknown>
    expect(res).toMatchObject({
      rufid: `rufid:${addShort}:v1:acme`, shortRufid: addShort, version: 'v1', accessible: true,
      contentDigest: computeRufid(addJs).content_digest, manifest: null, lockfile: null,
      function: { name: 'add', shortRufid: addShort },
    })
    expect(res.functionId).toMatch(/^[0-9a-f-]{36}$/)
    expect(res.resolutionTimeMs).toBeTypeOf('number')
    const second = await node.gql(q, { r: `rufid:${addShort}:v1:acme` })
    expect((second.body.data!.resolveRUFID as { cached: boolean }).cached).toBe(true)
  })

  it('listFunctions defaults to limit 20 / offset 0, and filters by search and tags', async () => {
    await node.gql(CREATE, { input: inputOf(greetJs) })
    const all = await node.gql(`{ listFunctions { items { name shortRufid tags } pagination { total limit offset nextOffset } } }`)
    expect(all.body.errors).toBeUndefined()
    const list = all.body.data!.listFunctions as { items: Array<{ name: string }>; pagination: Record<string, unknown> }
    expect(list.pagination).toEqual({ total: 2, limit: 20, offset: 0, nextOffset: null })
    expect(list.items.map((i) => i.name).sort()).toEqual(['add', 'greet'])

    const paged = await node.gql(`{ listFunctions(limit: 1) { items { name } pagination { total limit offset nextOffset } } }`)
    expect((paged.body.data!.listFunctions as { pagination: unknown }).pagination).toEqual({ total: 2, limit: 1, offset: 0, nextOffset: 1 })

    const tagged = await node.gql(`{ listFunctions(tags: ["math"]) { items { name } } }`)
    expect(tagged.body.data!.listFunctions).toEqual({ items: [{ name: 'add' }] })
    const searched = await node.gql(`query S($s: String) { listFunctions(search: $s) { items { name } } }`, { s: 'greet' })
    expect(searched.body.data!.listFunctions).toEqual({ items: [{ name: 'greet' }] })

    // another tenant sees none of them
    const other = await node.gql(`{ listFunctions { pagination { total } } }`, {}, { token: node.keys.globex })
    expect(other.body.data!.listFunctions).toEqual({ pagination: { total: 0 } })
  })

  it('getFunctionMetrics counts executions', async () => {
    const { body } = await node.gql(CREATE, { input: inputOf({ ...addJs, function_name: 'metered', source_code: 'function metered(a, b) { return a * b }' }) })
    const short = (body.data!.createFunction as { shortRufid: string }).shortRufid
    const q = `query M($r: String!) { getFunctionMetrics(rufid: $r) { usageCount avgExecutionTimeMs successRate } }`
    expect((await node.gql(q, { r: short })).body.data!.getFunctionMetrics).toEqual({ usageCount: 0, avgExecutionTimeMs: 0, successRate: 0 })
    for (let i = 0; i < 3; i++) await node.gql(EXECUTE, { rufid: short, args: { a: i, b: 2 } })
    const m = (await node.gql(q, { r: short })).body.data!.getFunctionMetrics as { usageCount: number; avgExecutionTimeMs: number; successRate: number }
    expect(m.usageCount).toBe(3)
    expect(m.successRate).toBe(1)
    expect(m.avgExecutionTimeMs).toBeGreaterThan(0)
    const viaFunction = await node.gql(`query R($r: String!) { resolveRUFID(rufid: $r) { function { metrics { usageCount } } } }`, { r: short })
    expect(viaFunction.body.data!.resolveRUFID).toEqual({ function: { metrics: { usageCount: 3 } } })
  })

  it('deleteFunction answers true, then resolveRUFID gives 1002', async () => {
    const { body } = await node.gql(CREATE, { input: inputOf({ ...addJs, function_name: 'doomed', source_code: 'function doomed() { return 1 }', signature: '()' }) })
    const short = (body.data!.createFunction as { shortRufid: string }).shortRufid
    const del = await node.gql(`mutation D($r: String!) { deleteFunction(rufid: $r) }`, { r: short })
    expect(del.body).toEqual({ data: { deleteFunction: true } })
    const gone = await node.gql(`query R($r: String!) { resolveRUFID(rufid: $r) { rufid } }`, { r: short })
    expect(gone.status).toBe(200)
    expect(gone.body.data).toEqual({ resolveRUFID: null })
    expect(codesOf(gone)).toEqual([{ code: 1002, name: 'RUFID_NOT_FOUND' }])
    const again = await node.gql(`mutation D($r: String!) { deleteFunction(rufid: $r) }`, { r: short })
    expect(codesOf(again)).toEqual([{ code: 1002, name: 'RUFID_NOT_FOUND' }])
  })

  it('errors carry extensions {code, name}: 1001, 1002, 1003, 1006, 1007, 1011', async () => {
    const malformed = await node.gql(`{ resolveRUFID(rufid: "not-a-rufid!") { rufid } }`)
    expect(codesOf(malformed)).toEqual([{ code: 1001, name: 'INVALID_RUFID' }])
    expect(malformed.body.errors![0]!.path).toEqual(['resolveRUFID'])

    const unknown = await node.gql(`{ getFunctionMetrics(rufid: "AAAAAAAAAAAA") { usageCount } }`)
    expect(codesOf(unknown)).toEqual([{ code: 1002, name: 'RUFID_NOT_FOUND' }])
    const otherTenant = await node.gql(`{ resolveRUFID(rufid: "rufid:${addShort}:v1:acme") { rufid } }`, {}, { token: node.keys.globex })
    expect(codesOf(otherTenant)).toEqual([{ code: 1002, name: 'RUFID_NOT_FOUND' }])
    // an execution is not a function: 1011, naming what was not found
    const noExecution = await node.gql(`{ executionReceipt(executionId: "ex_00000000000000000000000000") }`)
    expect(codesOf(noExecution)).toEqual([{ code: 1011, name: 'NOT_FOUND' }])
    expect(noExecution.body.errors![0]!.extensions).toMatchObject({ details: { resource: 'execution', execution_id: 'ex_00000000000000000000000000' } })

    const denied = await node.gql(CREATE, { input: inputOf(throwsJs) }, { token: node.keys.acmeReader })
    expect(denied.status).toBe(200)
    expect(codesOf(denied)).toEqual([{ code: 1003, name: 'PERMISSION_DENIED' }])

    const invalidInput = await node.gql(CREATE, { input: { ...inputOf(addJs), functionName: '1nvalid name' } })
    expect(codesOf(invalidInput)).toEqual([{ code: 1006, name: 'VALIDATION_FAILED' }])
    const unknownField = await node.gql(`{ listFunctions { nope } }`)
    expect(unknownField.status).toBe(400)
    expect(codesOf(unknownField)).toEqual([{ code: 1006, name: 'VALIDATION_FAILED' }])
    const syntax = await node.gql(`{ listFunctions {`)
    expect(syntax.status).toBe(400)
    expect(codesOf(syntax)).toEqual([{ code: 1006, name: 'VALIDATION_FAILED' }])
    const missingArgs = await node.gql(`mutation { executeFunction(rufid: "${addShort}") { result } }`)
    expect(codesOf(missingArgs)).toEqual([{ code: 1006, name: 'VALIDATION_FAILED' }])
    const badVariables = await node.gql(EXECUTE, { rufid: addShort })
    expect(badVariables.status).toBe(400)
    expect(codesOf(badVariables)).toEqual([{ code: 1006, name: 'VALIDATION_FAILED' }])

    const thrower = await node.gql(CREATE, { input: inputOf(throwsJs) })
    const boom = await node.gql(EXECUTE, { rufid: (thrower.body.data!.createFunction as { shortRufid: string }).shortRufid, args: {} })
    expect(boom.body.data).toEqual({ executeFunction: null })
    expect(codesOf(boom)).toEqual([{ code: 1007, name: 'EXECUTION_FAILED' }])
  })

  it('keeps the manifest text it was given, and refuses a text that is not the manifest (1006)', async () => {
    const manifest = { schemaVersion: '1.0', name: 'textual' }
    const manifestText = '{ "name": "textual",\n  "schemaVersion": "1.0" }\n'
    const base = { ...inputOf({ ...addJs, function_name: 'textual' }), sourceCode: 'function textual(a, b) { return a + b }', manifest }
    const created = await node.gql(CREATE, { input: { ...base, manifestText } })
    expect(created.body.errors).toBeUndefined()
    const rufid = (created.body.data!.createFunction as { shortRufid: string }).shortRufid
    const resolved = await node.gql(`query($r: String!) { resolveRUFID(rufid: $r) { manifestText lockfileText manifest } }`, { r: rufid })
    expect(resolved.body.data!.resolveRUFID).toEqual({ manifestText, lockfileText: null, manifest })
    const wrong = await node.gql(CREATE, { input: { ...base, sourceCode: 'function textual(a, b) { return a - b }', manifestText: '{"name": "other", "schemaVersion": "1.0"}' } })
    expect(codesOf(wrong)).toEqual([{ code: 1006, name: 'VALIDATION_FAILED' }])
  })

  it('errors carry extensions.details: every JSON-pointer problem of a bad manifest, as REST gives them', async () => {
    const manifest = { schemaVersion: '9.9', name: 7, runtime: { language: 'cobol' }, dependencies: { pip: 'requests' } }
    const input = { ...inputOf({ ...addJs, function_name: 'withManifest' }), sourceCode: 'function withManifest(a, b) { return a + b }', manifest }
    const viaGraphql = await node.gql(CREATE, { input })
    const error = viaGraphql.body.errors![0]!
    expect(codesOf(viaGraphql)).toEqual([{ code: 1006, name: 'VALIDATION_FAILED' }])
    const problems = (error.extensions!.details as { problems: Array<{ pointer: string; message: string }> }).problems
    expect(problems.length).toBeGreaterThan(1)
    for (const p of problems) expect(p).toEqual({ pointer: expect.stringMatching(/^\//), message: expect.any(String) })
    const viaRest = await node.rest('/api/v1/functions/create', 'POST', {
      function_name: 'withManifest', signature: addJs.signature, language: addJs.language, source_code: input.sourceCode, manifest,
    })
    expect(error.extensions!.details).toEqual((viaRest.body.error as { details: unknown }).details)
    // other errors carry their details too
    const unknown = await node.gql(`{ resolveRUFID(rufid: "AAAAAAAAAAAA") { rufid } }`)
    expect(unknown.body.errors![0]!.extensions).toEqual({ code: 1002, name: 'RUFID_NOT_FOUND', details: { rufid: 'AAAAAAAAAAAA' } })
  })

  it('without credentials (or with a bad key) answers HTTP 401 with code 1003', async () => {
    const none = await node.gql(`{ listFunctions { pagination { total } } }`, {}, { token: null })
    expect(none.status).toBe(401)
    expect(none.headers.get('www-authenticate')).toBe('Bearer')
    expect(none.body.data).toBeUndefined()
    expect(codesOf(none)).toEqual([{ code: 1003, name: 'PERMISSION_DENIED' }])
    const bad = await node.gql(CREATE, { input: inputOf(addJs) }, { token: 'svck_AAAAAAAAAAAAAAAA_' + 'a'.repeat(43) })
    expect(bad.status).toBe(401)
    expect(codesOf(bad)).toEqual([{ code: 1003, name: 'PERMISSION_DENIED' }])
    // a schema-revealing validation message is not given to unauthenticated callers either
    const probing = await node.gql(`{ listFunctionz }`, {}, { token: null })
    expect(probing.status).toBe(401)
  })

  it('introspection is refused without credentials and served with them', async () => {
    const q = `{ __schema { queryType { name } } }`
    const anonymous = await node.gql(q, {}, { token: null })
    expect(anonymous.status).toBe(401)
    expect(codesOf(anonymous)).toEqual([{ code: 1003, name: 'PERMISSION_DENIED' }])
    const authenticated = await node.gql(q)
    expect(authenticated.body).toEqual({ data: { __schema: { queryType: { name: 'Query' } } } })

    const open = await door({ introspection: 'public' })
    const closed = await door({ introspection: 'disabled' })
    try {
      expect((await open.post(q, null)).body).toEqual({ data: { __schema: { queryType: { name: 'Query' } } } })
      expect((await open.post(`{ listFunctions { items { name } } }`, null)).status).toBe(401)
      const refused = await closed.post(q)
      expect(refused.status).toBe(403)
      expect(codesOf(refused)).toEqual([{ code: 1003, name: 'PERMISSION_DENIED' }])
    } finally {
      await open.close()
      await closed.close()
    }
  })

  it('the schema has every §4.4 operation with its exact arguments and result type', async () => {
    const { body } = await node.gql(`{ __schema {
      queryType { fields { name args { name type { ...T } defaultValue } type { ...T } } }
      mutationType { fields { name args { name type { ...T } defaultValue } type { ...T } } }
      subscriptionType { fields { name args { name type { ...T } defaultValue } type { ...T } } }
    } __type(name: "Function") { fields { name type { ...T } } } }
    fragment T on __Type { kind name ofType { kind name ofType { kind name } } }`)
    expect(body.errors).toBeUndefined()
    type TypeRef = { kind: string; name: string | null; ofType: TypeRef | null }
    const show = (t: TypeRef): string => (t.kind === 'NON_NULL' ? `${show(t.ofType!)}!` : t.kind === 'LIST' ? `[${show(t.ofType!)}]` : t.name!)
    type Field = { name: string; args: Array<{ name: string; type: TypeRef; defaultValue: string | null }>; type: TypeRef }
    const sig = (f: Field): string =>
      `${f.name}(${f.args.map((a) => `${a.name}: ${show(a.type)}${a.defaultValue === null ? '' : ` = ${a.defaultValue}`}`).join(', ')}): ${show(f.type)}`
    const schema = body.data!.__schema as Record<string, { fields: Field[] }>
    expect(schema.queryType!.fields.map(sig)).toEqual([
      'resolveRUFID(rufid: String!): RUFIDResolution',
      'listFunctions(search: String, tags: [String], limit: Int = 20, offset: Int = 0): FunctionList',
      'getFunctionMetrics(rufid: String!): FunctionMetrics',
      'executionReceipt(executionId: String!): JSON',
    ])
    expect(schema.mutationType!.fields.map(sig)).toEqual([
      'createFunction(input: CreateFunctionInput!): Function',
      'executeFunction(rufid: String!, args: JSON!): ExecutionResult',
      'deleteFunction(rufid: String!): Boolean',
    ])
    expect(schema.subscriptionType!.fields.map(sig)).toEqual([
      'functionExecutions(rufid: String): ExecutionEvent',
      'systemEvents(): SystemEvent',
    ])
    const fnFields = (body.data!.__type as { fields: Array<{ name: string; type: TypeRef }> }).fields
    expect(fnFields.slice(0, 8).map((f) => `${f.name}: ${show(f.type)}`)).toEqual([
      'rufid: String!', 'shortRufid: String!', 'name: String!', 'signature: String!', 'language: String!',
      'version: String!', 'createdAt: DateTime!', 'metrics: FunctionMetrics',
    ])
  })

  it('refuses a query nested past the depth limit while another client is still served', async () => {
    const strict = await door({ maxDepth: 3 })
    try {
      const deep = `{ resolveRUFID(rufid: "${addShort}") { function { metrics { usageCount } } } }`
      const [refused, served, servedElsewhere] = await Promise.all([
        strict.post(deep),
        strict.post(`{ resolveRUFID(rufid: "${addShort}") { function { name } } }`, node.keys.acmeReader),
        node.gql(deep),
      ])
      expect(refused.status).toBe(400)
      expect(codesOf(refused)).toEqual([{ code: 1006, name: 'VALIDATION_FAILED' }])
      expect(refused.body.errors![0]!.message).toMatch(/depth 4 exceeds the limit of 3/)
      expect(served.body).toEqual({ data: { resolveRUFID: { function: { name: 'add' } } } })
      expect(servedElsewhere.body.data).toEqual({ resolveRUFID: { function: { metrics: { usageCount: expect.any(Number) } } } })
    } finally {
      await strict.close()
    }
  })

  it('with the default limits, a max-size page (limit 500) is served and several in one request are refused', async () => {
    expect(DEFAULT_GRAPHQL.maxCost).toBe(1000)
    const fields = 'rufid shortRufid name signature language version createdAt tags description contentDigest'
    const page = `listFunctions(limit: 500) { items { ${fields} } pagination { total nextOffset } }`
    const maxPage = await node.gql(`{ ${page} }`)
    expect(maxPage.status).toBe(200)
    expect(maxPage.body.errors).toBeUndefined()
    const viaVariable = await node.gql(`query L($n: Int) { listFunctions(limit: $n) { items { ${fields} } } }`, { n: 500 })
    expect(viaVariable.body.errors).toBeUndefined()

    // the same page three times over (aliases), or 500 per-item metrics lookups on top of it
    const batched = await node.gql(`{ a: ${page} b: ${page} c: ${page} }`)
    expect(batched.status).toBe(400)
    expect(codesOf(batched)).toEqual([{ code: 1006, name: 'VALIDATION_FAILED' }])
    expect(batched.body.errors![0]!.message).toMatch(/cost 1506 exceeds the limit of 1000/)
    const withMetrics = await node.gql(`{ listFunctions(limit: 500) { items { name metrics { usageCount } } } }`)
    expect(withMetrics.body.errors![0]!.message).toMatch(/cost 1001 exceeds the limit of 1000/)
    // introspection is charged too: the whole schema eleven times over
    const schemas = Array.from({ length: 11 }, (_, i) => `s${i}: __schema { types { name } }`).join(' ')
    const introspected = await node.gql(`{ ${schemas} }`)
    expect(introspected.status).toBe(400)
    expect(introspected.body.errors![0]!.message).toMatch(/cost 1100 exceeds the limit of 1000/)
  })

  it('with the default limits, the standard introspection query is served and introspection nested past the depth limit is not', async () => {
    expect(DEFAULT_GRAPHQL.maxDepth).toBe(15)
    const standard = await node.gql(getIntrospectionQuery({ descriptions: true, specifiedByUrl: true, directiveIsRepeatable: true, inputValueDeprecation: true }))
    expect(standard.body.errors).toBeUndefined()
    expect((standard.body.data!.__schema as { queryType: { name: string } }).queryType.name).toBe('Query')

    const chain = (n: number): string => (n === 0 ? 'name' : `name ofType { ${chain(n - 1)} }`)
    const deep = await node.gql(`{ __schema { types { fields { type { ${chain(12)} } } } } }`)
    expect(deep.status).toBe(400)
    expect(codesOf(deep)).toEqual([{ code: 1006, name: 'VALIDATION_FAILED' }])
    expect(deep.body.errors![0]!.message).toMatch(/depth 17 exceeds the limit of 15/)
    const byName = await node.gql(`{ __type(name: "Function") { ${chain(15)} } }`)
    expect(byName.body.errors![0]!.message).toMatch(/depth 17 exceeds the limit of 15/)
    // just within the limit
    const within = await node.gql(`{ __type(name: "Function") { ${chain(13)} } }`)
    expect(within.body.errors).toBeUndefined()
    // cycles through fields → type → fields are refused by graphql's own introspection rule, also as 1006
    const cycle = await node.gql(`{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }`)
    expect(cycle.status).toBe(400)
    expect(codesOf(cycle)).toEqual([{ code: 1006, name: 'VALIDATION_FAILED' }])
  })

  it('refuses documents over the size limit', async () => {
    const huge = await node.gql(`{ listFunctions { pagination { total } } } # ${'x'.repeat(100_001)}`)
    expect(huge.status).toBe(413)
    expect(codesOf(huge)).toEqual([{ code: 1006, name: 'VALIDATION_FAILED' }])
  })

  it('serves queries over GET and refuses mutations over GET', async () => {
    const get = (query: string) => fetch(`${node.url}/graphql?query=${encodeURIComponent(query)}`, { headers: { authorization: `Bearer ${node.keys.acme}` } })
    const q = await get(`{ resolveRUFID(rufid: "${addShort}") { version } }`)
    expect(q.status).toBe(200)
    expect(await q.json()).toEqual({ data: { resolveRUFID: { version: 'v1' } } })
    const m = await get(`mutation { deleteFunction(rufid: "${addShort}") }`)
    expect(m.status).toBe(405)
    expect(((await m.json()) as GraphqlResponse['body']).errors![0]!.extensions).toEqual({ code: 1006, name: 'VALIDATION_FAILED', details: {} })
    // other paths still reach REST
    expect((await node.rest('/api/v1/functions', 'GET')).status).toBe(200)
  })

  it('audits each operation and records svc_protocol_* metrics with protocol "graphql"', async () => {
    await node.gql(`mutation { executeFunction(rufid: "${addShort}", args: {a: 1, b: 1}) { result } }`)
    await node.gql(`{ listFunctions { pagination { total } } }`, {}, { token: null })
    const executed = await node.engine.auditLog.query({ tenant: 'acme', operation: 'rufid.execute', rufid: addShort })
    expect(executed.items.length).toBeGreaterThan(0)
    expect(executed.items.at(-1)).toMatchObject({ result: 'success', user: 'key:k', method: 'api_key' })
    const refused = await node.engine.auditLog.query({ operation: 'rufid.list' })
    expect(refused.items.some((e) => e.result === 'unauthenticated' && e.code === 1003)).toBe(true)
    const created = await node.engine.auditLog.query({ tenant: 'acme', operation: 'rufid.create' })
    expect(created.items.some((e) => e.rufid === `rufid:${addShort}:v1:acme`)).toBe(true)

    const metrics = await (await fetch(`${node.url}/metrics`)).text()
    expect(metrics).toMatch(/svc_protocol_requests_total\{protocol="graphql",operation="rufid.execute",status="success"\} \d+/)
    expect(metrics).toMatch(/svc_protocol_errors_total\{protocol="graphql",code="1003"\} \d+/)
    expect(metrics).toMatch(/svc_protocol_request_duration_seconds_count\{protocol="graphql",operation="rufid.list"\} \d+/)
  })
})
