// The load generator: a separate process (pinned to the client core by bench/lib.js). Reads one job
// as JSON on stdin, runs it bounded in time (and count), prints one JSON report on stdout:
// { count, errors, error_samples, rps, latency: {n, p50_ms, p99_ms, ...}, warmup_count } (warmup_count: requests of the warm-up, not counted).
//
// Jobs:
//   { kind: 'http', url, method?, headers?, bodies: [string] | body: string, connections, durationMs, maxRequests?, warmupMs? }
//     bodies are used in order (round robin) by all connections together.
//   { kind: 'grpc', address, method: 'ExecuteFunction' | 'ResolveRUFID', requests: [object], connections, durationMs, maxRequests?, warmupMs? }
//   { kind: 'publish-execute', base, publishes: [object], args, durationMs }
//     for each definition: publish it, then time its first execution (first-after-publish).
//   { kind: 'http-sequence', requests: [{ url, method?, headers?, body? }] }
//     each request once, in order, on one keep-alive connection: { count, latencies: [ms], answers: [{ status, body }] }.
//   { kind: 'http-open', url, method?, headers?, body, rate, durationMs, maxInFlight?, drainMs? }
//     an open loop: `rate` requests a second whatever the answers (at most maxInFlight outstanding,
//     default 1000), then drainMs (1000) for the answers still due: { sent, skipped, unanswered,
//     answered: { '<status>': n }, latency } (a flood, not a client).
import http from 'node:http'
import { summarize } from './lib.js'

const readStdin = async () => {
  let s = ''
  for await (const c of process.stdin) s += c
  return JSON.parse(s)
}

function httpRequest(agent, url, method, headers, body) {
  return new Promise((resolve) => {
    const req = http.request(url, { method, agent, headers: body === undefined ? headers : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString('utf8') }))
      res.on('error', (e) => resolve({ status: 0, body: String(e) }))
    })
    req.on('error', (e) => resolve({ status: 0, body: String(e) }))
    if (body !== undefined) req.write(body)
    req.end()
  })
}

/** Runs `connections` closed loops of `one(i)` for durationMs (after a warm-up). */
async function closedLoops({ connections = 1, durationMs = 2000, warmupMs = 300, maxRequests = Infinity }, one) {
  const lat = []
  let errors = 0
  const samples = []
  let next = 0
  const loop = async (until, record) => {
    while (performance.now() < until && (!record || lat.length + errors < maxRequests)) {
      const i = next++
      const t = performance.now()
      const r = await one(i)
      const dt = performance.now() - t
      if (!record) continue
      if (r.ok) lat.push(dt)
      else {
        errors++
        if (samples.length < 3) samples.push(r.detail)
      }
    }
  }
  if (warmupMs > 0) {
    const until = performance.now() + warmupMs
    await Promise.all(Array.from({ length: connections }, () => loop(until, false)))
  }
  const warmupCount = next
  const start = performance.now()
  const until = start + durationMs
  await Promise.all(Array.from({ length: connections }, () => loop(until, true)))
  const elapsed = (performance.now() - start) / 1000
  return { count: lat.length + errors, errors, error_samples: samples, rps: Math.round((lat.length + errors) / elapsed), connections, latency: summarize(lat), warmup_count: warmupCount }
}

async function httpJob(job) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: job.connections ?? 1 })
  const bodies = job.bodies ?? (job.body === undefined ? [undefined] : [job.body])
  const method = job.method ?? (bodies[0] === undefined ? 'GET' : 'POST')
  const headers = job.headers ?? {}
  const report = await closedLoops(job, async (i) => {
    const r = await httpRequest(agent, job.url, method, headers, bodies[i % bodies.length])
    const ok = r.status >= 200 && r.status < 300
    return { ok, detail: ok ? undefined : `${r.status} ${r.body.slice(0, 200)}` }
  })
  agent.destroy()
  return report
}

async function grpcJob(job) {
  const grpc = await import('@grpc/grpc-js')
  const protoLoader = await import('@grpc/proto-loader')
  const { PROTO_LOADER_OPTIONS, PROTO_ROOT, SVC_PROTO_FILE } = await import('../dist/api/grpc/proto.js')
  const proto = grpc.loadPackageDefinition(protoLoader.loadSync(SVC_PROTO_FILE, { ...PROTO_LOADER_OPTIONS, includeDirs: [PROTO_ROOT] }))
  // one channel per connection
  const clients = Array.from({ length: job.connections ?? 1 }, (_, k) =>
    new proto.svc.v1.SvcProtocolService(job.address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1, 'bench.channel': k }))
  let rr = 0
  const report = await closedLoops(job, (i) => new Promise((resolve) => {
    const c = clients[rr++ % clients.length]
    c[job.method](job.requests[i % job.requests.length], new grpc.Metadata(), { deadline: Date.now() + 20_000 }, (err) =>
      resolve({ ok: !err, detail: err ? `${err.code} ${err.details}` : undefined }))
  }))
  for (const c of clients) c.close()
  return report
}

