// /openapi.json describes the whole REST surface with the schemas that validate requests.
import { spawnSync } from 'node:child_process'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRestApi } from '../../src/api/rest/app.js'
import { computeRufid } from '../../src/core/rufid.js'
import { createTestEngine } from '../fixtures/engine.js'
import { call, removeDir, startDaemonProcess, type DaemonProcess } from '../fixtures/daemon-process.js'
import { addJs } from '../fixtures/functions.js'

interface OpenApi {
  openapi: string
  paths: Record<string, Record<string, { requestBody?: { content: { 'application/json': { schema: object } } } }>>
  components: { schemas: Record<string, object> }
}

interface Response { description?: string; headers?: Record<string, unknown>; content?: Record<string, { schema?: Record<string, unknown> }> }
/** The document as the structure checks read it. */
interface Document {
  paths: Record<string, Record<string, {
    requestBody?: { content?: Record<string, { schema?: Record<string, unknown> }> }
    responses: Record<string, Response | { $ref: string }>
  }>>
  components: { schemas: Record<string, Record<string, unknown>>; responses: Record<string, Response> }
}

/** Calls `visit` on every object of the document. */
function walk(node: unknown, visit: (node: Record<string, unknown>) => void): void {
  if (Array.isArray(node)) for (const item of node) walk(item, visit)
  else if (node !== null && typeof node === 'object') {
    visit(node as Record<string, unknown>)
    for (const value of Object.values(node)) walk(value, visit)
  }
}

/** What a local `$ref` (`#/components/…`) points at, or undefined. */
function resolvePointer(doc: unknown, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined
  let node = doc
  for (const part of ref.slice(2).split('/').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))) {
    if (node === null || typeof node !== 'object') return undefined
    node = (node as Record<string, unknown>)[part]
  }
  return node
}

/** Endpoints the node serves beside the Koa router: GraphQL over HTTP and the /ws WebSocket upgrade. */
const BESIDE_THE_ROUTER = ['GET /graphql', 'POST /graphql', 'GET /ws']

/** `METHOD /path/{param}` of every route the REST app's Koa router registers (HEAD comes with GET). */
async function registeredRoutes(): Promise<string[]> {
  const { engine } = await createTestEngine()
  try {
    const app = createRestApi({ bodyLimitBytes: 1 << 20, metricsAccess: 'public' }, { engine, logger: pino({ level: 'silent' }) })
    const dispatch = app.middleware.find((m) => 'router' in m) as unknown as { router: { stack: Array<{ path: string; methods: string[] }> } } | undefined
    expect(dispatch, 'the REST app mounts a @koa/router').toBeDefined()
    const routes = dispatch!.router.stack.flatMap((layer) =>
      layer.methods.filter((m) => m !== 'HEAD').map((m) => `${m} ${layer.path.replace(/:(\w+)/g, '{$1}')}`))
    return [...new Set(routes)].sort()
  } finally {
    await engine.stop()
  }
}

