#!/usr/bin/env node
// `npm run bench`: runs every suite against the built daemon (dist/), writes
// bench/results/latest.json and prints a table. `--smoke` runs tiny iteration counts (CI);
// `--only=rufid,cache` runs some suites; `--out=<file>` writes elsewhere; `--scale-sizes=10000,100000`
// overrides the catalog sizes of the scale suite; `--merge` (with --only) re-runs those suites into
// the existing results file.
import { execSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { cpus, freemem, totalmem, loadavg } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { BENCH, killAll, pinning } from './lib.js'
import * as suites from './suites.js'

export const SECTIONS = ['rufid', 'resolution_in_process', 'cache', 'daemon', 'breakdown', 'fairness', 'scale', 'federation', 'results']

function machine() {
  const sh = (cmd) => {
    try {
      return execSync(cmd, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
    } catch {
      return null
    }
  }
  const lscpu = sh('lscpu')
  const pick = (k) => lscpu?.split('\n').find((l) => l.startsWith(k))?.split(':').slice(1).join(':').trim() ?? null
  return {
    cpu_model: pick('Model name') ?? cpus()[0]?.model ?? null,
    nproc: cpus().length,
    architecture: pick('Architecture'),
    memory_total_bytes: totalmem(),
    memory_free_bytes_at_start: freemem(),
    loadavg_at_start: loadavg(),
    node: process.version,
    os: sh('uname -sr'),
    workerd: sh(`${join(BENCH, '..', 'node_modules/.bin/workerd')} --version`),
    pinning,
  }
}

const pass = (v, limit) => (v == null ? null : v < limit)

/** §8 targets, each with its measured p50/p99 and pass/fail. */
function targets(r) {
  const rows = []
  const row = (metric, source, p50, p99, t50, t99, note) =>
    rows.push({ metric, source, p50_ms: p50 ?? null, p99_ms: p99 ?? null, target: `p50 < ${t50} ms, p99 < ${t99} ms`, pass: p50 == null ? null : pass(p50, t50) && pass(p99, t99), ...(note ? { note } : {}) })
  for (const [size, s] of Object.entries(r.rufid?.sizes ?? {})) row('RUFID generation', `computeRufid, ${size} source`, s.svc.p50_ms, s.svc.p99_ms, 5, 10)
  const rr = r.daemon?.rest_resolution?.connections
  if (rr) {
    row('RUFID resolution', 'REST /resolve, 1 connection (end to end)', rr[1]?.svc.latency.p50_ms, rr[1]?.svc.latency.p99_ms, 2, 3)
    row('RUFID resolution', 'REST /resolve, 10 connections', rr[10]?.svc.latency.p50_ms, rr[10]?.svc.latency.p99_ms, 2, 3)
  }
  const ri = r.resolution_in_process
  if (ri?.svc_uncached) {
    row('RUFID resolution', 'in-process, uncached (LevelDB)', ri.svc_uncached.p50_ms, ri.svc_uncached.p99_ms, 2, 3)
    row('RUFID resolution', 'in-process, cached', ri.svc_cached.p50_ms, ri.svc_cached.p99_ms, 2, 3)
  }
  for (const [n, s] of Object.entries(r.scale?.sizes ?? {})) {
    if (s.rest_resolve_uncached) row('RUFID resolution', `REST /resolve uncached, ${n} catalog entries`, s.rest_resolve_uncached.latency.p50_ms, s.rest_resolve_uncached.latency.p99_ms, 2, 3)
    else rows.push({ metric: 'RUFID resolution', source: `REST /resolve, ${n} entries`, p50_ms: null, p99_ms: null, target: 'p50 < 2 ms, p99 < 3 ms', pass: null, note: s.status })
  }
  const js = r.daemon?.js_execution
  if (js) {
    row('Function execution', 'JS add over REST, warm', js.warm.svc.latency.p50_ms, js.warm.svc.latency.p99_ms, 50, 100)
    row('Function execution', 'JS add over REST, first after publish', js.first_after_publish.svc.latency.p50_ms, js.first_after_publish.svc.latency.p99_ms, 50, 100)
  }
  const py = r.daemon?.python_execution
  if (py?.warm) {
    row('Function execution', 'Python add over REST, warm', py.warm.svc.latency.p50_ms, py.warm.svc.latency.p99_ms, 50, 100)
    row('Function execution', 'Python add over REST, first after publish', py.first_after_publish.svc.latency.p50_ms, py.first_after_publish.svc.latency.p99_ms, 50, 100)
    if (py.cold_first_call_ms !== undefined) {
      rows.push({ metric: 'Function execution', source: 'Python add, first call of a fresh daemon (cold: loads Pyodide; one sample, ms in value)', p50_ms: null, p99_ms: null, value: py.cold_first_call_ms, target: 'reported, no target', pass: null, note: 'one cold-start sample, not a latency distribution' })
    }
  } else if (py) rows.push({ metric: 'Function execution', source: 'Python', p50_ms: null, p99_ms: null, target: 'p50 < 50 ms, p99 < 100 ms', pass: null, note: py.status })
  if (r.daemon?.grpc_execution?.svc) row('Function execution', 'JS add over gRPC, warm', r.daemon.grpc_execution.svc.latency.p50_ms, r.daemon.grpc_execution.svc.latency.p99_ms, 50, 100)
  if (r.daemon?.graphql_execution?.svc) row('Function execution', 'JS add over GraphQL, warm', r.daemon.graphql_execution.svc.latency.p50_ms, r.daemon.graphql_execution.svc.latency.p99_ms, 50, 100)
  const fed = r.federation
  if (fed?.sync) {
    const failed = fed.sync_timeouts_5s ?? 0
    row('Federation sync', `publish → resolvable on the 4 other nodes (${fed.sync.n} of ${fed.sync_publishes} publishes made it within 5 s)`, fed.sync.p50_ms, fed.sync.p99_ms, 100, 200)
    if (failed > 0) {
      const last = rows.at(-1)
      last.pass = false
      last.note = `${failed} of ${fed.sync_publishes} publishes were not resolvable on all 4 other nodes within 5 s; p50/p99 are over the ones that were`
    }
    if (fed.executable_on_another_node) row('Federation sync', 'publish → executable on another node (fetch on demand)', fed.executable_on_another_node.p50_ms, fed.executable_on_another_node.p99_ms, 100, 200)
  }
  else rows.push({ metric: 'Federation sync', source: '5 local nodes', p50_ms: null, p99_ms: null, target: 'p50 < 100 ms, p99 < 200 ms', pass: null, note: fed?.status?.split(' (')[0] ?? 'not run' })
  const c = r.cache?.configs
  if (c) {
    const [key, def] = Object.entries(c)[0]
    rows.push({ metric: 'Cache hit rate', source: `Zipf(1.0) over ${r.cache.functions} functions, ${key} (default config)`, value: def.hit_ratio, target: '> 0.95', pass: def.hit_ratio > 0.95 })
  }
  // availability: 1 - error rate of every load-generator request of this run
  let count = 0
  let errors = 0
  const walk = (o) => {
    if (!o || typeof o !== 'object') return
    if (typeof o.count === 'number' && typeof o.errors === 'number' && o.latency) {
      count += o.count
      errors += o.errors
    }
    for (const v of Object.values(o)) walk(v)
  }
  walk(r.daemon)
  walk(r.scale)
  walk(r.results)
  rows.push({
    metric: 'Availability', source: `success ratio of all ${count} load-generator requests of this run (svc and peers)`,
    value: count ? Math.round(((count - errors) / count) * 1e6) / 1e6 : null, target: '>= 0.9999', pass: count ? (count - errors) / count >= 0.9999 : null,
    note: 'an error-rate measurement over a short run, not a production availability figure',
  })
  return rows
}

function fmt(v) {
  if (v == null) return '—'
  if (typeof v === 'boolean') return v ? 'pass' : 'FAIL'
  return typeof v === 'number' ? String(Math.round(v * 1000) / 1000) : String(v)
}

/** The comparison table: every figure with its baseline and ratio. */
function comparisons(r) {
  const rows = []
  const add = (what, svc, base, baseName) => rows.push([what, fmt(svc?.p50_ms), fmt(svc?.p99_ms), baseName, fmt(base?.p50_ms), fmt(base?.p99_ms), fmt(svc?.p50_ms != null && base?.p50_ms ? svc.p50_ms / base.p50_ms : null), fmt(svc?.p99_ms != null && base?.p99_ms ? svc.p99_ms / base.p99_ms : null)])
  for (const [size, s] of Object.entries(r.rufid?.sizes ?? {})) {
    add(`RUFID ${size}`, s.svc, s.baseline, 'sha256+base62')
    add(`  normalization ${size}`, s.normalization, s.baseline, 'sha256+base62')
  }
  const ri = r.resolution_in_process
  if (ri?.svc_uncached) {
    add('resolve in-process uncached', ri.svc_uncached, ri.baseline_leveldb_get, 'LevelDB get')
    add('resolve in-process cached', ri.svc_cached, ri.baseline_map_get, 'Map get')
  }
  const d = r.daemon
  for (const [c, v] of Object.entries(d?.rest_resolution?.connections ?? {})) add(`resolve REST ${c} conn`, v.svc.latency, v.baseline.latency, 'bare Koa')
  if (d?.js_execution) {
    add('execute JS REST warm', d.js_execution.warm.svc.latency, d.js_execution.warm.baseline_workerd.latency, 'workerd')
    add('execute JS REST warm', d.js_execution.warm.svc.latency, d.js_execution.warm.baseline_raw_http_warm_isolate.latency, 'http+warm isolate')
    add('execute JS first-after-publish', d.js_execution.first_after_publish.svc.latency, d.js_execution.first_after_publish.baseline_raw_http_new_isolate_per_call.latency, 'http+new isolate')
  }
  if (d?.python_execution?.warm) {
    add('execute Python REST warm', d.python_execution.warm.svc.latency, d.python_execution.warm.baseline_raw_pyodide.latency, 'http+warm Pyodide')
    add('execute Python first-after-publish', d.python_execution.first_after_publish.svc.latency, d.python_execution.warm.baseline_raw_pyodide.latency, 'http+warm Pyodide')
  }
  if (d?.grpc_execution?.svc) add('execute gRPC', d.grpc_execution.svc.latency, d.grpc_execution.baseline_result.latency, 'bare grpc-js')
  if (d?.graphql_execution?.svc) add('execute GraphQL', d.graphql_execution.svc.latency, d.graphql_execution.baseline_result.latency, 'bare graphql-js')
  const f = r.federation
  if (f?.sync) add('federation publish→visible on 5', f.sync, f.baseline_libp2p_request_response, 'libp2p req/resp RTT')
  if (f?.baseline_libp2p_request_response) add('(libp2p req/resp RTT, 5 nodes)', null, f.baseline_libp2p_request_response, 'libp2p req/resp RTT')
  if (f?.dht_discover) add('(DHT discover, 5 nodes)', null, f.dht_discover, 'provide+findProviders')
  for (const [i, round] of (r.results?.local_hit?.rounds ?? []).entries()) add(`deterministic cache hit (REST), round ${i + 1}`, round.hit, round.resolve, 'REST resolve')
  const rh = r.results?.remote
  if (rh?.remote_hit) {
    add('deterministic remote hit, 5 nodes (REST, end to end)', rh.remote_hit, rh.baseline_rtt_plus_verify, 'libp2p RTT + verify')
    add('deterministic remote hit − local hit, same node', rh.remote_added, rh.baseline_rtt_plus_verify, 'libp2p RTT + verify')
    add('(local hit on the remote-hit node)', rh.local_hit_same_node, null, '')
    add('(50 ms function on the remote-hit node)', rh.baseline_busy_50ms, rh.remote_hit, 'remote hit')
  }
  for (const [n, s] of Object.entries(r.scale?.sizes ?? {})) {
    if (s.rest_resolve_uncached) add(`resolve REST uncached @${n}`, s.rest_resolve_uncached.latency, s.baseline_leveldb_get, 'LevelDB get')
  }
  return rows
}

/**
 * Issue 14's goal rows: each a same-run ratio against its peer and the limit the issue sets.
 * `kind` 'max': the ratio must be ≤ limit (latency); 'min': ≥ limit (throughput).
 */
export function goals(r) {
  const rows = []
  const row = (goal, svc, base, baseName, value, limit, kind = 'max', label) => rows.push({
    goal, svc_ms: svc ?? null, baseline: baseName, baseline_ms: base ?? null,
    ratio: value == null ? null : Math.round(value * 1000) / 1000,
    limit: limit == null ? 'reported, no goal' : label ?? `${kind === 'max' ? '≤' : '≥'} ${limit}×`,
    pass: value == null || limit == null ? null : kind === 'max' ? value <= limit : value >= limit,
  })
  const div = (a, b) => (a == null || b == null || b === 0 ? null : a / b)
  const d = r.daemon
  const js = d?.js_execution
  if (js) {
    const w = js.warm
    row('JS execute over REST, warm, p50', w.svc.latency.p50_ms, w.baseline_workerd.latency.p50_ms, 'workerd', div(w.svc.latency.p50_ms, w.baseline_workerd.latency.p50_ms), 1.0)
    row('JS execute over REST, warm, p99', w.svc.latency.p99_ms, w.baseline_workerd.latency.p99_ms, 'workerd', div(w.svc.latency.p99_ms, w.baseline_workerd.latency.p99_ms), 2.0)
    const t = js.throughput_8_connections
    if (t) row('JS execute over REST, throughput at 8 connections (req/s in the ms columns)', t.svc.rps, t.baseline_workerd.rps, 'workerd', div(t.svc.rps, t.baseline_workerd.rps), 1.0, 'min')
    const f = js.first_after_publish
    row('JS first call after publish, p50', f.svc.latency.p50_ms, f.baseline_raw_http_new_isolate_per_call.latency.p50_ms, 'http+new isolate', div(f.svc.latency.p50_ms, f.baseline_raw_http_new_isolate_per_call.latency.p50_ms), 1.0)
    const fr = js.fresh_context
    if (fr?.svc) row('JS execute over REST, fresh context per call, p50 (reported)', fr.svc.latency.p50_ms, fr.baseline_workerd.latency.p50_ms, 'workerd', div(fr.svc.latency.p50_ms, fr.baseline_workerd.latency.p50_ms), null)
  }
  for (const [name, key] of [['gRPC', 'grpc_execution'], ['GraphQL', 'graphql_execution']]) {
    const x = d?.[key]
    if (!x?.svc) continue
    row(`${name} execute, p50`, x.svc.latency.p50_ms, x.baseline_result.latency.p50_ms, `bare ${name === 'gRPC' ? 'grpc-js' : 'graphql-js'}`, div(x.svc.latency.p50_ms, x.baseline_result.latency.p50_ms), 1.5)
    row(`${name} execute, p99`, x.svc.latency.p99_ms, x.baseline_result.latency.p99_ms, `bare ${name === 'gRPC' ? 'grpc-js' : 'graphql-js'}`, div(x.svc.latency.p99_ms, x.baseline_result.latency.p99_ms), 1.5)
  }
  const py = d?.python_execution?.warm
  if (py) {
    row('Python execute over REST, warm, p50', py.svc.latency.p50_ms, py.baseline_raw_pyodide.latency.p50_ms, 'http+warm Pyodide', div(py.svc.latency.p50_ms, py.baseline_raw_pyodide.latency.p50_ms), 2.0)
    row('Python execute over REST, warm, p99', py.svc.latency.p99_ms, py.baseline_raw_pyodide.latency.p99_ms, 'http+warm Pyodide', div(py.svc.latency.p99_ms, py.baseline_raw_pyodide.latency.p99_ms), 2.0)
  }
  const rr = d?.rest_resolution?.connections?.[10]
  if (rr) {
    row('resolve over REST, 10 connections, p50', rr.svc.latency.p50_ms, rr.baseline.latency.p50_ms, 'bare Koa', div(rr.svc.latency.p50_ms, rr.baseline.latency.p50_ms), 1.3)
    row('resolve over REST, 10 connections, p99', rr.svc.latency.p99_ms, rr.baseline.latency.p99_ms, 'bare Koa', div(rr.svc.latency.p99_ms, rr.baseline.latency.p99_ms), 1.3)
  }
  const fair = r.fairness
  if (fair?.b_idle && fair?.b_under_flood) {
    // issue 27: tenant B's warm call beside tenant A's flood of slow calls (10x the node's capacity), same run
    const idle = fair.b_idle.latency
    const flooded = fair.b_under_flood.latency
    row("issue 27: B's warm execute under A's 10x flood, p50 vs 2x B idle p50 + 2 ms", flooded.p50_ms, idle.p50_ms, 'B idle', div(flooded.p50_ms, 2 * idle.p50_ms + 2), 1.0)
    row("issue 27: B's warm execute under A's 10x flood, p99 vs 100 ms", flooded.p99_ms, idle.p99_ms, 'B idle', div(flooded.p99_ms, 100), 1.0)
    const errors = fair.b_under_flood.errors
    rows.push({ goal: "issue 27: B's errors under A's 10x flood (count)", svc_ms: errors, baseline: 'B idle', baseline_ms: fair.b_idle.errors, ratio: null, limit: '0 errors', pass: errors === 0 })
  }
  const lh = r.results?.local_hit
  if (lh) {
    // issue 18: the ratio is the median of alternating rounds' ratios; svc and base are the median round's (bench/README.md, results suite)
    row('issue 18: deterministic local cache hit vs resolve (REST), p50', lh.svc.p50_ms, lh.baseline.p50_ms, 'REST resolve', lh.ratio_p50, 1.2)
    row('issue 18: deterministic local cache hit vs resolve (REST), p99', lh.svc.p99_ms, lh.baseline.p99_ms, 'REST resolve', lh.ratio_p99, null)
  }
  const rh = r.results?.remote
  if (rh?.remote_hit) {
    // the goal row is the cost the federation adds to a hit (remote − local p50 on the same node); the end to end is reported (bench/README.md, results suite)
    row('issue 18: remote hit, added over a local hit, vs libp2p RTT + verify, p50', rh.remote_added.p50_ms, rh.baseline_rtt_plus_verify.p50_ms, 'libp2p RTT + verifyReceipt', rh.ratio_added_vs_rtt_plus_verify.p50, 2.0)
    row('issue 18: remote hit end to end (REST) vs libp2p RTT + verify, p50 (reported)', rh.remote_hit.p50_ms, rh.baseline_rtt_plus_verify.p50_ms, 'libp2p RTT + verifyReceipt', rh.ratio_end_to_end_vs_rtt_plus_verify.p50, null)
    row('issue 18: 50 ms function vs remote hit (REST, both on node B), p50', rh.baseline_busy_50ms.p50_ms, rh.remote_hit.p50_ms, 'remote hit', rh.ratio_busy_50ms_vs_remote_hit.p50, 10, 'min')
  }
  return rows
}

/** The per-stage breakdown of one warm execute, one column per context mode. */
function breakdownTable(b) {
  const modes = Object.entries(b?.modes ?? {}).filter(([, m]) => m.stages)
  if (modes.length === 0) return ''
  const names = Object.keys(modes[0][1].stages)
  const rows = names.map((n) => [n, ...modes.map(([, m]) => `${fmt(m.stages[n]?.p50_ms)} / ${fmt(m.stages[n]?.mean_ms)}`)])
  rows.push(['outside the server (client, kernel, HTTP parse): client p50 − server p50', ...modes.map(([, m]) => fmt(m.outside_server_p50_ms))])
  rows.push(['client-measured latency (load generator)', ...modes.map(([, m]) => `${fmt(m.client?.latency?.p50_ms)} / ${fmt(m.client?.latency?.mean_ms)}`)])
  rows.push(['the same engine calls behind a bare node:http handler (client)', ...modes.map(([, m]) => `${fmt(m.same_engine_behind_bare_node_http?.latency?.p50_ms)} / ${fmt(m.same_engine_behind_bare_node_http?.latency?.mean_ms)}`)])
  rows.push(['sandbox.execute alone, called in a loop (no HTTP, no engine)', ...modes.map(([, m]) => `${fmt(m.sandbox_execute_in_a_loop?.p50_ms)} / ${fmt(m.sandbox_execute_in_a_loop?.mean_ms)}`)])
  return table(['stage of one execute (ms, p50 / mean)', ...modes.map(([k]) => `context: ${k}`)], rows)
}

function table(header, rows) {
  const w = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)))
  const line = (r) => '| ' + r.map((c, i) => String(c).padEnd(w[i])).join(' | ') + ' |'
  return [line(header), '|' + w.map((n) => '-'.repeat(n + 2)).join('|') + '|', ...rows.map(line)].join('\n')
}

