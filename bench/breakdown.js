#!/usr/bin/env node
// Per-stage breakdown of one warm execute (issue 14). Runs as its own process on the server core
// (bench/suites.js `breakdown` starts it): it builds a real daemon in this process with the
// composition root (`createDaemon`: real LevelDB, real sandbox worker processes, the real REST
// door), publishes `add`, wraps the engine's layers with performance.now() marks (nothing in
// src/ is instrumented, so production pays nothing), drives it with the load generator on the
// client core (1 connection, closed loop) and prints one line `RESULT <json>`:
//   { stages: { <stage>: {p50_ms, p99_ms, mean_ms} }, client: <load report>, server_total, … }
// Options (JSON, argv[2]): { durationMs, warmupMs, mode: 'warm' | 'fresh' }.
import '../dist/polyfill.js'
import http from 'node:http'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ADD_JS, postJson, runLoad, summarize } from './lib.js'

const options = JSON.parse(process.argv[2] ?? '{}')
const durationMs = options.durationMs ?? 5000
const warmupMs = options.warmupMs ?? 500
const mode = options.mode ?? 'warm'

const { loadConfig } = await import('../dist/daemon/config.js')
const { createDaemon } = await import('../dist/daemon/daemon.js')
const { createLogger } = await import('../dist/daemon/logger.js')

const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-breakdown-'))
const cfgFile = join(dataDir, 'bench-config.yaml')
writeFileSync(cfgFile, [
  'rate_limits:',
  '  per_key: { points: 0, window_s: 1 }',
  '  per_tenant: { points: 0, window_s: 1 }',
  '  per_ip_unauthenticated: { points: 0, window_s: 1 }',
  '',
].join('\n'))
const env = { ...process.env, API_HOST: '127.0.0.1', API_PORT: '0', GRPC_PORT: '0', SVC_DATA_DIR: join(dataDir, 'data'), SVC_CONFIG: cfgFile, LOG_FORMAT: 'json', LOG_LEVEL: 'warn', AUTH_PROVIDER: 'none' }
const config = loadConfig({ env })
const logger = createLogger({ level: 'warn', format: 'json' })

// ---- marks -------------------------------------------------------------------------------
// One connection, closed loop: requests are strictly sequential, so one "current" record is enough.
let current
const samples = []
const now = () => performance.now()
let recording = false
const origEmit = http.Server.prototype.emit
http.Server.prototype.emit = function emit(event, req, res) {
  if (event === 'request' && req.method === 'POST' && /\/execute$/.test(req.url ?? '')) {
    const record = { arrived: now(), recording }
    current = record
    res.once('finish', () => {
      record.finished = now()
      if (record.recording) samples.push(record)
    })
  }
  return origEmit.apply(this, arguments)
}

function wrap(obj, name, before, after) {
  const original = obj[name]
  if (typeof original !== 'function') throw new Error(`breakdown: ${name} is not a function on ${obj?.constructor?.name}`)
  obj[name] = function wrapped(...args) {
    const r = current
    if (r) before(r)
    const value = original.apply(this, args)
    if (!r || !value || typeof value.then !== 'function') {
      if (r) after(r, value)
      return value
    }
    return value.then((v) => {
      after(r, v)
      return v
    })
  }
}

const daemon = createDaemon(config, { logger, env })
await daemon.start()
const base = daemon.url.replace(/\/+$/, '')
const engine = daemon.engine

const source = mode === 'fresh'
  ? { ...ADD_JS, manifest: { schemaVersion: '1.0', name: 'add', execution: { context: 'fresh' } } }
  : ADD_JS
const created = await postJson(`${base}/api/v1/functions/create`, source)
if (created.status >= 300) throw new Error(`publish failed: ${JSON.stringify(created.body)}`)
const short = created.body.rufid_short

