// What a crash can lose (issue 14, README "What a crash can lose"): execution records, usage
// statistics and audit entries are group-committed (written within execution.record_flush_ms /
// audit.flush_ms, 5 ms by default), so kill -9 under execute load loses at most the ones of the
// last few milliseconds; acknowledged catalog writes (creates) are synced and never lost, and a
// graceful stop loses nothing. Checked against the daemon's LevelDB, read directly after the kill.
import { ClassicLevel } from 'classic-level'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { call, restartableDaemons } from '../fixtures/daemon-process.js'
import { addJs } from '../fixtures/functions.js'

/**
 * Anything acknowledged this long before the kill must have survived. The statement is "the
 * last flush_ms (5 ms) and the batch being written"; the margin covers a daemon whose timers run
 * late on a loaded test machine (never a reason for a record to wait longer than one flush).
 */
const SURVIVAL_MARGIN_MS = 1_000

interface Ack {
  id: string
  at: number
}

/** Closed-loop execute load on `connections` connections until `stop()`; the acknowledged executions. */
function executeLoad(url: string, connections: number): { stop(): Promise<Ack[]> } {
  const acks: Ack[] = []
  let running = true
  const loops = Array.from({ length: connections }, async () => {
    while (running) {
      try {
        const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"arguments":{"a":2,"b":3}}' })
        const body = (await res.json()) as { execution_id?: string; result?: number }
        if (res.status === 200 && body.result === 5 && body.execution_id) acks.push({ id: body.execution_id, at: Date.now() })
      } catch {
        // the daemon was killed mid-request: that request was never acknowledged
        return
      }
    }
  })
  return {
    async stop() {
      running = false
      await Promise.all(loops)
      return acks
    },
  }
}

/** The execution ids and the execute audit entries (timestamps) stored in the data directory. */
async function stored(dataDir: string): Promise<{ executions: Set<string>; auditedExecutes: number[]; stats: Record<string, { usage_count: number }> }> {
  const db = new ClassicLevel<string, unknown>(`${dataDir}/catalog`, { valueEncoding: 'json' })
  try {
    const executions = new Set<string>()
    for await (const key of db.sublevel<string, unknown>('executions', { valueEncoding: 'json' }).keys()) executions.add(key)
    const auditedExecutes: number[] = []
    for await (const entry of db.sublevel<string, { operation: string; result: string; timestamp: string }>('audit', { valueEncoding: 'json' }).values()) {
      if (entry.operation === 'rufid.execute' && entry.result === 'success') auditedExecutes.push(Date.parse(entry.timestamp))
    }
    const stats: Record<string, { usage_count: number }> = {}
    for await (const [key, value] of db.sublevel<string, { usage_count: number }>('function_stats', { valueEncoding: 'json' }).iterator()) stats[key] = value
    return { executions, auditedExecutes, stats }
  } finally {
    await db.close()
  }
}

describe('what a crash can lose (real daemon processes, kill -9 under execute load)', () => {
  const daemons = restartableDaemons()
  afterEach(() => daemons.cleanup())
  /**
   * A daemon without rate limits: the load runs as fast as the node answers (on a fast host, more
   * than the 200 requests/s a credential gets by default: the create in the middle of the load was
   * then refused with 1005, which is not what this test is about)
   */
  const start = (dir: string) => {
    const config = join(dir, 'no-rate-limits.json')
    const off = { points: 0, window_s: 1 }
    writeFileSync(config, JSON.stringify({ rate_limits: { per_key: off, per_tenant: off, per_ip_unauthenticated: off } }))
    return daemons.start(dir, { SVC_CONFIG: config })
  }

  it('loses at most the executions and audit entries of the last flush period; every create survives', async () => {
    const dir = daemons.dataDir()
    const d = await start(dir)
    const created = await call(`${d.url}/api/v1/functions/create`, 'POST', addJs)
    expect(created.status).toBe(201)
    const short = created.body.rufid_short as string
    const load = executeLoad(`${d.url}/api/v1/functions/${short}/execute`, 4)
    // a create acknowledged in the middle of the load (synced: it must survive whatever happens)
    await new Promise((r) => setTimeout(r, 700))
    const v2 = await call(`${d.url}/api/v1/functions/create`, 'POST', { ...addJs, source_code: 'function add(a, b) { return a + b + 0 }' })
    expect(v2.status).toBe(201)
    await new Promise((r) => setTimeout(r, 700))
    const killedAt = Date.now()
    d.proc.kill('SIGKILL')
    await d.exited
    const acks = await load.stop()
    expect(acks.length).toBeGreaterThan(20)

    const { executions, auditedExecutes, stats } = await stored(dir)
    const settled = acks.filter((a) => a.at < killedAt - SURVIVAL_MARGIN_MS)
    expect(settled.length).toBeGreaterThan(0)
    const lostSettled = settled.filter((a) => !executions.has(a.id))
    expect(lostSettled, 'executions acknowledged well before the kill are all stored').toEqual([])
    // what was lost, if anything, is from the last moments before the kill
    const lost = acks.filter((a) => !executions.has(a.id))
    for (const a of lost) expect(killedAt - a.at).toBeLessThan(SURVIVAL_MARGIN_MS)
    // audit entries: each is stamped before its answer left, so every settled execute has one
    // stamped before the margin too
    expect(auditedExecutes.filter((t) => t < killedAt - SURVIVAL_MARGIN_MS).length).toBeGreaterThanOrEqual(settled.length)
    // usage statistics are written with the records: they count at least every settled execution
    const usage = Object.values(stats).reduce((n, s) => n + s.usage_count, 0)
    expect(usage).toBeGreaterThanOrEqual(settled.length)

    // the node comes back with both versions (synced catalog writes) and serves the records
    const again = await start(dir)
    for (const rufid of [created.body.rufid, v2.body.rufid]) {
      expect((await call(`${again.url}/api/v1/functions/resolve`, 'POST', { rufid })).status, String(rufid)).toBe(200)
    }
    const one = settled[settled.length - 1]!
    const record = await call(`${again.url}/v1/executions/${one.id}`, 'GET')
    expect(record.status).toBe(200)
    expect(record.body).toMatchObject({ execution_id: one.id, status: 'success' })
  }, 90_000)

  it('loses nothing on a graceful stop: every acknowledged execution and its audit entry is stored', async () => {
    const dir = daemons.dataDir()
    const d = await start(dir)
    const created = await call(`${d.url}/api/v1/functions/create`, 'POST', addJs)
    const load = executeLoad(`${d.url}/api/v1/functions/${created.body.rufid_short as string}/execute`, 4)
    await new Promise((r) => setTimeout(r, 800))
    const acks = await load.stop()
    expect((await d.stop('SIGTERM')).code).toBe(0)
    const { executions, auditedExecutes } = await stored(dir)
    expect(acks.filter((a) => !executions.has(a.id))).toEqual([])
    expect(auditedExecutes.length).toBe(acks.length)
  }, 90_000)
})
