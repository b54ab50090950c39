// Receipts on every execution and the result cache of deterministic functions, in-process: a real
// engine (memory LevelDB), a real sandbox (isolated-vm worker), a signer over a libp2p key with a
// certificate from a test federation CA.
import { MemoryLevel } from 'memory-level'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SvcError } from '../../src/core/errors.js'
import { argumentsDigest, isReceiptError, receiptDigest, resultDigest, verifyReceipt, type Receipt } from '../../src/core/receipt.js'
import { resultCacheKey, type Engine, type EngineComponents, type ExecutionEvent, type ExecutionRecord } from '../../src/engine/index.js'
import { ResultKeys } from '../../src/engine/executions/result-cache.js'
import type { LevelDatabase } from '../../src/engine/storage/catalog-store.js'
import { DETERMINISTIC_EPOCH_MS } from '../../src/engine/sandbox/js-prelude.js'
import { issueNodeCertificate } from '../../src/federation/certificates.js'
import { receiptSignerOf } from '../../src/federation/receipt-signer.js'
import { createTestEngine, principal, realSandbox, rejectionOf } from '../fixtures/engine.js'
import { addJs } from '../fixtures/functions.js'
import { newIdentity, testCa } from '../federation/fixtures.js'

const dev = principal('acme')
const manifest = (name: string, extra: Record<string, unknown> = {}) => ({ schemaVersion: '1.0', name, ...extra })

/** Sources of nondeterminism a function can see, in one result. */
const entropyJs = {
  function_name: 'entropy',
  signature: '(n)',
  language: 'javascript',
  source_code: [
    'let calls = 0',
    'function entropy(n) {',
    '  calls++',
    '  return { n, random: [Math.random(), Math.random()], now: Date.now(), date: new Date().toISOString(), fn: Date(),',
    '    performance: typeof performance, crypto: typeof crypto, weakRef: typeof WeakRef, calls }',
    '}',
  ].join('\n'),
}

