// Storage per tenant (issue 27), in process: the usage each root tenant stores (tenant-usage.ts),
// its quota, and execution-record retention with its receipts and compaction
// (execution-retention.ts). A real engine on a memory LevelDB (reopened between steps), or on the
// node's classic-level database where the space on disk matters; a sandbox that answers a result
// of the size asked for, so that sizes are exact and nothing depends on timing.
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MemoryLevel } from 'memory-level'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { ReceiptSigner } from '../../src/core/receipt.js'
import {
  createCatalogStore, createEngine, createMetrics, EventBus, NodeDatabase, type CatalogStore, type Engine, type EngineComponents,
  type ExecutionRecord, type ExecutionRetentionInit, type LevelDatabase, type Principal,
} from '../../src/engine/index.js'
import type { SandboxOutcome, SandboxRequest } from '../../src/engine/sandbox/index.js'
import { issueNodeCertificate } from '../../src/federation/certificates.js'
import { receiptSignerOf } from '../../src/federation/receipt-signer.js'
import { principal, rejectionOf } from '../fixtures/engine.js'
import { newIdentity, testCa } from '../federation/fixtures.js'

const A = principal('acme')
const A_CHILD = principal('acme.team1') satisfies Principal
const B = principal('globex')
const KiB = 1024

/** `sized(n)` answers a string of n characters; the function's source is not run. */
const sized = { function_name: 'sized', signature: '(n)', language: 'javascript', source_code: 'function sized(n) { return "x".repeat(n) }\n' }
const pure = { ...sized, function_name: 'pureSized', source_code: 'function pureSized(n) { return "y".repeat(n) }\n', manifest: { schemaVersion: '1.0', name: 'pureSized', deterministic: true } }

/** Answers `'x'.repeat(args.n)` (or `args[0]`); counts its calls. */
function sizedSandbox(): EngineComponents['sandbox'] & { calls: number } {
  const sandbox = {
    calls: 0,
    async start() {},
    async stop() {},
    async execute(req: SandboxRequest): Promise<SandboxOutcome> {
      sandbox.calls++
      const n = Array.isArray(req.args) ? Number(req.args[0]) : Number((req.args as { n?: unknown }).n ?? 0)
      return { status: 'success', result: 'x'.repeat(n), logs: [], wallTimeMs: 1, cpuTimeMs: 1, memoryBytes: 0, workerPid: 0 }
    },
  }
  return sandbox
}

interface Node {
  engine: Engine
  store: CatalogStore
  stop(): Promise<void>
}

let signer: ReceiptSigner
const open = new Set<Node>()
const dirs: string[] = []

async function startNode(db: LevelDatabase, options: { quotaBytes?: number; retention?: ExecutionRetentionInit; sandbox?: EngineComponents['sandbox'] } = {}): Promise<Node> {
  const store = createCatalogStore({ db }, { executionFlushMs: 5, tenantQuotaBytes: options.quotaBytes ?? 0, ...(options.retention ? { retention: options.retention } : {}) })
  const engine = createEngine({
    registry: { cache: { maxEntries: 1000, ttlMs: 60_000 }, maxSourceBytes: 64 * KiB, shareBase: 'https://share.test/f/' },
    execution: { defaults: { timeoutMs: 1000, memoryMb: 32, cpuMs: 1000 }, max: { timeoutMs: 2000, memoryMb: 64, cpuMs: 2000 } },
    auth: { mode: 'standard', defaultTenant: 'default', keys: { defaultExpiresDays: 90, maxExpiresDays: 3650 } },
    rateLimits: { perKey: { points: 0, windowSeconds: 1 }, perTenant: { points: 0, windowSeconds: 1 }, perIpUnauthenticated: { points: 0, windowSeconds: 1 } },
    audit: { retentionDays: 0, sweepIntervalMs: 60_000 },
  }, { db, store, sandbox: options.sandbox ?? sizedSandbox(), metrics: createMetrics(), events: new EventBus() })
  await engine.start()
  engine.useReceiptSigner(signer)
  const node: Node = {
    engine,
    store,
    async stop() {
      open.delete(node)
      await engine.stop()
    },
  }
  open.add(node)
  return node
}

