#!/usr/bin/env node
// A discrete-event model of an svc-node federation from 20 to 10,000 members (issue 17).
//
//   npm run sim                      # the default sweep, tables on stdout, JSON in sim/results.json
//   node sim/federation-sim.js --params=bench/results/churn-20.json --sizes=20,100,1000,10000
//
// What it models (each part's assumptions are in docs/federation-scale.md):
//   1. gossip of one catalog change: gossipsub v1.1 as svc-node configures it (D=3 mesh, D_lo=2,
//      D_hi=6, flood publish to the publisher's connected members, IHAVE/IWANT lazy repair on each
//      heartbeat to D_lazy=3 peers), each hop a link delay and the receiver's validation (signature
//      check + apply), with a share of mesh links broken by churn;
//   2. Kademlia lookups (k=20, alpha=3) over real XOR distances between random 48-bit ids, each
//      node's routing table sampled per bucket: hops, messages and time of a provider lookup, and
//      the member-by-member walk it replaces;
//   3. anti-entropy sync after a partition: whole version-vector sync (before), a vector compacted
//      to active origins, a Merkle summary by key range (the designs weighed for issue 17, item 4),
//      and what is built: roots first, then the compacted vector when they differ;
//   4. memory and traffic per node.
// Parameters measured on the 20-node runs (bench/churn.js) are read from --params when given.
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const HERE = dirname(fileURLToPath(import.meta.url))

// ---- parameters ------------------------------------------------------------------------------
/** Defaults: measured on this machine (loopback, bench/README) unless marked "assumed". */
export const DEFAULTS = {
  /** one-way link delay between members, median ms (assumed: a regional WAN; loopback is ~0.1 ms) */
  linkMs: 20,
  /** lognormal sigma of the link delay (assumed) */
  linkSigma: 0.5,
  /** receiver's cost to validate (signature) and apply one change before forwarding it, ms (measured: ~2 ms) */
  validateMs: 2,
  /** gossipsub heartbeat (svc-node: 250 ms on small federations; 1 s is gossipsub's default) */
  heartbeatMs: 1000,
  D: 3, Dlo: 2, Dhi: 6, Dlazy: 3,
  /** a node keeps connections to at most this many members (member-keeper targetMembers) */
  maxConnections: 64,
  /** share of mesh links broken (peers gone) when a message goes out: 25 % churn, before the mesh repairs */
  brokenLinks: 0.25,
  /** bytes of one gossiped change (JSON, signed; measured ~1.1 KB without the code) */
  changeBytes: 1100,
  /** bytes of one IHAVE message id */
  msgIdBytes: 48,
  /** Kademlia */
  k: 20, alpha: 3,
  /** DHT request round trip, ms (2 × linkMs + the answering node's work) */
  dhtRttMs: null,
  /** bytes of one version-vector entry (a PeerId and a sequence number in JSON) */
  vectorEntryBytes: 62,
  /** anti-entropy: one sync with one random member this often (svc-node default 2 s) */
  syncIntervalMs: 2000,
  /**
   * built design (catalog-sync.ts, /svc/sync-summary/1.0.0): bytes of the root exchange's request
   * and of its answer, JSON (measured: 75 + 82 B, test/federation/sync-summary.test.ts)
   */
  summaryRootRequestBytes: 75,
  summaryRootAnswerBytes: 82,
  /** share of origins active (a change within the retention period, a week): assumed 5 % */
  activeShare: 0.05,
  /** Merkle summary fan-out (children per node) */
  merkleFanout: 16,
  /** bytes of one hash in a summary exchange */
  hashBytes: 32,
  /** measured idle daemon RSS (MB) with 19 members; and the RSS one more member connection costs (MB) */
  baseRssMb: 140,
  perConnectionMb: 0.35,
  /** catalog entries held in memory indexes per function version (bytes; marketplace index ~300 B) */
  perEntryBytes: 300,
  /** per-origin state (vector entry, certificate cache ~1.5 KB) bytes */
  perOriginBytes: 1600,
  /** DHT: provider records this node stores (records ~ functions × providers × k / N) bytes each */
  providerRecordBytes: 200,
  /** functions published per member (assumed) and providers per function (publisher + fetchers) */
  functionsPerMember: 20,
  providersPerFunction: 5,
  /** changes per member per hour (assumed: a busy federation) */
  changesPerMemberHour: 6,
  seed: 17,
}

