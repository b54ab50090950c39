// No member speaks for another (issue 12 §3), in process: every replicated change carries its
// origin's PeerId and signature over its canonical bytes (without code), and a replica applies a
// remote change only when the signature verifies and a certificate binds the origin now. Changes
// recorded before changes were signed (replica format 1) are kept, never relayed unsigned, and a
// node's own are signed again under its federation identity.
import { MemoryLevel } from 'memory-level'
import { afterAll, describe, expect, it } from 'vitest'
import { signedBytes, type CatalogChange, type LevelDatabase, type SyncBatch } from '../../src/engine/index.js'
import { createFederationCa, issueNodeCertificate } from '../../src/federation/certificates.js'
import { createFederation } from '../../src/federation/federation.js'
import { createTestEngine, principal, rejectionOf, type TestEngine } from '../fixtures/engine.js'
import { newIdentity, signingReplica, testCa } from './fixtures.js'

const dev = principal('acme')
const fn = (name: string, n = 1) => ({
  function_name: name, signature: '(a)', language: 'javascript', source_code: `function ${name}(a) {\n  return a + ${n}\n}\n`,
})

const engines: TestEngine[] = []
async function node(db?: LevelDatabase): Promise<TestEngine> {
  const t = await createTestEngine(db ? { db } : {})
  engines.push(t)
  return t
}
afterAll(async () => {
  for (const t of engines) await t.engine.stop().catch(() => undefined)
})

const all = (batch: SyncBatch): CatalogChange[] => [...batch.added, ...batch.updated, ...batch.deleted]
const digest = async (t: TestEngine): Promise<string> => (await t.engine.replication.digest()).digest

