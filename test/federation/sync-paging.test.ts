// Bounded sync answers (issue 17): every sync answer and push is a page (here 3 changes, injected;
// 2,000 changes or 8 MiB by default), each origin's part a prefix of what the receiver lacks, with
// the certificates of exactly the origins in the page and `more: true` when the sender stopped
// early; the asker asks again with its advanced vector, within a bound of pages per round, and
// stops at a page that moved nothing. In-process members over real libp2p, anti-entropy off (only
// the join's round, and the rounds the tests start), a catalog of hand-signed changes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CatalogChange, Engine, SyncBatch, VersionChange } from '../../src/engine/index.js'
import { SYNC_PROTOCOL, SYNC_SUMMARY_PROTOCOL } from '../../src/federation/catalog-sync.js'
import type { Federation } from '../../src/federation/federation.js'
import { createTestEngine } from '../fixtures/engine.js'
import { handChange, handOrigins, hlcAt, loopbackFederation, newIdentity, templateChange, waitFor, type HandOrigin, type TestIdentity } from './fixtures.js'

const PAGE = 3
const MAX_PAGES = 10
const DAY = 24 * 3_600_000
const RETENTION_MS = 7 * DAY

/** One request a member sent, and the answer it got. */
interface Exchange {
  protocol: string
  body: Partial<SyncBatch> & Record<string, unknown>
  answer: Partial<SyncBatch> & Record<string, unknown>
}

interface Member {
  engine: Engine
  identity: TestIdentity
  federation: Federation
  /** every request this member sent, with its answer */
  sent: Exchange[]
}

async function member(bootstrap: string[] = []): Promise<Member> {
  const { engine } = await createTestEngine()
  const identity = await newIdentity()
  const federation = loopbackFederation(engine, identity, bootstrap, { retireOriginsAfterMs: RETENTION_MS, syncPage: { maxChanges: PAGE }, maxSyncPagesPerRound: MAX_PAGES })
  // recorded from the start: the join's round is the one under test
  const sent: Exchange[] = []
  const node = federation.node
  const request = node.request.bind(node)
  node.request = async (peerId, protocol, body, timeoutMs) => {
    const answer = await request(peerId, protocol, body, timeoutMs)
    sent.push({ protocol, body: body as Exchange['body'], answer: answer as Exchange['answer'] })
    return answer
  }
  await federation.start()
  return { engine, identity, federation, sent }
}

const addr = (m: Member): string => m.federation.node.multiaddrs()[0]!
const digestOf = async (m: Member): Promise<string> => (await m.engine.replication.digest()).digest
const changesIn = (batch: Partial<SyncBatch> | null | undefined): CatalogChange[] =>
  [batch?.added, batch?.updated, batch?.deleted].flatMap((list) => (Array.isArray(list) ? list : []))
/** the batches (answers and pushes) of sync exchanges that carry changes */
const batchesOf = (exchanges: Exchange[]): Array<Partial<SyncBatch>> =>
  exchanges.filter((x) => x.protocol === SYNC_PROTOCOL || x.protocol === SYNC_SUMMARY_PROTOCOL)
    .flatMap((x) => [x.body, x.answer]).filter((b) => changesIn(b).length > 0)

/** every batch is a page: at most PAGE changes, each origin's part contiguous, certificates of exactly its origins */
function expectPages(batches: Array<Partial<SyncBatch>>): void {
  for (const batch of batches) {
    const changes = changesIn(batch)
    expect(changes.length).toBeLessThanOrEqual(PAGE)
    const origins = [...new Set(changes.map((c) => c.origin))].sort()
    expect(Object.keys(batch.certificates ?? {}).sort()).toEqual(origins)
    for (const origin of origins) {
      const seqs = changes.filter((c) => c.origin === origin).map((c) => c.seq).sort((a, b) => a - b)
      expect(seqs).toEqual(seqs.map((_, i) => seqs[0]! + i))
    }
  }
}