// ---- a seeded PRNG ---------------------------------------------------------------------------
export function rng(seed) {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const normal = () => {
    const u = Math.max(1e-12, next())
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * next())
  }
  return { next, int: (n) => Math.floor(next() * n), normal, lognormal: (median, sigma) => median * Math.exp(sigma * normal()) }
}

/** A binary min-heap of events by time. */
class EventQueue {
  constructor() {
    this.heap = []
  }

  push(t, e) {
    const h = this.heap
    h.push([t, e])
    let i = h.length - 1
    while (i > 0) {
      const p = (i - 1) >> 1
      if (h[p][0] <= h[i][0]) break
      ;[h[p], h[i]] = [h[i], h[p]]
      i = p
    }
  }

  pop() {
    const h = this.heap
    const top = h[0]
    const last = h.pop()
    if (h.length > 0) {
      h[0] = last
      let i = 0
      for (;;) {
        const l = 2 * i + 1
        const r = l + 1
        let m = i
        if (l < h.length && h[l][0] < h[m][0]) m = l
        if (r < h.length && h[r][0] < h[m][0]) m = r
        if (m === i) break
        ;[h[m], h[i]] = [h[i], h[m]]
        i = m
      }
    }
    return top
  }

  get size() {
    return this.heap.length
  }
}

const quantile = (sorted, p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] : null)
const r1 = (v) => (v == null ? null : Math.round(v * 10) / 10)

// ---- 1. gossip ---------------------------------------------------------------------------------

/**
 * The gossip overlay: each node's connections (up to maxConnections, random members) and its mesh
 * (D of them, symmetric, between D_lo and D_hi as gossipsub keeps it).
 */
function overlay(n, p, random) {
  const conns = Array.from({ length: n }, () => new Set())
  const target = Math.min(n - 1, p.maxConnections)
  // random connections: each node dials until it has ~target (a random graph of degree ≈ target)
  for (let i = 0; i < n; i++) {
    let guard = 0
    while (conns[i].size < target && guard++ < target * 4) {
      const j = random.int(n)
      if (j === i || conns[j].size >= target * 1.5) continue
      conns[i].add(j)
      conns[j].add(i)
    }
  }
  const mesh = Array.from({ length: n }, () => new Set())
  for (let i = 0; i < n; i++) {
    const candidates = [...conns[i]]
    for (let tries = 0; mesh[i].size < p.D && tries < candidates.length * 2; tries++) {
      const j = candidates[random.int(candidates.length)]
      if (j === i || mesh[i].has(j) || mesh[j].size >= p.Dhi) continue
      mesh[i].add(j)
      mesh[j].add(i)
    }
  }
  return { conns: conns.map((s) => [...s]), mesh: mesh.map((s) => [...s]) }
}

/**
 * One change gossiped from a random publisher. Returns each node's arrival time (ms; Infinity if
 * never) and the copies each node received. Links in `broken` (churn) carry nothing; nodes the
 * eager push missed get it by IHAVE/IWANT from a connected peer that has it at that peer's next
 * heartbeat (gossipsub's lazy gossip to D_lazy peers).
 */
function gossipOnce(n, net, p, random) {
  const arrival = new Float64Array(n).fill(Infinity)
  const copies = new Uint16Array(n)
  const ihaves = new Uint16Array(n)
  const broken = (a, b) => {
    // a deterministic per-link coin: the same link is broken both ways
    const x = Math.sin((Math.min(a, b) * 100_003 + Math.max(a, b)) * 12.9898 + p._salt) * 43758.5453
    return x - Math.floor(x) < p.brokenLinks
  }
  const link = () => random.lognormal(p.linkMs, p.linkSigma)
  const q = new EventQueue()
  const src = random.int(n)
  arrival[src] = 0
  // flood publish: the publisher sends its own message to every connected topic peer
  for (const j of net.conns[src]) if (!broken(src, j)) q.push(link(), { to: j, from: src })
  // heartbeats: every node's phase is random; lazy gossip to D_lazy connected non-mesh peers
  const phase = Float64Array.from({ length: n }, () => random.next() * p.heartbeatMs)
  const forward = (i, t) => {
    for (const j of net.mesh[i]) if (!broken(i, j)) q.push(t + link(), { to: j, from: i })
    // from the next heartbeat on (within the message cache's 3 heartbeats), IHAVE to D_lazy peers
    const hb = t + ((phase[i] - t) % p.heartbeatMs + p.heartbeatMs) % p.heartbeatMs
    for (let round = 0; round < 3; round++) {
      const at = hb + round * p.heartbeatMs
      for (let c = 0; c < p.Dlazy; c++) {
        const j = net.conns[i][random.int(net.conns[i].length)]
        if (j === undefined || broken(i, j)) continue
        q.push(at + link(), { to: j, from: i, ihave: true })
      }
    }
  }
  forward(src, 0)
  let processed = 0
  while (q.size > 0 && processed < n * 200) {
    const [t, e] = q.pop()
    processed++
    if (e.ihave) {
      ihaves[e.to]++
      // IWANT back, the message comes on the next trip (two more link delays)
      if (arrival[e.to] === Infinity) q.push(t + link() + link(), { to: e.to, from: e.from })
      continue
    }
    copies[e.to]++
    if (arrival[e.to] !== Infinity) continue
    const ready = t + p.validateMs
    arrival[e.to] = ready
    forward(e.to, ready)
  }
  return { arrival, copies, ihaves }
}

