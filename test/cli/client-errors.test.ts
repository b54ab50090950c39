// The `svc` command line talks to a node through the typed client (SvcClient): what it sends and
// how every kind of failure prints, against a fake node (real `bin/svc.js` processes). Needs
// `npm run build`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeNode, errorBody } from '../client/fake-node.js'
import { runSvc } from './run-svc.js'

let node: FakeNode
const SHORT = 'tUwBWSc8Nozv'

beforeAll(async () => {
  node = await new FakeNode().start()
})
afterAll(async () => {
  await node?.stop()
})

describe('svc over SvcClient', () => {
  it('sends the token, the namespace and the version, and prints the answer', async () => {
    node.on('POST', `/api/v1/functions/${SHORT}/execute`, { status: 200, body: { result: 5, status: 'success', execution_time_ms: 1, execution_id: 'ex_1' } })
    const r = await runSvc(['functions', 'execute', SHORT, '--args', '[2, 3]', '--version', 'v2', '--url', node.url, '--token', 'tok', '--namespace', 'team'])
    expect(r.stderr).toBe('')
    expect(r.status).toBe(0)
    expect(r.stdout).toMatch(/result {2}5\n/)
    expect(node.last.body).toEqual({ arguments: [2, 3], version: 'v2' })
    expect(node.last.headers.authorization).toBe('Bearer tok')
    expect(node.last.headers['x-svc-namespace']).toBe('team')
  })

  it("prints the node's own code and name", async () => {
    node.on('GET', '/api/v1/functions', { status: 422, body: errorBody(1006, 'VALIDATION_FAILED', 'limit must be at most 500', { problems: [{ pointer: '/limit', message: 'too big' }] }) })
    const r = await runSvc(['functions', 'list', '--limit', '900', '--url', node.url])
    expect(r.status).toBe(1)
    expect(r.stderr).toBe('error 1006 VALIDATION_FAILED: limit must be at most 500\n  /limit: too big\n')
  })

  it('an answer without an svc error body is 1009 naming the HTTP status', async () => {
    node.on('GET', '/api/v1/auth/v2/api-keys', { status: 502, body: 'bad gateway', headers: { 'content-type': 'text/plain' } })
    const r = await runSvc(['keys', 'list', '--url', node.url])
    expect(r.status).toBe(1)
    expect(r.stderr).toMatch(/^error 1009 INTERNAL_ERROR: .*HTTP 502/)
  })

  it('refuses a malformed RUFID or paging flag before sending anything', async () => {
    const before = node.requests.length
    const bad = await runSvc(['functions', 'resolve', 'not-a-rufid', '--url', node.url])
    expect(bad.status).toBe(1)
    expect(bad.stderr).toMatch(/^error 1001 INVALID_RUFID: /)
    const paging = await runSvc(['functions', 'list', '--limit', 'abc', '--url', node.url])
    expect(paging.status).toBe(1)
    expect(paging.stderr).toMatch(/^error 1006 VALIDATION_FAILED: --limit must be a whole number/)
    expect(node.requests.length).toBe(before)
  })
})
