// Load with the rate limits on (80 requests a second per tenant, so the load meets them): 50 clients
// (each its own API key, in two tenants) run mixed creates,
// executions, resolutions and searches against one daemon for 15 s (60 s under `npm run soak`). No
// answer may be a 5xx, every acknowledged create must resolve afterwards, and the memory of the
// daemon and of its sandbox workers stays bounded (measured before, at peak and after).
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { call, removeDir, startDaemonProcess, tempDataDir, type DaemonProcess } from '../fixtures/daemon-process.js'
import { recordFault, SOAK } from './fault-record.js'
import { childPids, mintAdminKeyOffline, rssBytes, sleep, treeRssBytes } from './fault-fixtures.js'

const CLIENTS = 50
const SECONDS = SOAK ? 60 : 15
const MiB = 2 ** 20

describe(`load: ${CLIENTS} clients for ${SECONDS} s with rate limits on (real daemon process)`, () => {
  const dataDir = tempDataDir()
  let d: DaemonProcess
  const keys: Array<{ key: string; tenant: string }> = []
  const seeds: Record<string, string[]> = {}

  beforeAll(async () => {
    const admins = { acme: await mintAdminKeyOffline(dataDir, 'acme'), globex: await mintAdminKeyOffline(dataDir, 'globex') }
    // limits low enough that this load meets them: each tenant may make 80 requests a second
    const config = join(dataDir, 'limits.yaml')
    writeFileSync(config, 'rate_limits:\n  per_key: { points: 200, window_s: 1 }\n  per_tenant: { points: 80, window_s: 1 }\n')
    d = await startDaemonProcess({ dataDir, env: { AUTH_PROVIDER: 'standard', SVC_SANDBOX_WORKERS: '2', SVC_CONFIG: config } })
    for (const [tenant, admin] of Object.entries(admins)) {
      seeds[tenant] = []
      for (let i = 0; i < 5; i++) {
        const r = await call(`${d.url}/api/v1/functions/create`, 'POST', { function_name: `seed${i}`, signature: '(a, b)', language: 'javascript', source_code: `function seed${i}(a, b) { return a * b + ${i} }`, tags: ['seed'] }, { authorization: `Bearer ${admin}` })
        seeds[tenant]!.push(r.body.rufid_short as string)
      }
    }
    for (let c = 0; c < CLIENTS; c++) {
      const tenant = c % 2 === 0 ? 'acme' : 'globex'
      const r = await call(`${d.url}/api/v1/auth/v2/api-keys`, 'POST', { name: `client${c}`, scopes: ['functions:create', 'functions:read', 'functions:execute'], expires_days: 1 }, { authorization: `Bearer ${admins[tenant]}` })
      keys.push({ key: r.body.api_key as string, tenant })
    }
  }, 120_000)

  afterAll(async () => {
    await d?.stop('SIGKILL')
    removeDir(dataDir)
  })

  it('no 5xx, no acknowledged create lost, memory bounded', async () => {
    const rec = recordFault('load.mixed', {
      fault: `${CLIENTS} clients (own keys, 2 tenants; limits 200/s a key, 80/s a tenant) for ${SECONDS} s: 10% creates, 50% executions, 25% resolutions, 15% searches; a client told 429 waits Retry-After`,
      expectation: 'no 5xx (429 with Retry-After when over a limit); every acknowledged create resolves afterwards; daemon and worker memory bounded',
    })
    const workersRss = () => childPids(d.pid).reduce((sum, pid) => sum + treeRssBytes(pid), 0)
    // warm: every seed run once on each worker
    for (const tenant of Object.keys(seeds)) for (const short of seeds[tenant]!) await call(`${d.url}/api/v1/functions/${short}/execute`, 'POST', { arguments: { a: 1, b: 2 } }, { authorization: `Bearer ${keys.find((k) => k.tenant === tenant)!.key}` })
    const before = { daemon: rssBytes(d.pid), workers: workersRss() }
    const peak = { ...before }
    const sampler = setInterval(() => {
      peak.daemon = Math.max(peak.daemon, rssBytes(d.pid))
      peak.workers = Math.max(peak.workers, workersRss())
    }, 500)
    const statuses: Record<string, number> = {}
    const latencies: number[] = []
    const acked: Array<{ short: string; key: string }> = []
    const bad: string[] = []
    const end = Date.now() + SECONDS * 1000
    const client = async (c: number): Promise<void> => {
      const { key, tenant } = keys[c]!
      const auth = { authorization: `Bearer ${key}` }
      const mine: string[] = []
      for (let i = 0; Date.now() < end; i++) {
        const p = (i * 7919 + c * 104729) % 100
        const pool = [...seeds[tenant]!, ...mine]
        const target = pool[(i + c) % pool.length]!
        const started = performance.now()
        let r
        if (p < 10) {
          r = await call(`${d.url}/api/v1/functions/create`, 'POST', { function_name: `c${c}_${i}`, signature: '(a, b)', language: 'javascript', source_code: `function c${c}_${i}(a, b) { return a + b + ${i} }` }, auth)
          if (r.status === 201) {
            acked.push({ short: r.body.rufid_short as string, key })
            mine.push(r.body.rufid_short as string)
          }
        } else if (p < 60) {
          r = await call(`${d.url}/api/v1/functions/${target}/execute`, 'POST', { arguments: { a: c, b: i } }, auth)
        } else if (p < 85) {
          r = await call(`${d.url}/api/v1/functions/resolve`, 'POST', { rufid: target }, auth)
        } else {
          r = await call(`${d.url}/v1/marketplace/functions/search?q=seed&limit=10`, 'GET', undefined, auth)
        }
        latencies.push(performance.now() - started)
        statuses[r.status] = (statuses[r.status] ?? 0) + 1
        if (r.status >= 500) bad.push(`${r.status} ${JSON.stringify(r.body).slice(0, 200)}`)
        if (r.status === 429) {
          expect(r.headers.get('retry-after')).toMatch(/^\d+$/)
          await sleep(Number(r.headers.get('retry-after')) * 1000)
        }
      }
    }
    await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)))
    clearInterval(sampler)
    await sleep(2000)
    const after = { daemon: rssBytes(d.pid), workers: workersRss() }
    // every acknowledged create is there
    let lost = 0
    for (const { short, key } of acked) {
      let r = await call(`${d.url}/api/v1/functions/resolve`, 'POST', { rufid: short }, { authorization: `Bearer ${key}` })
      while (r.status === 429) {
        await sleep(Number(r.headers.get('retry-after') ?? 1) * 1000)
        r = await call(`${d.url}/api/v1/functions/resolve`, 'POST', { rufid: short }, { authorization: `Bearer ${key}` })
      }
      if (r.status !== 200) lost++
    }
    const sorted = [...latencies].sort((x, y) => x - y)
    const pct = (q: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! * 10) / 10
    const requests = latencies.length
    expect(bad).toEqual([])
    expect(lost).toBe(0)
    expect(acked.length).toBeGreaterThan(0)
    // bounded: well under a gigabyte each, and no runaway growth over the run
    expect(after.daemon).toBeLessThan(1024 * MiB)
    expect(after.workers).toBeLessThan(1536 * MiB)
    expect(after.daemon - before.daemon).toBeLessThan(384 * MiB)
    const mb = (n: number) => Math.round(n / MiB)
    rec.figures({
      clients: CLIENTS, seconds: SECONDS, requests, requests_per_s: Math.round(requests / SECONDS), p50_ms: pct(0.5), p99_ms: pct(0.99),
      ...Object.fromEntries(Object.entries(statuses).map(([s, n]) => [`http_${s}`, n])), acknowledged_creates: acked.length, lost_creates: lost,
      daemon_rss_mb_before: mb(before.daemon), daemon_rss_mb_peak: mb(peak.daemon), daemon_rss_mb_after: mb(after.daemon),
      workers_rss_mb_before: mb(before.workers), workers_rss_mb_peak: mb(peak.workers), workers_rss_mb_after: mb(after.workers),
    })
    rec.summary(`${requests} requests (${Math.round(requests / SECONDS)}/s, p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms): ${Object.entries(statuses).map(([s, n]) => `${n}×${s}`).join(', ')}; ` +
      `${acked.length} creates acknowledged, 0 lost; RSS daemon ${mb(before.daemon)}→${mb(peak.daemon)}→${mb(after.daemon)} MB, workers ${mb(before.workers)}→${mb(peak.workers)}→${mb(after.workers)} MB (before→peak→after)`)
  }, (SECONDS + 120) * 1000)
})
