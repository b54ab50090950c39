// Hostile input on every door, property-based (fast-check, seeded and bounded): RUFIDs, JSON bodies,
// manifests and lockfiles, malformed JSON, headers (REST); GraphQL documents and variables (HTTP and
// SSE); protobuf messages as raw bytes and as typed messages with hostile fields (gRPC); text and
// binary frames (/ws); and the TypeScript client's own parsing. Never a 500 or a crash, always the
// right code: each answer's status matches its svc code, a malformed RUFID is 1001 and a well-formed
// unknown one 1002. Real daemon process (standard auth, limits high so the fuzz is not rate limited).
import * as grpc from '@grpc/grpc-js'
import * as protoLoader from '@grpc/proto-loader'
import fc from 'fast-check'
import WebSocket from 'ws'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { PROTO_LOADER_OPTIONS, PROTO_ROOT, SVC_PROTO_FILE } from '../../src/api/grpc/proto.js'
import { errorFromResponse, parseRetryAfter } from '../../src/client/errors.js'
import { call, removeDir, startDaemonProcess, tempDataDir, type DaemonProcess } from '../fixtures/daemon-process.js'
import { recordFault } from './fault-record.js'
import { adminKeyOf, sleep } from './fault-fixtures.js'

const SEED = 160_2026
const RUNS = 120

/** The svc codes each HTTP status may carry (decisions.md "Errors", plus 413 and 401 refinements). */
const CODES_OF_STATUS: Record<number, number[]> = {
  400: [1001, 1006], 401: [1003], 403: [1003], 404: [1002, 1006, 1011], 408: [1004], 409: [1008, 2002], 413: [1006], 422: [1006, 1007], 429: [1005], 405: [1006],
  502: [2001], 503: [1010],
}
// rufid-v1 §8, written out here rather than taken from the code under test
const SHORT = /^[A-Za-z0-9]{12}$/
const FULL = /^rufid:[A-Za-z0-9]{12}:v[1-9][0-9]*:[A-Za-z0-9_.-]{1,64}$/

interface Verdict { status: number; code?: number; text: string }

