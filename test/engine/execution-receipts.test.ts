// How execution records keep their receipts (src/engine/storage/execution-receipts.ts), in process:
// a real engine on a memory LevelDB reopened between steps, a real sandbox, a signer over a libp2p
// key with a certificate from a test federation CA. A record holds its receipt's digest; the
// receipt is stored once, its certificate once; every reader gets the receipt back as it was
// signed, after the result cache forgot it, after a restart, and from records of the previous
// build (receipt inline).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { receiptDigest, verifyReceipt, type Receipt, type ReceiptSigner } from '../../src/core/receipt.js'
import type { EngineComponents, ExecutionRecord, LevelDatabase } from '../../src/engine/index.js'
import { issueNodeCertificate } from '../../src/federation/certificates.js'
import { receiptSignerOf } from '../../src/federation/receipt-signer.js'
import { createTestEngine, principal, realSandbox, rejectionOf, type TestEngine } from '../fixtures/engine.js'
import { addJs } from '../fixtures/functions.js'
import { newIdentity, testCa } from '../federation/fixtures.js'
import { MemoryLevel } from 'memory-level'

const dev = principal('acme')
const pureAdd = { ...addJs, function_name: 'addPure', source_code: 'function addPure(a, b) { return a + b }', manifest: { schemaVersion: '1.0', name: 'addPure', deterministic: true } }

/** The values of one sublevel of a closed-then-reopened database, by key. */
async function sublevel(db: LevelDatabase, name: string): Promise<Map<string, unknown>> {
  const out = new Map<string, unknown>()
  for await (const [k, v] of db.sublevel<string, unknown>(name, { valueEncoding: 'json' }).iterator()) out.set(k, v)
  return out
}