describe('receipts and the result cache (engine)', () => {
  let engine: Engine
  let sandbox: EngineComponents['sandbox']
  let sandboxCalls = 0
  let peerId: string
  const events: ExecutionEvent[] = []

  beforeAll(async () => {
    const real = await realSandbox(1)
    sandbox = { start: () => real.start(), stop: () => real.stop(), execute: (req) => { sandboxCalls++; return real.execute(req) } }
    engine = (await createTestEngine({ sandbox })).engine
    const identity = await newIdentity()
    peerId = identity.peerId
    engine.useReceiptSigner(receiptSignerOf(identity.privateKey, identity.peerId, issueNodeCertificate(testCa(), identity.peerId).certPem))
    engine.events.on('execution', (e) => events.push(e))
  }, 60_000)
  afterAll(async () => {
    await engine?.stop()
  })

  it('signs a receipt for every execution that verifies against the CA, the arguments and the result', async () => {
    const { rufid } = await engine.functions.create(dev, addJs)
    const record = await engine.executions.execute(dev, engine.functions.target(dev, rufid), { a: 2, b: 3 })
    expect(record.result).toBe(5)
    expect(record.cached).toBeUndefined()
    const receipt = record.receipt!
    expect(receipt).toMatchObject({ execution_id: record.execution_id, rufid, status: 'success', peer_id: peerId, error_code: null })
    const verified = verifyReceipt(receipt, { caCertPem: testCa().certPem, args: { a: 2, b: 3 }, result: 5 })
    expect(verified.certified).toBe(true)
    // the stored record and the receipt read give it back; the event carries its digest
    expect((await engine.executions.get(dev, record.execution_id)).receipt).toEqual(receipt)
    expect(await engine.executions.receiptOf(dev, record.execution_id)).toEqual(receipt)
    expect(events.find((e) => e.execution_id === record.execution_id)?.receipt_digest).toBe(receiptDigest(receipt))
    // a tampered result, tampered arguments or a tampered receipt fail
    expect(() => verifyReceipt(receipt, { caCertPem: testCa().certPem, result: 6 })).toThrow(/result/)
    expect(() => verifyReceipt(receipt, { args: { a: 2, b: 4 } })).toThrow(/arguments/)
    try {
      verifyReceipt({ ...receipt, result_digest: resultDigest(6) })
      expect.unreachable()
    } catch (err) {
      expect(isReceiptError(err) && err.failure).toBe('bad_signature')
    }
    // another tenant cannot read it
    expect((await rejectionOf(engine.executions.receiptOf(principal('other'), record.execution_id))).code).toBe(1011)
  })

  it('signs failed executions too (status and error code, no result digest)', async () => {
    const { rufid } = await engine.functions.create(dev, { ...addJs, function_name: 'fails', source_code: 'function fails() { throw new Error("no") }', signature: '()' })
    const err = await rejectionOf(engine.executions.execute(dev, engine.functions.target(dev, rufid), {}))
    const id = err.details.execution_id as string
    const receipt = await engine.executions.receiptOf(dev, id)
    expect(receipt).toMatchObject({ status: 'error', result_digest: null, error_code: err.code, arguments_digest: argumentsDigest({}) })
    verifyReceipt(receipt, { caCertPem: testCa().certPem, args: {} })
  })

  it('answers a deterministic function from the cache: the stored result, the original receipt, cached: true, nothing runs', async () => {
    const { rufid } = await engine.functions.create(dev, { ...addJs, function_name: 'addPure', source_code: 'function addPure(a, b) { return a + b }', manifest: manifest('addPure', { deterministic: true }) })
    const target = engine.functions.target(dev, rufid)
    const first = await engine.executions.execute(dev, target, { a: 20, b: 22 })
    expect(first.cached).toBeUndefined()
    const before = sandboxCalls
    const second = await engine.executions.execute(dev, target, { a: 20, b: 22 })
    expect(sandboxCalls).toBe(before)
    expect(second).toMatchObject({ result: 42, cached: true, cache_source: 'local', status: 'success' })
    expect(second.execution_id).not.toBe(first.execution_id)
    expect(second.receipt).toEqual(first.receipt)
    // the cached answer is an execution record of its own, readable later
    const stored = await engine.executions.get(dev, second.execution_id)
    expect(stored).toMatchObject({ cached: true, result: 42 })
    expect(events.find((e) => e.execution_id === second.execution_id)).toMatchObject({ cached: true, receipt_digest: receiptDigest(first.receipt as Receipt) })
    // other arguments, and positional arguments (another arguments digest), run
    await engine.executions.execute(dev, target, { a: 20, b: 23 })
    await engine.executions.execute(dev, target, [20, 22])
    expect(sandboxCalls).toBe(before + 2)
    // another tenant never gets this tenant's result: its own function (same content) runs
    const other = principal('other')
    const o = await engine.functions.create(other, { ...addJs, function_name: 'addPure', source_code: 'function addPure(a, b) { return a + b }', manifest: manifest('addPure', { deterministic: true }) })
    const theirs = await engine.executions.execute(other, engine.functions.target(other, o.rufid), { a: 20, b: 22 })
    expect(theirs.cached).toBeUndefined()
    expect(sandboxCalls).toBe(before + 3)
    const metrics = await engine.metrics.registry.getSingleMetricAsString('svc_result_cache_lookups_total')
    expect(metrics).toMatch(/result="hit"} [1-9]/)
    expect(metrics).toMatch(/result="miss"} [1-9]/)
  })

  it('answers a hit before its bookkeeping, which runs right after: record, usage and event are there for whoever reads them', async () => {
    const db = new MemoryLevel<string, unknown>({ valueEncoding: 'json' }) as unknown as LevelDatabase
    // the suite's sandbox, not stopped with this engine
    const borrowed: EngineComponents['sandbox'] = { start: async () => undefined, stop: async () => undefined, execute: (req) => sandbox.execute(req) }
    const own = (await createTestEngine({ sandbox: borrowed, db })).engine
    try {
      const { rufid } = await own.functions.create(dev, { ...addJs, function_name: 'addKept', source_code: 'function addKept(a, b) { return a + b }', manifest: manifest('addKept', { deterministic: true }) })
      const target = own.functions.target(dev, rufid)
      await own.executions.execute(dev, target, { a: 1, b: 1 })
      const seen: ExecutionEvent[] = []
      own.events.on('execution', (e) => seen.push(e))
      const hits = [await own.executions.execute(dev, target, { a: 1, b: 1 }), await own.executions.execute(dev, target, { a: 1, b: 1 })]
      expect(hits.map((h) => h.cached)).toEqual([true, true])
      // read at once (no event-loop turn in between): the reader runs the waiting bookkeeping first
      expect(await own.executions.get(dev, hits[1]!.execution_id)).toMatchObject({ cached: true, result: 2 })
      expect((await own.executions.usageOf((await own.functions.resolve(dev, target)).fn)).usage_count).toBe(3)
      expect(seen.map((e) => e.execution_id)).toEqual(hits.map((h) => h.execution_id))
      // without a reader, one turn later
      const third = await own.executions.execute(dev, target, { a: 1, b: 1 })
      await new Promise((r) => setImmediate(r))
      expect(seen.at(-1)).toMatchObject({ execution_id: third.execution_id, cached: true })
      // a hit the node cannot record is refused (1010), as every write is on a full disk, not answered and lost
      const full = new SvcError('SERVICE_UNAVAILABLE', 'the node cannot write: its disk is full', { details: { reason: 'disk_full' } });
      (db as unknown as { assertWritable(): void }).assertWritable = () => { throw full }
      expect((await rejectionOf(own.executions.execute(dev, target, { a: 1, b: 1 }))).code).toBe(1010)
      delete (db as unknown as { assertWritable?: unknown }).assertWritable
      // a hit answered just before the node stops is written by the stop
      const last = await own.executions.execute(dev, target, { a: 1, b: 1 })
      await own.stop()
      const again = (await createTestEngine({ sandbox: borrowed, db })).engine
      try {
        expect(await again.executions.get(dev, last.execution_id)).toMatchObject({ cached: true, result: 2 })
      } finally {
        await again.stop()
      }
    } finally {
      await own.stop()
    }
  })

  it('answers asynchronous executions of a deterministic function from the cache too, and fills it from them', async () => {
    const { rufid } = await engine.functions.create(dev, { ...addJs, function_name: 'addLater', source_code: 'function addLater(a, b) { return a + b }', manifest: manifest('addLater', { deterministic: true }) })
    const target = engine.functions.target(dev, rufid)
    const finished = async (id: string): Promise<ExecutionRecord> => {
      await engine.executions.drain()
      return engine.executions.get(dev, id)
    }
    const before = sandboxCalls
    const q1 = await engine.executions.submit(dev, target, { a: 1, b: 2 })
    expect(q1.status).toBe('queued')
    const first = await finished(q1.execution_id)
    expect(first).toMatchObject({ status: 'success', result: 3 })
    expect(first.cached).toBeUndefined()
    expect(first.receipt).toMatchObject({ execution_id: q1.execution_id, status: 'success' })
    expect(sandboxCalls).toBe(before + 1)
    // the same arguments again, asynchronously: the queued record ends as a hit, nothing runs
    const q2 = await engine.executions.submit(dev, target, { a: 1, b: 2 })
    expect(q2.status).toBe('queued')
    const second = await finished(q2.execution_id)
    expect(second).toMatchObject({ execution_id: q2.execution_id, status: 'success', result: 3, cached: true, cache_source: 'local' })
    expect(second.receipt).toEqual(first.receipt)
    expect(sandboxCalls).toBe(before + 1)
    expect(events.find((e) => e.execution_id === q2.execution_id)).toMatchObject({ cached: true, status: 'success' })
    // and synchronously
    expect(await engine.executions.execute(dev, target, { a: 1, b: 2 })).toMatchObject({ cached: true, result: 3 })
    expect(sandboxCalls).toBe(before + 1)
    // other arguments run
    expect((await finished((await engine.executions.submit(dev, target, { a: 1, b: 3 })).execution_id)).result).toBe(4)
    expect(sandboxCalls).toBe(before + 2)
  })

  it('gives a deterministic function seeded randomness, a fixed clock, no WeakRef, and no state between calls', async () => {
    const { rufid } = await engine.functions.create(dev, { ...entropyJs, manifest: manifest('entropy', { deterministic: true }) })
    const target = engine.functions.target(dev, rufid)
    const a = (await engine.executions.execute(dev, target, { n: 1 })).result as Record<string, unknown>
    const b = (await engine.executions.execute(dev, target, { n: 2 })).result as Record<string, unknown>
    expect(a.now).toBe(DETERMINISTIC_EPOCH_MS)
    expect(a.date).toBe(new Date(DETERMINISTIC_EPOCH_MS).toISOString())
    expect(String(a.fn)).toContain('2000')
    expect(a).toMatchObject({ performance: 'undefined', crypto: 'undefined', weakRef: 'undefined', calls: 1 })
    expect(b.calls).toBe(1) // a fresh context per call
    expect(a.random).not.toEqual(b.random) // seeded by the arguments
    // the same arguments give the same numbers on a run that does not come from the cache
    const again = await createTestEngine({ sandbox })
    try {
      const c = await again.engine.functions.create(dev, { ...entropyJs, manifest: manifest('entropy', { deterministic: true }) })
      const rerun = await again.engine.executions.execute(dev, again.engine.functions.target(dev, c.rufid), { n: 1 })
      expect(rerun.cached).toBeUndefined()
      expect(rerun.result).toEqual(a)
    } finally {
      await again.engine.marketplace.stop()
    }
  })

  it('never serves a function that did not declare itself deterministic from the cache', async () => {
    const { rufid } = await engine.functions.create(dev, entropyJs)
    const target = engine.functions.target(dev, rufid)
    const before = sandboxCalls
    const runs: ExecutionRecord[] = []
    for (let i = 0; i < 3; i++) runs.push(await engine.executions.execute(dev, target, { n: 1 }))
    expect(sandboxCalls).toBe(before + 3)
    expect(runs.every((r) => r.cached === undefined)).toBe(true)
    const [x, y] = runs.map((r) => r.result as { random: number[]; calls: number; now: number })
    expect(x!.random).not.toEqual(y!.random)
    expect(y!.calls).toBe(x!.calls + 1) // warm context: state persists
    expect(Math.abs(x!.now - Date.now())).toBeLessThan(600_000)
  })

  it('refuses a manifest whose deterministic is not a boolean', async () => {
    const err = await rejectionOf(engine.functions.create(dev, { ...addJs, function_name: 'bad', manifest: manifest('bad', { deterministic: 'yes' }) }))
    expect(err.code).toBe(1006)
  })
})

