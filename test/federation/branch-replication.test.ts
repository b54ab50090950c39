// Branch heads replicate (decisions.md, Federation): moves travel as catalog changes, every replica
// places them in the same tree whatever order they arrive in, and the same branch moved
// concurrently is a conflict resolved the same way everywhere. In process, without a network:
// changes are carried by hand, in shuffled orders.
import { afterAll, describe, expect, it } from 'vitest'
import { canonicalJson } from '../../src/core/canonical-json.js'
import { branchStates, compareHeads, createCatalogStore, walkBranch, type CatalogChange, type Engine, type PlacedMove } from '../../src/engine/index.js'
import { createTestEngine, principal, type TestEngine } from '../fixtures/engine.js'
import { signingReplica } from './fixtures.js'

const dev = principal('acme')
const calc = (n: number) => ({
  function_name: 'calc', signature: '(a)', language: 'javascript', source_code: `function calc(a) {\n  return a + ${n}\n}\n`,
})

const engines: TestEngine[] = []
/** every replica's certificate: changes carried by hand are checked against their origin's */
const credentials: Record<string, string> = {}
async function node(): Promise<TestEngine> {
  const t = await createTestEngine()
  engines.push(t)
  const { origin, certPem } = await signingReplica(t.engine)
  credentials[origin] = certPem
  return t
}
afterAll(async () => {
  for (const t of engines) await t.engine.stop()
})

async function changesOf(engine: Engine): Promise<CatalogChange[]> {
  const batch = await engine.replication.changesSince({})
  return [...batch.added, ...batch.updated, ...batch.deleted]
}

/** A deterministic shuffle (mulberry32), so a failing order can be replayed from its seed. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  let s = seed >>> 0
  const random = (): number => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const out = [...items]
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[out[i], out[j]] = [out[j]!, out[i]!]
  }
  return out
}

/** What every converged replica must agree on. */
async function stateOf(t: TestEngine): Promise<{ digest: string; heads: string; conflicts: string }> {
  const store = createCatalogStore({ db: t.db })
  const heads = (await store.branchHeads()).sort(compareHeads)
  // the stored heads are exactly what the ledger alone gives
  expect((await t.engine.branches.verifyHeads()).differing).toEqual([])
  const conflicts = (await t.engine.replication.conflicts()).map(({ detected_at: _d, ...c }) => c).sort((a, b) => (a.key < b.key ? -1 : 1))
  return { digest: (await t.engine.replication.digest()).digest, heads: canonicalJson(heads), conflicts: canonicalJson(conflicts) }
}

const move = (id: string, parent: string | null, version = 1): PlacedMove => ({
  id, parent, version, rufid_short: 'aaaaaaaaaaaa', branch: 'main', seq: 1, moved_at: id, moved_by: 'x', key_hash: 'k', from_version: null,
})

describe('the branch head rule', () => {
  it('follows a line of moves to its tip', () => {
    const { path, forks } = walkBranch([move('c', 'b', 3), move('a', null), move('b', 'a', 2)])
    expect(path.map((m) => m.id)).toEqual(['a', 'b', 'c'])
    expect(forks).toEqual([])
  })

  it('at a fork follows the earliest move, whatever order the moves come in, and reports the fork', () => {
    const moves = [move('1', null), move('2', '1'), move('3', '1'), move('4', '3'), move('5', '2')]
    for (let seed = 1; seed <= 20; seed++) {
      const { path, forks } = walkBranch(shuffled(moves, seed))
      expect(path.map((m) => m.id)).toEqual(['1', '2', '5'])
      expect(forks.map((f) => [f.parent, f.winner.id, f.losers.map((l) => l.id)])).toEqual([['1', '2', ['3']]])
    }
  })

  it('ignores moves whose parent has not arrived, and has no head without a creation', () => {
    expect(walkBranch([move('b', 'a'), move('c', 'b')]).path).toEqual([])
    expect(walkBranch([move('a', null), move('z', 'missing')]).path.map((m) => m.id)).toEqual(['a'])
  })

  it('reads moves recorded before moves had ids as one line in seq order', () => {
    const entry = (version: number, moves: Array<{ seq: number; branch?: string }>) => ({
      tenant_id: 'acme', function_name: 'calc', version, rufid_short: `r${version}`.padEnd(12, 'x'), content_digest: '', created_at: '', author: '',
      manifest_snapshot: { manifest: null, lockfile: null },
      branches: moves.map((m) => ({ branch: m.branch ?? 'main', seq: m.seq, moved_at: `t${m.seq}`, moved_by: 'x', key_hash: 'k', from_version: null })),
    })
    const [state] = branchStates([entry(1, [{ seq: 1 }, { seq: 3 }]), entry(2, [{ seq: 2 }])])
    expect(state!.head).toMatchObject({ version: 1, seq: 3, created_at: 't1', updated_at: 't3' })
    expect(state!.head!.move_id).toBeUndefined()
  })
})