describe('execution records refer to their receipts', () => {
  let real: EngineComponents['sandbox']
  let sandbox: EngineComponents['sandbox']
  let sandboxCalls = 0
  let signer: ReceiptSigner
  const open: TestEngine[] = []

  const start = async (db: LevelDatabase, resultCache?: { maxEntries: number; maxBytes: number; maxResultBytes: number }): Promise<TestEngine> => {
    const t = await createTestEngine({ sandbox, db, ...(resultCache ? { resultCache } : {}) })
    t.engine.useReceiptSigner(signer)
    open.push(t)
    return t
  }
  /** stops the engine (its records are written, the database closed) */
  const stop = async (t: TestEngine): Promise<void> => {
    await t.engine.stop()
    open.splice(open.indexOf(t), 1)
  }

  beforeAll(async () => {
    real = await realSandbox(1)
    await real.start()
    // one sandbox for every engine of the file: an engine's stop leaves it running
    sandbox = { start: async () => undefined, stop: async () => undefined, execute: (req) => { sandboxCalls++; return real.execute(req) } }
    const identity = await newIdentity()
    signer = receiptSignerOf(identity.privateKey, identity.peerId, issueNodeCertificate(testCa(), identity.peerId).certPem)
  }, 60_000)
  afterAll(async () => {
    for (const t of [...open]) await t.engine.stop()
    await real?.stop()
  })

  it('stores each receipt once and the certificate once; a cached answer writes only a reference; every read gives the signed receipt back', async () => {
    const db = new MemoryLevel<string, unknown>({ valueEncoding: 'json' }) as unknown as LevelDatabase
    const t = await start(db)
    const { rufid } = await t.engine.functions.create(dev, pureAdd)
    const target = t.engine.functions.target(dev, rufid)
    const miss = await t.engine.executions.execute(dev, target, { a: 20, b: 22 })
    const hits = [
      await t.engine.executions.execute(dev, target, { a: 20, b: 22 }),
      await t.engine.executions.execute(dev, target, { a: 20, b: 22 }),
    ]
    const other = await t.engine.executions.execute(dev, target, { a: 1, b: 2 })
    expect(hits.map((h) => h.cached)).toEqual([true, true])
    const signed = miss.receipt!
    // read while the records still wait for the disk, then after a restart
    expect(JSON.stringify((await t.engine.executions.get(dev, hits[0]!.execution_id)).receipt)).toBe(JSON.stringify(signed))
    await stop(t)

    await db.open()
    const executions = await sublevel(db, 'executions')
    const receipts = await sublevel(db, 'receipts')
    const certificates = await sublevel(db, 'receipt_certificates')
    await db.close()
    for (const r of [miss, ...hits, other]) {
      const stored = executions.get(r.execution_id) as Record<string, unknown>
      expect(stored).not.toHaveProperty('receipt')
      expect(stored.receipt_ref).toBe(receiptDigest(r.receipt!))
    }
    // a cached answer's record is small: no receipt, no certificate in it
    expect(JSON.stringify(executions.get(hits[1]!.execution_id)).length).toBeLessThan(700)
    expect(signed.certificate.length).toBeGreaterThan(1000)
    // two receipts signed (the miss and the other arguments), one certificate
    expect([...receipts.keys()].sort()).toEqual([receiptDigest(signed), receiptDigest(other.receipt!)].sort())
    expect([...certificates.values()]).toEqual([signer.certificatePem])
    expect((receipts.get(receiptDigest(signed)) as { certificate: unknown }).certificate).toEqual({ sha256: expect.stringMatching(/^[0-9a-f]{64}$/) })

    const again = await start(db)
    for (const h of hits) {
      const read = await again.engine.executions.get(dev, h.execution_id)
      expect(read).toMatchObject({ cached: true, result: 42, status: 'success' })
      // the same bytes, member order included
      expect(JSON.stringify(read.receipt)).toBe(JSON.stringify(signed))
      expect(JSON.stringify(await again.engine.executions.receiptOf(dev, h.execution_id))).toBe(JSON.stringify(signed))
      expect(verifyReceipt(read.receipt, { caCertPem: testCa().certPem, args: { a: 20, b: 22 }, result: 42 }).certified).toBe(true)
    }
    expect((await again.engine.executions.get(dev, other.execution_id)).receipt).toEqual(other.receipt)
    // another tenant still reads none of it
    expect((await rejectionOf(again.engine.executions.receiptOf(principal('other'), hits[0]!.execution_id))).code).toBe(1011)
    await stop(again)
  })

  it('keeps a receipt readable after the bounded result cache evicted its entry, and after a restart', async () => {
    const db = new MemoryLevel<string, unknown>({ valueEncoding: 'json' }) as unknown as LevelDatabase
    const t = await start(db, { maxEntries: 1, maxBytes: 2 ** 20, maxResultBytes: 2 ** 16 })
    const { rufid } = await t.engine.functions.create(dev, { ...pureAdd, function_name: 'addOne', source_code: 'function addOne(a, b) { return a + b }', manifest: { ...pureAdd.manifest, name: 'addOne' } })
    const target = t.engine.functions.target(dev, rufid)
    const first = await t.engine.executions.execute(dev, target, { a: 1, b: 1 })
    const hit = await t.engine.executions.execute(dev, target, { a: 1, b: 1 })
    expect(hit.cached).toBe(true)
    // another result takes the only place: the first entry is evicted (the same call runs again)
    await t.engine.executions.execute(dev, target, { a: 2, b: 2 })
    expect(t.engine.executions.results.size).toBe(1)
    const before = sandboxCalls
    const rerun = await t.engine.executions.execute(dev, target, { a: 1, b: 1 })
    expect(sandboxCalls).toBe(before + 1)
    expect(rerun.cached).toBeUndefined()
    expect(rerun.receipt).not.toEqual(first.receipt)
    // the hit's record still has the receipt it was answered with
    expect(JSON.stringify((await t.engine.executions.get(dev, hit.execution_id)).receipt)).toBe(JSON.stringify(first.receipt))
    await stop(t)
    const again = await start(db)
    expect(JSON.stringify((await again.engine.executions.get(dev, hit.execution_id)).receipt)).toBe(JSON.stringify(first.receipt))
    expect(JSON.stringify((await again.engine.executions.get(dev, first.execution_id)).receipt)).toBe(JSON.stringify(first.receipt))
    await stop(again)
  })

  /** One execution of a fresh function `name` on a fresh database, the engine stopped, the database open. */
  const executedOnce = async (name: string, args: Record<string, number>): Promise<{ db: LevelDatabase; run: ExecutionRecord }> => {
    const db = new MemoryLevel<string, unknown>({ valueEncoding: 'json' }) as unknown as LevelDatabase
    const t = await start(db)
    const { rufid } = await t.engine.functions.create(dev, { ...addJs, function_name: name, source_code: `function ${name}(a, b) { return a + b }` })
    const run = await t.engine.executions.execute(dev, t.engine.functions.target(dev, rufid), args)
    await stop(t)
    await db.open()
    return { db, run }
  }

  it('reads records written by the previous build (receipt inline) as they are', async () => {
    const { db, run } = await executedOnce('addOld', { a: 3, b: 4 })
    // what the previous build wrote: the whole receipt in the record, no receipts table entry
    const legacy = { ...run, execution_id: 'ex_01JD8X9R6Q4M2N0P5S7T3V1W9Y' }
    await db.sublevel<string, unknown>('executions', { valueEncoding: 'json' }).put(legacy.execution_id, legacy)
    await db.close()
    const again = await start(db)
    const read = await again.engine.executions.get(dev, legacy.execution_id)
    expect(read.receipt).toEqual(run.receipt)
    expect(read).not.toHaveProperty('receipt_ref')
    expect(await again.engine.executions.receiptOf(dev, legacy.execution_id)).toEqual(run.receipt)
    await stop(again)
  })

  it('reads a record whose receipt is missing from a damaged database as a record without one (no crash)', async () => {
    const { db, run } = await executedOnce('addLost', { a: 5, b: 6 })
    await db.sublevel<string, unknown>('receipts', { valueEncoding: 'json' }).del(receiptDigest(run.receipt as Receipt))
    await db.close()
    const again = await start(db)
    expect(await again.engine.executions.get(dev, run.execution_id)).toMatchObject({ status: 'success', result: 11, receipt: null })
    expect(await rejectionOf(again.engine.executions.receiptOf(dev, run.execution_id))).toMatchObject({ code: 1011, details: { resource: 'receipt' } })
    await stop(again)
  })
})