export function render(results) {
  const t = table(['§8 metric', 'measured on', 'p50 ms', 'p99 ms', 'value', 'target', 'result'],
    results.targets.map((x) => [x.metric, x.source, fmt(x.p50_ms), fmt(x.p99_ms), fmt(x.value), x.target, x.pass == null ? `n/a${x.note ? ` (${x.note})` : ''}` : `${fmt(x.pass)}${x.pass === false && x.note ? ` (${x.note})` : ''}`]))
  const c = table(['figure', 'svc p50', 'svc p99', 'baseline', 'base p50', 'base p99', 'ratio p50', 'ratio p99'], comparisons(results.sections))
  const g = table(['goal (issue 14 unless named)', 'svc', 'baseline', 'base', 'ratio', 'goal', 'result'],
    (results.goals ?? []).map((x) => [x.goal, fmt(x.svc_ms), x.baseline, fmt(x.baseline_ms), fmt(x.ratio), x.limit, x.pass == null ? 'n/a' : fmt(x.pass)]))
  const b = breakdownTable(results.sections.breakdown)
  return `${t}\n\n${c}\n\n${g}\n${b ? `\n${b}\n` : ''}`
}

export async function runBench({ smoke = false, only, scaleSizes, merge = false, out = join(BENCH, 'results', smoke ? 'smoke.json' : 'latest.json'), quiet = false } = {}) {
  const log = (m) => {
    if (!quiet) process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`)
  }
  const started = Date.now()
  const results = { generated_at: new Date().toISOString(), mode: smoke ? 'smoke' : 'full', machine: machine(), sections: {} }
  if (merge && existsSync(out)) {
    // re-run some suites (--only) into an existing results file; the others keep their figures
    const previous = JSON.parse(readFileSync(out, 'utf8'))
    results.sections = previous.sections ?? {}
    results.merged = [...(previous.merged ?? []), { generated_at: results.generated_at, sections: only ?? [], loadavg_at_start: results.machine.loadavg_at_start }]
    results.generated_at = previous.generated_at
    results.machine = previous.machine
    results.elapsed_s = previous.elapsed_s
  }
  const plan = {
    rufid: suites.rufid,
    resolution_in_process: suites.resolutionInProcess,
    cache: suites.cache,
    daemon: suites.daemonSuites,
    breakdown: suites.breakdown,
    fairness: suites.fairness,
    scale: suites.scale,
    federation: suites.federation,
    results: suites.results,
  }
  for (const [name, fn] of Object.entries(plan)) {
    if (only && !only.includes(name)) continue
    log(`${name} …`)
    const t = Date.now()
    try {
      results.sections[name] = await fn({ smoke, log, scaleSizes })
    } catch (err) {
      results.sections[name] = { status: `failed: ${String(err?.stack ?? err).slice(0, 1500)}` }
    }
    results.sections[name].elapsed_s = Math.round((Date.now() - t) / 100) / 10
    log(`${name} done in ${results.sections[name].elapsed_s} s`)
  }
  results.targets = targets(results.sections)
  results.goals = goals(results.sections)
  if (results.merged) results.merged.at(-1).elapsed_s = Math.round((Date.now() - started) / 100) / 10
  else results.elapsed_s = Math.round((Date.now() - started) / 100) / 10
  results.machine.loadavg_at_end = loadavg()
  mkdirSync(dirname(out), { recursive: true })
  writeFileSync(`${out}.tmp`, JSON.stringify(results, null, 2) + '\n')
  renameSync(`${out}.tmp`, out)
  return results
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2)
  const smoke = args.includes('--smoke')
  const only = args.find((a) => a.startsWith('--only='))?.slice(7).split(',')
  const outArg = args.find((a) => a.startsWith('--out='))?.slice(6)
  const merge = args.includes('--merge')
  const scaleSizes = args.find((a) => a.startsWith('--scale-sizes='))?.slice(14).split(',').map(Number)
  try {
    const results = await runBench({ smoke, only, scaleSizes, merge, ...(outArg ? { out: outArg } : {}) })
    process.stdout.write(render(results))
    process.stdout.write(`\n${results.mode} run in ${results.elapsed_s} s\n`)
  } finally {
    killAll()
  }
  process.exit(0)
}