const sandbox = engine.executions.c?.sandbox
if (!sandbox) throw new Error('breakdown: the execution service has no sandbox port at .c.sandbox')
const store = engine.executions.c.store
wrap(engine.access, 'admit', (r) => (r.admitStart = now()), (r) => (r.admitEnd = now()))
wrap(engine.executions, 'execute', (r) => (r.executeStart = now()), (r) => (r.executeEnd = now()))
wrap(engine.functions, 'resolve', (r) => (r.resolveStart = now()), (r) => (r.resolveEnd = now()))
wrap(sandbox, 'execute', (r) => (r.sandboxStart = now()), (r, outcome) => {
  r.sandboxEnd = now()
  r.isolateMs = outcome?.wallTimeMs
  r.workerMs = outcome?.workerMs
})
wrap(store, 'putExecution', (r) => (r.recordStart = now()), (r) => (r.recordEnd = now()))
wrap(engine.events, 'publishExecution', (r) => (r.eventsStart = now()), (r) => (r.eventsEnd = now()))
wrap(engine.access, 'audit', (r) => (r.auditStart = now()), (r) => (r.auditEnd = now()))

const execBody = JSON.stringify({ arguments: { a: 2, b: 3 } })
const check = await postJson(`${base}/api/v1/functions/${short}/execute`, { arguments: { a: 2, b: 3 } })
if (check.body?.result !== 5) throw new Error(`execute answered ${check.status} ${JSON.stringify(check.body)}`)

// warm-up without recording, then the measured run
await runLoad({ kind: 'http', url: `${base}/api/v1/functions/${short}/execute`, body: execBody, connections: 1, durationMs: warmupMs, warmupMs: 0 })
recording = true
const client = await runLoad({ kind: 'http', url: `${base}/api/v1/functions/${short}/execute`, body: execBody, connections: 1, durationMs, warmupMs: 0 })
recording = false
current = undefined

// What the REST door's layers cost: the same engine calls (admit, target, request schema,
// execute, presenter, audit) behind a bare node:http handler, without the envelope or the door's
// route table. Not a door of the daemon: the floor the REST door is compared with (since issue 14
// part B, execute is a direct route, answered before Koa: the two figures should be close).
const { executeRequestSchema, parseRequest } = await import('../dist/api/rest/routes/request-schemas.js')
const { executionBody } = await import('../dist/api/rest/presenters.js')
const raw = http.createServer((req, res) => {
  const started = performance.now()
  const chunks = []
  req.on('data', (c) => chunks.push(c))
  req.on('end', async () => {
    let principal
    let failure
    let status = 200
    let body
    try {
      principal = await engine.access.admit({ authorization: req.headers.authorization, namespace: req.headers['x-svc-namespace'], ip: req.socket.remoteAddress ?? '' })
      const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      const target = engine.functions.target(principal, short, parsed.version)
      parseRequest(executeRequestSchema, parsed, 'execute request')
      body = executionBody(await engine.executions.execute(principal, target, parsed.arguments))
    } catch (err) {
      failure = err
      status = 500
      body = { error: String(err?.message ?? err) }
    }
    await engine.access.audit({ operation: 'rufid.execute', principal, ip: req.socket.remoteAddress ?? '', rufid: short, startedAt: started, error: failure })
    const text = JSON.stringify(body)
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
    res.end(text)
  })
})
raw.keepAliveTimeout = 60_000
await new Promise((r) => raw.listen(0, '127.0.0.1', r))
const rawUrl = `http://127.0.0.1:${raw.address().port}/`
const rawCheck = await postJson(rawUrl, { arguments: { a: 2, b: 3 } })
if (rawCheck.body?.result !== 5) throw new Error(`raw route answered ${rawCheck.status} ${JSON.stringify(rawCheck.body)}`)
await runLoad({ kind: 'http', url: rawUrl, body: execBody, connections: 1, durationMs: warmupMs, warmupMs: 0 })
const rawClient = await runLoad({ kind: 'http', url: rawUrl, body: execBody, connections: 1, durationMs, warmupMs: 0 })
await new Promise((r) => raw.close(r))

