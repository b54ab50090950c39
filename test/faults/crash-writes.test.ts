// kill -9 of the daemon in the middle of mixed writes (create, delete, deploy, key mint, key revoke),
// round after round on one data directory: every acknowledged write is there after the restart,
// in-flight ones are all or nothing, the catalog check finds nothing half-written, the replication
// digest is the same before and after a restart, and the sandbox workers die with their daemon.
import { writeFileSync } from 'node:fs'
import { computeRufid } from '../../src/core/rufid.js'
import { afterAll, describe, expect, it } from 'vitest'
import { call, removeDir, startDaemonProcess, tempDataDir, type DaemonProcess } from '../fixtures/daemon-process.js'
import { recordFault, SOAK } from './fault-record.js'
import { adminKeyOf, childPids, inspectOffline, processTree, sleep } from './fault-fixtures.js'

const ROUNDS = SOAK ? 60 : 20
const WRITERS = 4

interface Created { short: string; name: string; deleted: 'no' | 'acked' | 'in-flight' }
interface Key { id: string; key: string; revoked: 'no' | 'acked' | 'in-flight' }
interface Lineage { name: string; branchKey?: string; acked: number; attempted: number; broken?: boolean }

/** Seeded, so a failing round can be replayed. */
function random(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

describe('kill -9 in the middle of mixed writes (real daemon processes)', () => {
  const dataDir = tempDataDir()
  afterAll(() => removeDir(dataDir))

  it(`${ROUNDS} rounds: acknowledged writes survive, nothing half-written, digest stable, workers gone`, async () => {
    const rec = recordFault('crash.mixed-writes', {
      fault: `kill -9 of the daemon at a random moment (0.3–1.5 s) while ${WRITERS} clients create, delete, deploy, mint and revoke keys; ${ROUNDS} rounds on one data directory`,
      expectation: 'every acknowledged write present after restart (revoked keys refused, deleted functions gone, branch heads at the last acknowledged deploy or a later one in flight); catalog check clean; replication digest unchanged by the restart; workers exit with the daemon',
    })
    const rnd = random(16_2026)
    const created: Created[] = []
    const keys: Key[] = []
    const lineages: Lineage[] = []
    let adminKey = ''
    let offlineDigest: string | undefined
    const totals = { acknowledged: 0, in_flight_at_kill: 0, checked_after_restart: 0, orphan_workers: 0 }
    const restartMs: number[] = []
    // versions the catalog holds but the replication log lacks (none since a create or delete and
    // its record are one batch; see catalog-check.test.ts)
    const halfReplicated = new Set<string>()
    // durability, not the rate limits, is under test: the checks after each restart come in bursts
    // that the default 200 requests/s per key would refuse (429) on a fast machine
    const configFile = `${dataDir}.config.yaml`
    writeFileSync(configFile, 'rate_limits:\n  per_key: { points: 100000, window_s: 1 }\n  per_tenant: { points: 100000, window_s: 1 }\n')
    let d: DaemonProcess | undefined
    try {
      for (let round = 1; round <= ROUNDS; round++) {
        const starting = Date.now()
        d = await startDaemonProcess({ dataDir, env: { AUTH_PROVIDER: 'standard', SVC_SANDBOX_WORKERS: '1', SVC_CONFIG: configFile } })
        restartMs.push(Date.now() - starting)
        if (round === 1) adminKey = adminKeyOf(d.output())
        const auth = { authorization: `Bearer ${adminKey}` }
        const url = d.url
        const req = (method: string, path: string, body?: unknown, headers: Record<string, string> = auth) => call(`${url}${path}`, method, body, headers)

        // 1. the restart changed nothing the previous kill left
        const digest = (await req('GET', '/api/v1/federation/catalog/digest')).body.digest as string
        if (offlineDigest !== undefined) expect(digest, `round ${round}: digest after restart`).toBe(offlineDigest)

        // 2. every acknowledged write of every earlier round (all of them in the last round)
        const sample = <T>(items: T[]): T[] => (round === ROUNDS || items.length <= 25 ? items : items.filter(() => rnd() < 25 / items.length))
        for (const f of sample(created)) {
          const r = await req('POST', '/api/v1/functions/resolve', { rufid: f.short })
          if (f.deleted === 'no') expect(r.status, `round ${round}: acknowledged create ${f.short}`).toBe(200)
          if (f.deleted === 'acked') expect(r.status, `round ${round}: acknowledged delete ${f.short}`).toBe(404)
          totals.checked_after_restart++
        }
        for (const k of sample(keys)) {
          const r = await req('GET', '/api/v1/auth/whoami', undefined, { authorization: `Bearer ${k.key}` })
          if (k.revoked === 'no') expect(r.status, `round ${round}: acknowledged key ${k.id}`).toBe(200)
          if (k.revoked === 'acked') {
            expect(r.status, `round ${round}: acknowledged revoke ${k.id}`).toBe(401)
            await sleep(70) // failed authentications are limited per address (20/s): stay under it
          }
          totals.checked_after_restart++
        }
        for (const l of lineages.filter((x) => x.acked > 0)) {
          const heads = (await req('GET', `/api/v1/functions/branches?function_name=${l.name}`)).body.items as Array<{ branch: string; version: string }>
          const v = Number(heads.find((h) => h.branch === 'main')?.version.slice(1))
          expect(v, `round ${round}: head of ${l.name}`).toBeGreaterThanOrEqual(l.acked)
          expect(v).toBeLessThanOrEqual(l.attempted)
          l.acked = v
          l.attempted = v
          totals.checked_after_restart++
        }
        // in-flight outcomes are settled now: whatever the node holds is what the next rounds expect
        for (const f of created.filter((x) => x.deleted === 'in-flight')) {
          f.deleted = (await req('POST', '/api/v1/functions/resolve', { rufid: f.short })).status === 404 ? 'acked' : 'no'
        }
        for (const k of keys.filter((x) => x.revoked === 'in-flight')) {
          const r = await req('GET', '/api/v1/auth/whoami', undefined, { authorization: `Bearer ${k.key}` })
          expect([200, 401]).toContain(r.status)
          k.revoked = r.status === 401 ? 'acked' : 'no'
          await sleep(70)
        }

        // 3. mixed writers until the kill
        let stop = false
        const inFlight = new Set<string>()
        const writer = async (w: number): Promise<void> => {
          let lineage: Lineage = { name: `deployed_r${round}_w${w}`, acked: 0, attempted: 0 }
          lineages.push(lineage)
          for (let i = 0; !stop; i++) {
            const op = rnd()
            const tag = `r${round}w${w}i${i}`
            inFlight.add(tag)
            try {
              if (op < 0.4) {
                const fn = { function_name: `fn_${tag}`, signature: '(a)', language: 'javascript', source_code: `function fn_${tag}(a) {\n  return a + ${i}\n}\n` }
                const r = await req('POST', '/api/v1/functions/create', fn)
                if (r.status === 201) {
                  expect(r.body.rufid_short).toBe(computeRufid(fn).rufid_short)
                  created.push({ short: r.body.rufid_short as string, name: fn.function_name, deleted: 'no' })
                  totals.acknowledged++
                }
              } else if (op < 0.55) {
                const live = created.filter((f) => f.deleted === 'no')
                const victim = live[Math.floor(rnd() * live.length)]
                if (victim === undefined) continue
                victim.deleted = 'in-flight'
                const r = await req('DELETE', `/api/v1/functions/${victim.short}`)
                victim.deleted = r.status === 200 ? 'acked' : r.status === 404 ? 'acked' : 'in-flight'
                if (r.status === 200) totals.acknowledged++
              } else if (op < 0.75) {
                if (lineage.broken) {
                  lineage = { name: `deployed_r${round}_w${w}_${i}`, acked: 0, attempted: 0 }
                  lineages.push(lineage)
                }
                lineage.attempted++
                const r = await req('POST', '/api/v1/functions/deploy', {
                  function_name: lineage.name, signature: '(a)', language: 'javascript', branch: 'main',
                  source_code: `function ${lineage.name}(a) {\n  return a * ${i + 2}\n}\n`,
                  ...(lineage.branchKey ? { branch_key: lineage.branchKey } : {}),
                })
                if (r.status === 201 || r.status === 200) {
                  if (typeof r.body.branch_key === 'string') lineage.branchKey = r.body.branch_key
                  lineage.acked = Number((r.body.version as string).slice(1))
                  lineage.attempted = lineage.acked
                  totals.acknowledged++
                } else if (r.status === 403) {
                  lineage.broken = true // its first deploy committed unacknowledged: its key is unknown
                }
              } else if (op < 0.9) {
                const r = await req('POST', '/api/v1/auth/v2/api-keys', { name: `k_${tag}`, scopes: ['functions:read'], expires_days: 1 })
                if (r.status === 201) {
                  keys.push({ id: r.body.key_id as string, key: r.body.api_key as string, revoked: 'no' })
                  totals.acknowledged++
                }
              } else {
                const live = keys.filter((k) => k.revoked === 'no')
                const victim = live[Math.floor(rnd() * live.length)]
                if (victim === undefined) continue
                victim.revoked = 'in-flight'
                const r = await req('DELETE', `/api/v1/auth/v2/api-keys/${victim.id}`)
                if (r.status === 200) {
                  victim.revoked = 'acked'
                  totals.acknowledged++
                }
              }
              inFlight.delete(tag)
            } catch {
              // the connection died with the daemon: this write stays in flight
              return
            }
          }
        }
        const writers = Array.from({ length: WRITERS }, (_, w) => writer(w))
        await sleep(300 + rnd() * 1200)
        const workers = childPids(d.pid).flatMap(processTree)
        d.proc.kill('SIGKILL')
        await d.exited
        stop = true
        await Promise.allSettled(writers)
        totals.in_flight_at_kill += inFlight.size
        // the sandbox workers notice their daemon is gone and exit
        const deadline = Date.now() + 10_000
        while (workers.some((pid) => childAlive(pid)) && Date.now() < deadline) await sleep(100)
        totals.orphan_workers += workers.filter((pid) => childAlive(pid)).length
        d = undefined

        // 4. what the next start will find: a consistent catalog
        const inspection = await inspectOffline(dataDir)
        offlineDigest = inspection.digest
        for (const p of inspection.problems) {
          if (p.kind === 'not_replicated') halfReplicated.add(p.key)
        }
        expect(inspection.problems.filter((p) => p.kind !== 'not_replicated'), `round ${round}`).toEqual([])
      }
    } finally {
      await d?.stop('SIGKILL')
    }
    expect(totals.orphan_workers).toBe(0)
    const medianRestart = [...restartMs].sort((a, b) => a - b)[Math.floor(restartMs.length / 2)]!
    rec.figures({ rounds: ROUNDS, ...totals, half_replicated_versions: halfReplicated.size, functions_at_end: created.length, keys_at_end: keys.length, median_restart_ms: medianRestart })
    rec.summary(`${ROUNDS} kills; ${totals.acknowledged} acknowledged writes, ${totals.checked_after_restart} checks after restarts, all held; ${totals.in_flight_at_kill} writes in flight at the kills; ` +
      `digest equal across every restart (median restart ${(medianRestart / 1000).toFixed(1)} s); 0 orphan workers; versions stored but missing from the replication log (a create or delete and its record are one batch since issue 16): ${halfReplicated.size}`)
    if (halfReplicated.size > 0) console.log(`half-replicated versions (catalog written, replication log not): ${[...halfReplicated].join(', ')}`)
  }, (SOAK ? 60 : 20) * 40_000)
})

function childAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