export function simulateGossip(n, p, messages = 30) {
  const random = rng(p.seed + n)
  const net = overlay(n, p, random)
  const times = []
  let reached = 0
  let total = 0
  let copySum = 0
  let ihaveSum = 0
  const p99s = []
  for (let m = 0; m < messages; m++) {
    const { arrival, copies, ihaves } = gossipOnce(n, net, { ...p, _salt: m }, random)
    const arrived = [...arrival].filter((t) => t !== Infinity).sort((a, b) => a - b)
    reached += arrived.length
    total += n
    times.push(...arrived)
    p99s.push(quantile(arrived, 0.99))
    for (let i = 0; i < n; i++) {
      copySum += copies[i]
      ihaveSum += ihaves[i]
    }
  }
  times.sort((a, b) => a - b)
  const copiesPerNode = copySum / (messages * n)
  const ihavesPerNode = ihaveSum / (messages * n)
  return {
    n,
    connections_per_node: r1(net.conns.reduce((s, c) => s + c.length, 0) / n),
    mesh_degree: r1(net.mesh.reduce((s, c) => s + c.length, 0) / n),
    reached_ratio: Math.round((reached / total) * 10000) / 10000,
    p50_ms: r1(quantile(times, 0.5)),
    p99_ms: r1(quantile(times, 0.99)),
    max_ms: r1(times[times.length - 1]),
    copies_per_node: r1(copiesPerNode),
    bytes_per_node_per_change: Math.round(copiesPerNode * p.changeBytes + ihavesPerNode * p.msgIdBytes),
  }
}

// ---- 2. Kademlia -----------------------------------------------------------------------------

const ID_BITS = 48
const xor = (a, b) => {
  // 48-bit ids as doubles: split into two 24-bit halves
  const hi = ((a / 2 ** 24) ^ (b / 2 ** 24)) >>> 0
  const lo = ((a % 2 ** 24) ^ (b % 2 ** 24)) >>> 0
  return hi * 2 ** 24 + lo
}

/** Routing tables sampled lazily: bucket b of node x holds up to k nodes sharing exactly b leading bits with x. */
function kademlia(n, p, random) {
  const ids = Array.from({ length: n }, () => Math.floor(random.next() * 2 ** ID_BITS))
  const order = ids.map((id, i) => [id, i]).sort((a, b) => a[0] - b[0])
  const sorted = order.map((o) => o[0])
  const lowerBound = (v) => {
    let lo = 0
    let hi = sorted.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (sorted[mid] < v) lo = mid + 1
      else hi = mid
    }
    return lo
  }
  const tables = new Map()
  const table = (i) => {
    let t = tables.get(i)
    if (t) return t
    t = []
    const x = ids[i]
    for (let b = 0; b < ID_BITS; b++) {
      // nodes whose first differing bit with x is bit b: the range with prefix (x's first b bits, flipped bit b)
      const span = 2 ** (ID_BITS - b - 1)
      const prefixStart = Math.floor(x / (span * 2)) * span * 2
      const flipped = (Math.floor(x / span) % 2 === 0) ? prefixStart + span : prefixStart
      const from = lowerBound(flipped)
      const to = lowerBound(flipped + span)
      const count = to - from
      if (count === 0) continue
      const take = Math.min(p.k, count)
      for (let c = 0; c < take; c++) t.push(order[from + (count <= p.k ? c : random.int(count))][1])
      if (to - from < 1) break
    }
    tables.set(i, t)
    return t
  }
  return { ids, table }
}

