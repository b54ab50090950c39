// The document and the node agree (issue 28): a value /openapi.json allows is accepted, and a value
// the node refuses is one the document refuses too — generated clients send what the schema
// allows. Each case checks both sides against the node's own document (its `$ref`s followed, so
// the test holds whatever the schemas are named).
import { Ajv2020 } from 'ajv/dist/2020.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addJs } from '../fixtures/functions.js'
import { startNode, type TestNode } from './graphql/node.js'

type Json = Record<string, unknown>

describe('schema and server agree', () => {
  let node: TestNode
  let doc: Json
  let short: string
  const ajv = new Ajv2020({ strict: false, allErrors: true })

  /** The schema at a JSON pointer of the document, its `$ref`s resolved. */
  const at = (pointer: string[]): Json => {
    let value: unknown = doc
    for (const key of pointer) {
      value = (value as Json)[key]
      while (value !== null && typeof value === 'object' && typeof (value as Json).$ref === 'string') {
        value = ((value as Json).$ref as string).slice(2).split('/').map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'))
          .reduce<unknown>((node, k) => (node as Json)[k], doc)
      }
      expect(value, pointer.join(' ')).toBeDefined()
    }
    return value as Json
  }
  /** Whether the document allows `value` for the schema at `pointer` (components resolvable from it). */
  const allows = (pointer: string[], value: unknown): boolean => {
    const schema = { ...at(pointer), components: doc.components }
    return ajv.validate(JSON.parse(JSON.stringify(schema).replace(/"#\/components\//g, '"#/components/')), value)
  }
  const bodyOf = (path: string, method: string): string[] => ['paths', path, method, 'requestBody', 'content', 'application/json', 'schema']
  const parameter = (path: string, method: string, name: string): string[] => {
    const list = at(['paths', path, method]).parameters as Array<{ name: string }>
    const i = list.findIndex((p) => p.name === name)
    expect(i, `${method} ${path} ${name}`).toBeGreaterThanOrEqual(0)
    return ['paths', path, method, 'parameters', String(i), 'schema']
  }

  beforeAll(async () => {
    node = await startNode()
    doc = (await node.rest('/openapi.json', 'GET')).body
    const created = await node.rest('/api/v1/functions/create', 'POST', addJs)
    expect(created.status).toBe(201)
    short = created.body.rufid_short as string
  })
  afterAll(async () => {
    await node?.stop()
  })

  it('expires_days: null is refused by both while keys of the node expire', async () => {
    const path = bodyOf('/api/v1/auth/v2/api-keys', 'post')
    const body = { name: 'k', scopes: ['functions:read'], expires_days: null }
    expect(allows(path, body)).toBe(false)
    expect((await node.rest('/api/v1/auth/v2/api-keys', 'POST', body)).status).toBe(400)
    expect(allows(path, { ...body, expires_days: 30 })).toBe(true)
    expect((await node.rest('/api/v1/auth/v2/api-keys', 'POST', { ...body, expires_days: 30 })).status).toBe(201)
  })

  it('an empty GraphQL query is refused by both', async () => {
    expect(allows(bodyOf('/graphql', 'post'), { query: '' })).toBe(false)
    expect(allows(parameter('/graphql', 'get', 'query'), '')).toBe(false)
    expect((await node.rest('/graphql', 'POST', { query: '' })).status).toBe(400)
  })

  it('an empty audit from is refused by both; a date is accepted by both', async () => {
    const from = parameter('/api/v1/audit', 'get', 'from')
    expect(allows(from, '')).toBe(false)
    expect((await node.rest('/api/v1/audit?from=', 'GET')).status).toBe(400)
    for (const value of ['2026-01-02', '2026-01-02T03:04:05Z', '2026-01-02T03:04:05.123+01:00']) {
      expect(allows(from, value), value).toBe(true)
      expect((await node.rest(`/api/v1/audit?from=${encodeURIComponent(value)}`, 'GET')).status, value).toBe(200)
    }
  })

  it('a /v1 source that is not base64 is refused by both; base64 with line breaks is accepted by both', async () => {
    const path = bodyOf('/v1/functions', 'post')
    const base = { name: 'add', runtime: 'node20' }
    for (const source of ['not base64!', 'A', 'QQ===', 'QUJD\fREVG']) {
      expect(allows(path, { ...base, source }), source).toBe(false)
      expect((await node.rest('/v1/functions', 'POST', { ...base, source })).status, source).toBe(400)
    }
    const code = Buffer.from('export function add(a, b) { return a + b }\n').toString('base64')
    for (const source of [code, code.replace(/(.{16})/g, '$1\n'), code.replace(/=+$/, '')]) {
      expect(allows(path, { ...base, source }), source).toBe(true)
      expect((await node.rest('/v1/functions', 'POST', { ...base, source })).status, source).toBeLessThan(300)
    }
  })

  it('an execution id 0 is refused by both', async () => {
    const id = parameter('/v1/executions/{id}', 'get', 'id')
    expect(allows(id, '0')).toBe(false)
    expect((await node.rest('/v1/executions/0', 'GET')).status).toBe(400)
    expect(allows(id, 'ex_01ARZ3NDEKTSV4RRFFQ69G5FAV')).toBe(true)
  })

  it('window=944799h is refused by both; 720h (30 days) is accepted by both and 721h by neither', async () => {
    const window = parameter('/v1/telemetry/functions/{rufid}', 'get', 'window')
    for (const [value, ok] of [['944799h', false], ['721h', false], ['31d', false], ['720h', true], ['30d', true], ['2592000s', true], ['2592001s', false]] as const) {
      expect(allows(window, value), value).toBe(ok)
      expect((await node.rest(`/v1/telemetry/functions/${short}?window=${value}`, 'GET')).status, value).toBe(ok ? 200 : 400)
    }
  })

  it('an execute without a body is allowed by the document (arguments are optional, §4.1) and answered 200', async () => {
    expect(at(['paths', '/api/v1/functions/{rufid}/execute', 'post', 'requestBody']).required).toBe(false)
    const res = await fetch(`${node.url}/api/v1/functions/${short}/execute`, { method: 'POST', headers: { authorization: `Bearer ${node.keys.acme}` } })
    // add(a, b) without arguments runs (undefined + undefined): the call itself is accepted
    expect(res.status).toBe(200)
  })
})
