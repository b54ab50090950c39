#!/usr/bin/env node
// Federation under churn (issue 17): N real svc-node daemons on loopback; for a bounded time it
// publishes and executes on random nodes while a quarter of the nodes leave and come back (same
// identity), leave for good, or join fresh (a new identity and a new certificate from the
// federation CA). Prints a table and writes JSON.
//
//   node bench/churn.js [--nodes=20] [--seconds=120] [--out=bench/results/churn-20.json]
//     [--dump=FILE: every change's arrival on every node] [--logs=DIR: every daemon run's log]
//
// A node is live, as a load balancer sees it, from when its /readyz answers 200 (a federated node:
// once it caught up with a member) until it is stopped: publishes, executions and discovers go to
// live nodes, and "visible everywhere" counts them. The figure counting nodes from when they
// listen (before /readyz) is reported beside it.
//
// Needs `npm run build`. Every daemon is stopped on exit (bench/lib.js kills what it started).
import { execFile, execFileSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { freePort, portTaken, postJson, removeDir, ROOT, rssBytes, startProcess, summarize, systemEvents, tempDir } from './lib.js'

const dist = (p) => import(pathToFileURL(join(ROOT, 'dist', p)).href)
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const pick = (list) => list[Math.floor(Math.random() * list.length)]
const round = (v, d = 1) => (v == null ? null : Math.round(v * 10 ** d) / 10 ** d)

/** Children pids of a pid (the sandbox workers of a daemon). */
function childPids(pid) {
  try {
    return execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number)
  } catch {
    return []
  }
}

/** RSS of a daemon and of its workers (bytes). */
function memoryOf(pid) {
  const daemon = rssBytes(pid) ?? 0
  const workers = childPids(pid).reduce((n, p) => n + (rssBytes(p) ?? 0), 0)
  return { daemon, workers, total: daemon + workers }
}

/**
 * Bytes sent on libp2p connections, per daemon pid, from the kernel's TCP counters (`ss -ti`):
 * sampled, each socket's highest count kept, so a socket that closes keeps what it sent until
 * the sample before it closed.
 */
class TrafficMeter {
  constructor() {
    this.sockets = new Map() // `${pid} ${local} ${peer}` → bytes_sent
    this.p2pPorts = new Set()
    this.sampling = undefined // the sample being taken
  }

  /**
   * One sample, taken after any running one; `ss` runs beside this process, not in it (a blocking
   * call here would hold up reading the daemons' /ws events).
   */
  async sample() {
    while (this.sampling) await this.sampling
    this.sampling = promisify(execFile)('ss', ['-tinpH', 'state', 'established'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
      .then(({ stdout }) => this.read(stdout), () => undefined)
      .finally(() => { this.sampling = undefined })
    return this.sampling
  }

  read(text) {
    const lines = text.split('\n')
    for (let i = 0; i < lines.length - 1; i++) {
      const head = /^\S*\s*\d+\s+\d+\s+127\.0\.0\.1:(\d+)\s+127\.0\.0\.1:(\d+)\s+users:\(\("[^"]*",pid=(\d+)/.exec(lines[i])
      if (!head) continue
      const sent = /bytes_sent:(\d+)/.exec(lines[i + 1])
      const [, local, peer, pid] = head
      if (!this.p2pPorts.has(Number(local)) && !this.p2pPorts.has(Number(peer))) continue
      const key = `${pid} ${local} ${peer}`
      const bytes = sent ? Number(sent[1]) : 0
      if (bytes > (this.sockets.get(key) ?? 0)) this.sockets.set(key, bytes)
    }
  }

  /** pid → bytes sent so far */
  totals() {
    const out = new Map()
    for (const [key, bytes] of this.sockets) {
      const pid = Number(key.split(' ')[0])
      out.set(pid, (out.get(pid) ?? 0) + bytes)
    }
    return out
  }
}


const headers = { 'x-svc-namespace': 'default' }
const getJson = async (url, timeoutMs = 10_000) => {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs) })
  return { status: res.status, body: await res.json().catch(() => ({})) }
}
const post = (url, body) => postJson(url, body, headers)

/**
 * Runs the churn scenario; resolves the report. Options: nodes, seconds (the churn phase),
 * churnFraction (nodes affected, default 1/4), publishEveryMs, log.
 */