/**
 * An iterative lookup of `target` from node `start` (alpha parallel, k closest): the rounds and
 * messages until it first queries one of the k members closest to the target (they hold the
 * provider records: the first provider is known then), and until the lookup converges.
 */
function lookup(dht, start, target, p) {
  const dist = (i) => xor(dht.ids[i], target)
  const closest = new Set(dht.ids.map((id, i) => [xor(id, target), i]).sort((a, b) => a[0] - b[0]).slice(0, p.k).map((x) => x[1]))
  let firstRound = closest.has(start) ? 0 : null
  let firstMessages = 0
  const seen = new Set([start])
  let shortlist = [...new Set(dht.table(start))].sort((a, b) => dist(a) - dist(b)).slice(0, p.k)
  for (const s of shortlist) seen.add(s)
  const queried = new Set()
  let rounds = 0
  let messages = 0
  for (;;) {
    const next = shortlist.filter((x) => !queried.has(x)).slice(0, p.alpha)
    if (next.length === 0) break
    rounds++
    let improved = false
    const best = dist(shortlist[0])
    for (const q of next) {
      queried.add(q)
      messages++
      if (firstRound === null && closest.has(q)) {
        firstRound = rounds
        firstMessages = messages
      }
      const answer = dht.table(q).slice().sort((a, b) => dist(a) - dist(b)).slice(0, p.k)
      for (const a of answer) {
        if (seen.has(a)) continue
        seen.add(a)
        shortlist.push(a)
      }
    }
    shortlist = shortlist.sort((a, b) => dist(a) - dist(b)).slice(0, p.k)
    if (dist(shortlist[0]) < best) improved = true
    // stop once the k closest have all been queried (no closer node turns up)
    if (!improved && shortlist.every((x) => queried.has(x))) break
    if (rounds > 64) break
  }
  return { rounds, messages, found: shortlist[0], firstRound: firstRound ?? rounds, firstMessages: firstMessages || messages }
}

export function simulateDht(n, p, lookups = 200) {
  const random = rng(p.seed * 7 + n)
  const dht = kademlia(n, p, random)
  const rounds = []
  const messages = []
  const first = []
  const firstMessages = []
  let exact = 0
  for (let l = 0; l < lookups; l++) {
    // a provider record's key: a random point of the id space (a content digest)
    const target = Math.floor(random.next() * 2 ** ID_BITS)
    const r = lookup(dht, random.int(n), target, p)
    rounds.push(r.rounds)
    messages.push(r.messages)
    first.push(r.firstRound)
    firstMessages.push(r.firstMessages)
    if (r.found !== undefined) exact++
  }
  for (const list of [rounds, messages, first, firstMessages]) list.sort((a, b) => a - b)
  const rtt = p.dhtRttMs ?? 2 * p.linkMs + p.validateMs
  // a provider lookup ends at the first provider found, about the last round: time ≈ rounds × rtt
  // the member walk it replaces: members asked in turn until one holds the code (h holders of n)
  const holders = Math.min(n, p.providersPerFunction)
  const walkExpected = (n + 1) / (holders + 1)
  return {
    n,
    rounds_p50: quantile(rounds, 0.5),
    rounds_p99: quantile(rounds, 0.99),
    messages_p50: quantile(messages, 0.5),
    messages_p99: quantile(messages, 0.99),
    first_provider_rounds_p50: quantile(first, 0.5),
    first_provider_rounds_p99: quantile(first, 0.99),
    first_provider_messages_p99: quantile(firstMessages, 0.99),
    found_ratio: Math.round((exact / lookups) * 1000) / 1000,
    // the first provider answers in the round after the one that reached the k closest
    lookup_ms_p50: r1((quantile(first, 0.5) + 1) * rtt),
    lookup_ms_p99: r1((quantile(first, 0.99) + 1) * rtt),
    routing_table_entries: Math.round([...Array(Math.min(n, 50)).keys()].reduce((s, i) => s + dht.table(i).length, 0) / Math.min(n, 50)),
    member_walk_expected_requests: r1(walkExpected),
    member_walk_expected_ms: r1(walkExpected * rtt),
  }
}

// ---- 3. sync after a partition, 4. memory and traffic -----------------------------------------