describe('hostile input on every door (real daemon process, fast-check)', () => {
  const root = tempDataDir()
  let d: DaemonProcess
  let key = ''
  let known = ''
  const counts: Record<string, number> = {}
  const wrong: string[] = []
  const tally = (door: string) => {
    counts[door] = (counts[door] ?? 0) + 1
  }

  /** An HTTP answer must not be a 500 or carry 1009, and its svc code must fit its status. */
  const judge = (door: string, what: string, v: Verdict): void => {
    tally(door)
    if (v.status >= 500 && !(v.status in CODES_OF_STATUS)) wrong.push(`${door} ${what} → ${v.status} ${v.text.slice(0, 160)}`)
    else if (v.code === 1009) wrong.push(`${door} ${what} → 1009 ${v.text.slice(0, 160)}`)
    else if (v.status >= 400 && v.code !== undefined && !(CODES_OF_STATUS[v.status] ?? []).includes(v.code)) wrong.push(`${door} ${what} → status ${v.status} with code ${v.code}`)
  }

  const rest = async (method: string, path: string, body?: string, headers: Record<string, string> = {}): Promise<Verdict> => {
    const res = await fetch(`${d.url}${path}`, {
      method, headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers }, ...(body === undefined ? {} : { body }),
    })
    const text = await res.text()
    let code: number | undefined
    try {
      code = (JSON.parse(text) as { error?: { code?: number } }).error?.code
    } catch {
      // not JSON (a 405, a console page)
    }
    return { status: res.status, code, text }
  }

  beforeAll(async () => {
    const config = join(root, 'config.yaml')
    writeFileSync(config, [
      'rate_limits:',
      '  per_key: { points: 100000, window_s: 1 }',
      '  per_tenant: { points: 100000, window_s: 1 }',
      '  per_ip_unauthenticated: { points: 100000, window_s: 1 }',
      // manifests naming packages must fail fast, never reach the internet
      'lockfile:',
      '  pip_index_url: http://127.0.0.1:9/pypi',
      '  npm_registry_url: http://127.0.0.1:9/npm',
      '  timeout_ms: 500',
      '  deadline_ms: 2000',
    ].join('\n'))
    d = await startDaemonProcess({ dataDir: join(root, 'data'), env: { AUTH_PROVIDER: 'standard', SVC_CONFIG: config, SVC_SANDBOX_WORKERS: '1' } })
    key = adminKeyOf(d.output())
    const created = await call(`${d.url}/api/v1/functions/create`, 'POST', { function_name: 'add', signature: '(a, b)', language: 'javascript', source_code: 'function add(a, b) { return a + b }' }, { authorization: `Bearer ${key}` })
    known = created.body.rufid_short as string
  }, 60_000)

  afterAll(async () => {
    await d?.stop('SIGKILL')
    removeDir(root)
  })
  beforeEach(() => {
    wrong.length = 0
  })

  /** A raw gRPC client on the node, each method's path and serializer, and the judge of a call. */
  const grpcHarness = () => {
    const definition = protoLoader.loadSync(SVC_PROTO_FILE, { ...PROTO_LOADER_OPTIONS, includeDirs: [PROTO_ROOT] })
    const service = definition['svc.v1.SvcProtocolService'] as unknown as Record<string, { path: string; requestStream: boolean; responseStream: boolean; requestSerialize: (v: unknown) => Buffer }>
    const methods = Object.entries(service).filter(([name]) => /^[A-Z]/.test(name))
    const client = new grpc.Client(d.grpcAddress!, grpc.credentials.createInsecure())
    const md = () => {
      const m = new grpc.Metadata()
      m.set('authorization', `Bearer ${key}`)
      return m
    }
    const identity = (b: Buffer) => b
    const outcome = (method: string, bytes: Buffer): Promise<grpc.status> => new Promise((resolve) => {
      const spec = service[method]!
      if (spec.responseStream) {
        const call = client.makeServerStreamRequest(spec.path, identity, identity, bytes, md(), { deadline: Date.now() + 3000 })
        let done = false
        const finish = (code: grpc.status) => {
          if (!done) {
            done = true
            call.cancel()
            resolve(code)
          }
        }
        call.on('data', () => finish(grpc.status.OK))
        call.on('error', (e: grpc.ServiceError) => finish(e.code))
        call.on('end', () => finish(grpc.status.OK))
        setTimeout(() => finish(grpc.status.OK), 500) // an open stream is a healthy answer
      } else {
        client.makeUnaryRequest(spec.path, identity, identity, bytes, md(), { deadline: Date.now() + 10_000 }, (err) => resolve(err ? err.code : grpc.status.OK))
      }
    })
    const judgeGrpc = (what: string, code: grpc.status) => {
      tally('grpc')
      if (code === grpc.status.INTERNAL || code === grpc.status.UNKNOWN) wrong.push(`grpc ${what} → ${grpc.status[code]}`)
    }
    return { client, methods, service, outcome, judgeGrpc }
  }

  it('REST: RUFIDs in bodies and paths, arbitrary JSON bodies, manifests and lockfiles, malformed JSON, headers', async () => {
    const rec = recordFault('hostile.rest', {
      fault: 'fast-check inputs on REST: RUFID strings (resolve, execute, read, delete, versions), arbitrary JSON bodies on every write route, random manifests/lockfiles on create, malformed JSON text, random Authorization, X-Svc-Namespace, Content-Type and Accept headers',
      expectation: 'no 500 or 1009; each svc code fits its HTTP status; a malformed RUFID is 1001, a well-formed unknown one 1002',
    })
    const rufidLike = fc.oneof(
      fc.string({ maxLength: 80 }),
      fc.stringMatching(/^[A-Za-z0-9]{12}$/),
      fc.tuple(fc.stringMatching(/^[A-Za-z0-9]{10,14}$/), fc.oneof(fc.nat(), fc.constantFrom('0', '01', '9007199254740993', '-1', '')), fc.string({ maxLength: 70 })).map(([s, v, t]) => `rufid:${s}:v${v}:${t}`),
      fc.constantFrom('..', '%2e%2e', 'rufid:', 'rufid:abc', 'ÄÄÄÄÄÄÄÄÄÄÄÄ', '\u0000'.repeat(12), 'a'.repeat(5000), 'AAAAAAAAAAA\n'),
    )
    // resolve: the right code for every string
    await fc.assert(fc.asyncProperty(rufidLike, async (rufid) => {
      const v = await rest('POST', '/api/v1/functions/resolve', JSON.stringify({ rufid }))
      judge('rest', `resolve ${JSON.stringify(rufid).slice(0, 60)}`, v)
      const wellFormed = SHORT.test(rufid) || FULL.test(rufid)
      const expected = rufid === known || rufid === `rufid:${known}:v1:default` ? 200 : wellFormed ? 404 : 400
      if (v.status !== expected && !(wellFormed && v.status === 400 && /v9007199254740993/.test(rufid))) wrong.push(`resolve ${JSON.stringify(rufid).slice(0, 60)} → ${v.status} (expected ${expected})`)
      if (v.status === 400) expect(v.code).toBe(1001)
    }), { seed: SEED, numRuns: RUNS * 2 })
    // the same strings in paths
    await fc.assert(fc.asyncProperty(rufidLike, fc.constantFrom('GET /api/v1/functions/{r}', 'DELETE /api/v1/functions/{r}', 'POST /api/v1/functions/{r}/execute', 'GET /api/v1/functions/{r}/versions', 'GET /api/v1/functions/{r}/source', 'GET /v1/telemetry/functions/{r}'), async (rufid, route) => {
      if (rufid === known) return
      const [method, template] = route.split(' ') as [string, string]
      const v = await rest(method, template.replace('{r}', encodeURIComponent(rufid)), method === 'POST' ? '{"arguments":{}}' : undefined)
      judge('rest', `${route} ${JSON.stringify(rufid).slice(0, 40)}`, v)
    }), { seed: SEED + 1, numRuns: RUNS })
    // arbitrary JSON on every write route
    const writes = ['POST /api/v1/functions/create', 'POST /api/v1/functions/resolve', `POST /api/v1/functions/${known}/execute`, 'POST /api/v1/functions/deploy', 'POST /v1/functions', `POST /v1/functions/${known}/executions`,
      'POST /api/v1/auth/v2/api-keys', 'POST /api/v1/execution/execute', 'POST /api/v1/functions/signature', 'POST /api/v1/functions/branches/main/invoke']
    await fc.assert(fc.asyncProperty(fc.constantFrom(...writes), fc.jsonValue({ maxDepth: 4 }), async (route, body) => {
      const [method, path] = route.split(' ') as [string, string]
      judge('rest', `${route} ${JSON.stringify(body).slice(0, 60)}`, await rest(method, path, JSON.stringify(body)))
    }), { seed: SEED + 2, numRuns: RUNS * 2 })
    // structured create bodies with hostile fields: manifests, lockfiles, their texts, limits, tags
    const createBody = fc.record({
      function_name: fc.oneof(fc.constant('f'), fc.string({ maxLength: 70 })),
      signature: fc.oneof(fc.constant('(a)'), fc.string({ maxLength: 40 })),
      language: fc.constantFrom('javascript', 'typescript', 'python', 'go', 'cobol', ''),
      source_code: fc.oneof(fc.constant('function f(a) { return a }'), fc.string({ maxLength: 300 })),
      manifest: fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.record({ name: fc.string(), version: fc.string(), dependencies: fc.dictionary(fc.string({ maxLength: 12 }), fc.string({ maxLength: 12 }), { maxKeys: 3 }) })),
      lockfile: fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.record({ lockfile_version: fc.integer(), manifest_digest: fc.string(), packages: fc.jsonValue({ maxDepth: 2 }) })),
      manifest_text: fc.string({ maxLength: 200 }),
      lockfile_text: fc.string({ maxLength: 200 }),
      limits: fc.jsonValue({ maxDepth: 2 }),
      tags: fc.jsonValue({ maxDepth: 2 }),
    }, { requiredKeys: ['function_name', 'signature', 'language', 'source_code'] })
    await fc.assert(fc.asyncProperty(createBody, async (body) => {
      judge('rest', `create ${JSON.stringify(body).slice(0, 80)}`, await rest('POST', '/api/v1/functions/create', JSON.stringify(body)))
    }), { seed: SEED + 3, numRuns: RUNS })
    // malformed JSON text
    await fc.assert(fc.asyncProperty(fc.string({ maxLength: 200 }).filter((s) => { try { JSON.parse(s); return false } catch { return true } }), async (text) => {
      const v = await rest('POST', '/api/v1/functions/create', text)
      judge('rest', `malformed ${JSON.stringify(text).slice(0, 40)}`, v)
      if (v.status !== 400 || v.code !== 1006) wrong.push(`malformed JSON ${JSON.stringify(text).slice(0, 40)} → ${v.status}/${v.code}`)
    }), { seed: SEED + 4, numRuns: RUNS })
    // headers
    const headerValue = fc.stringMatching(/^[\x20-\x7e]{0,120}$/)
    await fc.assert(fc.asyncProperty(headerValue, headerValue, headerValue, headerValue, fc.boolean(), async (authorization, namespace, contentType, accept, withKey) => {
      const headers: Record<string, string> = { 'x-svc-namespace': namespace, 'content-type': contentType, accept }
      const v = await rest('POST', '/api/v1/functions/resolve', JSON.stringify({ rufid: known }), { ...headers, authorization: withKey ? `Bearer ${key}` : authorization })
      judge('rest', `headers ${JSON.stringify({ authorization: withKey ? 'key' : authorization, namespace, contentType }).slice(0, 120)}`, v)
      if (!withKey && v.status !== 401 && !/^Bearer svck_/.test(authorization)) wrong.push(`random Authorization ${JSON.stringify(authorization).slice(0, 40)} → ${v.status}`)
    }), { seed: SEED + 5, numRuns: RUNS })
    expect(wrong).toEqual([])
    expect((await call(`${d.url}/healthz`, 'GET')).status).toBe(200)
    rec.figures({ requests: counts.rest!, seed: SEED })
    rec.summary(`${counts.rest} generated requests (seed ${SEED}): no 500, codes fit statuses, 1001/1002 exactly as the grammar says; daemon alive`)
  }, 240_000)

  it('GraphQL: random documents and variables over HTTP and SSE', async () => {
    const rec = recordFault('hostile.graphql', {
      fault: 'fast-check GraphQL documents (random text, token soup, deep nesting, long aliases) with random variables, over POST /graphql and as SSE subscriptions',
      expectation: 'no 500 or 1009; every error carries a registered code; daemon alive',
    })
    const tokens = fc.constantFrom('{', '}', '(', ')', ':', '$r', '...', 'on', 'query', 'mutation', 'subscription', 'fragment', 'resolveRUFID', 'listFunctions', 'executeFunction', 'createFunction', 'deleteFunction',
      'rufid', '"x"', '1', 'items', 'name', '@include(if: true)', '__schema', '__typename', 'functionExecutions', 'systemEvents', '[', ']', '!', '=', 'String', 'JSON')
    const document = fc.oneof(
      fc.string({ maxLength: 300 }),
      fc.array(tokens, { maxLength: 60 }).map((t) => t.join(' ')),
      fc.integer({ min: 1, max: 400 }).map((n) => `${'{ __typename '.repeat(1)}${'{ listFunctions { items '.repeat(n)}${'}'.repeat(2 * n)}}`),
      fc.integer({ min: 1, max: 2000 }).map((n) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: __typename`).join(' ')} }`),
    )
    await fc.assert(fc.asyncProperty(document, fc.jsonValue({ maxDepth: 3 }), async (query, variables) => {
      const res = await fetch(`${d.url}/graphql`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) })
      const text = await res.text()
      let codes: number[] = []
      try {
        codes = ((JSON.parse(text) as { errors?: Array<{ extensions?: { code?: number } }> }).errors ?? []).map((e) => e.extensions?.code ?? -1)
      } catch {
        // judged by status below
      }
      judge('graphql', `doc ${JSON.stringify(query).slice(0, 60)}`, { status: res.status, text })
      for (const c of codes) if (c === 1009 || c === -1) wrong.push(`graphql ${JSON.stringify(query).slice(0, 60)} → error code ${c}`)
    }), { seed: SEED + 6, numRuns: RUNS * 2 })
    await fc.assert(fc.asyncProperty(document, async (query) => {
      const abort = new AbortController()
      const timer = setTimeout(() => abort.abort(), 1500)
      try {
        const res = await fetch(`${d.url}/graphql`, { method: 'POST', signal: abort.signal, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'text/event-stream' }, body: JSON.stringify({ query: `subscription ${query}` }) })
        judge('sse', `sse ${JSON.stringify(query).slice(0, 60)}`, { status: res.status, text: '' })
        await res.body?.cancel().catch(() => undefined)
      } catch {
        tally('sse') // a subscription that stayed open until the client left
      } finally {
        clearTimeout(timer)
      }
    }), { seed: SEED + 7, numRuns: Math.floor(RUNS / 2) })
    expect(wrong).toEqual([])
    expect((await call(`${d.url}/healthz`, 'GET')).status).toBe(200)
    rec.figures({ documents: counts.graphql!, sse_subscriptions: counts.sse!, seed: SEED })
    rec.summary(`${counts.graphql} documents over HTTP, ${counts.sse} as SSE subscriptions (seed ${SEED}): no 500, no error without a registered code`)
  }, 240_000)

  it('gRPC: every method with hostile typed fields', async () => {
    const rec = recordFault('hostile.grpc', {
      fault: 'fast-check messages for every method of svc.v1.SvcProtocolService whose fields are random strings, JSON or a known RUFID',
      expectation: 'a status other than INTERNAL and UNKNOWN for each call; server alive',
    })
    const { client, methods, service, outcome, judgeGrpc } = grpcHarness()
    const field = fc.oneof(fc.string({ maxLength: 100 }), fc.constant(known), fc.jsonValue().map((v) => JSON.stringify(v)))
    await fc.assert(fc.asyncProperty(fc.constantFrom(...methods.map(([n]) => n)), fc.record({ rufid: field, function_name: field, source_code: field, signature: field, language: field, arguments_json: field, version: field }), async (method, fields) => {
      const bytes = service[method]!.requestSerialize(fields)
      judgeGrpc(`${method} ${JSON.stringify(fields).slice(0, 80)}`, await outcome(method, bytes))
    }), { seed: SEED + 9, numRuns: RUNS * 2 })
    client.close()
    expect(wrong).toEqual([])
    expect((await call(`${d.url}/healthz`, 'GET')).status).toBe(200)
    rec.figures({ calls: counts.grpc!, methods: methods.length, seed: SEED })
    rec.summary(`${counts.grpc} calls on ${methods.length} methods (seed ${SEED}): never INTERNAL or UNKNOWN; server alive`)
  }, 240_000)

  // Issue 16, a failure this suite found: a request message that is not protobuf was answered
  // INTERNAL (grpc-js answers INTERNAL whenever a method's deserializer throws). Fixed: the gRPC
  // door's deserializers never throw, and an undecodable message is 1006 (INVALID_ARGUMENT).
  it('gRPC: random bytes as the request message of every method answer INVALID_ARGUMENT, not INTERNAL', async () => {
    const rec = recordFault('hostile.grpc-bytes', {
      fault: 'fast-check random bytes as the request message of every method of svc.v1.SvcProtocolService',
      expectation: 'INVALID_ARGUMENT (1006) for bytes that are not the message, never INTERNAL or UNKNOWN; server alive',
    })
    const { client, methods, outcome, judgeGrpc } = grpcHarness()
    const statuses: Record<string, number> = {}
    await fc.assert(fc.asyncProperty(fc.constantFrom(...methods.map(([n]) => n)), fc.uint8Array({ maxLength: 512 }), async (method, bytes) => {
      const code = await outcome(method, Buffer.from(bytes))
      statuses[grpc.status[code]] = (statuses[grpc.status[code]] ?? 0) + 1
      judgeGrpc(`${method} bytes ${Buffer.from(bytes).toString('hex').slice(0, 40)}`, code)
    }), { seed: SEED + 8, numRuns: RUNS })
    client.close()
    expect((await call(`${d.url}/healthz`, 'GET')).status).toBe(200)
    rec.figures({ calls: RUNS, ...statuses, seed: SEED })
    rec.summary(`${RUNS} calls of random bytes (seed ${SEED}): ${Object.entries(statuses).map(([k, v]) => `${v} ${k}`).join(', ')}; server alive`)
    expect(wrong).toEqual([])
  }, 240_000)

  it('/ws: random text and binary frames, then a fresh socket still subscribes', async () => {
    const rec = recordFault('hostile.ws', {
      fault: 'fast-check frames on /ws: random text, JSON with random type/channel/id fields, binary, oversized',
      expectation: 'error frames or a policy close (1003/1008/1009), never a crash; a new socket subscribes afterwards',
    })
    const frame = fc.oneof(
      fc.string({ maxLength: 300 }),
      fc.record({ type: fc.oneof(fc.constantFrom('subscribe', 'unsubscribe', 'ping', 'pong', ''), fc.string()), id: fc.jsonValue(), channel: fc.oneof(fc.constantFrom('executions', 'system'), fc.string()), rufid: fc.jsonValue() }).map((o) => JSON.stringify(o)),
      fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
      fc.integer({ min: 60_000, max: 200_000 }).map((n) => 'x'.repeat(n)),
    )
    const closes: number[] = []
    await fc.assert(fc.asyncProperty(fc.array(frame, { minLength: 1, maxLength: 20 }), async (frames) => {
      const socket = new WebSocket(`${d.url.replace('http', 'ws')}/ws`, { headers: { authorization: `Bearer ${key}` } })
      await new Promise<void>((resolve, reject) => {
        socket.once('open', () => resolve())
        socket.once('error', reject)
      })
      const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)))
      socket.on('error', () => undefined)
      for (const f of frames) if (socket.readyState === WebSocket.OPEN) socket.send(f)
      await sleep(30)
      if (socket.readyState === WebSocket.OPEN) socket.close(1000)
      const code = await closed
      tally('ws')
      closes.push(code)
      if (![1000, 1003, 1005, 1007, 1008, 1009].includes(code)) wrong.push(`/ws frames ${frames.map((f) => String(f).slice(0, 20)).join('|').slice(0, 80)} → close ${code}`)
    }), { seed: SEED + 10, numRuns: Math.floor(RUNS / 2) })
    const fresh = new WebSocket(`${d.url.replace('http', 'ws')}/ws`, { headers: { authorization: `Bearer ${key}` } })
    const subscribed = await new Promise<string>((resolve, reject) => {
      fresh.once('open', () => fresh.send(JSON.stringify({ type: 'subscribe', id: '1', channel: 'system' })))
      fresh.on('message', (m) => resolve(m.toString()))
      fresh.once('error', reject)
    })
    fresh.close()
    expect(subscribed).toMatch(/subscribed|node\.started/)
    expect(wrong).toEqual([])
    rec.figures({ sockets: counts.ws!, policy_closes: closes.filter((c) => c !== 1000 && c !== 1005).length, seed: SEED })
    rec.summary(`${counts.ws} sockets of random frames (seed ${SEED}): closed normally or by policy (${closes.filter((c) => c !== 1000 && c !== 1005).length} policy closes), a fresh socket subscribed after`)
  }, 240_000)

  it("the TypeScript client's parsing: Retry-After values and error answers of any shape", () => {
    const rec = recordFault('hostile.client-parsing', {
      fault: "fast-check input to the TypeScript client's parseRetryAfter and errorFromResponse (the Python client's parsing: Hypothesis, clients/python/tests/test_parsing_properties.py)",
      expectation: 'a finite wait or none; a typed error for any status and body, never a throw',
    })
    const retryAfter = fc.oneof(fc.string({ maxLength: 40 }), fc.stringMatching(/^[0-9]{300,400}$/), fc.constantFrom('inf', 'Infinity', '1e309', 'NaN', '-1', '  7 ', 'Wed, 21 Oct 2015 07:28:00 GMT'))
    fc.assert(fc.property(retryAfter, (v) => {
      const s = parseRetryAfter(v)
      return s === undefined || (Number.isFinite(s) && s >= 0)
    }), { seed: SEED + 11, numRuns: RUNS * 5 })
    fc.assert(fc.property(fc.integer({ min: 100, max: 599 }), fc.oneof(fc.string(), fc.jsonValue().map((v) => JSON.stringify(v)), fc.record({ error: fc.record({ code: fc.jsonValue(), name: fc.jsonValue(), message: fc.jsonValue(), details: fc.jsonValue() }) }).map((v) => JSON.stringify(v))), retryAfter, (status, body, ra) => {
      const err = errorFromResponse(status, body, ra)
      return err instanceof Error && (err.retryAfterSeconds === undefined || Number.isFinite(err.retryAfterSeconds))
    }), { seed: SEED + 12, numRuns: RUNS * 5 })
    rec.figures({ inputs: RUNS * 10, seed: SEED })
    rec.summary(`${RUNS * 10} inputs (seed ${SEED}): finite waits, typed errors, no throw`)
  })
})
