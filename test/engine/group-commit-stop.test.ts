// A stop out of time (issue 27): a group commit whose database refuses every batch (a full disk)
// retries while the database is open, so a stop that waited for its flush never ended. The stop
// now counts what waits (`unwritten`) and gives it up (`abandon`): the waiting flush rejects, no
// retry is scheduled, and the store and the audit log say what they lose.
import { MemoryLevel } from 'memory-level'
import { afterEach, describe, expect, it } from 'vitest'
import { AuditLog, createCatalogStore, type ExecutionRecord, type LevelDatabase } from '../../src/engine/index.js'
import { GroupCommit, type JsonSublevel } from '../../src/engine/storage/group-commit.js'

const dbs: LevelDatabase[] = []
afterEach(async () => {
  for (const db of dbs.splice(0)) if (db.status === 'open') await db.close()
})

/** An open in-memory database whose batches all fail (and counts the attempts) until `refusing.on` is false. */
async function refusingDb(): Promise<{ db: LevelDatabase; attempts: () => number; refusing: { on: boolean } }> {
  const db = new MemoryLevel<string, unknown>({ valueEncoding: 'json' }) as unknown as LevelDatabase
  dbs.push(db)
  await db.open()
  const real = db.batch.bind(db) as (ops: unknown[], options?: object) => Promise<void>
  const refusing = { on: true }
  let attempts = 0
  ;(db as unknown as { batch: unknown }).batch = (ops: unknown[], options?: object) => {
    attempts++
    if (refusing.on) return Promise.reject(new Error('IO error: No space left on device'))
    return real(ops, options)
  }
  return { db, attempts: () => attempts, refusing }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

function record(id: string): ExecutionRecord {
  return {
    execution_id: id, rufid: 'rufid:abcdefghijkl:v1:acme', rufid_short: 'abcdefghijkl', version: 1, tenant_id: 'acme',
    function_name: 'add', language: 'javascript', logs: [], user: 'dev', status: 'success', started_at: new Date().toISOString(),
  } as ExecutionRecord
}

describe('GroupCommit on a database that refuses every write', () => {
  it('counts what waits by sublevel, and abandon() ends the waiting flush and every retry', async () => {
    const { db, attempts } = await refusingDb()
    const records = db.sublevel<string, unknown>('executions', { valueEncoding: 'json' }) as unknown as JsonSublevel
    const stats = db.sublevel<string, unknown>('function_stats', { valueEncoding: 'json' }) as unknown as JsonSublevel
    const log = new GroupCommit({ flushMs: 5 }, { db })
    await log.write([{ sublevel: records, key: 'r1', value: 1 }, { sublevel: stats, key: 's1', value: 1 }])
    await log.write([{ sublevel: records, key: 'r2', value: 2 }])
    let settled: 'pending' | 'resolved' | 'rejected' = 'pending'
    const flushed = log.flush().then(() => { settled = 'resolved' }, () => { settled = 'rejected' })
    await sleep(200)
    // still retrying, still waiting: this is what kept a stop on a full disk from ever ending
    expect(settled).toBe('pending')
    expect(attempts()).toBeGreaterThan(1)
    expect(Object.fromEntries(log.unwritten())).toEqual({ executions: 2, function_stats: 1 })
    log.abandon(new Error('stopping'))
    await flushed
    expect(settled).toBe('rejected')
    const after = attempts()
    await sleep(200)
    expect(attempts()).toBe(after)
    expect(log.unwritten().size).toBe(0)
    await expect(log.write([{ sublevel: records, key: 'r3', value: 3 }])).rejects.toThrow('stopping')
    await expect(log.flush()).rejects.toThrow('stopping')
  })

  it('writes a value the caller encoded as its text', async () => {
    const db = new MemoryLevel<string, unknown>({ valueEncoding: 'json' }) as unknown as LevelDatabase
    dbs.push(db)
    await db.open()
    const sub = db.sublevel<string, unknown>('things', { valueEncoding: 'json' }) as unknown as JsonSublevel
    const log = new GroupCommit({ flushMs: 60_000 }, { db })
    const value = { a: 1 }
    await log.write([{ sublevel: sub, key: 'k', value, encoded: JSON.stringify(value) }])
    await log.flush()
    expect(await sub.get('k')).toEqual(value)
  })
})

describe('the store and the audit log, stopped on a database that refuses writes', () => {
  it('say what they hold unwritten, and give it up so that the stop ends', async () => {
    const { db } = await refusingDb()
    const store = createCatalogStore({ db }, { executionFlushMs: 5 })
    await store.start()
    const audit = new AuditLog({ retentionDays: 0, sweepIntervalMs: 60_000 }, { db, groupCommit: store.groupCommitFor(db, 5) })
    await store.putExecution(record('ex_01JAAAAAAAAAAAAAAAAAAAAAAA'), { usage_count: 1, success_count: 1, total_execution_time_ms: 1 })
    await audit.record({ operation: 'rufid.execute', rufid: null, user: 'dev', tenant: 'acme', ip: '127.0.0.1', result: 'success', duration_ms: 1 })
    let stopped = false
    const stopping = audit.stop().then(() => store.stop()).finally(() => { stopped = true }).catch(() => undefined)
    await sleep(150)
    expect(stopped).toBe(false)
    expect(Object.fromEntries(store.unwritten())).toEqual({ executions: 1, function_stats: 1, audit: 1, tenant_usage: 1 })
    // the shared group commit is counted once, by the store
    expect(audit.unwritten()).toBe(0)
    const reason = new Error('stopping')
    audit.abandon(reason)
    store.abandonWrites(reason)
    await stopping
    expect(stopped).toBe(true)
  })

  it('an audit log with its own group commit counts its entries and its pending refusal summaries', async () => {
    const { db } = await refusingDb()
    const audit = new AuditLog({ retentionDays: 0, sweepIntervalMs: 60_000, refusalSummaryMs: 60_000 }, { db })
    const entry = { operation: 'rufid.execute', rufid: null, user: 'dev', tenant: 'acme', ip: '127.0.0.1', result: 'error', duration_ms: 1, code: 1005 }
    await audit.record(entry)
    // the first refusal is written at once; the next two are counted into one summary entry
    for (let i = 0; i < 3; i++) await audit.recordRefusal(entry)
    expect(audit.unwritten()).toBe(3)
    audit.abandon(new Error('stopping'))
    expect(audit.unwritten()).toBe(0)
    await expect(audit.flush()).rejects.toThrow('stopping')
  })
})
