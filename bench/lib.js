// Shared helpers of the benchmark: statistics, CPU pinning, child processes (daemon, peers, load generator).
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('..', import.meta.url))
export const BENCH = join(ROOT, 'bench')

/** p50/p99/mean/min/max (ms) of a list of latencies. */
export function summarize(samples) {
  const s = Float64Array.from(samples).sort()
  const n = s.length
  if (n === 0) return { n: 0, p50_ms: null, p99_ms: null, mean_ms: null, min_ms: null, max_ms: null }
  const q = (p) => s[Math.min(n - 1, Math.max(0, Math.ceil(p * n) - 1))]
  let sum = 0
  for (const v of s) sum += v
  const r = (v) => Math.round(v * 10000) / 10000
  return { n, p50_ms: r(q(0.5)), p99_ms: r(q(0.99)), mean_ms: r(sum / n), min_ms: r(s[0]), max_ms: r(s[n - 1]) }
}

/** svc figure over baseline figure (p50 and p99): > 1 means svc-node is slower. */
export function ratio(svc, base) {
  const div = (a, b) => (a == null || b == null || b === 0 ? null : Math.round((a / b) * 100) / 100)
  return { p50: div(svc?.p50_ms, base?.p50_ms), p99: div(svc?.p99_ms, base?.p99_ms) }
}

/** Times `fn` `n` times (after `warmup` calls); ms per call. */
export async function timeLoop(n, fn, warmup = Math.min(50, n)) {
  for (let i = 0; i < warmup; i++) await fn(i)
  const out = new Array(n)
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    await fn(i)
    out[i] = performance.now() - t
  }
  return out
}
export function timeLoopSync(n, fn, warmup = Math.min(50, n)) {
  for (let i = 0; i < warmup; i++) fn(i)
  const out = new Array(n)
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    fn(i)
    out[i] = performance.now() - t
  }
  return out
}

// ---- pinning ---------------------------------------------------------------------------

const hasTaskset = (() => {
  try {
    return spawnSync('taskset', ['-c', '0', 'true']).status === 0
  } catch {
    return false
  }
})()
export const pinning = {
  taskset: hasTaskset,
  nproc: cpus().length,
  enabled: hasTaskset && cpus().length >= 2,
  server_core: hasTaskset && cpus().length >= 2 ? 0 : null,
  client_core: hasTaskset && cpus().length >= 2 ? 1 : null,
}

/**
 * [command, args] running node `args` on the server core (0) or the client core (1) when pinning
 * works; role `unpinned` runs it on any core (several daemons that together are the server).
 */
export function pinned(role, args, exe = process.execPath) {
  if (!pinning.enabled || role === 'unpinned') return [exe, args]
  return ['taskset', ['-c', String(role === 'server' ? pinning.server_core : pinning.client_core), exe, ...args]]
}

// ---- processes ---------------------------------------------------------------------------

export function tempDir(prefix = 'svc-bench-') {
  return mkdtempSync(join(tmpdir(), prefix))
}
export function removeDir(dir) {
  rmSync(dir, { recursive: true, force: true })
}

export function rssBytes(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m ? Number(m[1]) * 1024 : null
  } catch {
    return null
  }
}

/** µs per clock tick of /proc/<pid>/stat (USER_HZ) */
export const TICK_US = 1e6 / 100

/** utime + stime of a process so far, in clock ticks (/proc/<pid>/stat; 0 when it is gone). */
export function cpuTicks(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return Number(f[11]) + Number(f[12])
  } catch {
    return 0
  }
}

const children = new Set()
export function killAll() {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
}
process.on('exit', killAll)

/** A TCP port free right now on 127.0.0.1 (found by listening on port 0, then released). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
  })
}

/**
 * Whether a daemon failed to start because its port, free when `freePort` found it, was taken
 * before it listened (by another process: CI runs test files side by side, and daemons' own
 * outgoing connections use ephemeral ports): the caller takes another port and starts again.
 */
export const portTaken = (err) => String(err?.message ?? err).includes('EADDRINUSE')

