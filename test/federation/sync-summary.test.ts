// Anti-entropy whose cost follows what a member missed, not how many origins ever published
// (issue 17, item 4), between in-process members over real libp2p: roots first
// (`/svc/sync-summary/1.0.0`), then a vector of active origins plus the digest of retired ones,
// then the whole vector (`/svc/sync/1.0.0`) when the retired parts differ or the member is of an
// earlier build. The catalog holds many origins, made by hand with signed changes.
// SYNC_SUMMARY_ORIGINS=900 makes a larger catalog for the figures of docs/federation-scale.md.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CatalogChange, Engine, VersionChange } from '../../src/engine/index.js'
import { issueNodeCertificate } from '../../src/federation/certificates.js'
import { SYNC_PROTOCOL, SYNC_SUMMARY_PROTOCOL } from '../../src/federation/catalog-sync.js'
import { createFederation, type Federation } from '../../src/federation/federation.js'
import { createTestEngine } from '../fixtures/engine.js'
import { handChange, handOrigins, hlcAt, newIdentity, templateChange, testCa, waitFor, type HandOrigin, type TestIdentity } from './fixtures.js'

const RETIRED = Number(process.env.SYNC_SUMMARY_ORIGINS ?? 300)
const ACTIVE = 10
const DAY = 24 * 3_600_000
const RETENTION_MS = 7 * DAY
/** a larger catalog (SYNC_SUMMARY_ORIGINS) takes longer to make and to sync whole */
const SLACK_MS = Math.max(30_000, RETIRED * 150)

interface Member {
  engine: Engine
  identity: TestIdentity
  certPem: string
  federation: Federation
}

async function startFederation(m: Omit<Member, 'federation'>, bootstrap: string[]): Promise<Federation> {
  const federation = createFederation({
    privateKey: m.identity.privateKey, listen: ['/ip4/127.0.0.1/tcp/0'], bootstrap, caCertPem: testCa().certPem, certPem: m.certPem,
    endpoint: `http://127.0.0.1/${m.identity.peerId.slice(-6)}`, syncIntervalMs: 0, retireOriginsAfterMs: RETENTION_MS,
  }, { engine: m.engine, metrics: m.engine.metrics })
  await federation.start()
  return federation
}

async function member(bootstrap: string[] = []): Promise<Member> {
  const { engine } = await createTestEngine()
  const identity = await newIdentity()
  const m = { engine, identity, certPem: issueNodeCertificate(testCa(), identity.peerId).certPem }
  return { ...m, federation: await startFederation(m, bootstrap) }
}

const addr = (m: Member): string => m.federation.node.multiaddrs()[0]!
const digestOf = async (m: Member): Promise<string> => (await m.engine.replication.digest()).digest

/** Bytes of JSON a member's requests sent and their answers brought back, while `run` runs. */
async function bytesOf(m: Member, run: () => Promise<unknown>): Promise<{ sent: number; received: number; requests: string[] }> {
  const node = m.federation.node
  const request = node.request.bind(node)
  const tally = { sent: 0, received: 0, requests: [] as string[] }
  node.request = async (peerId, protocol, body, timeoutMs) => {
    tally.requests.push(protocol)
    tally.sent += JSON.stringify(body).length
    const answer = await request(peerId, protocol, body, timeoutMs)
    tally.received += JSON.stringify({ ok: answer }).length
    return answer
  }
  try {
    await run()
  } finally {
    node.request = request
  }
  return tally
}