export function syncAndMemory(n, p) {
  const origins = n // every member published at some point
  const activeOrigins = Math.min(n, Math.max(20, Math.round(n * p.activeShare))) // assumed: 5 % publish in a given week
  const entries = n * p.functionsPerMember
  const vectorBytes = origins * p.vectorEntryBytes
  const compactVectorBytes = activeOrigins * p.vectorEntryBytes + 64 // + the digest of the folded origins
  // a node that missed m changes (a partition of 10 min at the federation's change rate)
  const changesPerSecond = (n * p.changesPerMemberHour) / 3600
  const missed = Math.round(changesPerSecond * 600)
  // Merkle summary by key range: descend only where hashes differ (≈ missed leaves, log_f(entries) levels)
  const depth = Math.max(1, Math.ceil(Math.log(entries) / Math.log(p.merkleFanout)))
  const merkleBytes = Math.min(entries, missed) * depth * p.merkleFanout * p.hashBytes + p.hashBytes
  // steady state: one sync exchange per node every syncIntervalMs, both vectors sent
  const steadyVector = (2 * vectorBytes * 1000) / p.syncIntervalMs
  const steadyCompact = (2 * compactVectorBytes * 1000) / p.syncIntervalMs
  const steadyMerkle = (2 * p.hashBytes * 1000) / p.syncIntervalMs
  // built: one root exchange per sync interval (each node starts one and answers one on average)
  const rootExchange = p.summaryRootRequestBytes + p.summaryRootAnswerBytes
  const steadyBuilt = (rootExchange * 1000) / p.syncIntervalMs
  const conns = Math.min(n - 1, p.maxConnections)
  const fullMeshConns = n - 1
  const providerRecords = (n * p.functionsPerMember * p.providersPerFunction * p.k) / n // records each node stores
  const memoryMb = (c) => p.baseRssMb + c * p.perConnectionMb + (entries * p.perEntryBytes + origins * p.perOriginBytes + providerRecords * p.providerRecordBytes) / 2 ** 20
  return {
    n,
    catalog_entries: entries,
    changes_missed_in_10_min: missed,
    sync_after_partition_bytes: {
      version_vector: Math.round(vectorBytes * 2 + missed * p.changeBytes),
      compacted_vector: Math.round(compactVectorBytes * 2 + missed * p.changeBytes),
      merkle_summary: Math.round(merkleBytes + missed * p.changeBytes),
      // roots, then both compacted vectors with the changes (retired digests equal)
      built_root_then_compacted: Math.round(rootExchange + compactVectorBytes * 2 + missed * p.changeBytes),
      // a member away longer than the retention period: roots, compacted vectors, then the whole vector
      built_away_past_retention: Math.round(rootExchange + compactVectorBytes * 2 + vectorBytes * 2 + missed * p.changeBytes),
    },
    anti_entropy_idle_bytes_per_node_per_s: {
      version_vector: Math.round(steadyVector), compacted_vector: Math.round(steadyCompact), merkle_summary: Math.round(steadyMerkle),
      built_root_then_compacted: Math.round(steadyBuilt),
    },
    change_traffic_bytes_per_node_per_s: Math.round(changesPerSecond * 0), // filled by the caller from the gossip figure
    vector_bytes: vectorBytes,
    compacted_vector_bytes: compactVectorBytes,
    root_exchange_bytes: rootExchange,
    changes_per_s_federation: Math.round(changesPerSecond * 100) / 100,
    memory_mb: { capped_connections: r1(memoryMb(conns)), full_mesh: r1(memoryMb(fullMeshConns)) },
  }
}

// ---- the sweep -----------------------------------------------------------------------------

export function run(params, sizes) {
  const p = { ...DEFAULTS, ...params }
  const rows = []
  for (const n of sizes) {
    const gossip = simulateGossip(n, p, n >= 5000 ? 10 : 30)
    const gossipNoChurn = simulateGossip(n, { ...p, brokenLinks: 0 }, n >= 5000 ? 5 : 15)
    const dht = simulateDht(n, p, n >= 5000 ? 100 : 200)
    const sm = syncAndMemory(n, p)
    sm.change_traffic_bytes_per_node_per_s = Math.round(sm.changes_per_s_federation * gossip.bytes_per_node_per_change)
    // built, while changes flow: two members' roots differ when a change is in flight between them
    // (gossiped within the last ~p99 ms), and then the compacted vectors go both ways
    const pDiffer = 1 - Math.exp(-sm.changes_per_s_federation * (gossip.p99_ms / 1000))
    sm.roots_differ_share_busy = Math.round(pDiffer * 1000) / 1000
    sm.anti_entropy_idle_bytes_per_node_per_s.built_while_changes_flow = Math.round(((sm.root_exchange_bytes + pDiffer * 2 * sm.compacted_vector_bytes) * 1000) / p.syncIntervalMs)
    rows.push({ n, gossip, gossip_no_churn: gossipNoChurn, dht, sync_memory: sm })
  }
  return { params: p, rows }
}