/**
 * Spawns a process (pinned per role) and waits for a stdout line that `ready(line)` turns into a
 * value. Resolves { value, proc, pid, output(), stop() }.
 */
export function startProcess(role, args, { env = {}, ready, timeoutMs = 60_000, exe, cwd = ROOT } = {}) {
  const [cmd, argv] = pinned(role, args, exe)
  const proc = spawn(cmd, argv, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(proc)
  let output = ''
  let buffered = ''
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })))
  return new Promise((resolve, reject) => {
    let done = false
    const timer = setTimeout(() => {
      if (done) return
      done = true
      proc.kill('SIGKILL')
      reject(new Error(`${args.join(' ')} not ready within ${timeoutMs} ms:\n${output.slice(-2000)}`))
    }, timeoutMs)
    const api = (value) => ({
      value,
      proc,
      pid: proc.pid,
      output: () => output,
      async stop() {
        if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM')
        const t = setTimeout(() => proc.kill('SIGKILL'), 10_000)
        await exited
        clearTimeout(t)
        children.delete(proc)
      },
    })
    if (ready === null) {
      done = true
      clearTimeout(timer)
      resolve(api(undefined))
    }
    proc.stdout.on('data', (chunk) => {
      const text = chunk.toString('utf8')
      if (output.length < 200_000) output += text
      if (done) return
      buffered += text
      const lines = buffered.split('\n')
      buffered = lines.pop()
      for (const line of lines) {
        let v
        try {
          v = ready(line)
        } catch {
          v = undefined
        }
        if (v !== undefined) {
          done = true
          clearTimeout(timer)
          resolve(api(v))
          return
        }
      }
    })
    proc.stderr.on('data', (c) => {
      if (output.length < 200_000) output += c.toString('utf8')
    })
    void exited.then(({ code, signal }) => {
      if (done) return
      done = true
      clearTimeout(timer)
      reject(new Error(`${args.join(' ')} exited (${code ?? signal}) before ready:\n${output.slice(-2000)}`))
    })
  })
}

/** A config file for benchmark daemons: rate limits off (they would throttle the load generator). */
export function benchConfig(dir) {
  const file = join(dir, 'bench-config.yaml')
  writeFileSync(
    file,
    [
      'rate_limits:',
      '  per_key: { points: 0, window_s: 1 }',
      '  per_tenant: { points: 0, window_s: 1 }',
      '  per_ip_unauthenticated: { points: 0, window_s: 1 }',
      '',
    ].join('\n'),
  )
  return file
}

/** Starts `svc-node start` on the server core (`nodeArgs`: node flags); resolves { url, grpc, pid, stop, dataDir }. */
export async function startDaemon({ dataDir, env = {}, timeoutMs = 60_000, role = 'server', nodeArgs = [] } = {}) {
  const dir = dataDir ?? tempDir()
  const cfgDir = tempDir('svc-bench-cfg-')
  const started = performance.now()
  // BENCH_DAEMON_NODE_ARGS: node flags for every daemon a suite starts (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`)
  const extra = (process.env.BENCH_DAEMON_NODE_ARGS ?? '').split(' ').filter(Boolean)
  const p = await startProcess(role, [...extra, ...nodeArgs, join(ROOT, 'bin/svc-node.js'), 'start'], {
    env: {
      API_HOST: '127.0.0.1',
      API_PORT: '0',
      GRPC_PORT: '0',
      SVC_DATA_DIR: dir,
      SVC_CONFIG: benchConfig(cfgDir),
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info',
      AUTH_PROVIDER: 'none',
      ...env,
    },
    timeoutMs,
    ready: (line) => {
      if (!line.includes('svc-node listening')) return undefined
      const parsed = JSON.parse(line)
      return parsed.url ? { url: parsed.url, grpc: parsed.grpc ?? null } : undefined
    },
  })
  const startup_ms = performance.now() - started
  return {
    url: p.value.url,
    grpc: p.value.grpc,
    pid: p.pid,
    dataDir: dir,
    startup_ms,
    output: p.output,
    async stop({ keepData = false } = {}) {
      await p.stop()
      removeDir(cfgDir)
      if (!keepData && dataDir === undefined) removeDir(dir)
    },
  }
}