describe('signed replicated changes', () => {
  it('a member\'s changes carry its PeerId and a signature over the change without code; its certificate travels with them', async () => {
    const a = await node()
    const { origin, certPem } = await signingReplica(a.engine)
    await a.engine.functions.create(dev, fn('signedOne'))
    const batch = await a.engine.replication.changesSince({})
    const [change] = all(batch)
    expect(change).toMatchObject({ origin, seq: 1 })
    expect(batch.certificates).toEqual({ [origin]: certPem })
    // the signature covers the change as it travels (no code): the same bytes with or without it
    const travelled = change!.kind === 'branch' ? change! : { ...change!, fn: { ...change!.fn, source_code: '' } }
    expect(Buffer.from(signedBytes(change!)).equals(Buffer.from(signedBytes(travelled)))).toBe(true)
    const b = await node()
    await signingReplica(b.engine)
    expect(await b.engine.replication.apply([travelled], { credentials: batch.certificates })).toMatchObject({ applied: 1, rejected: [] })
    expect(await digest(b)).toBe(await digest(a))
  })

  it('what does not verify is not applied, and says why', async () => {
    const a = await node()
    const { origin } = await signingReplica(a.engine)
    await a.engine.functions.create(dev, fn('checked'))
    await a.engine.functions.create(dev, fn('checkedToo'))
    const batch = await a.engine.replication.changesSince({})
    const [first, second] = all(batch) as Array<CatalogChange & { kind?: 'version' }>
    const b = await node()
    await signingReplica(b.engine)
    const before = await digest(b)
    const { sig: _sig, ...unsigned } = first!
    const cases: Array<[string, CatalogChange[], Record<string, string> | undefined, string]> = [
      ['unsigned', [unsigned as CatalogChange], batch.certificates, 'unsigned'],
      ['no certificate of its origin', [first!], undefined, 'unknown_origin'],
      ['a certificate from another CA', [first!], { [origin]: issueNodeCertificate(createFederationCa({ name: 'other' }), origin).certPem }, 'untrusted_origin'],
      ['a certificate of another PeerId', [first!], { [origin]: issueNodeCertificate(testCa(), (await newIdentity()).peerId).certPem }, 'untrusted_origin'],
      ['malformed', [{ ...first!, origin: 'not/an/origin' } as CatalogChange], batch.certificates, 'malformed'],
    ]
    for (const [what, changes, credentials, reason] of cases) {
      const result = await b.engine.replication.apply(changes, { credentials })
      expect(result.applied, what).toBe(0)
      expect(result.rejected.map((r) => r.reason), what).toEqual([reason])
    }
    // altered (its description), renumbered, or moved to another origin: forged, and the whole batch refused
    const forgeries: CatalogChange[] = [
      { ...first!, fn: { ...first!.fn, description: 'altered' } },
      { ...first!, seq: 99 },
      { ...first!, origin: b.engine.replication.origin },
    ]
    for (const forged of forgeries) {
      const result = await b.engine.replication.apply([second!, forged], { credentials: batch.certificates })
      expect(result.applied).toBe(0)
      expect(result.rejected.map((r) => r.reason)).toContain('bad_signature')
    }
    expect(await digest(b)).toBe(before)
    // the genuine ones still apply, and a second copy of a held change is nothing new
    expect((await b.engine.replication.apply([first!, second!], { credentials: batch.certificates })).applied).toBe(2)
    expect(await b.engine.replication.apply([first!], { credentials: batch.certificates })).toMatchObject({ applied: 0, rejected: [] })
    expect(await digest(b)).toBe(await digest(a))
  })

  it('a node that is not federated applies no remote change', async () => {
    const a = await node()
    await signingReplica(a.engine)
    await a.engine.functions.create(dev, fn('lonely'))
    const batch = await a.engine.replication.changesSince({})
    const standalone = await node()
    const result = await standalone.engine.replication.apply(all(batch), { credentials: batch.certificates })
    expect(result.applied).toBe(0)
    expect(result.rejected[0]!.reason).toBe('unknown_origin')
  })

  it('sync through the federation port refuses a batch with a forged change whole (1003) and applies nothing', async () => {
    const a = await node()
    await signingReplica(a.engine)
    await a.engine.functions.create(dev, fn('genuine'))
    const batch = await a.engine.replication.changesSince({})
    const [change] = all(batch)
    const b = await node()
    const identity = await newIdentity()
    const federation = createFederation({
      privateKey: identity.privateKey, listen: ['/ip4/127.0.0.1/tcp/0'], caCertPem: testCa().certPem,
      certPem: issueNodeCertificate(testCa(), identity.peerId).certPem, endpoint: 'http://127.0.0.1/b', syncIntervalMs: 0,
    }, { engine: b.engine, metrics: b.engine.metrics })
    await federation.start()
    try {
      const before = await digest(b)
      const forged = { ...change!, fn: { ...(change as { fn: object }).fn, description: 'forged' } } as CatalogChange
      const refused = await rejectionOf(federation.sync({ added: [change!, forged], updated: [], deleted: [], vector: {}, certificates: batch.certificates } as Partial<SyncBatch>))
      expect(refused.code).toBe(1003)
      expect(await digest(b)).toBe(before)
      expect(await b.engine.metrics.registry.getSingleMetricAsString('svc_federation_changes_rejected_total')).toMatch(/reason="bad_signature"} 1/)
      const answer = await federation.sync({ added: [change!], updated: [], deleted: [], vector: {}, certificates: batch.certificates } as Partial<SyncBatch>)
      expect(await digest(b)).toBe(await digest(a))
      // the answer relays a's change, signed, with a's certificate (b never met a)
      expect(all(answer).map((c) => c.origin)).toEqual([a.engine.replication.origin])
      expect(Object.keys(answer.certificates ?? {})).toEqual([a.engine.replication.origin])
    } finally {
      await federation.stop()
    }
  })

  it('changes a node recorded before it was federated are signed again under its PeerId; a peer that never saw them converges', async () => {
    const a = await node()
    const before = a.engine.replication.origin
    expect(before).toMatch(/^[0-9a-f-]{36}$/) // a replica id, not yet a federation identity
    await a.engine.functions.create(dev, fn('early'))
    const created = await a.engine.functions.create(dev, fn('gone'))
    await a.engine.functions.delete(dev, { short: created.rufid_short })
    expect(all(await a.engine.replication.changesSince({}))).toEqual([]) // unsigned: never relayed
    const digestBefore = await digest(a)
    const { origin } = await signingReplica(a.engine)
    expect(a.engine.replication.origin).toBe(origin)
    const batch = await a.engine.replication.changesSince({})
    expect(all(batch).map((c) => [c.origin, c.seq, c.op])).toEqual([[origin, 1, 'added'], [origin, 2, 'added'], [origin, 3, 'deleted']])
    expect(await digest(a)).toBe(digestBefore)
    const b = await node()
    await signingReplica(b.engine)
    expect((await b.engine.replication.apply(all(batch), { credentials: batch.certificates })).applied).toBe(3)
    expect(await digest(b)).toBe(digestBefore)
    // once: attaching again re-issues nothing
    expect(await a.engine.replication.useAuthenticator((a.engine.replication as unknown as { authenticator: never }).authenticator)).toEqual({ signed: 0, reissued: 0 })
  })

  it('a store of replica format 1 opens with everything it held; unsigned entries stay and are not relayed', async () => {
    const db = new MemoryLevel<string, unknown>({ valueEncoding: 'json' }) as unknown as LevelDatabase
    const old = await node(db)
    const legacyOrigin = old.engine.replication.origin
    await old.engine.functions.create(dev, fn('legacy'))
    // another origin's unsigned change, as a format-1 node received it
    const other = await node()
    await other.engine.functions.create(dev, fn('foreign'))
    const log = (d: LevelDatabase) => d.sublevel<string, unknown>('repl_log', { valueEncoding: 'json' })
    const [foreignKey, foreignChange] = (await log(other.db).iterator().all())[0] as [string, CatalogChange]
    await old.engine.stop()
    await db.open()
    await log(db).put(foreignKey, foreignChange)
    const meta = (d: LevelDatabase) => d.sublevel<string, unknown>('repl_meta', { valueEncoding: 'json' })
    await meta(db).del('format')
    await meta(db).del('legacy_vector')
    await db.close()
    // the upgraded node opens it
    const upgraded = await node(db)
    expect(upgraded.engine.replication.versionVector()).toMatchObject({ [legacyOrigin]: 1, [foreignChange.origin]: 1 })
    expect((await upgraded.engine.functions.resolve(dev, { short: (await upgraded.engine.functions.ledger(dev, 'legacy'))[0]!.rufid_short })).fn.function_name).toBe('legacy')
    const { origin } = await signingReplica(upgraded.engine)
    const batch = await upgraded.engine.replication.changesSince({})
    // its own legacy change, signed again under its PeerId; the foreign one is kept but not relayed
    expect(all(batch).map((c) => c.origin)).toEqual([origin])
    expect(await log(db).get(foreignKey)).toEqual(foreignChange)
    expect(await meta(db).get('format')).toBe(2)
  })
})