describe('result keys of deterministic calls', () => {
  const content = 'c'.repeat(64)
  const lock = 'l'.repeat(64)

  it('are the federation key of the call (resultCacheKey of the arguments digest), remembered or not', () => {
    const keys = new ResultKeys()
    for (const args of [{ a: 2, b: 3 }, { b: 3, a: 2 }, [2, 3], {}, { s: 'x'.repeat(5000) }]) {
      const expected = resultCacheKey({ tenant: 'acme', content_digest: content, lockfile_digest: lock, arguments_digest: argumentsDigest(args) })
      const first = keys.of('acme', content, lock, args)
      const again = keys.of('acme', content, lock, JSON.parse(JSON.stringify(args)))
      expect(first?.key).toBe(expected)
      expect(again?.key).toBe(expected)
      expect(again?.fields).toEqual({ tenant: 'acme', content_digest: content, lockfile_digest: lock, arguments_digest: argumentsDigest(args) })
    }
    // member order does not matter, the tenant, the content and the lockfile do
    expect(keys.of('acme', content, lock, { b: 3, a: 2 })?.key).toBe(keys.of('acme', content, lock, { a: 2, b: 3 })?.key)
    const base = keys.of('acme', content, lock, { a: 1 })!.key
    expect(keys.of('other', content, lock, { a: 1 })!.key).not.toBe(base)
    expect(keys.of('acme', 'd'.repeat(64), lock, { a: 1 })!.key).not.toBe(base)
    expect(keys.of('acme', content, 'm'.repeat(64), { a: 1 })!.key).not.toBe(base)
    expect(keys.of('acme', content, lock, { a: '1' })!.key).not.toBe(base)
  })

  it('are refused for arguments without a canonical form (the call runs uncached), remembered or not', () => {
    const keys = new ResultKeys()
    expect(keys.of('acme', content, lock, { s: '\ud800' })).toBeUndefined()
    expect(keys.of('acme', content, lock, { s: '\ud800' })).toBeUndefined()
    // the escaped text of the same characters is another value, with a key
    expect(keys.of('acme', content, lock, { s: '\\ud800' })?.key).toMatch(/^[0-9a-f]{64}$/)
    expect(keys.of('acme', content, lock, { d: new Date(0) } as unknown)).toBeUndefined()
  })
})