/** Starts a peer server of bench/peers.js (`kind`) on the server core; resolves with its address. */
export async function startPeer(kind, options = {}, timeoutMs = 60_000) {
  const p = await startProcess('server', [join(BENCH, 'peers.js'), kind, JSON.stringify(options)], {
    timeoutMs,
    ready: (line) => (line.startsWith('READY ') ? JSON.parse(line.slice(6)) : undefined),
  })
  return { ...p.value, pid: p.pid, stop: p.stop }
}

/** Runs the load generator (bench/load.js) as a separate process on the client core; its JSON report. */
export function runLoad(job, timeoutMs = 120_000) {
  const [cmd, argv] = pinned('client', [join(BENCH, 'load.js')])
  const proc = spawn(cmd, argv, { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] })
  children.add(proc)
  let out = ''
  let err = ''
  proc.stdout.on('data', (c) => (out += c))
  proc.stderr.on('data', (c) => (err += c))
  proc.stdin.end(JSON.stringify(job))
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs)
    proc.once('exit', (code) => {
      clearTimeout(timer)
      children.delete(proc)
      try {
        if (code !== 0) throw new Error(`exit ${code}`)
        resolve(JSON.parse(out))
      } catch (e) {
        reject(new Error(`load generator failed (${e.message}): ${err.slice(-2000)} ${out.slice(-500)}`))
      }
    })
  })
}

export async function postJson(url, body, headers = {}) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
  const text = await res.text()
  let parsed
  try {
    parsed = text ? JSON.parse(text) : {}
  } catch {
    parsed = { raw: text }
  }
  return { status: res.status, body: parsed }
}

/** The add function every execution suite runs (JS). */
export const ADD_JS = { function_name: 'add', signature: '(a, b)', language: 'javascript', source_code: 'function add(a, b) {\n  return a + b\n}\n' }
export const ADD_PY = { function_name: 'add', signature: '(a, b)', language: 'python', source_code: 'def add(a, b):\n    return a + b\n' }

/**
 * A daemon's /ws system channel: when each replicated function version arrived there
 * (`arrived`: short → performance.now() of the daemon's event, kept across reconnects when the
 * caller passes its map),
 * and `next(short, ms)`, which resolves true when it has arrived (false after `ms`).
 */
export async function systemEvents(base, arrived = new Map()) {
  const { default: WebSocket } = await import('ws')
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/ws`, { headers: { 'x-svc-namespace': 'default' } })
  const waiting = new Map()
  ws.on('message', (data) => {
    let msg
    try {
      msg = JSON.parse(String(data))
    } catch {
      return
    }
    const payload = msg?.payload
    if (msg?.type !== 'event' || payload?.type !== 'function.created' || typeof payload.rufid !== 'string') return
    const short = payload.rufid.split(':')[1]
    // when the daemon emitted it (its event's timestamp; same machine, same clock), in this
    // process's performance.now() terms: not when this process got round to reading it, which on
    // a starved machine can be seconds later and the same instant for several daemons
    const emitted = Date.parse(payload.timestamp)
    const lateBy = Number.isFinite(emitted) ? Math.max(0, Date.now() - emitted) : 0
    if (!arrived.has(short)) arrived.set(short, performance.now() - lateBy)
    waiting.get(short)?.(true)
  })
  ws.on('error', () => undefined)
  await new Promise((resolve, reject) => {
    ws.once('error', reject)
    ws.once('open', () => {
      ws.send(JSON.stringify({ type: 'subscribe', id: 'sys', channel: 'system' }))
      resolve()
    })
  })
  return {
    arrived,
    next(short, ms) {
      if (arrived.has(short)) return Promise.resolve(true)
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          waiting.delete(short)
          resolve(false)
        }, ms)
        waiting.set(short, (v) => {
          clearTimeout(timer)
          waiting.delete(short)
          resolve(v)
        })
      })
    },
    close: () => ws.terminate(),
  }
}
