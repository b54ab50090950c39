// How a replica applies a change from another (issue 17: a gossiped change cost each member 50-70 ms
// to apply with 20 daemons on 2 cores, ~10 LevelDB round trips through the thread pool): its
// records and the version it materializes go in one batch, its reads take no turn of the event
// loop, and moves that arrived before their version are still found after a restart.
import { MemoryLevel } from 'memory-level'
import { afterAll, describe, expect, it } from 'vitest'
import type { CatalogChange, Engine, LevelDatabase } from '../../src/engine/index.js'
import { createTestEngine, principal, type TestEngine } from '../fixtures/engine.js'
import { signingReplica } from './fixtures.js'

const dev = principal('acme')
const fn = (name: string, n = 1) => ({
  function_name: name, signature: '(a)', language: 'javascript', source_code: `function ${name}(a) {\n  return a + ${n}\n}\n`,
})

const engines: TestEngine[] = []
/** every replica's certificate: changes carried by hand are checked against their origin's */
const credentials: Record<string, string> = {}
async function node(db?: LevelDatabase): Promise<TestEngine> {
  const t = await createTestEngine(db ? { db } : {})
  engines.push(t)
  const { origin, certPem } = await signingReplica(t.engine)
  credentials[origin] = certPem
  return t
}
afterAll(async () => {
  for (const t of engines) await t.engine.stop().catch(() => undefined)
})

async function changesOf(engine: Engine): Promise<CatalogChange[]> {
  const batch = await engine.replication.changesSince({})
  return [...batch.added, ...batch.updated, ...batch.deleted]
}

type Batch = (ops?: Array<{ sublevel?: { prefix?: string } }>, options?: object) => Promise<void>

describe('applying a replicated change', () => {
  it('writes the change and the version it materializes together: a write that fails leaves neither, and the change applies later', async () => {
    const a = await node()
    await a.engine.functions.create(dev, fn('together'))
    const [change] = await changesOf(a.engine)
    const db = new MemoryLevel<string, unknown>({ valueEncoding: 'json' }) as unknown as LevelDatabase
    const b = await node(db)
    // the node stops while it writes the version (its write never reaches the disk)
    const writes = db as unknown as { batch: Batch }
    const batch = writes.batch.bind(db)
    let failed = 0
    writes.batch = (ops, options) => {
      if (Array.isArray(ops) && ops.some((o) => o.sublevel?.prefix === '!functions!')) {
        failed++
        return Promise.reject(new Error('the node stopped'))
      }
      return batch(ops, options)
    }
    await expect(b.engine.replication.apply([change!], { credentials })).rejects.toThrow('the node stopped')
    expect(failed).toBe(1)
    // nothing of it is held: the vector does not count it, so a sync offers it again
    expect(b.engine.replication.sequenceOf(change!.origin)).toBe(0)
    expect((await b.engine.replication.digest()).entries).toBe(0)
    writes.batch = batch
    expect(await b.engine.replication.apply([change!], { credentials })).toMatchObject({ applied: 1, rejected: [] })
    const held = await b.engine.functions.resolve(dev, { short: (change as { fn: { rufid_short: string } }).fn.rufid_short })
    expect(held.fn.function_name).toBe('together')
    expect((await b.engine.replication.digest()).digest).toBe((await a.engine.replication.digest()).digest)
  })

  it('reads nothing through the thread pool: no async get and no iterator (an open database answers in place)', async () => {
    const a = await node()
    await a.engine.functions.create(dev, fn('inPlace'))
    await a.engine.functions.create(dev, fn('inPlace', 2))
    const changes = await changesOf(a.engine)
    const db = new MemoryLevel<string, unknown>({ valueEncoding: 'json' })
    const b = await node(db as unknown as LevelDatabase)
    const counted = db as unknown as { _get: (...args: unknown[]) => unknown; _iterator: (...args: unknown[]) => unknown }
    const get = counted._get.bind(db)
    const iterator = counted._iterator.bind(db)
    let gets = 0
    let iterators = 0
    counted._get = (...args) => {
      gets++
      return get(...args)
    }
    counted._iterator = (...args) => {
      iterators++
      return iterator(...args)
    }
    const result = await b.engine.replication.apply(changes, { credentials })
    expect(result).toMatchObject({ applied: 2, rejected: [] })
    expect({ gets, iterators }).toEqual({ gets: 0, iterators: 0 })
    // and what it wrote reads back
    for (const c of changes) {
      const { fn: version } = await b.engine.functions.resolve(dev, { short: (c as { fn: { rufid_short: string } }).fn.rufid_short })
      expect(version.function_name).toBe('inPlace')
    }
  })

  it('a move that arrived before its version is found after a restart', async () => {
    const a = await node()
    const v1 = await a.engine.branches.deploy(dev, { ...fn('moved'), branch: 'main' })
    await a.engine.branches.deploy(dev, { ...fn('moved', 2), branch: 'main', branch_key: v1.branch_key })
    // the same code as v1 again: no new version; the head moves back to v1, a move v1's change does not carry
    const back = await a.engine.branches.deploy(dev, { ...fn('moved'), branch: 'main', branch_key: v1.branch_key })
    expect(back.head.version).toBe(1)
    const changes = await changesOf(a.engine)
    const db = new MemoryLevel<string, unknown>({ valueEncoding: 'json' }) as unknown as LevelDatabase
    const before = await node(db)
    for (const c of changes.filter((x) => x.kind === 'branch')) await before.engine.replication.apply([c], { credentials })
    await before.engine.stop()
    // the same database, a new engine: the moves wait in repl_moves
    const after = await node(db)
    for (const c of changes.filter((x) => x.kind !== 'branch')) await after.engine.replication.apply([c], { credentials })
    const head = await after.engine.branches.head(dev, 'moved', 'main')
    expect(head.version).toBe(1)
    expect(head).toEqual(await a.engine.branches.head(dev, 'moved', 'main'))
    expect((await after.engine.replication.digest()).digest).toBe((await a.engine.replication.digest()).digest)
    expect((await after.engine.branches.verifyHeads()).differing).toEqual([])
  })
})