export async function runChurn(options = {}) {
  const n = options.nodes ?? 20
  const seconds = options.seconds ?? 120
  const churnFraction = options.churnFraction ?? 0.25
  const publishEveryMs = options.publishEveryMs ?? 1_000
  const log = options.log ?? ((m) => process.stderr.write(`[churn] ${m}\n`))
  const membershipTimeoutMs = options.membershipTimeoutMs ?? 15_000
  const { createFederationCa, issueNodeCertificate, writeCa, writeNodeCertificate } = await dist('federation/certificates.js')
  const { loadOrCreatePeerIdentity } = await dist('federation/identity.js')
  const { computeRufid } = await dist('core/rufid.js')

  const root = tempDir('svc-churn-')
  const ca = createFederationCa({ name: 'svc churn federation' })
  const { certFile: caFile } = await writeCa(join(root, 'ca'), ca)
  const meter = new TrafficMeter()
  const all = [] // every node ever made
  let made = 0
  const live = () => all.filter((x) => x.proc && x.ready)
  const report = {
    nodes: n, churn_seconds: seconds, churn_fraction: churnFraction, started_at: new Date().toISOString(),
    machine: { load_average_at_start: (await import('node:os')).loadavg().map((v) => round(v, 2)), cpus: (await import('node:os')).cpus().length },
  }

  const makeNode = async () => {
    const name = `node${++made}`
    const dataDir = join(root, name)
    mkdirSync(dataDir, { recursive: true })
    const { peerId } = await loadOrCreatePeerIdentity(dataDir)
    await writeNodeCertificate(join(dataDir, 'cert'), issueNodeCertificate(ca, peerId), ca.certPem)
    const p2pPort = await freePort()
    meter.p2pPorts.add(p2pPort)
    const node = {
      name, dataDir, peerId, p2pPort, addr: `/ip4/127.0.0.1/tcp/${p2pPort}/p2p/${peerId}`, configFile: join(root, `${name}.json`), proc: undefined, ready: false,
      listening: false, // its doors listen (it may still be catching up: /readyz 503)
      arrived: new Map(), // function short → when its replicated version reached this node (across restarts)
      downs: [], // [from, to] when the node was stopped
      starts: [], // when each of its starts was ready (/readyz 200)
      listens: [], // when each of its starts listened
    }
    all.push(node)
    return node
  }

  // a node keeps its port across restarts, as an operator's node does, unless another process took
  // it meanwhile: then it starts on another (the others learn it when it dials them)
  const startNode = async (node, bootstrap, attempt = 1) => {
    writeFileSync(node.configFile, JSON.stringify({
      rate_limits: { per_key: { points: 0, window_s: 1 }, per_tenant: { points: 0, window_s: 1 }, per_ip_unauthenticated: { points: 0, window_s: 1 } },
      federation: {
        enabled: true, listen: [`/ip4/127.0.0.1/tcp/${node.p2pPort}`], bootstrap, ca_file: caFile, cert_file: join(node.dataDir, 'cert', 'node.crt'),
        // anti-entropy as an operator gets it (config/default.yaml); a starved machine answers slowly
        membership_timeout_ms: membershipTimeoutMs,
      },
    }))
    // BENCH_DAEMON_NODE_ARGS: node flags for every daemon (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`), as the bench's
    const extra = (process.env.BENCH_DAEMON_NODE_ARGS ?? '').split(' ').filter(Boolean)
    const p = await startProcess('unpinned', [...extra, join(ROOT, 'bin/svc-node.js'), 'start'], {
      env: {
        API_HOST: '127.0.0.1', API_PORT: '0', GRPC_PORT: '0', SVC_DATA_DIR: node.dataDir, SVC_CONFIG: node.configFile,
        LOG_FORMAT: 'json', LOG_LEVEL: 'info', AUTH_PROVIDER: 'none', SVC_SANDBOX_WORKERS: '1', SVC_SANDBOX_WORKERS_ON_DEMAND: 'true',
      },
      timeoutMs: 180_000,
      ready: (line) => {
        if (!line.includes('svc-node listening')) return undefined
        return JSON.parse(line).url
      },
    }).catch(async (err) => {
      if (attempt >= 3 || !portTaken(err)) throw err
      node.p2pPort = await freePort()
      meter.p2pPorts.add(node.p2pPort)
      node.addr = `/ip4/127.0.0.1/tcp/${node.p2pPort}/p2p/${node.peerId}`
      log(`${node.name}: its port was taken before it listened, retrying on ${node.p2pPort}`)
      return undefined
    })
    if (p === undefined) return startNode(node, bootstrap, attempt + 1)
    node.proc = p
    node.pid = p.pid
    node.pids = [...(node.pids ?? []), p.pid]
    node.base = p.value.replace(/\/+$/, '')
    node.events = await systemEvents(node.base, node.arrived)
    const down = node.downs[node.downs.length - 1]
    if (down && down[1] === Infinity) down[1] = performance.now()
    node.listening = true
    const listenedAt = performance.now()
    node.listens.push(listenedAt)
    // live once it says it serves (a load balancer's readiness probe): a federated node once it
    // caught up with a member, at most federation.ready_timeout_ms (30 s) after it started
    for (;;) {
      const r = await getJson(`${node.base}/readyz`, 5_000).catch(() => ({ status: 0 }))
      if (r.status === 200) break
      if (performance.now() - listenedAt > 120_000) throw new Error(`${node.name} listened but was not ready within 120 s`)
      await sleep(50)
    }
    node.ready = true
    node.starts.push(performance.now())
    return performance.now() - listenedAt
  }

  const stopNode = async (node) => {
    if (node.proc) node.downs.push([performance.now(), Infinity])
    node.ready = false
    node.listening = false
    node.events?.close()
    await node.proc?.stop()
    // each run of each daemon's log, when asked (--logs=DIR)
    if (options.logs && node.proc) writeFileSync(join(options.logs, `${node.name}-${node.starts.length}.log`), node.proc.output())
    node.proc = undefined
  }

  /** Whether every live node lists every live node (connected members). */
  const formedNow = async () => {
    const nodes = live()
    const ids = new Set(nodes.map((x) => x.peerId))
    const lists = await Promise.all(nodes.map((x) => getJson(`${x.base}/api/v1/federation/nodes`).catch(() => ({ body: {} }))))
    const counts = lists.map((l) => (Array.isArray(l.body.nodes) ? l.body.nodes.filter((m) => ids.has(m.node_id) && (m.self || m.verified_at !== null)).length : 0))
    return { ok: counts.every((k) => k === nodes.length), counts }
  }
  const waitFormed = async (limitMs) => {
    const t = performance.now()
    let last
    while (performance.now() - t < limitMs) {
      last = await formedNow()
      if (last.ok) return { ms: round(performance.now() - t, 0), counts: last.counts }
      await sleep(500)
    }
    return { ms: null, counts: last?.counts }
  }

  const digestsNow = async () => {
    const answers = await Promise.all(live().map((x) => getJson(`${x.base}/api/v1/federation/catalog/digest`).catch(() => ({ body: {} }))))
    return answers.map((a) => a.body.digest ?? null)
  }

  const sampler = setInterval(() => {
    if (!meter.sampling) void meter.sample()
  }, 1_000)
  sampler.unref()
  try {
    // ---- formation -------------------------------------------------------------------------
    const first = []
    for (let i = 0; i < n; i++) first.push(await makeNode())
    const t0 = performance.now()
    // in waves of 4 (as scripts/cluster.sh): 20 daemons starting at once on 2 cores starve each other
    for (let i = 0; i < n; i += 4) {
      await Promise.all(first.slice(i, i + 4).map((node) => startNode(node, first.filter((o) => o !== node).map((o) => o.addr))))
      log(`started ${Math.min(n, i + 4)} of ${n} nodes`)
    }
    report.start_all_ms = round(performance.now() - t0, 0)
    const formed = await waitFormed(300_000)
    report.formation = { every_node_lists_all_ms_after_last_start: formed.ms, listed: formed.counts }
    log(`formation: ${JSON.stringify(report.formation)}`)
    if (formed.ms === null) throw new Error(`the ${n} nodes did not all list each other within 300 s: ${JSON.stringify(formed.counts)}`)
    await sleep(3_000)
    const idle = live().map((x) => memoryOf(x.pid))
    report.memory_idle_per_node_mb = {
      daemon_mean: round(idle.reduce((s, m) => s + m.daemon, 0) / idle.length / 2 ** 20),
      daemon_max: round(Math.max(...idle.map((m) => m.daemon)) / 2 ** 20),
      workers_mean: round(idle.reduce((s, m) => s + m.workers, 0) / idle.length / 2 ** 20),
    }

    // ---- traffic: idle, then per change without churn ----------------------------------------
    const trafficSum = () => {
      const totals = meter.totals()
      return live().reduce((s, x) => s + (totals.get(x.pid) ?? 0), 0)
    }
    await meter.sample()
    const idleFrom = { bytes: trafficSum(), t: performance.now() }
    await sleep(10_000)
    await meter.sample()
    const idleRate = (trafficSum() - idleFrom.bytes) / ((performance.now() - idleFrom.t) / 1000) // bytes/s, all nodes
    report.traffic_idle_bytes_per_node_per_s = round(idleRate / live().length, 0)

    const changing = new Set() // nodes being stopped, restarted or started by the churn
    const runTag = Date.now().toString(36)
    let seq = 0
    const published = [] // { short, version, publisher, at, holders:Set<name>, targets }
    const publish = async (from) => {
      const name = `churn_${runTag}_${seq++}`
      const def = { function_name: name, signature: '(a, b)', language: 'javascript', source_code: `function ${name}(a, b) {\n  return a + b\n}\n` }
      const short = computeRufid(def).rufid_short
      const targets = live().filter((x) => x !== from && !changing.has(x.name)).map((x) => x.name)
      // also every node whose doors listen, ready or not (the figure before nodes were live from /readyz)
      const listening = all.filter((x) => x.proc && x.listening && x !== from).map((x) => x.name)
      const at = performance.now()
      const created = await post(`${from.base}/api/v1/functions/create`, def).catch((err) => ({ status: 0, body: { err: String(err) } }))
      if (created.status !== 201) return undefined
      const entry = { short, version: created.body.version, publisher: from.name, at, holders: new Set([from.name]), targets, listening }
      published.push(entry)
      return entry
    }
    /**
     * Publish → visible on every node that was up at the publish and stayed up for the next 10 s
     * (a node that stopped meanwhile gets it by sync when it is back: the digests show that).
     */
    const STABLE_MS = 10_000
    const stableFor = (node, at) => !node.downs.some(([from, to]) => from < at + STABLE_MS && to > at)
    /**
     * The same, counting only the nodes that had been up SETTLED_MS at the publish (reported beside
     * it, not instead: a node just (re)started is live, but still connecting and catching up).
     */
    const SETTLED_MS = 30_000
    const settledAt = (node, at) => !node.starts.some((t) => t <= at && t > at - SETTLED_MS)
    const visibleAll = (entry, { onlySettled = false, fromListen = false } = {}) => {
      let latest = 0
      for (const name of fromListen ? entry.listening : entry.targets) {
        const node = all.find((x) => x.name === name)
        if (!stableFor(node, entry.at) || (onlySettled && !settledAt(node, entry.at))) continue
        const t = node.arrived.get(entry.short)
        if (t === undefined) return undefined
        latest = Math.max(latest, t - entry.at)
      }
      return latest
    }
    await meter.sample()
    const burstFrom = { bytes: trafficSum(), t: performance.now() }
    const burst = []
    for (let i = 0; i < 20; i++) {
      const e = await publish(pick(live()))
      if (e) burst.push(e)
      await sleep(250)
    }
    const burstDeadline = performance.now() + 10_000
    while (performance.now() < burstDeadline && burst.some((e) => visibleAll(e) === undefined)) await sleep(100)
    await sleep(2_000)
    await meter.sample()
    const burstBytes = trafficSum() - burstFrom.bytes - idleRate * ((performance.now() - burstFrom.t) / 1000)
    report.traffic_per_change_bytes_per_node = round(burstBytes / burst.length / live().length, 0)
    const burstLat = burst.map((e) => visibleAll(e)).filter((v) => v !== undefined)
    report.no_churn_publish_to_visible_everywhere = { ...summarize(burstLat), of: burst.length }
    log(`traffic: idle ${report.traffic_idle_bytes_per_node_per_s} B/s/node, ${report.traffic_per_change_bytes_per_node} B/change/node; publish→visible p50 ${report.no_churn_publish_to_visible_everywhere.p50_ms} ms`)

    /** Executes `entry` on `node` (2 + 3); a node that ran it holds its code. */
    const executeOn = async (node, entry) => {
      const t = performance.now()
      const r = await post(`${node.base}/api/v1/functions/${entry.short}/execute`, { arguments: { a: 2, b: 3 } }).catch((err) => ({ status: 0, body: { err: String(err) } }))
      const ok = r.status === 200 && r.body.result === 5
      if (ok) entry.holders.add(node.name)
      return { ok, ms: performance.now() - t, status: r.status, code: r.body?.error?.code ?? r.body?.code, node: node.name, short: entry.short, publisher: entry.publisher }
    }

    // ---- warm-up: a federation in use has its sandbox workers running -----------------------------
    // every node runs one of the burst's functions once (in waves of 4), so that the churn phase does
    // not begin with every node starting its sandbox worker (on its first execution) and fetching code
    // at the same moment: 20 cold starts at once saturated the 2 cores for 1-2 s and delayed the first
    // publishes of the churn phase on every node. Nodes that restart or join during churn start
    // theirs cold, as they would
    const warmT = performance.now()
    const warm = { nodes: 0, ok: 0 }
    const warmUp = live()
    for (let i = 0; i < warmUp.length; i += 4) {
      await Promise.all(warmUp.slice(i, i + 4).map(async (node) => {
        const e = burst.find((x) => x.publisher !== node.name) ?? burst[0]
        if (!e) return
        warm.nodes++
        if ((await executeOn(node, e)).ok) warm.ok++
      }))
    }
    report.warm_up = { ...warm, ms: round(performance.now() - warmT, 0) }
    log(`warm-up: ${JSON.stringify(report.warm_up)}`)
    await sleep(2_000)

    // ---- churn -------------------------------------------------------------------------------
    const affected = Math.max(3, Math.round(n * churnFraction))
    const actions = Array.from({ length: affected }, (_, i) => ['restart', 'leave', 'join'][i % 3])
    const churnLog = []
    const executions = [] // { ok, ms, orphan }
    const discovers = [] // { ms, found }
    let running = true
    const churnStart = performance.now()
    // this process's own event-loop delay while it drives the churn (arrivals are the daemons' own
    // event times, so a late read here does not count against them; this shows whether it lagged)
    const runnerLag = monitorEventLoopDelay({ resolution: 10 })
    runnerLag.enable()
    const churnEnd = churnStart + seconds * 1000
    const left = new Set() // names that left for good
    const stable = () => live().filter((x) => !changing.has(x.name))

    /** Whether a live node other than `except` holds the entry's code. */
    const holderAlive = (entry, except) => [...entry.holders].some((h) => h !== except && live().some((x) => x.name === h))

    const publisher = (async () => {
      while (running && performance.now() < churnEnd) {
        const from = pick(stable())
        if (from) {
          const e = await publish(from)
          // a second holder on another node after a moment (as a caller elsewhere would)
          if (e) {
            setTimeout(() => {
              const other = pick(stable().filter((x) => x.name !== e.publisher))
              if (other && running) void executeOn(other, e).then((r) => executions.push({ ...r, kind: 'second_holder' }))
            }, 1_500).unref()
          }
        }
        await sleep(publishEveryMs)
      }
    })()
    const executor = (async () => {
      while (running && performance.now() < churnEnd) {
        const candidates = published.filter((e) => holderAlive(e))
        const node = pick(stable())
        if (candidates.length && node) {
          const e = pick(candidates)
          const r = await executeOn(node, e)
          executions.push({ ...r, kind: 'random' })
        }
        await sleep(400)
      }
    })()
    const discoverer = (async () => {
      while (running && performance.now() < churnEnd) {
        const node = pick(stable())
        const e = pick(published.filter((p) => holderAlive(p)))
        if (node && e) {
          const t = performance.now()
          const r = await getJson(`${node.base}/api/v1/federation/discover/${e.short}`).catch(() => ({ status: 0, body: {} }))
          const found = (r.body.nodes ?? []).length > 0
          discovers.push({
            ms: performance.now() - t, ok: r.status === 200, found,
            // why a discover named no holder: how old the publish was, whether its holders were up,
            // whether the asked node started after it
            ...(found ? {} : {
              miss: {
                status: r.status, node: node.name, published_ms_before: round(t - e.at, 0),
                holders: [...e.holders].map((h) => `${h}${live().some((x) => x.name === h) ? '' : ' (down)'}`),
                node_started_after_publish: node.downs.some(([, to]) => to > e.at),
              },
            }),
          })
        }
        await sleep(1_000)
      }
    })()
    const churner = (async () => {
      for (let i = 0; i < actions.length; i++) {
        const at = churnStart + seconds * 1000 * (0.1 + (0.6 * i) / Math.max(1, actions.length - 1))
        while (performance.now() < at) await sleep(200)
        const action = actions[i]
        const t = performance.now()
        if (action === 'join') {
          const node = await makeNode()
          changing.add(node.name)
          const boot = [...new Set(Array.from({ length: 3 }, () => pick(stable())))].map((x) => x.addr)
          const readyMs = await startNode(node, boot)
          changing.delete(node.name)
          churnLog.push({ action, node: node.name, at_s: round((t - churnStart) / 1000), took_ms: round(performance.now() - t, 0), listen_to_ready_ms: round(readyMs, 0) })
        } else {
          // prefer a node that published something (its code must outlive it when it leaves for good)
          const publishers = new Set(published.map((e) => e.publisher))
          const victims = stable().filter((x) => x.name !== 'node1')
          const victim = pick(victims.filter((x) => publishers.has(x.name))) ?? pick(victims)
          changing.add(victim.name)
          if (action === 'leave') {
            // its code outlives it where another node holds it: make sure one does, as a caller
            // elsewhere would have (the second holder after a publish can miss: the publisher may
            // have been down for a restart just then)
            for (const e of published.filter((p) => p.publisher === victim.name && !holderAlive(p, victim.name))) {
              const other = pick(stable().filter((x) => x.name !== victim.name))
              if (other) executions.push({ ...(await executeOn(other, e)), kind: 'second_holder' })
            }
          }
          await stopNode(victim)
          if (action === 'leave') {
            left.add(victim.name)
            churnLog.push({ action, node: victim.name, at_s: round((t - churnStart) / 1000), published: published.filter((e) => e.publisher === victim.name).length })
          } else {
            await sleep(5_000)
            const readyMs = await startNode(victim, stable().filter((x) => x !== victim).slice(0, 5).map((x) => x.addr))
            churnLog.push({ action, node: victim.name, at_s: round((t - churnStart) / 1000), down_ms: round(performance.now() - t, 0), listen_to_ready_ms: round(readyMs, 0) })
          }
          changing.delete(victim.name)
        }
        log(`churn: ${JSON.stringify(churnLog[churnLog.length - 1])}`)
      }
    })()
    await Promise.all([publisher, executor, discoverer, churner])
    running = false
    const churnStopped = performance.now()
    report.churn_events = churnLog
    runnerLag.disable()
    report.runner_event_loop_delay_during_churn_ms = { p99: round(runnerLag.percentile(99) / 1e6), max: round(runnerLag.max / 1e6) }
    await meter.sample()

    // ---- after churn: digests, formation, availability ----------------------------------------
    let digestsEqualMs = null
    let lastDigests
    while (performance.now() - churnStopped < 120_000) {
      lastDigests = await digestsNow()
      if (lastDigests.every((d) => d !== null && d === lastDigests[0])) {
        digestsEqualMs = round(performance.now() - churnStopped, 0)
        break
      }
      await sleep(250)
    }
    report.after_churn_digests_equal_ms = digestsEqualMs
    if (digestsEqualMs === null) report.after_churn_digests = lastDigests
    const reformed = await waitFormed(120_000)
    report.after_churn_every_node_lists_all_ms = reformed.ms
    report.after_churn_listed = reformed.counts

    const churnPublished = published.filter((e) => e.at >= churnStart)
    const lat = churnPublished.map((e) => visibleAll(e)).filter((v) => v !== undefined)
    report.churn_publish_to_visible_everywhere = { ...summarize(lat), of: churnPublished.length, visible_everywhere: lat.length }
    const latSettled = churnPublished.map((e) => visibleAll(e, { onlySettled: true })).filter((v) => v !== undefined)
    report.churn_publish_to_visible_on_settled_nodes = { ...summarize(latSettled), of: churnPublished.length, settled_ms: SETTLED_MS }
    const latListening = churnPublished.map((e) => visibleAll(e, { fromListen: true })).filter((v) => v !== undefined)
    report.churn_publish_to_visible_on_listening_nodes = { ...summarize(latListening), of: churnPublished.length }
    // the slowest changes: where each was late, and the churn around it (what to look at first)
    const slowest = churnPublished.map((e) => ({ e, ms: visibleAll(e) })).filter((x) => x.ms !== undefined).sort((a, b) => b.ms - a.ms).slice(0, 5)
    report.churn_slowest = slowest.map(({ e, ms }) => ({
      at_s: round((e.at - churnStart) / 1000), publisher: e.publisher, ms: round(ms, 0),
      late: e.targets.map((name) => all.find((x) => x.name === name)).filter((x) => stableFor(x, e.at) && x.arrived.get(e.short) - e.at > 500)
        .map((x) => ({ node: x.name, ms: round(x.arrived.get(e.short) - e.at, 0), up_s: round((e.at - Math.max(...x.starts.filter((t) => t <= e.at))) / 1000) })),
    }))
    if (options.dump) {
      writeFileSync(options.dump, JSON.stringify(published.map((e) => ({
        short: e.short, publisher: e.publisher, at: e.at, churn: e.at >= churnStart,
        arrivals: e.targets.map((name) => all.find((x) => x.name === name)).map((x) => ({ name: x.name, pids: x.pids, stable: stableFor(x, e.at), arrived: x.arrived.get(e.short) ?? null })),
      })).concat([{ churn_start: churnStart, events: churnLog }])))
    }
    report.churn_executions = {
      ...summarize(executions.filter((e) => e.ok).map((e) => e.ms)), attempts: executions.length, ok: executions.filter((e) => e.ok).length,
      failures: executions.filter((e) => !e.ok).slice(0, 10).map((e) => ({ status: e.status, code: e.code, kind: e.kind, node: e.node, short: e.short, publisher: e.publisher, ms: round(e.ms, 0) })),
    }
    report.churn_discover = { ...summarize(discovers.filter((d) => d.ok).map((d) => d.ms)), attempts: discovers.length, found: discovers.filter((d) => d.found).length, misses: discovers.filter((d) => d.miss).slice(0, 10).map((d) => d.miss) }
    // what went wrong is in the log too, not only in the JSON (a later run overwrites that)
    if (report.churn_executions.failures.length) log(`executions that failed during churn: ${JSON.stringify(report.churn_executions.failures)}`)
    if (report.churn_discover.misses.length) log(`discovers that named no holder: ${JSON.stringify(report.churn_discover.misses)}`)

    // every function with a holder alive, executed on a live node that does not hold it (a fetch)
    const availability = { functions: published.length, with_live_holder: 0, executed: 0, first_try: 0, orphaned_by_publisher: 0, orphaned_executed: 0, failures: [] }
    for (const e of published) {
      if (!holderAlive(e)) continue
      availability.with_live_holder++
      const orphan = left.has(e.publisher)
      if (orphan) availability.orphaned_by_publisher++
      const node = pick(live().filter((x) => !e.holders.has(x.name))) ?? pick(live())
      let r = await executeOn(node, e)
      if (r.ok) availability.first_try++
      else {
        await sleep(2_000)
        r = await executeOn(node, e)
      }
      if (r.ok) {
        availability.executed++
        if (orphan) availability.orphaned_executed++
      } else availability.failures.push({ short: e.short, node: node.name, status: r.status, code: r.code })
    }
    report.availability_after_churn = availability
    const mem = live().map((x) => memoryOf(x.pid))
    report.memory_after_per_node_mb = {
      daemon_mean: round(mem.reduce((s, m) => s + m.daemon, 0) / mem.length / 2 ** 20),
      daemon_max: round(Math.max(...mem.map((m) => m.daemon)) / 2 ** 20),
      workers_mean: round(mem.reduce((s, m) => s + m.workers, 0) / mem.length / 2 ** 20),
      total_mean: round(mem.reduce((s, m) => s + m.total, 0) / mem.length / 2 ** 20),
    }
    report.live_nodes_at_end = live().length
    report.machine.load_average_at_end = (await import('node:os')).loadavg().map((v) => round(v, 2))
    return report
  } catch (err) {
    // keep the evidence: each node's log beside its data directory
    for (const x of all) if (x.proc) writeFileSync(join(root, `${x.name}.log`), x.proc.output())
    options.keep = true
    err.message += ` (node logs and data kept in ${root})`
    throw err
  } finally {
    clearInterval(sampler)
    await Promise.allSettled(all.map((x) => stopNode(x)))
    if (!options.keep) removeDir(root)
  }
}