async function publishExecuteJob(job) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const exec = []
  const pub = []
  let errors = 0
  const samples = []
  const until = performance.now() + (job.durationMs ?? 10_000)
  for (const def of job.publishes) {
    if (performance.now() > until) break
    let t = performance.now()
    const p = await httpRequest(agent, `${job.base}/api/v1/functions/create`, 'POST', {}, JSON.stringify(def))
    const pubMs = performance.now() - t
    if (p.status >= 300) {
      errors++
      if (samples.length < 3) samples.push(`${p.status} ${p.body.slice(0, 200)}`)
      continue
    }
    const short = JSON.parse(p.body).rufid_short
    t = performance.now()
    const r = await httpRequest(agent, `${job.base}/api/v1/functions/${short}/execute`, 'POST', {}, JSON.stringify({ arguments: job.args }))
    const dt = performance.now() - t
    if (r.status >= 300) {
      errors++
      if (samples.length < 3) samples.push(`${r.status} ${r.body.slice(0, 200)}`)
      continue
    }
    pub.push(pubMs)
    exec.push(dt)
  }
  agent.destroy()
  return { count: exec.length + errors, errors, error_samples: samples, latency: summarize(exec), publish_latency: summarize(pub) }
}

/**
 * Each request once, in order, on one keep-alive connection: its latency and its answer (status and
 * parsed JSON body), for suites that check every answer or whose requests differ one by one.
 */
async function httpSequenceJob(job) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const latencies = []
  const answers = []
  for (const { url, method, headers, body } of job.requests) {
    const text = body === undefined ? undefined : JSON.stringify(body)
    const t = performance.now()
    const r = await httpRequest(agent, url, method ?? (text === undefined ? 'GET' : 'POST'), headers ?? {}, text)
    latencies.push(performance.now() - t)
    let parsed
    try {
      parsed = r.body ? JSON.parse(r.body) : {}
    } catch {
      parsed = { raw: r.body.slice(0, 500) }
    }
    answers.push({ status: r.status, body: parsed })
  }
  agent.destroy()
  return { count: latencies.length, latencies, answers }
}

/** An open loop at a fixed rate, whatever the answers (see the header). */
async function httpOpenJob(job) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: job.maxInFlight ?? 1000 })
  const method = job.method ?? 'POST'
  const maxInFlight = job.maxInFlight ?? 1000
  const answered = {}
  const lat = []
  let sent = 0
  let skipped = 0
  let inFlight = 0
  const pending = new Set()
  const start = performance.now()
  const until = start + job.durationMs
  for (let i = 0; ; i++) {
    const due = start + (i * 1000) / job.rate
    if (due >= until) break
    const wait = due - performance.now()
    if (wait > 0) await new Promise((r) => setTimeout(r, wait))
    if (inFlight >= maxInFlight) {
      skipped++
      continue
    }
    sent++
    inFlight++
    const t = performance.now()
    const p = httpRequest(agent, job.url, method, job.headers ?? {}, job.body).then((r) => {
      inFlight--
      answered[r.status] = (answered[r.status] ?? 0) + 1
      lat.push(performance.now() - t)
    })
    pending.add(p)
    void p.finally(() => pending.delete(p))
  }
  // what is still waiting (a flood's queued calls) gets drainMs more, then its sockets are closed
  await Promise.race([Promise.all(pending), new Promise((r) => setTimeout(r, job.drainMs ?? 1_000))])
  const unanswered = pending.size
  agent.destroy()
  return { sent, skipped, unanswered, answered, rate: job.rate, latency: summarize(lat) }
}

const job = await readStdin()
const kinds = { http: httpJob, grpc: grpcJob, 'publish-execute': publishExecuteJob, 'http-sequence': httpSequenceJob, 'http-open': httpOpenJob }
const report = await kinds[job.kind](job)
// exit once the report is out: a pipe takes 64 KB at a time, and exit() would cut a longer one
process.stdout.write(JSON.stringify(report), () => process.exit(0))