describe('sync by summary: roots first, active origins when they differ, the whole vector when retired origins differ', () => {
  const all: Member[] = []
  let a: Member, b: Member, c: Member
  let template: VersionChange
  let origins: HandOrigin[]
  let nextVersion = 1
  const certificates: Record<string, string> = {}
  /** a change of `o` at `seq`, stamped `at` */
  const changeOf = (o: HandOrigin, seq: number, at: number): Promise<CatalogChange> => handChange(o, template, seq, nextVersion++, hlcAt(at))
  const applyTo = async (m: Member, changes: CatalogChange[]): Promise<void> => {
    const result = await m.engine.replication.apply(changes, { credentials: certificates })
    expect(result.rejected).toEqual([])
  }

  beforeAll(async () => {
    template = await templateChange('many')
    origins = await handOrigins(RETIRED + ACTIVE + 4)
    for (const o of origins) certificates[o.origin] = o.certPem
    a = await member()
    // a month ago RETIRED origins published once; ACTIVE origins published an hour ago
    const now = Date.now()
    const seeded: CatalogChange[] = []
    for (const [i, o] of origins.slice(0, RETIRED + ACTIVE).entries()) seeded.push(await changeOf(o, 1, i < RETIRED ? now - 30 * DAY : now - 3_600_000))
    await applyTo(a, seeded)
    b = await member([addr(a)])
    c = await member([addr(a), addr(b)])
    all.push(a, b, c)
    await waitFor(() => all.every((m) => m.federation.node.members().length === 2), 20_000)
    // the joins synced the catalog (whole or compacted, whichever the roots called for)
    await waitFor(async () => (await digestOf(b)) === (await digestOf(a)) && (await digestOf(c)) === (await digestOf(a)), SLACK_MS, 100)
  }, 90_000 + 2 * SLACK_MS)
  afterAll(async () => {
    for (const m of all) {
      await m.federation.stop().catch(() => undefined)
      await m.engine.stop().catch(() => undefined)
    }
  })

  it('converged members exchange a root each way and nothing else; the whole vector was ~2 × origins × 60 bytes', async () => {
    const { replica } = { replica: a.engine.replication }
    expect(replica.compactVector(Date.now() - RETENTION_MS)).toMatchObject({ retired_count: RETIRED })
    expect(Object.keys(replica.compactVector(Date.now() - RETENTION_MS).active)).toHaveLength(ACTIVE)
    await a.federation.catalog.syncWith(b.identity.peerId) // a round still running (the joins') ends first
    const rounds = { ...a.federation.catalog.rounds }
    const summary = await bytesOf(a, () => a.federation.catalog.syncWith(b.identity.peerId))
    expect(summary.requests).toEqual([SYNC_SUMMARY_PROTOCOL])
    expect(a.federation.catalog.rounds).toEqual({ ...rounds, equal: rounds.equal + 1 })
    expect(summary.sent + summary.received).toBeLessThan(200)
    // the same idle exchange as an earlier build makes it: the whole vector both ways
    const vector = a.engine.replication.versionVector()
    const whole = await bytesOf(a, async () => {
      await a.federation.node.request(b.identity.peerId, SYNC_PROTOCOL, { added: [], updated: [], deleted: [], timestamp: new Date().toISOString(), vector })
    })
    expect(whole.sent + whole.received).toBeGreaterThan(2 * Object.keys(vector).length * 50)
    console.log(`idle anti-entropy exchange, ${Object.keys(vector).length} origins (${ACTIVE} active): whole vector ${whole.sent} + ${whole.received} B, summary ${summary.sent} + ${summary.received} B`)
  })

  it('a change one member missed: the compacted vectors (active origins) carry it, not the whole vector', async () => {
    const fresh = await changeOf(origins[RETIRED]!, 2, Date.now())
    await applyTo(a, [fresh]) // applied, not gossiped: B must find it by anti-entropy
    expect(await digestOf(b)).not.toBe(await digestOf(a))
    await b.federation.catalog.syncWith(a.identity.peerId) // a round still running ends first (it may have carried it)
    await applyTo(a, [await changeOf(origins[RETIRED + 2]!, 2, Date.now())])
    const rounds = { ...b.federation.catalog.rounds }
    const tally = await bytesOf(b, () => b.federation.catalog.syncWith(a.identity.peerId))
    expect(b.federation.catalog.rounds).toEqual({ ...rounds, compacted: rounds.compacted + 1 })
    expect(tally.requests).toEqual([SYNC_SUMMARY_PROTOCOL, SYNC_SUMMARY_PROTOCOL])
    expect(await digestOf(b)).toBe(await digestOf(a))
    // the other way round too: what B holds and A lacks is pushed
    const pushed = await changeOf(origins[RETIRED + 1]!, 2, Date.now())
    await applyTo(b, [pushed])
    await b.federation.catalog.syncWith(a.identity.peerId)
    expect(await digestOf(a)).toBe(await digestOf(b))
    const vectorBytes = JSON.stringify(a.engine.replication.versionVector()).length
    expect(tally.sent + tally.received).toBeLessThan(vectorBytes)
    console.log(`one missed change, ${RETIRED + ACTIVE} origins: summary + compacted exchange ${tally.sent} + ${tally.received} B (the whole vector alone is ${vectorBytes} B)`)
    await c.federation.catalog.syncWith(a.identity.peerId)
    expect(await digestOf(c)).toBe(await digestOf(a))
  })

  it('a member away longer than the retention period converges: what it missed retired meanwhile, and the retired digests send it to the whole vector', async () => {
    await c.federation.stop()
    all.splice(all.indexOf(c), 1)
    await waitFor(() => a.federation.node.members().length === 1 && b.federation.node.members().length === 1, 20_000)
    // while C was away: new origins published and a retired origin published again, all longer ago
    // than the retention period (retired on A and B by the time C is back), and one origin now
    const now = Date.now()
    const missed = [
      await changeOf(origins[RETIRED + ACTIVE]!, 1, now - 10 * DAY),
      await changeOf(origins[RETIRED + ACTIVE + 1]!, 1, now - 9 * DAY),
      await changeOf(origins[0]!, 2, now - 8 * DAY),
      await changeOf(origins[RETIRED + ACTIVE + 2]!, 1, now),
    ]
    await applyTo(a, missed)
    await a.federation.catalog.syncWith(b.identity.peerId)
    expect(await digestOf(b)).toBe(await digestOf(a))
    const compactA = a.engine.replication.compactVector(Date.now() - RETENTION_MS)
    const compactC = c.engine.replication.compactVector(Date.now() - RETENTION_MS)
    expect(compactA.active).not.toHaveProperty(origins[RETIRED + ACTIVE]!.origin) // retired: absent from the active part
    expect(compactA.retired).not.toBe(compactC.retired)
    c.federation = await startFederation(c, [addr(a)]) // a new CatalogSync: its rounds count from 0
    all.push(c)
    await waitFor(async () => (await digestOf(c)) === (await digestOf(a)), SLACK_MS, 100)
    expect(c.federation.catalog.rounds.full).toBeGreaterThan(0)
    for (const change of missed) expect(c.engine.replication.versionVector()[change.origin]).toBeGreaterThanOrEqual(change.seq)
  }, 30_000 + 2 * SLACK_MS)

  it('a summary request that is malformed is refused with VALIDATION_FAILED and changes nothing', async () => {
    const before = await digestOf(b)
    for (const body of [{ root: 'not hex' }, { active: {}, retired: 42 }, { active: null, retired: 'a'.repeat(64) }, null, 'text']) {
      const err = await a.federation.node.request(b.identity.peerId, SYNC_SUMMARY_PROTOCOL, body).then(() => undefined, (e: unknown) => e as { remote?: { code: unknown } })
      expect(err?.remote?.code, JSON.stringify(body)).toBe(1006) // VALIDATION_FAILED
    }
    expect(await digestOf(b)).toBe(before)
    expect(b.federation.node.member(a.identity.peerId)).toBeDefined()
  })

  it('a member of an earlier build (no summary protocol) still syncs both ways: whole-vector sync', async () => {
    const d = await member([addr(a)])
    all.push(d)
    await waitFor(() => a.federation.node.member(d.identity.peerId) !== undefined, 20_000)
    await waitFor(async () => (await digestOf(d)) === (await digestOf(a)), SLACK_MS, 100)
    // D becomes an earlier build: it serves no summary and syncs by the whole vector only
    await d.federation.node.unhandle(SYNC_SUMMARY_PROTOCOL)
    const dSync = d.federation.catalog as unknown as { syncBySummary: () => Promise<'full'> }
    dSync.syncBySummary = async () => 'full'
    await a.federation.catalog.syncWith(d.identity.peerId) // a round still running (the join's) ends first
    const onA = await changeOf(origins[1]!, 2, Date.now())
    const onD = await changeOf(origins[2]!, 2, Date.now())
    await applyTo(a, [onA])
    await applyTo(d, [onD])
    const rounds = { ...a.federation.catalog.rounds }
    const tally = await bytesOf(a, () => a.federation.catalog.syncWith(d.identity.peerId))
    expect(tally.requests[0]).toBe(SYNC_SUMMARY_PROTOCOL)
    expect(tally.requests.slice(1)).toEqual([SYNC_PROTOCOL, SYNC_PROTOCOL])
    expect(a.federation.catalog.rounds).toEqual({ ...rounds, full: rounds.full + 1 })
    expect(await digestOf(a)).toBe(await digestOf(d))
    expect(d.engine.replication.versionVector()[onA.origin]).toBe(2)
    expect(a.engine.replication.versionVector()[onD.origin]).toBe(2)
    // the next round does not ask it for a summary again (until it rejoins)
    const again = await bytesOf(a, () => a.federation.catalog.syncWith(d.identity.peerId))
    expect(again.requests).toEqual([SYNC_PROTOCOL])
    // and its own syncs (the earlier build's) are answered
    const onA2 = await changeOf(origins[3]!, 2, Date.now())
    await applyTo(a, [onA2])
    await d.federation.catalog.syncWith(a.identity.peerId)
    expect(await digestOf(d)).toBe(await digestOf(a))
  }, 30_000 + 2 * SLACK_MS)
})
