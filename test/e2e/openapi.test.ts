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
    return new Ajv2020({ strict: false }).compile(op!.requestBody!.content['application/json'].schema)
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