export function table(r) {
  const rows = [
    ['nodes (churned: restart / leave / join)', `${r.nodes} (${(r.churn_events ?? []).map((e) => e.action).join(', ')})`],
    ['start of all nodes (waves of 4)', `${r.start_all_ms} ms`],
    ['every node lists all, after the last start', `${r.formation?.every_node_lists_all_ms_after_last_start} ms`],
    ['idle memory per node (daemon, mean / max)', `${r.memory_idle_per_node_mb?.daemon_mean} / ${r.memory_idle_per_node_mb?.daemon_max} MB (workers ${r.memory_idle_per_node_mb?.workers_mean} MB)`],
    ['idle traffic per node', `${r.traffic_idle_bytes_per_node_per_s} B/s`],
    ['bytes sent per node per change (no churn)', `${r.traffic_per_change_bytes_per_node} B`],
    ['publish → visible everywhere, no churn (p50 / p99)', `${r.no_churn_publish_to_visible_everywhere?.p50_ms} / ${r.no_churn_publish_to_visible_everywhere?.p99_ms} ms (${r.no_churn_publish_to_visible_everywhere?.n} of ${r.no_churn_publish_to_visible_everywhere?.of})`],
    ['publish → visible everywhere, churn (p50 / p99)', `${r.churn_publish_to_visible_everywhere?.p50_ms} / ${r.churn_publish_to_visible_everywhere?.p99_ms} ms (${r.churn_publish_to_visible_everywhere?.visible_everywhere} of ${r.churn_publish_to_visible_everywhere?.of})`],
    ['… counting only nodes up ≥ 30 s at the publish (p50 / p99)', `${r.churn_publish_to_visible_on_settled_nodes?.p50_ms} / ${r.churn_publish_to_visible_on_settled_nodes?.p99_ms} ms (${r.churn_publish_to_visible_on_settled_nodes?.n} of ${r.churn_publish_to_visible_on_settled_nodes?.of})`],
    ['… counting nodes from when they listen, before /readyz (p50 / p99)', `${r.churn_publish_to_visible_on_listening_nodes?.p50_ms} / ${r.churn_publish_to_visible_on_listening_nodes?.p99_ms} ms (${r.churn_publish_to_visible_on_listening_nodes?.n} of ${r.churn_publish_to_visible_on_listening_nodes?.of})`],
    ['restart / join: listening → /readyz 200', (r.churn_events ?? []).filter((e) => e.listen_to_ready_ms !== undefined).map((e) => `${e.action} ${e.listen_to_ready_ms} ms`).join(', ')],
    ['execute during churn (ok / attempts, p50 / p99)', `${r.churn_executions?.ok} / ${r.churn_executions?.attempts}, ${r.churn_executions?.p50_ms} / ${r.churn_executions?.p99_ms} ms`],
    ['discover during churn (found / attempts, p50 / p99)', `${r.churn_discover?.found} / ${r.churn_discover?.attempts}, ${r.churn_discover?.p50_ms} / ${r.churn_discover?.p99_ms} ms`],
    ['digests equal after churn stops', `${r.after_churn_digests_equal_ms} ms`],
    ['every node lists all after churn', `${r.after_churn_every_node_lists_all_ms} ms`],
    ['executable with a live holder (first try / final)', `${r.availability_after_churn?.first_try} / ${r.availability_after_churn?.executed} of ${r.availability_after_churn?.with_live_holder}`],
    ['… of them, publisher left for good', `${r.availability_after_churn?.orphaned_executed} of ${r.availability_after_churn?.orphaned_by_publisher}`],
    ['memory per node after (daemon mean / max, + workers)', `${r.memory_after_per_node_mb?.daemon_mean} / ${r.memory_after_per_node_mb?.daemon_max} MB + ${r.memory_after_per_node_mb?.workers_mean} MB`],
    ['load average (start → end)', `${r.machine?.load_average_at_start?.join(' ')} → ${r.machine?.load_average_at_end?.join(' ')}`],
    ['the runner\'s own event-loop delay during churn (p99 / max)', `${r.runner_event_loop_delay_during_churn_ms?.p99} / ${r.runner_event_loop_delay_during_churn_ms?.max} ms`],
  ]
  const w = Math.max(...rows.map((x) => x[0].length))
  return rows.map(([k, v]) => `| ${k.padEnd(w)} | ${v} |`).join('\n')
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const arg = (name, dflt) => {
    const a = process.argv.find((x) => x.startsWith(`--${name}=`))
    return a ? a.slice(name.length + 3) : dflt
  }
  const nodes = Number(arg('nodes', 20))
  const seconds = Number(arg('seconds', 120))
  const out = arg('out', join(ROOT, 'bench', 'results', `churn-${nodes}.json`))
  const logs = arg('logs', undefined)
  if (logs) mkdirSync(logs, { recursive: true })
  const report = await runChurn({ nodes, seconds, dump: arg('dump', undefined), logs })
  mkdirSync(join(out, '..'), { recursive: true })
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`)
  console.log(table(report))
  console.log(`\nJSON: ${out}`)
  process.exit(0)
}