describe('GET /openapi.json', () => {
  let d: DaemonProcess
  let doc: OpenApi
  const validator = (path: string, method = 'post'): ValidateFunction => {
    const op = doc.paths[path]?.[method]
    expect(op?.requestBody, `${method.toUpperCase()} ${path} has a request body`).toBeDefined()
    // the body's schema with the document's named schemas beside it, where its $refs point
    return new Ajv2020({ strict: false }).compile({ ...op!.requestBody!.content['application/json'].schema, components: doc.components })
  }
  /** Each body is accepted by the document's schema exactly when the server does not refuse it as malformed (400). */
  const expectSameVerdicts = async (path: string, bodies: unknown[], method = 'post'): Promise<void> => {
    const validate = validator(path, method)
    for (const body of bodies) {
      const res = await call(`${d.url}${path}`, method.toUpperCase(), body)
      expect(validate(body), `${path} ${JSON.stringify(body)} answered ${res.status} ${JSON.stringify(res.body)}`).toBe(res.status !== 400)
    }
  }

  beforeAll(async () => {
    d = await startDaemonProcess()
    doc = (await call<OpenApi>(`${d.url}/openapi.json`, 'GET')).body
  })
  afterAll(async () => {
    await d?.stop()
    if (d) removeDir(d.dataDir)
  })

  it('is OpenAPI 3.1 and describes exactly the routes the Koa router registers, plus /graphql and /ws', async () => {
    expect(doc.openapi).toBe('3.1.0')
    const described = Object.entries(doc.paths).flatMap(([p, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${p}`)).sort()
    const registered = await registeredRoutes()
    expect(registered.length).toBeGreaterThan(30)
    expect(described.filter((r) => !BESIDE_THE_ROUTER.includes(r)), 'described but not registered, or registered but not described').toEqual(registered)
    for (const r of BESIDE_THE_ROUTER) expect(described).toContain(r)
  })

  it('names every shared shape under components/schemas and refers to it with $ref (what generators name their types after)', () => {
    const doc_ = doc as unknown as Document
    const schemas = doc_.components.schemas
    // the shapes a client author names: error, function, version, execution record, receipt, key, page, event…
    for (const name of [
      'Error', 'ErrorInfo', 'Function', 'FunctionList', 'Pagination', 'CreateResult', 'Resolution', 'ExecutionResult',
      'ExecutionRecord', 'ExecutionStatus', 'ExecutionLogs', 'Receipt', 'ApiKey', 'MintedApiKey', 'ApiKeyList', 'AuditEntry',
      'AuditPage', 'VersionEntry', 'VersionLedger', 'BranchHead', 'NodeInfo', 'Manifest', 'Lockfile', 'Arguments',
      'CreateFunctionRequest', 'ResolveRequest', 'ExecuteRequest', 'PublishRequest', 'SearchResults', 'Telemetry',
    ]) expect(schemas[name], `components/schemas/${name}`).toBeDefined()
    for (const name of Object.keys(schemas)) expect(name, 'component names are PascalCase').toMatch(/^[A-Z][A-Za-z0-9]*$/)
    // every $ref resolves
    const refs = new Set<string>()
    walk(doc_, (node) => { if (typeof node.$ref === 'string') refs.add(node.$ref) })
    for (const ref of refs) expect(resolvePointer(doc_, ref), `${ref} resolves`).toBeDefined()
    expect(refs.size).toBeGreaterThan(50)
    // every JSON body (requests and successful answers) is a named schema, except the few that are any JSON
    const anyJson = ['POST /v1/functions/{rufid}/executions request', 'GET /openapi.json 200']
    for (const [path, methods] of Object.entries(doc_.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        const bodies: Array<[string, Record<string, unknown> | undefined]> = [[`${method.toUpperCase()} ${path} request`, op.requestBody?.content?.['application/json']?.schema]]
        for (const [status, res] of Object.entries(op.responses)) {
          if (!('$ref' in res) && status.startsWith('2')) bodies.push([`${method.toUpperCase()} ${path} ${status}`, res.content?.['application/json']?.schema])
        }
        for (const [where, schema] of bodies) {
          if (schema === undefined || anyJson.includes(where)) continue
          expect(Object.keys(schema), `${where} is a $ref to a named schema: ${JSON.stringify(schema).slice(0, 200)}`).toEqual(['$ref'])
        }
      }
    }
    // no object shape is spelled out twice: one that is shared must be named
    const inline = new Map<string, number>()
    walk(doc_, (node) => {
      if (node.type === 'object' && node.properties !== undefined) inline.set(JSON.stringify(node), (inline.get(JSON.stringify(node)) ?? 0) + 1)
    })
    const repeated = [...inline].filter(([, n]) => n > 1).map(([shape, n]) => `${n}x ${shape.slice(0, 160)}`)
    expect(repeated, 'object schemas repeated inline (name them with .meta({ id }))').toEqual([])
  })

  it('declares every answer with its media type: errors as application/json Error, Retry-After on 429 and 503, the backup as binary', () => {
    const doc_ = doc as unknown as Document
    let errors = 0
    for (const [path, methods] of Object.entries(doc_.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        for (const [status, declared] of Object.entries(op.responses)) {
          const where = `${method.toUpperCase()} ${path} ${status}`
          const res = ('$ref' in declared ? resolvePointer(doc_, declared.$ref) : declared) as Response
          expect(res, where).toBeDefined()
          if (status === '101') continue // the WebSocket upgrade has no body
          const types = Object.keys(res.content ?? {})
          expect(types.length, `${where} declares its media type`).toBeGreaterThan(0)
          for (const type of types) expect(res.content![type]!.schema, `${where} ${type} has a schema`).toBeDefined()
          if (Number(status) >= 400) {
            errors++
            expect('$ref' in declared, `${where} refers to a named error response`).toBe(true)
            expect(types, where).toEqual(['application/json'])
            expect(res.content!['application/json']!.schema).toEqual({ $ref: `#/components/schemas/${path === '/graphql' ? 'GraphqlResponse' : 'Error'}` })
            if (status === '429' || status === '503') expect(res.headers?.['Retry-After'], `${where} Retry-After`).toBeDefined()
          }
        }
      }
    }
    expect(errors).toBeGreaterThan(100)
    const backup = doc_.paths['/api/v1/admin/backup']!.get!.responses['200'] as Response
    for (const type of ['application/gzip', 'application/octet-stream']) {
      expect(backup.content?.[type]?.schema, `backup as ${type}`).toEqual({ type: 'string', format: 'binary' })
    }
  })

  it('is valid for a Python OpenAPI validator, and every pattern compiles in Python (no \\p{…})', async () => {
    const text = JSON.stringify(doc)
    expect(text).not.toMatch(/\\\\[pP]\{/)
    // openapi-spec-validator (installed by scripts/setup.sh) checks the document against the
    // OpenAPI 3.1 schema; then every `pattern` must compile with Python's `re`
    const script = [
      'import json, re, sys',
      'from openapi_spec_validator import validate',
      'doc = json.load(sys.stdin)',
      'validate(doc)',
      'patterns = []',
      'def walk(node):',
      '    if isinstance(node, dict):',
      '        for key, value in node.items():',
      '            if key == "pattern" and isinstance(value, str):',
      '                re.compile(value)',
      '                patterns.append(value)',
      '            walk(value)',
      '    elif isinstance(node, list):',
      '        for value in node:',
      '            walk(value)',
      'walk(doc)',
      'print(json.dumps({"valid": True, "patterns": len(patterns)}))',
    ].join('\n')
    const run = spawnSync('python3', ['-c', script], { input: text, encoding: 'utf8', timeout: 110_000 })
    expect(run.error, 'python3 must be installed').toBeUndefined()
    expect(run.status, `openapi-spec-validator (pip install openapi-spec-validator; scripts/setup.sh installs it):\n${run.stderr}`).toBe(0)
    const result = JSON.parse(run.stdout) as { valid: boolean; patterns: number }
    expect(result.valid).toBe(true)
    // the RUFID, version, branch, function name, tag, key name and runtime rules at least
    expect(result.patterns).toBeGreaterThan(10)
  }, 120_000)

  it('accepts and refuses create bodies exactly as the server does', async () => {
    const validate = validator('/api/v1/functions/create')
    const bodies: unknown[] = [
      { function_name: 'f1', signature: '()', language: 'javascript', source_code: 'function f1() { return 1 }' },
      { function_name: 'f2', signature: '()', language: 'javascript', source_code: 'function f2() {}', tags: ['a', 'b'], limits: { timeout_ms: 100 } },
      { function_name: '1bad', signature: '()', language: 'javascript', source_code: 'x' },
      // a Unicode letter: the server's rule (\p{L}) and the document's portable pattern both accept it
      { function_name: 'café', signature: '()', language: 'javascript', source_code: 'function café() { return 1 }' },
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

  it('accepts and refuses resolve, execute, deploy and invoke bodies exactly as the server does', async () => {
    const short = computeRufid(addJs).rufid_short
    expect((await call(`${d.url}/api/v1/functions/create`, 'POST', addJs)).status).toBeLessThan(300)
    await expectSameVerdicts('/api/v1/functions/resolve', [
      { rufid: short }, { rufid: `rufid:${short}:v1:default` }, { rufid: short, version: 'v1' }, { rufid: 'AbCdEfGhIjKl' },
      { rufid: short, version: null }, { rufid: 'bad!' }, { rufid: 5 }, {}, { rufid: short, version: 'one' }, { rufid: short, version: 1 },
    ])
    const validateExecute = validator('/api/v1/functions/{rufid}/execute')
    for (const body of [
      { arguments: { a: 1, b: 2 } }, { arguments: [1, 2] }, { arguments: null }, {}, { arguments: { a: 1, b: 2 }, version: 'v1' },
      { arguments: 'two and three' }, { arguments: 5 }, { arguments: [1, 2], version: 'one' }, { arguments: [1, 2], version: 2 },
    ]) {
      const res = await call(`${d.url}/api/v1/functions/${short}/execute`, 'POST', body)
      expect(validateExecute(body), `${JSON.stringify(body)} answered ${res.status}`).toBe(res.status !== 400)
    }
    await expectSameVerdicts('/api/v1/functions/deploy', [
      { function_name: 'd1', signature: '()', language: 'javascript', source_code: 'function d1() { return 1 }' },
      { function_name: 'd2', signature: '()', language: 'javascript', source_code: 'function d2() { return 2 }', branch: 'release-1.0', branch_key: 'k'.repeat(16) },
      { function_name: 'd3', signature: '()', language: 'javascript', source_code: 'function d3() {}', branch: '-no' },
      { function_name: 'd4', signature: '()', language: 'javascript', source_code: 'function d4() {}', branch_key: 'short' },
      { function_name: 'd5', signature: '()', language: 'javascript', source_code: 'function d5() {}', branch: 7 },
      { signature: '()', language: 'javascript', source_code: 'function d6() {}' },
    ])
    const validateInvoke = validator('/api/v1/functions/branches/{branch}/invoke')
    for (const body of [
      { function_name: 'd1' }, { function_name: 'd1', arguments: [] }, { function_name: 'nobranch', arguments: {} },
      { function_name: '1bad' }, {}, { function_name: 'd1', arguments: 'x' },
    ]) {
      const res = await call(`${d.url}/api/v1/functions/branches/main/invoke`, 'POST', body)
      expect(validateInvoke(body), `${JSON.stringify(body)} answered ${res.status} ${JSON.stringify(res.body)}`).toBe(res.status !== 400)
    }
  })
})