describe('sync answers and pushes are pages; the asker asks again within a bound', () => {
  const all: Member[] = []
  let a: Member
  let template: VersionChange
  let origins: HandOrigin[]
  let nextOrigin = 0
  let nextVersion = 1
  const certificates: Record<string, string> = {}
  const take = (n: number): HandOrigin[] => origins.slice(nextOrigin, (nextOrigin += n))
  /** `count` changes of `o` from seq `from`, stamped `at` */
  const changesOf = async (o: HandOrigin, from: number, count: number, at: number): Promise<CatalogChange[]> => {
    const out: CatalogChange[] = []
    for (let seq = from; seq < from + count; seq++) out.push(await handChange(o, template, seq, nextVersion++, hlcAt(at, seq)))
    return out
  }
  const applyTo = async (m: Member, changes: CatalogChange[]): Promise<void> => {
    const result = await m.engine.replication.apply(changes, { credentials: certificates })
    expect(result.rejected).toEqual([])
  }
  /** waits for the rounds the joins started, so that a test's own round is the only one */
  const settle = async (m: Member, peer: Member): Promise<void> => {
    await m.federation.catalog.syncWith(peer.identity.peerId)
    await peer.federation.catalog.syncWith(m.identity.peerId)
  }

  beforeAll(async () => {
    template = await templateChange('paged')
    origins = await handOrigins(40)
    for (const o of origins) certificates[o.origin] = o.certPem
    a = await member()
    all.push(a)
    // 6 origins that published a month ago (retired), one with 8 recent changes, 4 with one each:
    // 18 changes of 11 origins, 6 pages and more certificates than one page presents
    const now = Date.now()
    const seeded: CatalogChange[] = []
    for (const o of take(6)) seeded.push(...(await changesOf(o, 1, 1, now - 30 * DAY)))
    seeded.push(...(await changesOf(take(1)[0]!, 1, 8, now - 3_600_000)))
    for (const o of take(4)) seeded.push(...(await changesOf(o, 1, 1, now - 3_600_000)))
    await applyTo(a, seeded)
  }, 60_000)
  afterAll(async () => {
    for (const m of all) {
      await m.federation.stop().catch(() => undefined)
      await m.engine.stop().catch(() => undefined)
    }
  })

  it('a joining member converges in its join round, anti-entropy off, with a catalog of many pages and origins', async () => {
    const b = await member([addr(a)])
    all.push(b)
    // new: its retired digest differs, so the join's round is whole-vector sync (paged)
    await waitFor(async () => (await digestOf(b)) === (await digestOf(a)), 30_000, 100)
    expect(b.engine.replication.versionVector()).toEqual(a.engine.replication.versionVector())
    await settle(b, a)
    // B pulled (and A, whose own round with B started at the join, pushed) page after page
    expect(b.sent.some((x) => x.protocol === SYNC_PROTOCOL && x.answer.more === true)).toBe(true)
    expect(batchesOf(b.sent).length + batchesOf(a.sent).length).toBeGreaterThanOrEqual(6)
    expectPages(batchesOf(b.sent))
    expectPages(batchesOf(a.sent))
  }, 60_000)

  it('a round of the summary protocol pulls and pushes page after page', async () => {
    const b = all[1]!
    await settle(b, a)
    const [x, y] = take(2)
    await applyTo(a, await changesOf(x!, 1, 7, Date.now())) // applied, not gossiped
    await applyTo(b, await changesOf(y!, 1, 7, Date.now()))
    const rounds = { ...b.federation.catalog.rounds }
    const from = b.sent.length
    await b.federation.catalog.syncWith(a.identity.peerId)
    expect(b.federation.catalog.rounds).toEqual({ ...rounds, compacted: rounds.compacted + 1 })
    expect(await digestOf(b)).toBe(await digestOf(a))
    const round = b.sent.slice(from)
    expect(round.every((x) => x.protocol === SYNC_SUMMARY_PROTOCOL)).toBe(true)
    expect(round.filter((x) => changesIn(x.answer).length > 0)).toHaveLength(3) // 7 changes: 3 + 3 + 1
    expect(round.filter((x) => changesIn(x.body).length > 0)).toHaveLength(3)
    expect(round.filter((x) => changesIn(x.body).length > 0).every((x) => x.body.vector === undefined)).toBe(true)
    expectPages(batchesOf(round))
  }, 30_000)

  it('POST /api/v1/federation/sync (FederationPort.sync, what the route calls) answers a page; the caller continues with its vector advanced', async () => {
    const vector: Record<string, number> = {}
    const received: CatalogChange[] = []
    let pages = 0
    for (let more = true; more && pages < 100; pages++) {
      const page = await a.federation.sync({ added: [], updated: [], deleted: [], timestamp: new Date().toISOString(), vector: { ...vector } })
      expectPages([page])
      for (const c of changesIn(page)) vector[c.origin] = Math.max(vector[c.origin] ?? 0, c.seq)
      received.push(...changesIn(page))
      more = page.more === true
    }
    const whole = changesIn(await a.engine.replication.changesSince({}))
    expect(received.map((c) => `${c.origin}/${c.seq}`).sort()).toEqual(whole.map((c) => `${c.origin}/${c.seq}`).sort())
    expect(pages).toBe(Math.ceil(whole.length / PAGE))
    // the byte bound: a page stops before the bytes it would exceed (one change at least)
    const tiny = await a.engine.replication.changesSince({}, { maxChanges: 1_000, maxBytes: 1 })
    expect(changesIn(tiny)).toHaveLength(1)
    expect(tiny.more).toBe(true)
    const one = Buffer.byteLength(JSON.stringify({ ...changesIn(tiny)[0], fn: { ...(changesIn(tiny)[0] as VersionChange).fn, source_code: '' } }))
    const some = await a.engine.replication.changesSince({}, { maxChanges: 1_000, maxBytes: 4 * (one + 2_000) })
    expect(changesIn(some).length).toBeGreaterThan(1)
    expect(changesIn(some).length).toBeLessThan(whole.length)
    expect(some.more).toBe(true)
  })

  describe('a member that answers `more: true` does not hold the asker beyond its bound', () => {
    let e: Member
    beforeAll(async () => {
      e = await member([addr(a)])
      all.push(e)
      await waitFor(async () => (await digestOf(e)) === (await digestOf(a)), 30_000, 100)
      await settle(e, a)
      await e.federation.node.unhandle(SYNC_SUMMARY_PROTOCOL) // asked by the whole vector
    }, 60_000)

    it('with nothing new: one page asked, one pushed (its vector never moves)', async () => {
      await e.federation.node.unhandle(SYNC_PROTOCOL)
      await e.federation.node.handleMembers(SYNC_PROTOCOL, async () => ({ added: [], updated: [], deleted: [], timestamp: new Date().toISOString(), vector: {}, more: true }))
      const from = a.sent.length
      await a.federation.catalog.syncWith(e.identity.peerId)
      const round = a.sent.slice(from).filter((x) => x.protocol === SYNC_PROTOCOL)
      expect(round).toHaveLength(2) // the pull that brought nothing, the push that moved nothing
      expect(changesIn(round[1]!.body)).toHaveLength(PAGE)
      expect(round[1]!.body.more).toBeUndefined()
    }, 30_000)

    it('with a new change each time: at most the round bound of pages', async () => {
      const liar = take(1)[0]!
      let seq = 0
      await e.federation.node.unhandle(SYNC_PROTOCOL)
      await e.federation.node.handleMembers(SYNC_PROTOCOL, async () => ({
        added: await changesOf(liar, ++seq, 1, Date.now()), updated: [], deleted: [], timestamp: new Date().toISOString(),
        vector: Object.fromEntries(Object.keys(a.engine.replication.versionVector()).map((o) => [o, 1e9])), // lacks nothing
        certificates: { [liar.origin]: liar.certPem }, more: true,
      }))
      const from = a.sent.length
      await a.federation.catalog.syncWith(e.identity.peerId)
      expect(a.sent.slice(from).filter((x) => x.protocol === SYNC_PROTOCOL)).toHaveLength(MAX_PAGES)
      expect(a.engine.replication.versionVector()[liar.origin]).toBe(MAX_PAGES)
    }, 30_000)

    it('a peer of the previous build (one answer, no `more`) is synced in one request; asking like one gets a page per round', async () => {
      // E answers as an earlier build: everything above the vector at once, without `more`
      await e.federation.node.unhandle(SYNC_PROTOCOL)
      await e.federation.node.handleMembers(SYNC_PROTOCOL, async (request) => {
        const { more: _more, ...whole } = await e.engine.replication.changesSince((request as SyncBatch).vector)
        return whole
      })
      const w = take(1)[0]!
      await applyTo(e, await changesOf(w, 1, 10, Date.now()))
      const from = a.sent.length
      await a.federation.catalog.syncWith(e.identity.peerId)
      const pulls = a.sent.slice(from).filter((x) => x.protocol === SYNC_PROTOCOL && changesIn(x.answer).length > 0)
      expect(pulls).toHaveLength(1)
      expect(changesIn(pulls[0]!.answer)).toHaveLength(10)
      expect(a.engine.replication.versionVector()[w.origin]).toBe(10)
      // E asks A as an earlier build does: whole vector, one answer per round, `more` ignored
      const eSync = e.federation.catalog as unknown as { syncBySummary: () => Promise<'full'>; another: () => boolean }
      eSync.syncBySummary = async () => 'full'
      eSync.another = () => false
      await applyTo(a, await changesOf(take(1)[0]!, 1, 7, Date.now()))
      const held = (): number => Object.values(e.engine.replication.relayableVector()).reduce((n, seq) => n + seq, 0)
      const lacking = changesIn(await a.engine.replication.changesSince(e.engine.replication.versionVector())).length
      expect(lacking).toBeGreaterThan(PAGE)
      const gained: number[] = []
      for (let round = 0; round < 20 && (await digestOf(e)) !== (await digestOf(a)); round++) {
        const before = held()
        await e.federation.catalog.syncWith(a.identity.peerId)
        gained.push(held() - before)
      }
      expect(await digestOf(e)).toBe(await digestOf(a))
      expect(gained).toHaveLength(Math.ceil(lacking / PAGE))
      expect(gained.every((n) => n > 0 && n <= PAGE)).toBe(true)
    }, 30_000)
  })
})
