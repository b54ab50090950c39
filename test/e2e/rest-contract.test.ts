// The REST contract: real answers of every route of a real daemon process (native auth, a
// federation member, so every route can succeed) checked against its own /openapi.json — the
// status must be one the document declares for that route, and the body must validate against the
// schema declared for that status, with objects closed (a field the document does not declare
// fails). Every route must have been seen succeeding at least once. Named schemas and error
// answers are `$ref`s into the document's `components`, resolved here as a generator would.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFederationCa, issueNodeCertificate, writeCa, writeNodeCertificate } from '../../src/federation/certificates.js'
import { loadOrCreatePeerIdentity } from '../../src/federation/identity.js'
import { removeDir, startDaemonProcess, tempDataDir, type DaemonProcess } from '../fixtures/daemon-process.js'
import { addJs, throwsJs } from '../fixtures/functions.js'
import { newIdentity } from '../federation/fixtures.js'

const ADMIN = 'svck_contractAdmin01_contractSecretcontractSecretcontractSecr'

type Schema = Record<string, unknown>
interface Response { content?: Record<string, { schema: Schema }> }
interface Operation {
  responses: Record<string, Response | { $ref: string }>
}
interface Document {
  paths: Record<string, Record<string, Operation>>
  components: { schemas: Record<string, Schema>; responses: Record<string, Response> }
}

/** A response of the document, its `$ref` (to `#/components/responses/<name>`) followed. */
function responseOf(doc: Document, declared: Response | { $ref: string }): Response {
  if (!('$ref' in declared)) return declared
  const name = /^#\/components\/responses\/(\w+)$/.exec(declared.$ref)?.[1]
  expect(name && doc.components.responses[name], `${declared.$ref} is a response of the document`).toBeTruthy()
  return doc.components.responses[name!]!
}

/** The schema with every object closed: a property the document does not declare is an error. */
function closed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closed)
  if (schema === null || typeof schema !== 'object') return schema
  const out: Schema = {}
  for (const [k, v] of Object.entries(schema)) out[k] = k === 'properties' ? Object.fromEntries(Object.entries(v as Schema).map(([p, s]) => [p, closed(s)])) : closed(v)
  if (out.properties !== undefined && out.additionalProperties === undefined) out.additionalProperties = false
  return out
}

