// Group commit of execution records, statistics and audit entries (issue 14): acknowledged before
// they reach LevelDB, readable at once, written together within the flush period, in order.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MemoryLevel } from 'memory-level'
import { afterEach, describe, expect, it } from 'vitest'
import { AuditLog, createCatalogStore, NodeDatabase, type ExecutionRecord, type LevelDatabase } from '../../src/engine/index.js'
import { GroupCommit, type JsonSublevel } from '../../src/engine/storage/group-commit.js'

const dbs: LevelDatabase[] = []
const dirs: string[] = []
function memoryDb(): LevelDatabase {
  const db = new MemoryLevel<string, unknown>({ valueEncoding: 'json' }) as unknown as LevelDatabase
  dbs.push(db)
  return db
}
afterEach(async () => {
  for (const db of dbs.splice(0)) if (db.status === 'open') await db.close()
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** The node's database (classic-level on disk, with the full-disk guard), opened. */
async function nodeDb(): Promise<NodeDatabase> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-group-commit-'))
  dirs.push(dir)
  const db = new NodeDatabase({ location: join(dir, 'catalog'), minFreeBytes: 0, checkIntervalMs: 60_000 })
  dbs.push(db as unknown as LevelDatabase)
  await db.open()
  return db
}

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

describe('GroupCommit on the node database: puts encoded here, past abstract-level', () => {
  it('writes what the sublevels read back (get, iterators, other encodings), in one encoded batch', async () => {
    const node = await nodeDb()
    const db = node as unknown as LevelDatabase
    const encoded: number[] = []
    const writeEncoded = node.writeEncoded.bind(node)
    node.writeEncoded = (puts, sync) => {
      encoded.push(puts.length)
      return writeEncoded(puts, sync)
    }
    const batches = countBatches(db)
    const things = db.sublevel<string, unknown>('things', { valueEncoding: 'json' }) as unknown as JsonSublevel
    const nested = db.sublevel<string, unknown>('outer', { valueEncoding: 'json' }).sublevel<string, unknown>('inner', { valueEncoding: 'json' }) as unknown as JsonSublevel
    const log = new GroupCommit({ flushMs: 60_000 }, { db })
    const value = { text: 'é "quoted" \\ 𝄞', n: -0.5, list: [1, null, { deep: true }] }
    await log.write([{ sublevel: things, key: 'b', value }, { sublevel: things, key: 'a', value: 'plain' }, { sublevel: nested, key: 'k', value: 42 }])
    await log.flush()
    expect(encoded).toEqual([3])
    expect(batches).toEqual([]) // the public batch was not needed
    expect(await things.get('b')).toEqual(value)
    expect(await (things as unknown as LevelDatabase).keys().all()).toEqual(['a', 'b'])
    expect(await (nested as unknown as LevelDatabase).get('k')).toBe(42)
    // the same bytes abstract-level writes: read raw through the root with a utf8 view
    expect(await db.get('!things!b', { valueEncoding: 'utf8' })).toBe(JSON.stringify(value))
    expect(await db.get('!outer!!inner!k', { valueEncoding: 'utf8' })).toBe('42')
    // a sublevel with another value encoding is written the public way
    const texts = db.sublevel<string, string>('texts', { valueEncoding: 'utf8' }) as unknown as JsonSublevel
    await log.write([{ sublevel: texts, key: 't', value: 'as is' }])
    await log.flush()
    expect(encoded).toEqual([3])
    expect(batches).toEqual([1])
    expect(await (texts as unknown as LevelDatabase).get('t')).toBe('as is')
  })

  it('a closed database refuses the encoded write, and the batch is kept', async () => {
    const node = await nodeDb()
    const db = node as unknown as LevelDatabase
    const sub = db.sublevel<string, unknown>('things', { valueEncoding: 'json' }) as unknown as JsonSublevel
    const log = new GroupCommit({ flushMs: 60_000 }, { db })
    await log.write([{ sublevel: sub, key: 'k', value: 1 }])
    await node.close()
    await expect(log.flush()).rejects.toMatchObject({ code: 'LEVEL_DATABASE_NOT_OPEN' })
    expect(log.peek(sub, 'k')).toBe(1)
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

  it('the audit log flushed as often as execution records shares their batches', async () => {
    const db = memoryDb()
    const store = createCatalogStore({ db }, { executionFlushMs: 60_000 })
    await store.start()
    expect(store.groupCommitFor(db, 5)).toBeUndefined()
    expect(store.groupCommitFor(memoryDb(), 60_000)).toBeUndefined()
    const audit = new AuditLog({ retentionDays: 0, sweepIntervalMs: 60_000, flushMs: 60_000 }, { db, groupCommit: store.groupCommitFor(db, 60_000) })
    await audit.start()
    const batches = countBatches(db)
    await store.putExecution(record('ex_1'), { usage_count: 1, success_count: 1, total_execution_time_ms: 1 })
    const entry = await audit.record({ operation: 'rufid.execute', rufid: null, user: 'u', tenant: 'acme', ip: '127.0.0.1', result: 'success', duration_ms: 1 })
    await audit.flush()
    expect(batches).toEqual([4]) // the record, its usage entry (tenant storage), its function's statistics and the audit entry
    expect(await db.sublevel<string, unknown>('audit', { valueEncoding: 'json' }).get(entry.id)).toMatchObject({ operation: 'rufid.execute' })
    expect(await db.sublevel<string, unknown>('executions', { valueEncoding: 'json' }).get('ex_1')).toMatchObject({ execution_id: 'ex_1' })
    await audit.stop()
    await store.stop()
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
