#!/usr/bin/env node
// CPU cost per request (issue 14 part B): on a machine shared with other work, latency figures
// move with the neighbours' load, while the CPU time the daemon and its sandbox workers spend per
// request does not (much). Starts `svc-node start` (built dist/) on the server core, publishes
// `add`, drives each door with the load generator on the client core and reads the daemon's and
// its workers' utime+stime (/proc/<pid>/stat) before and after: prints CPU µs per request.
//
//   node bench/cpu-cost.js [--seconds=4] [--only=rest1,rest8,resolve10,grpc,graphql,python]
import { readFileSync, readdirSync } from 'node:fs'
import { ADD_JS, ADD_PY, TICK_US, cpuTicks, postJson, runLoad, startDaemon } from './lib.js'

const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const seconds = Number(arg('seconds', '4'))
const only = arg('only', 'rest1,rest8,resolve10,grpc,graphql').split(',')
function childrenOf(pid) {
  const out = []
  let tids = []
  try {
    tids = readdirSync(`/proc/${pid}/task`)
  } catch { /* gone */ }
  for (const tid of tids) {
    try {
      out.push(...readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number))
    } catch { /* gone */ }
  }
  return out
}

/** Every process below `pid`: a sandbox worker runs inside its OS wall (bwrap), a grandchild. */
function descendantsOf(pid) {
  const out = []
  const todo = childrenOf(pid)
  for (let i = 0; i < todo.length && i < 1000; i++) {
    out.push(todo[i])
    todo.push(...childrenOf(todo[i]))
  }
  return out
}

const daemon = await startDaemon({})
try {
  const base = daemon.url.replace(/\/+$/, '')
  const created = await postJson(`${base}/api/v1/functions/create`, ADD_JS)
  const short = created.body.rufid_short
  const execBody = JSON.stringify({ arguments: { a: 2, b: 3 } })
  const check = await postJson(`${base}/api/v1/functions/${short}/execute`, { arguments: { a: 2, b: 3 } })
  if (check.body?.result !== 5) throw new Error(`execute answered ${check.status} ${JSON.stringify(check.body)}`)
  let pyShort
  if (only.includes('python')) {
    pyShort = (await postJson(`${base}/api/v1/functions/create`, ADD_PY)).body.rufid_short
    await postJson(`${base}/api/v1/functions/${pyShort}/execute`, { arguments: { a: 2, b: 3 } })
  }
  const q = JSON.stringify({ query: 'mutation($r: String!, $a: JSON!) { executeFunction(rufid: $r, args: $a) { result executionTimeMs status } }', variables: { r: short, a: { a: 2, b: 3 } } })
  const jobs = {
    rest1: { kind: 'http', url: `${base}/api/v1/functions/${short}/execute`, body: execBody, connections: 1 },
    rest8: { kind: 'http', url: `${base}/api/v1/functions/${short}/execute`, body: execBody, connections: 8 },
    resolve10: { kind: 'http', url: `${base}/api/v1/functions/resolve`, body: JSON.stringify({ rufid: short, version: 'v1' }), connections: 10 },
    grpc: { kind: 'grpc', address: daemon.grpc, method: 'ExecuteFunction', requests: [{ rufid: short, version: '', arguments_json: '{"a":2,"b":3}' }], connections: 1 },
    graphql: { kind: 'http', url: `${base}/graphql`, body: q, connections: 1 },
    python: { kind: 'http', url: `${base}/api/v1/functions/${pyShort}/execute`, body: execBody, connections: 1 },
  }
  const rows = []
  for (const name of only) {
    const job = jobs[name]
    await runLoad({ ...job, durationMs: 500, warmupMs: 0 })
    const workers = descendantsOf(daemon.pid)
    const d0 = cpuTicks(daemon.pid)
    const w0 = workers.map(cpuTicks)
    const load = await runLoad({ ...job, durationMs: seconds * 1000, warmupMs: 0 })
    const d1 = cpuTicks(daemon.pid)
    const w1 = workers.map(cpuTicks)
    const n = load.count
    const wsum = w1.reduce((s, v, i) => s + v - w0[i], 0)
    rows.push({ name, requests: n, errors: load.errors, rps: load.rps, p50_ms: load.latency.p50_ms, p99_ms: load.latency.p99_ms, daemon_us_per_req: Math.round(((d1 - d0) * TICK_US) / n), workers_us_per_req: Math.round((wsum * TICK_US) / n) })
  }
  console.table(rows)
} finally {
  await daemon.stop()
}