const memoryDb = (): LevelDatabase => new MemoryLevel<string, unknown>({ valueEncoding: 'json' }) as unknown as LevelDatabase

async function keys(db: LevelDatabase, sublevel: string): Promise<string[]> {
  const out: string[] = []
  for await (const key of db.sublevel<string, unknown>(sublevel, { valueEncoding: 'json' }).keys()) out.push(key)
  return out
}

const run = async (node: Node, who: Principal, rufid: string, n: number): Promise<ExecutionRecord> =>
  node.engine.executions.execute(who, node.engine.functions.target(who, rufid), { n })

beforeAll(async () => {
  const identity = await newIdentity()
  signer = receiptSignerOf(identity.privateKey, identity.peerId, issueNodeCertificate(testCa(), identity.peerId).certPem)
}, 60_000)
afterEach(async () => {
  for (const node of [...open]) await node.stop()
})
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

describe('the tenant quota', () => {
  it('refuses the writes that would pass it with 1005 tenant_quota, stores the refusal, and never refuses another tenant', async () => {
    const sandbox = sizedSandbox()
    const node = await startNode(memoryDb(), { quotaBytes: 200 * KiB, sandbox })
    const fa = (await node.engine.functions.create(A, sized)).rufid
    const fb = (await node.engine.functions.create(B, sized)).rufid
    let refusal: Awaited<ReturnType<typeof rejectionOf>> | undefined
    const stored: ExecutionRecord[] = []
    for (let i = 0; i < 20 && refusal === undefined; i++) {
      try {
        stored.push(await run(node, A, fa, 30 * KiB))
      } catch (err) {
        refusal = err as typeof refusal
      }
      // B's own records never fail, whatever A does
      expect((await run(node, B, fb, 2 * KiB)).status).toBe('success')
    }
    expect(stored.length).toBeGreaterThanOrEqual(5)
    expect(refusal?.code).toBe(1005)
    expect(refusal?.details).toMatchObject({ reason: 'tenant_quota', tenant: 'acme', quota_bytes: 200 * KiB, execution_id: expect.stringMatching(/^ex_/) })
    expect(refusal?.retryAfterSeconds).toBeGreaterThan(0)
    // the refused call's record holds the refusal, not the result
    const record = await node.engine.executions.get(A, refusal!.details.execution_id)
    expect(record).toMatchObject({ status: 'error', error: { code: 1005, details: { reason: 'tenant_quota' } }, logs: [], receipt: null })
    expect(record.result).toBeUndefined()
    // small calls fill what is left; once not even a small record fits, a call is refused before it runs
    let refusedBeforeRun = false
    for (let i = 0; i < 400 && !refusedBeforeRun; i++) {
      const calls = sandbox.calls
      const small = await run(node, A, fa, 0).then(() => undefined, (err: unknown) => err as { details: { reason: string } })
      if (small !== undefined) {
        expect(small.details.reason).toBe('tenant_quota')
        refusedBeforeRun = sandbox.calls === calls
      }
    }
    expect(refusedBeforeRun).toBe(true)
    // a child namespace counts against its root
    expect((await rejectionOf(node.engine.functions.create(A_CHILD, { ...sized, function_name: 'other' }))).details).toMatchObject({ reason: 'tenant_quota', tenant: 'acme' })
    expect(await node.engine.functions.list(A_CHILD, {})).toMatchObject({ items: [] })
    // used: within the quota, but for the small records of calls refused after they ran
    const usage = node.engine.tenantStorage(A)
    expect(usage.quota_bytes).toBe(200 * KiB)
    expect(usage.used_bytes).toBeLessThanOrEqual(200 * KiB + 4 * KiB)
    expect(usage.used_bytes).toBeGreaterThan(199 * KiB)
    expect(usage.execution_records).toBeGreaterThan(stored.length)
    expect(node.engine.tenantStorage(A_CHILD)).toEqual(usage)
    // B was never refused, and may store more: each tenant its own quota
    expect(node.engine.tenantStorage(B).used_bytes).toBeGreaterThan(stored.length * 2 * KiB)
    expect((await node.engine.functions.create(B, { ...sized, function_name: 'more' })).created).toBe(true)
  })

  it('counts what is stored exactly, across a restart, and rebuilds the count for data written before it existed', async () => {
    const db = memoryDb()
    let node = await startNode(db)
    const fa = (await node.engine.functions.create(A, sized)).rufid
    await node.engine.functions.create(A_CHILD, { ...sized, function_name: 'child' })
    for (let i = 0; i < 5; i++) await run(node, A, fa, 10 * KiB)
    const before = node.engine.tenantStorage(A)
    await node.stop()
    // what is on disk adds up to the count: the records, versions and ledger entries each take their share
    await db.open()
    let onDisk = 0
    for await (const value of db.sublevel<string, unknown>('tenant_usage', { valueEncoding: 'json' }).values()) onDisk += (value as number[])[0]!
    expect(onDisk).toBe(before.used_bytes)
    expect(before.used_bytes).toBeGreaterThan(5 * 10 * KiB)
    await db.close()
    // a clean stop stored the totals: the start takes them
    node = await startNode(db)
    expect(node.store.usageLoaded?.from).toBe('clean_stop')
    expect(node.engine.tenantStorage(A)).toEqual(before)
    await node.stop()
    // as after a crash (no totals): the start sums the entries, to the same
    await db.open()
    await db.sublevel<string, unknown>('meta', { valueEncoding: 'json' }).del('tenant_usage_totals')
    await db.close()
    node = await startNode(db)
    expect(node.store.usageLoaded).toMatchObject({ from: 'scan', accounts: 1 })
    expect(node.engine.tenantStorage(A)).toEqual(before)
    await node.stop()
    // a database of an earlier build: no usage entries, no format mark
    await db.open()
    await db.sublevel<string, unknown>('tenant_usage', { valueEncoding: 'json' }).clear()
    await db.sublevel<string, unknown>('meta', { valueEncoding: 'json' }).del('tenant_usage_format')
    await db.close()
    node = await startNode(db)
    expect(node.store.usageLoaded?.from).toBe('scan')
    const rebuilt = node.engine.tenantStorage(A)
    expect(rebuilt.execution_records).toBe(5)
    // rebuilt from the records as stored: within a percent of what the writes counted
    expect(Math.abs(rebuilt.used_bytes - before.used_bytes)).toBeLessThan(before.used_bytes / 100)
  })

  it('a cached answer sets its record aside before it answers: a flood of cached answers stops at the quota', async () => {
    const sandbox = sizedSandbox()
    const node = await startNode(memoryDb(), { quotaBytes: 300 * KiB, sandbox })
    const fa = (await node.engine.functions.create(A, pure)).rufid
    const target = node.engine.functions.target(A, fa)
    const answers = await Promise.allSettled(Array.from({ length: 40 }, () => node.engine.executions.execute(A, target, { n: 20 * KiB })))
    const refused = answers.filter((a) => a.status === 'rejected').map((a) => (a as PromiseRejectedResult).reason as { details: { reason: string } })
    expect(refused.length).toBeGreaterThan(0)
    for (const r of refused) expect(r.details.reason).toBe('tenant_quota')
    expect(sandbox.calls).toBe(1)
    await node.engine.executions.drain()
    expect(node.engine.tenantStorage(A).used_bytes).toBeLessThanOrEqual(300 * KiB + 2 * KiB)
  })

  it('counts API keys: a new one past the quota is refused, a revocation never', async () => {
    const node = await startNode(memoryDb(), { quotaBytes: 8 * KiB })
    const admin = principal('acme', ['rufid.admin', 'rufid.read'])
    const minted: string[] = []
    let refusal: { details: Record<string, unknown> } | undefined
    for (let i = 0; i < 50 && refusal === undefined; i++) {
      try {
        minted.push((await node.engine.keys.mint(admin, { name: `key${i}`, scopes: ['functions:read'] })).key_id)
      } catch (err) {
        refusal = err as typeof refusal
      }
    }
    expect(refusal?.details).toMatchObject({ reason: 'tenant_quota', tenant: 'acme' })
    expect(minted.length).toBeGreaterThan(3)
    const usage = node.engine.tenantStorage(A)
    expect(usage.used_bytes).toBeLessThanOrEqual(8 * KiB)
    expect(usage.used_bytes).toBeGreaterThan(minted.length * 300)
    // at the quota, a key can still be revoked (its record grows a little)
    expect((await node.engine.keys.revoke(admin, minted[0])).revoked_at).toBeDefined()
    expect(node.engine.tenantStorage(A).used_bytes).toBeGreaterThan(usage.used_bytes)
    // another tenant mints as usual
    expect((await node.engine.keys.mint(principal('globex', ['rufid.admin']), { name: 'mine', scopes: ['functions:read'] })).key_id).toBeTruthy()
  })

  it('an asynchronous execution refused for the quota ends as an error record with the refusal', async () => {
    const node = await startNode(memoryDb(), { quotaBytes: 64 * KiB })
    const fa = (await node.engine.functions.create(A, sized)).rufid
    const queued = await node.engine.executions.submit(A, node.engine.functions.target(A, fa), { n: 100 * KiB })
    await node.engine.executions.drain()
    const record = await node.engine.executions.get(A, queued.execution_id)
    expect(record).toMatchObject({ status: 'error', error: { code: 1005, details: { reason: 'tenant_quota' } } })
    expect(record.result).toBeUndefined()
  })
})

