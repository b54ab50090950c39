#!/usr/bin/env node
// CPU profile of a daemon under execute load (issue 14): starts `svc-node start` (built dist/) on
// the server core with `node --cpu-prof` (its sandbox workers inherit the flag and write their own
// profiles), publishes `add`, runs the load generator on the client core, stops the daemon with
// SIGTERM (profiles are written at exit) and prints where the CPU time went, per process:
// self time by area (node internals, each package, each src/ directory, GC, idle) and the top
// functions.
//
// `--deterministic` publishes `add` with `"deterministic": true`: every call after the first is a
// result-cache hit (issue 18's hit path); `--resolve` loads REST resolve of the same function
// instead of execute (the hit path's baseline).
//
//   node bench/profile.js [--connections=8] [--seconds=10] [--language=javascript|python] [--deterministic] [--resolve] [--keep=<dir>] [--json]
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ADD_JS, ADD_PY, postJson, removeDir, runLoad, startDaemon } from './lib.js'

const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback

/** Self time (ms) by area and by function of one .cpuprofile. */
export function summarizeProfile(profile, top = 25) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const self = new Map()
  const deltas = profile.timeDeltas ?? []
  let total = 0
  profile.samples.forEach((id, i) => {
    const dt = (deltas[i + 1] ?? deltas[i] ?? 0) / 1000
    self.set(id, (self.get(id) ?? 0) + dt)
    total += dt
  })
  const areas = new Map()
  const fns = new Map()
  for (const [id, ms] of self) {
    const { functionName, url, lineNumber } = byId.get(id).callFrame
    const area = areaOf(functionName, url)
    areas.set(area, (areas.get(area) ?? 0) + ms)
    const key = `${functionName || '(anonymous)'} ${shortUrl(url)}${url ? `:${lineNumber + 1}` : ''}`
    fns.set(key, (fns.get(key) ?? 0) + ms)
  }
  const sorted = (m) => [...m.entries()].sort((a, b) => b[1] - a[1])
  const busy = total - (areas.get('(idle)') ?? 0)
  const pct = (ms) => Math.round((ms / (busy || 1)) * 1000) / 10
  return {
    total_ms: Math.round(total),
    busy_ms: Math.round(busy),
    areas: sorted(areas).map(([area, ms]) => ({ area, ms: Math.round(ms), pct_of_busy: area === '(idle)' ? null : pct(ms) })),
    functions: sorted(fns).filter(([k]) => !k.startsWith('(idle)')).slice(0, top).map(([fn, ms]) => ({ fn, ms: Math.round(ms), pct_of_busy: pct(ms) })),
  }
}

function areaOf(functionName, url) {
  if (!url) return functionName.startsWith('(') ? functionName : '(native / V8 builtins)'
  if (url.startsWith('node:')) return 'node internals'
  const nm = url.lastIndexOf('/node_modules/')
  if (nm >= 0) {
    const rest = url.slice(nm + 14).split('/')
    return `pkg ${rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`
  }
  const dist = url.indexOf('/dist/')
  if (dist >= 0) return `svc ${url.slice(dist + 6).split('/').slice(0, -1).join('/') || '.'}`
  if (url.includes('/bench/')) return 'bench'
  return url
}

function shortUrl(url) {
  const nm = url.lastIndexOf('/node_modules/')
  if (nm >= 0) return url.slice(nm + 14)
  const dist = url.indexOf('/dist/')
  if (dist >= 0) return url.slice(dist + 1)
  return url.replace(/^file:\/\//, '')
}

async function main() {
  const connections = Number(arg('connections', '8'))
  const seconds = Number(arg('seconds', '10'))
  const language = arg('language', 'javascript')
  const keep = arg('keep', undefined)
  const dir = keep ?? mkdtempSync(join(tmpdir(), 'svc-bench-profile-'))
  const daemon = await startDaemon({ nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`] })
  try {
    const base = daemon.url.replace(/\/+$/, '')
    const def = language === 'python' ? ADD_PY : ADD_JS
    const deterministic = process.argv.includes('--deterministic')
    const created = await postJson(`${base}/api/v1/functions/create`, deterministic ? { ...def, manifest: { schemaVersion: '1.0', name: 'add', deterministic: true } } : def)
    const url = `${base}/api/v1/functions/${created.body.rufid_short}/execute`
    const first = await postJson(url, { arguments: { a: 2, b: 3 } })
    if (first.body?.result !== 5) throw new Error(`execute answered ${first.status} ${JSON.stringify(first.body)}`)
    const job = process.argv.includes('--resolve')
      ? { url: `${base}/api/v1/functions/resolve`, body: JSON.stringify({ rufid: created.body.rufid_short, version: 'v1' }) }
      : { url, body: JSON.stringify({ arguments: { a: 2, b: 3 } }) }
    const load = await runLoad({ kind: 'http', ...job, connections, durationMs: seconds * 1000, warmupMs: 500 })
    process.stderr.write(`load: ${load.rps} req/s, p50 ${load.latency.p50_ms} ms, p99 ${load.latency.p99_ms} ms, ${load.errors} errors\n`)
    await daemon.stop()
    const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))
    const out = { connections, seconds, language, load: { rps: load.rps, latency: load.latency, errors: load.errors }, profiles: [] }
    for (const f of files) {
      const profile = JSON.parse(readFileSync(join(dir, f), 'utf8'))
      const summary = summarizeProfile(profile)
      // the daemon is the process whose profile has svc api frames
      const role = summary.areas.some((a) => a.area.startsWith('svc api')) ? 'daemon' : 'sandbox worker'
      out.profiles.push({ file: f, role, ...summary })
    }
    out.profiles.sort((a, b) => (a.role === b.role ? b.busy_ms - a.busy_ms : a.role === 'daemon' ? -1 : 1))
    if (process.argv.includes('--json')) process.stdout.write(JSON.stringify(out, null, 2) + '\n')
    else process.stdout.write(render(out))
  } finally {
    await daemon.stop().catch(() => undefined)
    if (!keep) removeDir(dir)
  }
}

function render(out) {
  const lines = [`# CPU profile: ${out.language} add over REST, ${out.connections} connections, ${out.seconds} s: ${out.load.rps} req/s, p50 ${out.load.latency.p50_ms} ms`]
  for (const p of out.profiles) {
    if (p.busy_ms < 50) continue
    lines.push('', `## ${p.role} (${p.file}): busy ${p.busy_ms} ms of ${p.total_ms} ms`, '', '| area | self ms | % of busy |', '|---|---|---|')
    for (const a of p.areas.slice(0, 20)) lines.push(`| ${a.area} | ${a.ms} | ${a.pct_of_busy ?? '—'} |`)
    lines.push('', '| function | self ms | % of busy |', '|---|---|---|')
    for (const f of p.functions) lines.push(`| ${f.fn} | ${f.ms} | ${f.pct_of_busy} |`)
  }
  return lines.join('\n') + '\n'
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main()
