// Group commit of execution records, statistics and audit entries (issue 14): acknowledged before
// they reach LevelDB, readable at once, written together within the flush period, in order.
import { MemoryLevel } from 'memory-level'
import { afterEach, describe, expect, it } from 'vitest'
import { AuditLog, createCatalogStore, type ExecutionRecord, type LevelDatabase } from '../../src/engine/index.js'
import { GroupCommit, type JsonSublevel } from '../../src/engine/storage/group-commit.js'

const dbs: LevelDatabase[] = []
function memoryDb(): LevelDatabase {
  const db = new MemoryLevel<string, unknown>({ valueEncoding: 'json' }) as unknown as LevelDatabase
  dbs.push(db)
  return db
}
afterEach(async () => {
  for (const db of dbs.splice(0)) if (db.status === 'open') await db.close()
})

/** Counts the batches a database is asked to write (and their sizes). */
function countBatches(db: LevelDatabase): number[] {
  const sizes: number[] = []
  const batch = db.batch.bind(db) as (ops: unknown[], options?: object) => Promise<void>
  ;(db as unknown as { batch: unknown }).batch = (ops: unknown[], options?: object) => {
    if (Array.isArray(ops)) sizes.push(ops.length)
    return batch(ops, options)
  }
  return sizes
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

function record(id: string, tenant = 'acme'): ExecutionRecord {
  return {
    execution_id: id, rufid: `rufid:abcdefghijkl:v1:${tenant}`, rufid_short: 'abcdefghijkl', version: 1, tenant_id: tenant,
    function_name: 'add', language: 'javascript', logs: [], user: 'dev', status: 'success', started_at: new Date().toISOString(),
  } as ExecutionRecord
}

describe('GroupCommit', () => {
  it('acknowledges at once, shows queued values to peek, and writes them in one batch within the flush period', async () => {
    const db = memoryDb()
    await db.open()
    const batches = countBatches(db)
    const sub = db.sublevel<string, unknown>('things', { valueEncoding: 'json' }) as unknown as JsonSublevel
    const log = new GroupCommit({ flushMs: 20 }, { db })
    for (let i = 0; i < 10; i++) await log.write([{ sublevel: sub, key: `k${i}`, value: { i } }])
    expect(batches).toEqual([])
    expect(log.peek(sub, 'k3')).toEqual({ i: 3 })
    expect(await sub.get('k3')).toBeUndefined()
    await sleep(80)
    expect(batches).toEqual([10])
    expect(await sub.get('k3')).toEqual({ i: 3 })
    expect(log.peek(sub, 'k3')).toBeUndefined()
  })

  it('keeps the last of several puts of one key, and flush() resolves when written', async () => {
    const db = memoryDb()
    await db.open()
    const sub = db.sublevel<string, unknown>('stats', { valueEncoding: 'json' }) as unknown as JsonSublevel
    const log = new GroupCommit({ flushMs: 1000 }, { db })
    for (let i = 1; i <= 5; i++) await log.write([{ sublevel: sub, key: 'fn', value: { count: i } }])
    expect(log.size).toBe(1)
    await log.flush()
    expect(await sub.get('fn')).toEqual({ count: 5 })
  })

  it('with flushMs 0 writes every put before write() resolves', async () => {
    const db = memoryDb()
    await db.open()
    const batches = countBatches(db)
    const sub = db.sublevel<string, unknown>('things', { valueEncoding: 'json' }) as unknown as JsonSublevel
    const log = new GroupCommit({ flushMs: 0 }, { db })
    await log.write([{ sublevel: sub, key: 'a', value: 1 }])
    expect(await sub.get('a')).toBe(1)
    await log.write([{ sublevel: sub, key: 'b', value: 2 }])
    expect(batches).toEqual([1, 1])
  })

  it('writes a batch at once when maxBatch puts wait, and makes writers wait beyond maxPending', async () => {
    const db = memoryDb()
    await db.open()
    const batches = countBatches(db)
    const sub = db.sublevel<string, unknown>('things', { valueEncoding: 'json' }) as unknown as JsonSublevel
    const log = new GroupCommit({ flushMs: 60_000, maxBatch: 4, maxPending: 6 }, { db })
    for (let i = 0; i < 4; i++) await log.write([{ sublevel: sub, key: `k${i}`, value: i }])
    await sleep(20)
    expect(batches).toEqual([4])
    // a write that finds maxPending puts waiting resolves only once they are written
    const slow = new GroupCommit({ flushMs: 60_000, maxBatch: 100, maxPending: 3 }, { db })
    for (let i = 0; i < 2; i++) await slow.write([{ sublevel: sub, key: `s${i}`, value: i }])
    expect(slow.size).toBe(2)
    await slow.write([{ sublevel: sub, key: 's2', value: 2 }])
    expect(slow.size).toBe(0)
    expect(await sub.get('s2')).toBe(2)
  })

  it('keeps a batch that failed and writes it once the database takes writes again', async () => {
    const db = memoryDb()
    await db.open()
    const sub = db.sublevel<string, unknown>('things', { valueEncoding: 'json' }) as unknown as JsonSublevel
    const real = db.batch.bind(db) as (ops: unknown[], options?: object) => Promise<void>
    let failures = 2
    ;(db as unknown as { batch: unknown }).batch = (ops: unknown[], options?: object) => {
      if (failures-- > 0) return Promise.reject(new Error('disk full'))
      return real(ops, options)
    }
    const log = new GroupCommit({ flushMs: 5 }, { db })
    await log.write([{ sublevel: sub, key: 'kept', value: 'yes' }])
    const flushed = log.flush()
    expect(log.peek(sub, 'kept')).toBe('yes')
    await flushed
    expect(await sub.get('kept')).toBe('yes')
    expect(log.lastError).toBeUndefined()
  })
})

describe('the catalog store and the audit log group-commit', () => {
  it('an execution record is readable at once and written within the flush period; stop() writes what waits', async () => {
    const db = memoryDb()
    const store = createCatalogStore({ db }, { executionFlushMs: 60_000 })
    await store.start()
    await store.putExecution(record('ex_1'), { usage_count: 1, success_count: 1, total_execution_time_ms: 1 })
    expect((await store.getExecution('ex_1'))?.execution_id).toBe('ex_1')
    expect(await store.getStats('acme', 'abcdefghijkl', 1)).toMatchObject({ usage_count: 1 })
    const raw = db.sublevel<string, unknown>('executions', { valueEncoding: 'json' })
    expect(await raw.get('ex_1')).toBeUndefined()
    // a range reader sees waiting records (they are written first)
    const seen: string[] = []
    for await (const r of store.executionsBetween('ex_0', 'ex_2')) seen.push(r.execution_id)
    expect(seen).toEqual(['ex_1'])
    await store.putExecution(record('ex_2'))
    await store.stop()
    const reopened = createCatalogStore({ db })
    await reopened.start()
    expect((await reopened.getExecution('ex_2'))?.execution_id).toBe('ex_2')
    await reopened.stop()
  })

  it('an audit entry is recorded at once, written within the flush period, and queries see it', async () => {
    const db = memoryDb()
    await db.open()
    const audit = new AuditLog({ retentionDays: 0, sweepIntervalMs: 60_000, flushMs: 60_000 }, { db })
    await audit.start()
    const entry = await audit.record({ operation: 'rufid.execute', rufid: null, user: 'u', tenant: 'acme', ip: '127.0.0.1', result: 'success', duration_ms: 1 })
    const raw = db.sublevel<string, unknown>('audit', { valueEncoding: 'json' })
    expect(await raw.get(entry.id)).toBeUndefined()
    const page = await audit.query({ tenant: 'acme' })
    expect(page.items.map((e) => e.id)).toEqual([entry.id])
    expect(await raw.get(entry.id)).toMatchObject({ operation: 'rufid.execute' })
    const second = await audit.record({ operation: 'rufid.read', rufid: null, user: 'u', tenant: 'acme', ip: '127.0.0.1', result: 'success', duration_ms: 1 })
    await audit.stop()
    expect(await raw.get(second.id)).toMatchObject({ operation: 'rufid.read' })
  })
})