function tables(result) {
  const lines = []
  const t = (header, rows) => {
    lines.push(`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`), '')
  }
  const { rows } = result
  lines.push('Gossip of one change (25 % of mesh links broken by churn; no churn in brackets)', '')
  t(['members', 'connections/node', 'mesh degree', 'reached', 'p50 ms', 'p99 ms', 'max ms', 'copies/node', 'bytes/node/change'],
    rows.map((r) => [r.n, r.gossip.connections_per_node, r.gossip.mesh_degree, `${r.gossip.reached_ratio} (${r.gossip_no_churn.reached_ratio})`,
      `${r.gossip.p50_ms} (${r.gossip_no_churn.p50_ms})`, `${r.gossip.p99_ms} (${r.gossip_no_churn.p99_ms})`, r.gossip.max_ms, r.gossip.copies_per_node, r.gossip.bytes_per_node_per_change]))
  lines.push('DHT lookups (k=20, alpha=3) and the member walk they replace', '')
  t(['members', 'rounds to a record holder p50/p99', 'rounds to converge p50/p99', 'messages to converge p50/p99', 'first provider ms p50/p99', 'table entries', 'walk: requests', 'walk: ms'],
    rows.map((r) => [r.n, `${r.dht.first_provider_rounds_p50}/${r.dht.first_provider_rounds_p99}`, `${r.dht.rounds_p50}/${r.dht.rounds_p99}`, `${r.dht.messages_p50}/${r.dht.messages_p99}`,
      `${r.dht.lookup_ms_p50}/${r.dht.lookup_ms_p99}`, r.dht.routing_table_entries, r.dht.member_walk_expected_requests, r.dht.member_walk_expected_ms]))
  lines.push('Sync after a 10-minute partition, idle anti-entropy, traffic and memory per node', '')
  t(['members', 'missed', 'sync bytes: vector / compacted / Merkle / **built** (away past retention)', 'idle anti-entropy B/s: vector / compacted / Merkle / **built** (while changes flow)', 'change traffic B/s/node', 'memory MB: 64 conns / full mesh'],
    rows.map((r) => {
      const s = r.sync_memory
      const b = s.sync_after_partition_bytes
      const i = s.anti_entropy_idle_bytes_per_node_per_s
      return [r.n, s.changes_missed_in_10_min, `${b.version_vector} / ${b.compacted_vector} / ${b.merkle_summary} / **${b.built_root_then_compacted}** (${b.built_away_past_retention})`,
        `${i.version_vector} / ${i.compacted_vector} / ${i.merkle_summary} / **${i.built_root_then_compacted}** (${i.built_while_changes_flow})`,
        s.change_traffic_bytes_per_node_per_s, `${s.memory_mb.capped_connections} / ${s.memory_mb.full_mesh}`]
    }))
  return lines.join('\n')
}

/** Model parameters from a bench/churn.js report (what it measured on real daemons). */
export function paramsFromChurnReport(report) {
  const out = {}
  const idle = report.memory_idle_per_node_mb?.daemon_mean
  if (typeof idle === 'number') out.baseRssMb = idle
  const perChange = report.traffic_per_change_bytes_per_node
  if (typeof perChange === 'number' && perChange > 0 && report.nodes) {
    // on a full mesh of n nodes a node receives about D (mesh) + flood copies; the change size follows
    out.measuredBytesPerNodePerChange = perChange
  }
  return out
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name, dflt) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt
  const sizes = arg('sizes', '20,100,1000,10000').split(',').map(Number)
  const paramsFile = arg('params', '')
  const params = {}
  if (paramsFile) Object.assign(params, paramsFromChurnReport(JSON.parse(readFileSync(paramsFile, 'utf8'))))
  for (const kv of process.argv.filter((a) => a.startsWith('--set='))) {
    const [k, v] = kv.slice(6).split('=')
    params[k] = Number(v)
  }
  const t0 = performance.now()
  const result = run(params, sizes)
  result.wall_s = Math.round((performance.now() - t0) / 100) / 10
  console.log(tables(result))
  const out = arg('out', join(HERE, 'results.json'))
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`)
  console.log(`model run in ${result.wall_s} s; JSON: ${out}`)
}
