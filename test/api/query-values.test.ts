// Empty, blank and malformed query values are refused (400, 1006 naming the parameter) on every
// route the node documents — REST, GraphQL over HTTP and the /ws upgrade — never read as absent or
// as "all" (issue 28: `DELETE /api/v1/functions/{rufid}?version=` deleted every live version). The
// parameters come from the node's own /openapi.json, so a route added later is walked too.
import http from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addJs } from '../fixtures/functions.js'
import { startNode, type TestNode } from './graphql/node.js'

interface Parameter {
  name: string
  in: string
  schema: { type?: string; pattern?: string; items?: { pattern?: string } }
}
type Operations = Record<string, { parameters?: Parameter[] }>

/** A value the parameter's schema refuses beyond blankness, or none when any non-blank text is valid. */
function malformedValues(p: Parameter): string[] {
  const { schema } = p
  if (schema.type === 'integer' || schema.type === 'number') return ['abc', '1x', '0x10', ...(schema.type === 'integer' ? ['1.5'] : [])]
  if (schema.type === 'array') return [',', 'a,,b', 'a,%20']
  const pattern = schema.pattern
  if (pattern === undefined || pattern === '[^\\t\\n\\v\\f\\r ]') return []
  const re = new RegExp(pattern, 'u')
  return ['!', 'v0', '0', '~', 'x y'].filter((v) => !re.test(v)).slice(0, 2)
}

/** The status and body of an upgrade request to /ws with this query (the node answers before upgrading). */
function upgrade(url: string, token: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      headers: {
        authorization: `Bearer ${token}`, connection: 'Upgrade', upgrade: 'websocket',
        'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      },
      timeout: 5000,
    })
    req.on('response', (res) => {
      let body = ''
      res.on('data', (c: Buffer) => (body += String(c)))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('upgrade', (res, socket) => {
      socket.destroy()
      resolve({ status: res.statusCode ?? 101, body: '' })
    })
    req.on('timeout', () => req.destroy(new Error('no answer')))
    req.on('error', reject)
    req.end()
  })
}

describe('every documented query parameter refuses empty, blank and malformed values', () => {
  let node: TestNode
  let short: string

  beforeAll(async () => {
    node = await startNode()
    const created = await node.rest('/api/v1/functions/create', 'POST', addJs)
    expect(created.status).toBe(201)
    short = created.body.rufid_short as string
  })
  afterAll(async () => {
    await node?.stop()
  })

  it('DELETE /api/v1/functions/{rufid}?version= deletes nothing (it deleted every live version)', async () => {
    for (const query of ['version=', 'version', 'version=%20', 'version=%09%0A']) {
      const res = await node.rest(`/api/v1/functions/${short}?${query}`, 'DELETE')
      expect(res.status, query).toBe(400)
      expect(res.body.error, query).toMatchObject({ code: 1006, details: { problems: [{ pointer: '/version' }] } })
    }
    expect((await node.rest(`/api/v1/functions/${short}`, 'GET')).status).toBe(200)
    expect((await node.rest(`/v1/telemetry/functions/${short}/series?version=`, 'GET')).status).toBe(400)
  })

  it('walks every query parameter of /openapi.json with empty, blank and malformed values', async () => {
    const doc = (await node.rest('/openapi.json', 'GET')).body as { paths: Record<string, Operations> }
    let checked = 0
    const walked = new Set<string>()
    for (const [template, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const query = (operation.parameters ?? []).filter((p) => p.in === 'query')
        if (query.length === 0) continue
        const path = template.replace('{rufid}', short)
        for (const p of query) {
          walked.add(`${method.toUpperCase()} ${template} ${p.name}`)
          for (const value of ['', '%20', '%20%09%0A', ...malformedValues(p)]) {
            // /graphql needs a valid query beside the parameter under test
            const others = template === '/graphql' && p.name !== 'query' ? `query=${encodeURIComponent('{ listFunctions { pagination { total } } }')}&` : ''
            const url = `${node.url}${path}?${others}${p.name}=${value}`
            const label = `${method.toUpperCase()} ${template}?${p.name}=${value}`
            if (template === '/ws') {
              const res = await upgrade(url, node.keys.acme)
              expect(res.status, `${label}: ${res.body}`).toBe(400)
              const error = (JSON.parse(res.body) as { error: { code: number; details: { problems?: Array<{ pointer: string }> } } }).error
              expect(error.code, label).toBe(1006)
              expect(error.details.problems?.[0]?.pointer, label).toBe(`/${p.name}`)
            } else {
              const res = await fetch(url, { method: method.toUpperCase(), headers: { authorization: `Bearer ${node.keys.acme}` } })
              const text = await res.text()
              expect(res.status, `${label}: ${text.slice(0, 300)}`).toBe(400)
              type Refusal = { code: number; details: { problems?: Array<{ pointer: string }> } }
              const body = JSON.parse(text) as { error?: Refusal; errors?: Array<{ extensions: Refusal }> }
              const error = body.error ?? body.errors?.[0]?.extensions
              expect(error?.code, `${label}: ${text.slice(0, 300)}`).toBe(1006)
              // the parameter, or an item of a list parameter (/tags/1)
              expect(error?.details.problems?.[0]?.pointer, `${label}: ${text.slice(0, 300)}`).toMatch(new RegExp(`^/${p.name}(/[0-9]+)?$`))
            }
            checked++
          }
        }
      }
    }
    // the REST routes' parameters, GraphQL's query, variables and operationName, /ws's token and namespace
    for (const expected of ['DELETE /api/v1/functions/{rufid} version', 'GET /v1/telemetry/functions/{rufid}/series version', 'GET /api/v1/audit from', 'GET /graphql query', 'GET /ws namespace']) {
      expect(walked).toContain(expected)
    }
    expect(walked.size).toBeGreaterThan(25)
    expect(checked).toBeGreaterThan(100)
  })
})