// The sandbox alone, called in a loop in this process (no HTTP, no engine around it): the
// dispatch floor of one warm call (queue, IPC both ways, the worker).
const fn = (await engine.functions.resolve({ tenant_id: 'default', user: 'bench', method: 'test', permissions: new Set(['rufid.read']) }, { short })).fn
const sandboxRequest = {
  key: `${fn.tenant_id}/${fn.rufid_short}/v${fn.version}`, tenant: fn.tenant_id, language: fn.language, source: fn.source_code,
  context: mode, functionName: fn.function_name, signature: fn.signature, args: { a: 2, b: 3 }, limits: engine.executions.limitsFor(fn),
}
const direct = []
for (let i = 0; i < 2200; i++) {
  const t = now()
  await sandbox.execute(sandboxRequest)
  if (i >= 200) direct.push(now() - t)
}

// ---- stages ------------------------------------------------------------------------------
const span = (r, a, b) => (r[a] !== undefined && r[b] !== undefined ? r[b] - r[a] : undefined)
const stageDefs = {
  'http: request event → admit (direct route: body read + JSON parse)': (r) => span(r, 'arrived', 'admitStart'),
  'auth/admit (access gate)': (r) => span(r, 'admitStart', 'admitEnd'),
  'route: target + request schema': (r) => span(r, 'admitEnd', 'executeStart'),
  'resolve (registry + cache)': (r) => span(r, 'resolveStart', 'resolveEnd'),
  'execute: before dispatch (arguments, wheels)': (r) => span(r, 'resolveEnd', 'sandboxStart'),
  'dispatch: sandbox.execute total': (r) => span(r, 'sandboxStart', 'sandboxEnd'),
  '  the call in the isolate (worker-measured wall time)': (r) => r.isolateMs,
  '  dispatch overhead (queue, IPC both ways, worker outside the call)': (r) => (r.isolateMs === undefined ? undefined : span(r, 'sandboxStart', 'sandboxEnd') - r.isolateMs),
  '    of which in the worker, outside the call': (r) => (r.workerMs === undefined || r.isolateMs === undefined ? undefined : r.workerMs - r.isolateMs),
  '    of which queue, IPC both ways and the supervisor': (r) => (r.workerMs === undefined ? undefined : span(r, 'sandboxStart', 'sandboxEnd') - r.workerMs),
  'record + stats (store.putExecution, awaited)': (r) => span(r, 'recordStart', 'recordEnd'),
  'events (publishExecution)': (r) => span(r, 'eventsStart', 'eventsEnd'),
  'execute: rest (record building, stats, metrics)': (r) => {
    const total = span(r, 'executeStart', 'executeEnd')
    if (total === undefined) return undefined
    return total - (span(r, 'resolveStart', 'resolveEnd') ?? 0) - (span(r, 'resolveEnd', 'sandboxStart') ?? 0) - (span(r, 'sandboxStart', 'sandboxEnd') ?? 0) - (span(r, 'recordStart', 'recordEnd') ?? 0) - (span(r, 'eventsStart', 'eventsEnd') ?? 0)
  },
  'reply: execute → audit (presenter, envelope unwinding)': (r) => span(r, 'executeEnd', 'auditStart'),
  'audit (access.audit, awaited)': (r) => span(r, 'auditStart', 'auditEnd'),
  'reply: audit → response finished (JSON encoding, socket write)': (r) => span(r, 'auditEnd', 'finished'),
  'server total (request event → response finished)': (r) => span(r, 'arrived', 'finished'),
}
const stages = {}
for (const [name, fn] of Object.entries(stageDefs)) {
  const values = samples.map(fn).filter((v) => typeof v === 'number' && Number.isFinite(v))
  const s = summarize(values)
  stages[name] = { p50_ms: s.p50_ms, p99_ms: s.p99_ms, mean_ms: s.mean_ms, n: s.n }
}
const serverP50 = stages['server total (request event → response finished)'].p50_ms
const result = {
  mode,
  requests: samples.length,
  client,
  stages,
  same_engine_behind_bare_node_http: rawClient,
  sandbox_execute_in_a_loop: summarize(direct),
  outside_server_p50_ms: client.latency.p50_ms != null && serverP50 != null ? Math.round((client.latency.p50_ms - serverP50) * 10000) / 10000 : null,
}
await daemon.stop()
rmSync(dataDir, { recursive: true, force: true })
process.stdout.write(`RESULT ${JSON.stringify(result)}\n`)
process.exit(0)