describe('REST answers match /openapi.json (a real daemon)', () => {
  let d: DaemonProcess
  let root: string
  let doc: Document
  let peer: { peerId: string; certPem: string }
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  const validators = new Map<string, ValidateFunction>()
  /** `METHOD /template` → statuses seen */
  const seen = new Map<string, Set<number>>()

  /** Calls a route and checks the answer against the document; returns it. */
  async function call(method: string, template: string, path: string, options: { body?: unknown; raw?: string; token?: string | null; accept?: string } = {}) {
    const token = options.token === undefined ? ADMIN : options.token
    const res = await fetch(`${d.url}${path}`, {
      method,
      headers: {
        'content-type': 'application/json',
        ...(options.accept === undefined ? {} : { accept: options.accept }),
        ...(token === null ? {} : { authorization: `Bearer ${token}` }),
      },
      ...(options.raw !== undefined ? { body: options.raw } : options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    })
    const text = await res.text()
    const op = doc.paths[template]?.[method.toLowerCase()]
    expect(op, `${method} ${template} is in the document`).toBeDefined()
    const declared = op!.responses[String(res.status)]
    expect(declared, `${method} ${path} answered ${res.status}, which the document does not declare: ${text.slice(0, 300)}`).toBeDefined()
    const type = (res.headers.get('content-type') ?? '').split(';')[0]!
    const content = responseOf(doc, declared!).content ?? {}
    const media = Object.keys(content).find((t) => t.split(';')[0] === type)
    expect(media, `${method} ${path} ${res.status} answered ${type}; declared ${Object.keys(content).join(', ')}`).toBeDefined()
    let body: unknown = text
    if (type === 'application/json') {
      body = JSON.parse(text)
      const key = `${method} ${template} ${res.status}`
      let validate = validators.get(key)
      // the schema with the document's named schemas beside it (closed too), where its $refs point
      const schemas = Object.fromEntries(Object.entries(doc.components.schemas).map(([name, s]) => [name, closed(s)]))
      if (!validate) validators.set(key, (validate = ajv.compile({ ...(closed(content[media!]!.schema) as Schema), components: { schemas } })))
      expect(validate(body), `${method} ${path} ${res.status}: ${ajv.errorsText(validate.errors)}\n${text.slice(0, 500)}`).toBe(true)
    }
    const k = `${method} ${template}`
    if (!seen.has(k)) seen.set(k, new Set())
    seen.get(k)!.add(res.status)
    return { status: res.status, body: body as Record<string, unknown> }
  }

  beforeAll(async () => {
    root = tempDataDir()
    const dataDir = join(root, 'node')
    mkdirSync(dataDir, { recursive: true })
    const ca = createFederationCa({ name: 'contract test CA' })
    await writeCa(join(root, 'ca'), ca)
    const { peerId } = await loadOrCreatePeerIdentity(dataDir)
    await writeNodeCertificate(join(dataDir, 'cert'), issueNodeCertificate(ca, peerId), ca.certPem)
    const other = await newIdentity()
    peer = { peerId: other.peerId, certPem: issueNodeCertificate(ca, other.peerId).certPem }
    const configFile = join(root, 'config.json')
    writeFileSync(configFile, JSON.stringify({
      federation: {
        enabled: true, listen: ['/ip4/127.0.0.1/tcp/0'], bootstrap: [],
        ca_file: join(root, 'ca', 'ca.crt'), cert_file: join(dataDir, 'cert', 'node.crt'), sync_interval_ms: 0,
      },
    }))
    d = await startDaemonProcess({
      dataDir,
      env: { SVC_CONFIG: configFile, AUTH_PROVIDER: 'native', ENABLE_TEST_MODE: 'true', DEPLOYMENT_MODE: 'test', ADMIN_API_KEY: ADMIN, SVC_SANDBOX_WORKERS: '1' },
    })
    doc = (await (await fetch(`${d.url}/openapi.json`)).json()) as Document
  })

  it('declares the execution record\'s tenant as a deprecated alias of tenant_id', () => {
    const ref = responseOf(doc, doc.paths['/v1/executions/{id}']!.get!.responses['200']!).content!['application/json']!.schema
    expect(ref).toEqual({ $ref: '#/components/schemas/ExecutionRecord' })
    const record = doc.components.schemas.ExecutionRecord as { properties: Record<string, { deprecated?: boolean }>; required: string[] }
    expect(record.properties.tenant!.deprecated).toBe(true)
    expect(record.properties.tenant_id!.deprecated).toBeUndefined()
    expect(record.required).toEqual(expect.arrayContaining(['tenant_id', 'tenant', 'rufid_short', 'full_rufid']))
  })
  afterAll(async () => {
    await d?.stop()
    if (root) removeDir(root)
  })

  it('every answer of every route is declared, and every route answers with success at least once', async () => {
    // system
    await call('GET', '/healthz', '/healthz', { token: null })
    await call('GET', '/readyz', '/readyz', { token: null })
    await call('GET', '/openapi.json', '/openapi.json', { token: null })
    await call('GET', '/metrics', '/metrics', { token: null })

    // the core group
    const created = await call('POST', '/api/v1/functions/create', '/api/v1/functions/create', { body: addJs })
    expect(created.status).toBe(201)
    const short = created.body.rufid_short as string
    expect((await call('POST', '/api/v1/functions/create', '/api/v1/functions/create', { body: addJs })).body.created).toBe(false)
    await call('POST', '/api/v1/functions/create', '/api/v1/functions/create', { body: { ...addJs, function_name: '1bad' } })
    await call('POST', '/api/v1/functions/create', '/api/v1/functions/create', { body: addJs, token: null })
    await call('POST', '/api/v1/functions/create', '/api/v1/functions/create', { raw: '{"function_name":' })
    await call('POST', '/api/v1/functions/resolve', '/api/v1/functions/resolve', { body: { rufid: short } })
    await call('POST', '/api/v1/functions/resolve', '/api/v1/functions/resolve', { body: { rufid: 'bad!' } })
    await call('POST', '/api/v1/functions/resolve', '/api/v1/functions/resolve', { body: { rufid: 'AAAAAAAAAAAA' } })
    await call('POST', '/api/v1/functions/{rufid}/execute', `/api/v1/functions/${short}/execute`, { body: { arguments: { a: 2, b: 3 } } })
    const throws = (await call('POST', '/api/v1/functions/create', '/api/v1/functions/create', { body: throwsJs })).body.rufid_short as string
    expect((await call('POST', '/api/v1/functions/{rufid}/execute', `/api/v1/functions/${throws}/execute`, { body: {} })).status).toBe(422)
    await call('GET', '/api/v1/functions', '/api/v1/functions?limit=5&tags=math,x')
    expect((await call('GET', '/api/v1/functions', '/api/v1/functions?limit=abc')).status).toBe(400)
    await call('GET', '/api/v1/functions/{rufid}', `/api/v1/functions/${short}`)
    await call('GET', '/api/v1/functions/{rufid}', `/api/v1/functions/${short}?version=v9`)

    // branches, versions, export
    const deployed = await call('POST', '/api/v1/functions/deploy', '/api/v1/functions/deploy', { body: { ...addJs, branch: 'staging' } })
    expect(deployed.status).toBe(201)
    await call('GET', '/api/v1/functions/branches', '/api/v1/functions/branches?function_name=add')
    await call('POST', '/api/v1/functions/branches/{branch}/invoke', '/api/v1/functions/branches/staging/invoke', { body: { function_name: 'add', arguments: [1, 2] } })
    await call('GET', '/api/v1/functions/{rufid}/versions', `/api/v1/functions/${short}/versions`)
    await call('GET', '/api/v1/functions/{rufid}/export', `/api/v1/functions/${short}/export?version=v1`)

    // keys and the audit log
    const minted = await call('POST', '/api/v1/auth/v2/api-keys', '/api/v1/auth/v2/api-keys', { body: { name: 'reader', scopes: ['functions:read'], expires_days: 1 } })
    expect(minted.status).toBe(201)
    await call('POST', '/api/v1/functions/create', '/api/v1/functions/create', { body: addJs, token: minted.body.api_key as string })
    await call('GET', '/api/v1/auth/v2/api-keys', '/api/v1/auth/v2/api-keys')
    await call('DELETE', '/api/v1/auth/v2/api-keys/{keyId}', `/api/v1/auth/v2/api-keys/${minted.body.key_id as string}`)
    await call('GET', '/api/v1/audit', '/api/v1/audit?limit=50')
    await call('GET', '/api/v1/audit', '/api/v1/audit?limit=0')
    // an operator's backup (the archive itself is checked by test/faults/operator-tools.test.ts)
    expect((await call('GET', '/api/v1/admin/backup', '/api/v1/admin/backup')).status).toBe(200)
    // the generic binary type when asked for it (what openapi-python-client keeps), declared too
    const generic = await fetch(`${d.url}/api/v1/admin/backup`, { headers: { authorization: `Bearer ${ADMIN}`, accept: 'application/octet-stream' } })
    expect([generic.status, generic.headers.get('content-type')]).toEqual([200, 'application/octet-stream'])
    expect([...Buffer.from(await generic.arrayBuffer()).subarray(0, 2)], 'the same gzip archive').toEqual([0x1f, 0x8b])
    expect((await call('GET', '/api/v1/admin/backup', '/api/v1/admin/backup', { accept: 'application/octet-stream' })).status).toBe(200)

    // native test mode
    await call('POST', '/api/v1/execution/execute', '/api/v1/execution/execute', { body: { rufid: `rufid:${short}`, function_name: 'add', input_data: { a: 1, b: 2 } } })

    // the /v1 group
    const published = await call('POST', '/v1/functions', '/v1/functions', {
      body: { name: 'twice', runtime: 'node20', source: Buffer.from('function twice(input) {\n  return 2 * input.x\n}\n').toString('base64') },
    })
    expect(published.status).toBe(201)
    const started = await call('POST', '/v1/functions/{rufid}/executions', `/v1/functions/${published.body.rufid_short as string}/executions`, { body: { x: 21 } })
    expect(started.status).toBe(202)
    const id = started.body.execution_id as string
    for (let i = 0; i < 100; i++) {
      const record = await call('GET', '/v1/executions/{id}', `/v1/executions/${id}`)
      if (record.body.status === 'success') break
      await new Promise((r) => setTimeout(r, 50))
    }
    await call('GET', '/v1/executions/{id}/logs', `/v1/executions/${id}/logs`)
    const receipt = await call('GET', '/v1/executions/{id}/receipt', `/v1/executions/${id}/receipt`)
    expect(receipt.status).toBe(200)
    expect(receipt.body.execution_id).toBe(id)
    // an execution is not a function: 404 with 1011 NOT_FOUND naming what was not found, never 1002
    const noReceipt = await call('GET', '/v1/executions/{id}/receipt', '/v1/executions/ex_01JD8X9R6Q4M2N0P5S7T3V1W9Y/receipt')
    expect(noReceipt.status).toBe(404)
    expect(noReceipt.body.error).toMatchObject({ code: 1011, name: 'NOT_FOUND', details: { resource: 'execution', execution_id: 'ex_01JD8X9R6Q4M2N0P5S7T3V1W9Y' } })
    const noExecution = await call('GET', '/v1/executions/{id}', '/v1/executions/ex_01JD8X9R6Q4M2N0P5S7T3V1W9Y')
    expect(noExecution.status).toBe(404)
    expect(noExecution.body.error).toMatchObject({ code: 1011, name: 'NOT_FOUND', details: { resource: 'execution' } })
    await call('GET', '/v1/executions/{id}', '/v1/executions/ex_missing')
    await call('GET', '/v1/marketplace/functions/search', '/v1/marketplace/functions/search?q=add&limit=10')
    expect((await call('GET', '/v1/marketplace/functions/search', '/v1/marketplace/functions/search?limit=abc')).status).toBe(400)
    await call('GET', '/v1/telemetry/functions/{rufid}', `/v1/telemetry/functions/${short}?window=15m`)
    const series = await call('GET', '/v1/telemetry/functions/{rufid}/series', `/v1/telemetry/functions/${short}/series?window=1h&buckets=12`)
    expect((series.body.buckets as unknown[]).length).toBe(12)
    expect(series.body).toMatchObject({ rufid: short, rufid_short: short, full_rufid: created.body.full_rufid })
    await call('GET', '/v1/telemetry/functions/{rufid}/series', `/v1/telemetry/functions/${short}/series?version=v1`)
    expect((await call('GET', '/v1/telemetry/functions/{rufid}/series', `/v1/telemetry/functions/${short}/series?buckets=0`)).status).toBe(400)
    expect((await call('GET', '/v1/telemetry/functions/{rufid}/series', `/v1/telemetry/functions/${short}/series?window=1y`)).status).toBe(400)
    const byAuthor = await call('GET', '/v1/marketplace/functions/search', '/v1/marketplace/functions/search?author=nobody')
    expect((byAuthor.body.pagination as { total: number }).total).toBe(0)

    // the reads the operator console and the clients stand on
    const about = await call('GET', '/api/v1/node/info', '/api/v1/node/info', { token: null })
    expect(about.body).toMatchObject({ name: 'svc-node', ready: true, auth_mode: 'native', federation: { enabled: true } })
    expect((await call('GET', '/api/v1/auth/whoami', '/api/v1/auth/whoami')).body).toMatchObject({ admin: true })
    expect((await call('GET', '/api/v1/auth/whoami', '/api/v1/auth/whoami', { token: null })).status).toBe(401)
    const source = await call('GET', '/api/v1/functions/{rufid}/source', `/api/v1/functions/${short}/source`)
    expect(source.body).toMatchObject({ rufid: created.body.full_rufid, rufid_short: short, full_rufid: created.body.full_rufid, source_code: addJs.source_code })
    await call('GET', '/api/v1/functions/{rufid}/source', `/api/v1/functions/${short}/source?version=v1`)
    expect((await call('GET', '/api/v1/functions/{rufid}/source', '/api/v1/functions/AAAAAAAAAAAA/source')).status).toBe(404)
    expect((await call('GET', '/api/v1/functions/{rufid}/source', '/api/v1/functions/bad!/source')).status).toBe(400)
    const derived = await call('POST', '/api/v1/functions/signature', '/api/v1/functions/signature', { body: { function_name: 'add', language: 'javascript', source_code: addJs.source_code } })
    expect(derived.body.signature).toBe(addJs.signature)
    await call('POST', '/api/v1/functions/signature', '/api/v1/functions/signature', { body: { signature: '(x, ...ys)' } })
    expect((await call('POST', '/api/v1/functions/signature', '/api/v1/functions/signature', { body: { source_code: 'x' } })).status).toBe(400)
    expect((await call('POST', '/api/v1/functions/signature', '/api/v1/functions/signature', { body: { function_name: 'f', language: 'python', source_code: 'x = 1\n' } })).status).toBe(400)

    // federation (this node is a member of a federation of one)
    await call('POST', '/api/v1/federation/nodes', '/api/v1/federation/nodes', {
      token: null, body: { node_id: peer.peerId, endpoint: 'http://127.0.0.1:9', capabilities: { languages: ['javascript'], max_concurrent: 1, protocols: ['rest'] }, auth: { certificate: peer.certPem } },
    })
    await call('GET', '/api/v1/federation/nodes', '/api/v1/federation/nodes')
    await call('GET', '/api/v1/federation/discover/{rufid}', `/api/v1/federation/discover/${short}`)
    await call('POST', '/api/v1/federation/sync', '/api/v1/federation/sync', { body: { added: [], updated: [], deleted: [], timestamp: new Date().toISOString(), vector: {} } })
    await call('GET', '/api/v1/federation/catalog/digest', '/api/v1/federation/catalog/digest', { token: null })
    await call('GET', '/api/v1/federation/conflicts', '/api/v1/federation/conflicts')
    const members = await call('GET', '/api/v1/federation/members', '/api/v1/federation/members')
    expect(members.body.members).toEqual(expect.arrayContaining([expect.objectContaining({ self: true, connected: true })]))

    // deletion last
    await call('DELETE', '/api/v1/functions/{rufid}', `/api/v1/functions/${throws}`)
    await call('DELETE', '/api/v1/functions/{rufid}', `/api/v1/functions/${throws}`)

    const documented = Object.entries(doc.paths)
      .filter(([path]) => path !== '/ws' && path !== '/graphql')
      .flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`))
    const succeeded = [...seen].filter(([, statuses]) => [...statuses].some((s) => s >= 200 && s < 300)).map(([k]) => k)
    expect(documented.filter((route) => !succeeded.includes(route)), 'routes never seen succeeding').toEqual([])
  })

  it('/graphql answers GraphQL-shaped errors with the statuses the document declares', async () => {
    const malformed = await call('POST', '/graphql', '/graphql', { raw: '{"query": "{ listFunctions { items { rufid } } }"' })
    expect(malformed.status).toBe(400)
    expect(malformed.body).toEqual({ errors: [expect.objectContaining({ extensions: expect.objectContaining({ code: 1006, name: 'VALIDATION_FAILED' }) })] })
    const big = await call('POST', '/graphql', '/graphql', { raw: JSON.stringify({ query: `{ listFunctions { pagination { total } } } #${'x'.repeat(2 << 20)}` }) })
    expect(big.status).toBe(413)
    expect((big.body.errors as Array<{ extensions: { code: number } }>)[0]!.extensions.code).toBe(1006)
    await call('POST', '/graphql', '/graphql', { body: { query: '{ listFunctions { pagination { total } } }' } })
    await call('POST', '/graphql', '/graphql', { body: { query: '{ listFunctions { pagination { total } } }' }, token: null })
  })
})
