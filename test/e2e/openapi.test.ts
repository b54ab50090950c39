// /openapi.json describes the whole REST surface with the schemas that validate requests.
import { Ajv2020 } from 'ajv/dist/2020.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { call, removeDir, startDaemonProcess, type DaemonProcess } from '../fixtures/daemon-process.js'

interface OpenApi {
  openapi: string
  paths: Record<string, Record<string, { requestBody?: { content: { 'application/json': { schema: object } } } }>>
}

describe('GET /openapi.json', () => {
  let d: DaemonProcess
  let doc: OpenApi
  beforeAll(async () => {
    d = await startDaemonProcess()
    doc = (await call<OpenApi>(`${d.url}/openapi.json`, 'GET')).body
  })
  afterAll(async () => {
    await d?.stop()
    if (d) removeDir(d.dataDir)
  })

  it('is OpenAPI 3.1 and names every REST route the node serves', () => {
    expect(doc.openapi).toBe('3.1.0')
    const described = Object.entries(doc.paths).flatMap(([p, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${p}`))
    for (const route of [
      'POST /api/v1/functions/create', 'POST /api/v1/functions/resolve', 'POST /api/v1/functions/{rufid}/execute',
      'GET /api/v1/functions', 'GET /api/v1/functions/{rufid}', 'DELETE /api/v1/functions/{rufid}',
      'POST /api/v1/auth/v2/api-keys', 'POST /api/v1/execution/execute', 'GET /api/v1/audit',
      'POST /v1/functions', 'POST /v1/functions/{rufid}/executions', 'GET /v1/executions/{id}', 'GET /v1/executions/{id}/logs',
      'GET /v1/marketplace/functions/search', 'GET /v1/telemetry/functions/{rufid}',
    ]) expect(described).toContain(route)
  })

  it('accepts and refuses create bodies exactly as the server does', async () => {
    const ajv = new Ajv2020({ strict: false })
    const validate = ajv.compile(doc.paths['/api/v1/functions/create']!.post!.requestBody!.content['application/json'].schema)
    const bodies: unknown[] = [
      { function_name: 'f1', signature: '()', language: 'javascript', source_code: 'function f1() { return 1 }' },
      { function_name: 'f2', signature: '()', language: 'javascript', source_code: 'function f2() {}', tags: ['a', 'b'], limits: { timeout_ms: 100 } },
      { function_name: '1bad', signature: '()', language: 'javascript', source_code: 'x' },
      { function_name: 'f3', signature: '()', language: 'javascript', source_code: '' },
      { function_name: 'f4', signature: '()', language: 7, source_code: 'x' },
      { function_name: 'f5', signature: '()', language: 'js', source_code: 'x', tags: 'not-a-list' },
      { function_name: 'f6', signature: '()', language: 'js', source_code: 'x', limits: { timeout_ms: -1 } },
      { signature: '()', language: 'js', source_code: 'x' },
    ]
    for (const body of bodies) {
      const res = await call(`${d.url}/api/v1/functions/create`, 'POST', body)
      expect(validate(body), JSON.stringify(body)).toBe(res.status < 300)
    }
  })
})