describe('execution-record retention', () => {
  it('keeps the newest records of each tenant, frees their usage, and answers 1011 for the others', async () => {
    const db = memoryDb()
    const node = await startNode(db, { retention: { retentionDays: 0, maxPerTenant: 5, sweepIntervalMs: 3_600_000 } })
    const fa = (await node.engine.functions.create(A, sized)).rufid
    const fb = (await node.engine.functions.create(B, sized)).rufid
    const fc = (await node.engine.functions.create(A_CHILD, sized)).rufid
    // acme's records, half of them in its child namespace (counted together)
    const a: Array<{ who: Principal; record: ExecutionRecord }> = []
    for (let i = 0; i < 12; i++) {
      const who = i % 2 === 0 ? A : A_CHILD
      a.push({ who, record: await run(node, who, who === A ? fa : fc, 4 * KiB) })
    }
    // the oldest are the smallest ids (time-ordered to the millisecond, random within one)
    a.sort((x, y) => (x.record.execution_id < y.record.execution_id ? -1 : 1))
    const b: ExecutionRecord[] = []
    for (let i = 0; i < 3; i++) b.push(await run(node, B, fb, 4 * KiB))
    const before = node.engine.tenantStorage(A)
    const swept = await node.store.sweepExecutions()
    expect(swept.records).toBe(7)
    const after = node.engine.tenantStorage(A)
    expect(after.execution_records).toBe(5)
    expect(before.used_bytes - after.used_bytes).toBe(swept.bytes)
    expect(swept.bytes).toBeGreaterThan(7 * 4 * KiB)
    for (const { who, record } of a.slice(0, 7)) expect((await rejectionOf(node.engine.executions.get(who, record.execution_id))).code).toBe(1011)
    for (const { who, record } of a.slice(7)) expect((await node.engine.executions.get(who, record.execution_id)).status).toBe('success')
    for (const r of b) expect((await node.engine.executions.get(B, r.execution_id)).status).toBe('success')
    // the swept records' receipts went with them; the remaining ones' stayed, with the certificate
    await node.stop()
    await db.open()
    const receipts = await keys(db, 'receipts')
    expect(receipts.length).toBe(5 + 3)
    expect((await keys(db, 'receipt_certificates')).length).toBe(1)
    expect((await keys(db, 'executions')).length).toBe(8)
  })

  it('removes records past their age; a receipt several records share stays while one of them does', async () => {
    const db = memoryDb()
    const sandbox = sizedSandbox()
    const node = await startNode(db, { retention: { retentionDays: 30, maxPerTenant: 0, sweepIntervalMs: 3_600_000 }, sandbox })
    const fa = (await node.engine.functions.create(A, pure)).rufid
    const target = node.engine.functions.target(A, fa)
    const computed = await node.engine.executions.execute(A, target, { n: 10 })
    // a month later: the first records are past their age, cached answers of the same result are not
    expect((await node.store.sweepExecutions(Date.now() + 20 * 86_400_000)).records).toBe(0)
    const later = Date.now() + 31 * 86_400_000
    const cached = await node.engine.executions.execute(A, target, { n: 10 })
    expect(cached.cached).toBe(true)
    expect(sandbox.calls).toBe(1)
    // a cached answer's record is stored right after the answer
    await node.engine.executions.drain()
    // everything so far is older than 30 days at `later`, but for nothing newer: all go, and the receipt
    const swept = await node.store.sweepExecutions(later)
    expect(swept.records).toBe(2)
    expect(swept.receipts).toBe(1)
    expect(swept.certificates).toBe(1)
    expect((await rejectionOf(node.engine.executions.get(A, computed.execution_id))).code).toBe(1011)
    expect(node.engine.tenantStorage(A).execution_records).toBe(0)
    // the result cache still holds the result and its receipt: a new cached answer writes both again
    const again = await node.engine.executions.execute(A, target, { n: 10 })
    expect(again.cached).toBe(true)
    expect(JSON.stringify((await node.engine.executions.get(A, again.execution_id)).receipt)).toBe(JSON.stringify(computed.receipt))
    await node.stop()
    await db.open()
    expect((await keys(db, 'receipts')).length).toBe(1)
    expect((await keys(db, 'receipt_certificates')).length).toBe(1)
  })

  it('a shared receipt stays while a remaining record refers to it', async () => {
    const db = memoryDb()
    const node = await startNode(db, { retention: { retentionDays: 0, maxPerTenant: 2, sweepIntervalMs: 3_600_000 } })
    const fa = (await node.engine.functions.create(A, pure)).rufid
    const target = node.engine.functions.target(A, fa)
    const first = await node.engine.executions.execute(A, target, { n: 10 })
    for (let i = 0; i < 3; i++) expect((await node.engine.executions.execute(A, target, { n: 10 })).cached).toBe(true)
    await node.engine.executions.drain()
    const swept = await node.store.sweepExecutions()
    expect(swept.records).toBe(2)
    expect(swept.receipts).toBe(0)
    await node.stop()
    await db.open()
    expect((await keys(db, 'receipts')).length).toBe(1)
    const [ref] = await keys(db, 'receipts')
    expect(ref).toBe((await db.sublevel<string, unknown>('executions', { valueEncoding: 'json' }).values().all()).map((r) => (r as { receipt_ref: string }).receipt_ref)[0])
    expect(first.receipt).not.toBeNull()
  })

  it('compacts what it removed: the space returns to the file system', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-retention-'))
    dirs.push(dir)
    const location = join(dir, 'catalog')
    const db = new NodeDatabase({ location, minFreeBytes: 0, checkIntervalMs: 60_000 }) as unknown as LevelDatabase
    const node = await startNode(db, { retention: { retentionDays: 0, maxPerTenant: 10, sweepIntervalMs: 3_600_000 } })
    const fa = (await node.engine.functions.create(A, sized)).rufid
    // incompressible-looking results would be kinder to LevelDB's snappy; 'x' compresses, so many of them
    for (let i = 0; i < 300; i++) await node.engine.executions.execute(A, node.engine.functions.target(A, fa), [64 * KiB + i])
    await node.store.flushExecutions()
    const sizeOf = (): number => readdirSync(location).reduce((n, f) => n + statSync(join(location, f)).size, 0)
    await (db as unknown as { compactRange(a: string, b: string): Promise<void> }).compactRange('!', '~')
    const before = sizeOf()
    const swept = await node.store.sweepExecutions()
    expect(swept.records).toBe(290)
    expect(swept.compactedRanges).toBeGreaterThan(0)
    const after = sizeOf()
    // figures for the report: bytes on disk before and after the sweep
    console.info(`retention compaction: ${before} bytes on disk before, ${after} after (${swept.records} records, ${swept.bytes} bytes charged, ${swept.ms} ms)`)
    expect(after).toBeLessThan(before / 4)
  })
})
