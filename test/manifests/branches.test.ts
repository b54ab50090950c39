// Branch heads, in process (memory-level): deploy, keys, invoke, and rebuilding heads from the ledger.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { canonicalJson } from '../../src/core/canonical-json.js'
import { compareHeads, createCatalogStore, rebuildHeads, type BranchedLedgerEntry, type CatalogStore } from '../../src/engine/index.js'
import { principal, realSandbox, type TestEngine } from '../fixtures/engine.js'
import { addJs } from '../fixtures/functions.js'
import { startPackageIndex, type PackageIndexServer } from '../fixtures/package-index.js'
import { createManifestTestEngine, rejectionOf, sampleManifest } from './helpers.js'

const addV = (n: number) => ({ ...addJs, source_code: `function add(a, b) {\n  return a + b + ${n}\n}\n` })

describe('branches (in-process engine)', () => {
  let index: PackageIndexServer
  let t: TestEngine
  let store: CatalogStore
  const dev = principal('acme')

  beforeAll(async () => {
    index = await startPackageIndex()
  })
  afterAll(async () => {
    await index.close()
  })
  beforeEach(async () => {
    t = await createManifestTestEngine({ pipIndexUrl: index.pipIndexUrl, npmRegistryUrl: index.npmRegistryUrl })
    store = createCatalogStore({ db: t.db })
  })
  afterEach(async () => {
    await t.engine.stop()
  })

  const expectHeadsRebuildFromLedger = async (): Promise<void> => {
    const stored = (await store.branchHeads()).sort(compareHeads)
    const rebuilt = rebuildHeads(await store.ledgerEntries())
    expect(canonicalJson(rebuilt)).toBe(canonicalJson(stored))
    expect((await t.engine.branches.verifyHeads()).differing).toEqual([])
  }

  it('creates a branch on first deploy with a key shown once, then moves it only with that key', async () => {
    const first = await t.engine.branches.deploy(dev, { ...addV(1), manifest: sampleManifest(), branch: 'staging' })
    expect(first).toMatchObject({ version: 'v1', branch: 'staging', branch_created: true, moved: true, previous_version: null })
    expect(first.branch_key).toMatch(/^svcbk_[A-Za-z0-9_-]{43}$/)
    expect(first.fn.lockfile).not.toBeNull()
    const key = first.branch_key!
    const head = await t.engine.branches.head(dev, 'add', 'staging')
    expect(head).toMatchObject({ version: 1, rufid_short: first.rufid_short, seq: 1 })
    expect(head.key_hash).toMatch(/^scrypt\$/)
    expect(JSON.stringify(await store.ledgerEntries())).not.toContain(key)

    const second = await t.engine.branches.deploy(dev, { ...addV(2), branch: 'staging', branch_key: key })
    expect(second).toMatchObject({ version: 'v2', branch_created: false, moved: true, previous_version: 1 })
    expect(second.branch_key).toBeUndefined()
    expect((await t.engine.branches.head(dev, 'add', 'staging')).version).toBe(2)

    // wrong or missing key: 1003, and nothing is stored (not even the new version)
    const wrong = await rejectionOf(t.engine.branches.deploy(dev, { ...addV(3), branch: 'staging', branch_key: 'x'.repeat(40) }))
    expect(wrong.code).toBe(1003)
    expect(wrong.reason).toBeUndefined()
    const missing = await rejectionOf(t.engine.branches.deploy(dev, { ...addV(3), branch: 'staging' }))
    expect(missing.code).toBe(1003)
    expect((await t.engine.functions.ledger(dev, 'add')).map((e) => e.version)).toEqual([1, 2])
    expect((await t.engine.branches.head(dev, 'add', 'staging')).version).toBe(2)
    await expectHeadsRebuildFromLedger()
  })

  it('republishing what the head already points at is idempotent; an older version can be deployed back', async () => {
    const a = await t.engine.branches.deploy(dev, addV(1))
    expect(a.branch).toBe('main')
    const key = a.branch_key!
    const same = await t.engine.branches.deploy(dev, { ...addV(1), branch_key: key })
    expect(same).toMatchObject({ created: false, moved: false, version: 'v1', previous_version: 1 })
    await t.engine.branches.deploy(dev, { ...addV(2), branch_key: key })
    const back = await t.engine.branches.deploy(dev, { ...addV(1), branch_key: key })
    expect(back).toMatchObject({ created: false, moved: true, version: 'v1', previous_version: 2 })
    const ledger = (await t.engine.functions.ledger(dev, 'add')) as BranchedLedgerEntry[]
    expect(ledger.map((e) => e.version)).toEqual([1, 2])
    expect(ledger[0]!.branches!.map((m) => [m.branch, m.seq, m.from_version])).toEqual([['main', 1, null], ['main', 3, 2]])
    expect(ledger[1]!.branches!.map((m) => [m.branch, m.seq, m.from_version])).toEqual([['main', 2, 1]])
    await expectHeadsRebuildFromLedger()
  })

  it('accepts a caller-chosen key when it creates the branch, and requires it after', async () => {
    const chosen = 'my-own-branch-key-0123456789'
    const r = await t.engine.branches.deploy(dev, { ...addV(1), branch: 'prod', branch_key: chosen })
    expect(r.branch_created).toBe(true)
    expect(r.branch_key).toBe(chosen)
    expect((await t.engine.branches.deploy(dev, { ...addV(2), branch: 'prod', branch_key: chosen })).version).toBe('v2')
    expect((await rejectionOf(t.engine.branches.deploy(dev, { ...addV(3), branch: 'prod', branch_key: 'short' }))).code).toBe(1006)
  })

  it('keeps lineages, branches and tenants apart, and reports unknown branches with 1011', async () => {
    const other = principal('globex')
    const a = await t.engine.branches.deploy(dev, { ...addV(1), branch: 'staging' })
    await t.engine.branches.deploy(dev, { ...addV(2), branch: 'prod' })
    await t.engine.branches.deploy(other, { ...addV(9), branch: 'staging' })
    await t.engine.branches.deploy(dev, { function_name: 'mul', signature: '(a, b)', language: 'javascript', source_code: 'function mul(a, b) { return a * b }', branch: 'staging' })
    expect((await t.engine.branches.heads(dev, 'add')).map((h) => `${h.branch}@v${h.version}`)).toEqual(['prod@v2', 'staging@v1'])
    expect((await t.engine.branches.heads(dev)).map((h) => `${h.function_name}/${h.branch}`)).toEqual(['add/prod', 'add/staging', 'mul/staging'])
    expect((await t.engine.branches.heads(other)).map((h) => `${h.function_name}/${h.branch}@v${h.version}`)).toEqual(['add/staging@v1'])
    // globex's staging key does not move acme's staging
    expect((await rejectionOf(t.engine.branches.deploy(dev, { ...addV(5), branch: 'staging', branch_key: a.branch_key! + 'x' }))).code).toBe(1003)
    expect((await rejectionOf(t.engine.branches.head(dev, 'add', 'nope'))).code).toBe(1011)
    expect((await rejectionOf(t.engine.branches.head(dev, 'add', 'bad/name'))).code).toBe(1006)
    await expectHeadsRebuildFromLedger()
  })

  it('lets one of two concurrent first deploys create a branch; the other is refused', async () => {
    const results = await Promise.allSettled([
      t.engine.branches.deploy(dev, { ...addV(1), branch: 'race' }),
      t.engine.branches.deploy(dev, { ...addV(2), branch: 'race' }),
    ])
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult
    expect((refused.reason as { code: number }).code).toBe(1003)
    await expectHeadsRebuildFromLedger()
  })

  it('rebuilds every head from the ledger alone, through deletes, and repairs lost heads', async () => {
    const key = (await t.engine.branches.deploy(dev, { ...addV(1), branch: 'staging' })).branch_key!
    const mainKey = (await t.engine.branches.deploy(dev, addV(1))).branch_key!
    for (let i = 2; i <= 5; i++) await t.engine.branches.deploy(dev, { ...addV(i), branch: 'staging', branch_key: key })
    await t.engine.branches.deploy(dev, { ...addV(3), branch_key: mainKey })
    await t.engine.branches.deploy(principal('globex'), { ...addV(1), branch: 'staging' })
    await t.engine.functions.delete(dev, { short: (await t.engine.branches.head(dev, 'add', 'main')).rufid_short })
    await expectHeadsRebuildFromLedger()
    const stored = (await store.branchHeads()).sort(compareHeads)
    expect(stored.map((h) => `${h.tenant_id}/${h.function_name}/${h.branch}@v${h.version}#${h.seq}`)).toEqual([
      'acme/add/main@v3#7', 'acme/add/staging@v5#6', 'globex/add/staging@v1#1',
    ])

    // lose the heads table: the ledger gives them back exactly
    await store.replaceBranchHeads([])
    expect((await t.engine.branches.verifyHeads()).differing).toHaveLength(3)
    await t.engine.branches.verifyHeads({ repair: true })
    expect(canonicalJson((await store.branchHeads()).sort(compareHeads))).toBe(canonicalJson(stored))
    // and the key still works after the repair
    expect((await t.engine.branches.deploy(dev, { ...addV(6), branch: 'staging', branch_key: key })).moved).toBe(true)
  })

  it('needs rufid.create to deploy and rufid.execute to invoke', async () => {
    const consumer = principal('acme', ['rufid.read', 'rufid.execute'])
    expect((await rejectionOf(t.engine.branches.deploy(consumer, addV(1)))).code).toBe(1003)
    await t.engine.branches.deploy(dev, addV(1))
    const reader = principal('acme', ['rufid.read'])
    expect((await rejectionOf(t.engine.branches.invoke(reader, 'add', 'main', { a: 1, b: 2 }))).code).toBe(1003)
  })
})

describe('invoke --branch runs the head (real sandbox)', () => {
  let t: TestEngine
  beforeAll(async () => {
    t = await createManifestTestEngine({}, { sandbox: await realSandbox(1) })
  })
  afterAll(async () => {
    await t.engine.stop()
  })

  it('runs the newest version the head points at', async () => {
    const dev = principal('acme')
    const key = (await t.engine.branches.deploy(dev, { ...addV(100), branch: 'staging' })).branch_key!
    expect((await t.engine.branches.invoke(dev, 'add', 'staging', { a: 1, b: 2 })).record.result).toBe(103)
    await t.engine.branches.deploy(dev, { ...addV(200), branch: 'staging', branch_key: key })
    const run = await t.engine.branches.invoke(dev, 'add', 'staging', [1, 2])
    expect(run.record).toMatchObject({ status: 'success', result: 203, version: 2 })
    expect(run.head.version).toBe(2)
  })
})
