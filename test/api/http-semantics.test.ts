// HTTP semantics generic tools check (issue 28): a method a path does not take is 405 with `Allow`
// (TRACE and QUERY too, which the router alone answers 501); the /ws upgrade path asked without an
// upgrade is 426 with `Upgrade: websocket`; GraphQL over HTTP reads application/json only (415
// otherwise) and answers application/graphql-response+json to a client that prefers it.
import http from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startNode, type TestNode } from './graphql/node.js'

interface Answer { status: number; headers: http.IncomingHttpHeaders; body: string }

/** One request over node:http (fetch refuses TRACE). */
function request(url: string, method: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, timeout: 5000 }, (res) => {
      let text = ''
      res.on('data', (c: Buffer) => (text += String(c)))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }))
    })
    req.on('timeout', () => req.destroy(new Error('no answer')))
    req.on('error', reject)
    req.end(body)
  })
}

describe('HTTP semantics', () => {
  let node: TestNode
  let auth: Record<string, string>

  beforeAll(async () => {
    node = await startNode()
    auth = { authorization: `Bearer ${node.keys.acme}` }
  })
  afterAll(async () => {
    await node?.stop()
  })

  it('a method a known path does not take is 405 with Allow, whether the router knows the method or not', async () => {
    for (const method of ['TRACE', 'QUERY', 'PUT', 'PATCH']) {
      const res = await request(`${node.url}/api/v1/functions`, method, auth)
      expect(res.status, method).toBe(405)
      expect(res.headers.allow, method).toMatch(/\bGET\b/)
      expect(JSON.parse(res.body).error.code, method).toBe(1006)
    }
    // an unknown path stays 404, without an Allow header
    const unknown = await request(`${node.url}/api/v1/nothing-here`, 'TRACE', auth)
    expect(unknown.status).toBe(404)
    expect(unknown.headers.allow).toBeUndefined()
  })

  it('Allow names the methods the document gives the path (a literal path is not the {rufid} route)', async () => {
    const options = await request(`${node.url}/api/v1/functions/branches`, 'OPTIONS', auth)
    expect(options.status).toBe(200)
    expect(options.headers.allow).toBe('GET, HEAD')
    expect((await request(`${node.url}/api/v1/functions/create`, 'OPTIONS', auth)).headers.allow).toBe('POST')
    expect((await request(`${node.url}/api/v1/functions/AAAAAAAAAAAA`, 'OPTIONS', auth)).headers.allow).toBe('GET, HEAD, DELETE')
    const put = await request(`${node.url}/api/v1/functions/branches`, 'PUT', auth)
    expect(put.status).toBe(405)
    expect(put.headers.allow).toBe('GET, HEAD')
    // methods the {rufid} route takes are not read as a RUFID named `create` or `branches` (400 1001)
    for (const [method, path, allow] of [['GET', '/api/v1/functions/create', 'POST'], ['DELETE', '/api/v1/functions/branches', 'GET, HEAD']] as const) {
      const res = await request(`${node.url}${path}`, method, auth)
      expect(res.status, `${method} ${path}`).toBe(405)
      expect(res.headers.allow, `${method} ${path}`).toBe(allow)
    }
    // a path of the {rufid} route itself keeps its methods
    expect((await request(`${node.url}/api/v1/functions/AAAAAAAAAAAA`, 'GET', auth)).status).toBe(404)
  })

  it('GET /ws without an upgrade is 426 Upgrade Required with Upgrade: websocket', async () => {
    const res = await request(`${node.url}/ws`, 'GET', auth)
    expect(res.status).toBe(426)
    expect(res.headers.upgrade).toBe('websocket')
    expect(JSON.parse(res.body).error.code).toBe(1006)
    const post = await request(`${node.url}/ws`, 'POST', auth)
    expect(post.status).toBe(405)
    expect(post.headers.allow).toBe('GET')
  })

  it('federation routes on a node without federation answer 409 federation_disabled (not 502: nothing was unreachable)', async () => {
    for (const [method, path] of [['GET', '/api/v1/federation/nodes'], ['GET', '/api/v1/federation/members'], ['POST', '/api/v1/federation/nodes']] as const) {
      const res = await request(`${node.url}${path}`, method, { ...auth, 'content-type': 'application/json' }, method === 'POST' ? '{}' : undefined)
      expect(res.status, `${method} ${path}`).toBe(409)
      expect(JSON.parse(res.body).error, `${method} ${path}`).toMatchObject({ code: 1006, details: { reason: 'federation_disabled' } })
    }
  })

  it('GraphQL over POST reads application/json only: text/plain is 415, not parsed as JSON', async () => {
    const query = JSON.stringify({ query: '{ listFunctions { pagination { total } } }' })
    const plain = await request(`${node.url}/graphql`, 'POST', { ...auth, 'content-type': 'text/plain' }, query)
    expect(plain.status).toBe(415)
    expect(JSON.parse(plain.body).errors[0].extensions.code).toBe(1006)
    const json = await request(`${node.url}/graphql`, 'POST', { ...auth, 'content-type': 'application/json; charset=utf-8' }, query)
    expect(json.status).toBe(200)
  })

  it('an empty or blank GraphQL query is 400 (1006), as the document says', async () => {
    for (const query of ['', '  \n']) {
      const res = await request(`${node.url}/graphql`, 'POST', { ...auth, 'content-type': 'application/json' }, JSON.stringify({ query }))
      expect(res.status, JSON.stringify(query)).toBe(400)
      expect(JSON.parse(res.body).errors[0].extensions.code).toBe(1006)
    }
  })

  it('Accept: application/graphql-response+json is answered with that media type and its status rules', async () => {
    const post = (query: string, accept?: string): Promise<Answer> =>
      request(`${node.url}/graphql`, 'POST', { ...auth, 'content-type': 'application/json', ...(accept ? { accept } : {}) }, JSON.stringify({ query }))
    const good = '{ listFunctions { pagination { total } } }'
    const wanted = await post(good, 'application/graphql-response+json, application/json;q=0.9')
    expect(wanted.status).toBe(200)
    expect(wanted.headers['content-type']).toMatch(/^application\/graphql-response\+json/)
    expect(JSON.parse(wanted.body).data.listFunctions.pagination.total).toBe(0)
    // a document that does not parse or validate is 4xx with that media type
    const invalid = await post('{ noSuchField }', 'application/graphql-response+json')
    expect(invalid.status).toBe(400)
    expect(invalid.headers['content-type']).toMatch(/^application\/graphql-response\+json/)
    // legacy clients keep application/json
    for (const accept of [undefined, 'application/json', '*/*']) {
      const res = await post(good, accept)
      expect(res.headers['content-type'], String(accept)).toMatch(/^application\/json/)
    }
  })
})