describe('replicated branch heads (in-process replicas, changes carried by hand)', () => {
  it('converge to one head per branch, whatever order changes arrive in; concurrent moves are a recorded conflict', async () => {
    const a = await node()
    const b = await node()
    // a creates the branch; b learns of it (one federation)
    const created = await a.engine.branches.deploy(dev, { ...calc(1), branch: 'main' })
    const mainKey = created.branch_key!
    expect(mainKey).toBeTruthy()
    await b.engine.replication.apply(await changesOf(a.engine), { credentials })
    expect((await b.engine.branches.head(dev, 'calc', 'main')).version).toBe(1)

    // a partition: each side moves main (new code, so v2 on both: a version conflict as well)
    const onA = await a.engine.branches.deploy(dev, { ...calc(2), branch: 'main', branch_key: mainKey })
    const onB = await b.engine.branches.deploy(dev, { ...calc(3), branch: 'main', branch_key: mainKey })
    expect([onA.version, onB.version]).toEqual(['v2', 'v2'])
    // ... and each side creates `staging`, each with its own key
    const stagingA = await a.engine.branches.deploy(dev, { ...calc(1), branch: 'staging', branch_key: 'key-of-a-staging-0001' })
    const stagingB = await b.engine.branches.deploy(dev, { ...calc(1), branch: 'staging', branch_key: 'key-of-b-staging-0001' })
    expect(stagingA.branch_created && stagingB.branch_created).toBe(true)

    // b's log also holds the creation it received from a: the duplicate stays (applying is idempotent)
    const all = [...(await changesOf(a.engine)), ...(await changesOf(b.engine))]
    expect(new Set(all.filter((c) => c.kind === 'branch').map((c) => `${c.origin}/${c.seq}`)).size).toBe(5)

    // heal: a and b exchange; fresh replicas get everything in shuffled orders
    await a.engine.replication.apply(await changesOf(b.engine), { credentials })
    await b.engine.replication.apply(all, { credentials })
    const fresh: TestEngine[] = []
    for (let seed = 1; seed <= 6; seed++) {
      const t = await node()
      // one change at a time, so a move may arrive before its parent or before its version
      for (const c of shuffled(all, seed)) await t.engine.replication.apply([c], { credentials })
      fresh.push(t)
    }

    const expected = await stateOf(a)
    for (const t of [b, ...fresh]) expect(await stateOf(t)).toEqual(expected)

    // the earliest move wins each fork
    const mainWinner = [onA, onB].sort((x, y) => (x.head.move_id! < y.head.move_id! ? -1 : 1))[0]!
    const stagingWinner = [stagingA, stagingB].sort((x, y) => (x.head.move_id! < y.head.move_id! ? -1 : 1))[0]!
    const stagingLoserKey = stagingWinner === stagingA ? 'key-of-b-staging-0001' : 'key-of-a-staging-0001'
    const stagingWinnerKey = stagingWinner === stagingA ? 'key-of-a-staging-0001' : 'key-of-b-staging-0001'
    for (const t of [a, b, ...fresh]) {
      const main = await t.engine.branches.head(dev, 'calc', 'main')
      expect(main.move_id).toBe(mainWinner.head.move_id)
      expect(main.rufid_short).toBe(mainWinner.rufid_short)
      const branchConflicts = (await t.engine.replication.conflicts()).filter((c) => c.kind === 'branch')
      expect(branchConflicts.map((c) => c.kind === 'branch' && [c.branch, c.parent_move_id === null, c.winner.move_id, c.losers.length]).sort()).toEqual([
        ['main', false, mainWinner.head.move_id, 1],
        ['staging', true, stagingWinner.head.move_id, 1],
      ])
    }

    // the caller whose creation of `staging` lost acts on the losing side: 2002, nothing stored
    for (const t of [a, b]) {
      const before = (await t.engine.functions.ledger(dev, 'calc')).length
      await expect(t.engine.branches.deploy(dev, { ...calc(9), branch: 'staging', branch_key: stagingLoserKey })).rejects.toMatchObject({ code: 2002, name: 'SYNC_CONFLICT' })
      await expect(t.engine.branches.deploy(dev, { ...calc(9), branch: 'staging', branch_key: 'not-any-key-of-this-branch' })).rejects.toMatchObject({ code: 1003 })
      expect((await t.engine.functions.ledger(dev, 'calc')).length).toBe(before)
    }
    // the winner's key still moves it, and the move replicates like any other
    const moved = await a.engine.branches.deploy(dev, { ...calc(9), branch: 'staging', branch_key: stagingWinnerKey })
    expect(moved.moved).toBe(true)
    for (const t of [b, ...fresh]) {
      await t.engine.replication.apply(await changesOf(a.engine), { credentials })
      expect((await t.engine.branches.head(dev, 'calc', 'staging')).move_id).toBe(moved.head.move_id)
      expect(await stateOf(t)).toEqual(await stateOf(a))
    }
  })

  it('a move onto an existing version replicates, and a move that arrives before its version waits for it', async () => {
    const a = await node()
    const b = await node()
    const v1 = await a.engine.branches.deploy(dev, { ...calc(1), branch: 'main' })
    await a.engine.branches.deploy(dev, { ...calc(2), branch: 'main', branch_key: v1.branch_key })
    // the same code as v1 again: no new version, the head moves back to v1
    const back = await a.engine.branches.deploy(dev, { ...calc(1), branch: 'main', branch_key: v1.branch_key })
    expect(back.created).toBe(false)
    expect(back.head.version).toBe(1)
    const changes = await changesOf(a.engine)
    // versions last: every move arrives before the version it points at
    const moves = changes.filter((c) => c.kind === 'branch')
    const versions = changes.filter((c) => c.kind !== 'branch')
    for (const c of moves) await b.engine.replication.apply([c], { credentials })
    await expect(b.engine.branches.head(dev, 'calc', 'main')).rejects.toMatchObject({ code: 1011, details: { resource: 'branch' } })
    for (const c of versions) await b.engine.replication.apply([c], { credentials })
    const head = await b.engine.branches.head(dev, 'calc', 'main')
    expect(head).toEqual(await a.engine.branches.head(dev, 'calc', 'main'))
    expect(await stateOf(b)).toEqual(await stateOf(a))
  })

  it('refuses malformed branch changes without touching the catalog', async () => {
    const a = await node()
    const b = await node()
    await a.engine.branches.deploy(dev, { ...calc(1), branch: 'main' })
    const [good] = (await changesOf(a.engine)).filter((c) => c.kind === 'branch')
    const before = await stateOf(b)
    const bad = [
      { ...good, key: 'branch\u0000other\u0000calc\u0000main' },
      { ...good, move: { ...(good as { move: PlacedMove }).move, branch: '../etc' } },
      { ...good, move: { ...(good as { move: PlacedMove }).move, id: 'x'.repeat(500) } },
      { ...good, move: { ...(good as { move: PlacedMove }).move, parent: (good as { move: PlacedMove }).move.id } },
      { ...good, move: null },
      { ...good, op: 'deleted' },
    ]
    const result = await b.engine.replication.apply(bad as unknown as CatalogChange[], { credentials })
    expect(result.applied).toBe(0)
    expect(await stateOf(b)).toEqual(before)
  })
})
