import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Engine } from '../../src/engine/index.js'
import { issueNodeCertificate } from '../../src/federation/certificates.js'
import { CODE_PROTOCOL } from '../../src/federation/code-provider.js'
import { createFederation, type Federation } from '../../src/federation/federation.js'
import { createTestEngine, principal } from '../fixtures/engine.js'
import { newIdentity, testCa, waitFor, type TestIdentity } from './fixtures.js'

interface Member {
  engine: Engine
  identity: TestIdentity
  federation: Federation
}

const fn = (name: string, body: string) => ({
  function_name: name, signature: '(a)', language: 'javascript', source_code: `function ${name}(a) {\n  return ${body}\n}\n`,
})

async function startFederation(engine: Engine, identity: TestIdentity, bootstrap: string[] = [], patch?: (f: Federation) => void, announcingFetchers?: number): Promise<Federation> {
  const federation = createFederation({
    privateKey: identity.privateKey,
    listen: ['/ip4/127.0.0.1/tcp/0'],
    bootstrap,
    caCertPem: testCa().certPem,
    certPem: issueNodeCertificate(testCa(), identity.peerId).certPem,
    endpoint: `http://127.0.0.1/${identity.peerId.slice(-6)}`,
    syncIntervalMs: 500,
    // provider records at any size here (by default only past kad-dht's k = 20 nodes)
    announceProvidersAbove: 0,
    ...(announcingFetchers !== undefined ? { announcingFetchers } : {}),
  }, { engine, metrics: engine.metrics })
  patch?.(federation)
  await federation.start()
  return federation
}

async function member(bootstrap: string[] = [], patch?: (f: Federation) => void, announcingFetchers?: number): Promise<Member> {
  const { engine } = await createTestEngine()
  const identity = await newIdentity()
  return { engine, identity, federation: await startFederation(engine, identity, bootstrap, patch, announcingFetchers) }
}

const addr = (m: Member): string => m.federation.node.multiaddrs()[0]!
const digestOf = async (m: Member): Promise<string> => (await m.engine.replication.digest()).digest
const tenant = principal('acme')

describe('catalog replication, discovery and code on demand (in-process members)', () => {
  const all: Member[] = []
  let a: Member, b: Member, c: Member

  beforeAll(async () => {
    a = await member()
    b = await member([addr(a)])
    c = await member([addr(a), addr(b)])
    all.push(a, b, c)
    await waitFor(() => all.every((m) => m.federation.node.members().length === 2))
  })
  afterAll(async () => {
    for (const m of all) {
      await m.federation.stop()
      await m.engine.stop()
    }
  })

  // timing bounds (1 s, 5 s) are the 5-process cluster test's; here the waits are only bounded
  it('a function published on one node resolves on another, its code fetched from a provider and digest-checked', async () => {
    const created = await a.engine.functions.create(tenant, fn('double', 'a * 2'))
    const resolved = await waitFor(async () => (await c.engine.functions.resolve(tenant, { short: created.rufid_short })).fn, 10_000, 20)
    expect(resolved.source_code).toBe(created.fn.source_code)
    expect(resolved.content_digest).toBe(created.fn.content_digest)
    // the publisher is listed at once, from the signed change that added the content (its
    // provider record is announced 5–10 s later, off the publish's path)
    const discovery = await c.federation.discover(tenant, created.rufid_short)
    expect(discovery.nodes.find((n) => n.node_id === a.identity.peerId)?.source).toBe('catalog')
    expect(discovery.versions).toEqual(['v1'])
    // and its provider record does reach the DHT (bounded wait)
    await waitFor(async () => {
      const found = await c.federation.discover(tenant, created.rufid_short)
      return found.nodes.some((n) => n.node_id === a.identity.peerId && n.source === 'dht') ? found : undefined
    }, 20_000, 250)
    await waitFor(async () => new Set(await Promise.all(all.map(digestOf))).size === 1)
    expect(await c.engine.metrics.registry.getSingleMetricAsString('svc_federation_nodes_active')).toMatch(/svc_federation_nodes_active 2/)
  })

  it('only the first fetchers of a digest are told to announce themselves as its providers', async () => {
    // a fourth member that tells one fetcher per digest to announce
    const d = await member([addr(a), addr(b), addr(c)], undefined, 1)
    all.push(d)
    await waitFor(() => all.every((m) => m.federation.node.members().length === 3))
    const created = await d.engine.functions.create(tenant, fn('quad', 'a * 4'))
    const ask = (from: Member): Promise<{ source_code?: string; announce?: boolean }> => from.federation.node.request(d.identity.peerId, CODE_PROTOCOL, {
      tenant_id: 'acme', rufid_short: created.rufid_short, version: 1, content_digest: created.fn.content_digest,
    }, 5_000) as Promise<{ source_code?: string; announce?: boolean }>
    expect(await ask(b)).toMatchObject({ source_code: created.fn.source_code, announce: true })
    expect(await ask(c)).toMatchObject({ source_code: created.fn.source_code, announce: false })
    expect((await ask(b)).announce).toBe(true) // the same member again: still told to
    // a fetch told no queues no announcement (a's code comes from d, which told b already) …
    const resolved = await waitFor(async () => (await a.engine.functions.resolve(tenant, { short: created.rufid_short })).fn, 10_000, 20)
    expect(resolved.source_code).toBe(created.fn.source_code)
    expect(a.federation.code.announces(created.fn.content_digest)).toBe(false)
    // … the first fetch of another digest does
    const other = await d.engine.functions.create(tenant, fn('quint', 'a * 5'))
    await waitFor(async () => (await a.engine.functions.resolve(tenant, { short: other.rufid_short })).fn, 10_000, 20)
    expect(a.federation.code.announces(other.fn.content_digest)).toBe(true)
  })

  it('a node that was offline catches up with 20 changes through incremental sync', async () => {
    await c.federation.stop()
    const shorts: string[] = []
    for (let i = 0; i < 20; i++) shorts.push((await b.engine.functions.create(tenant, fn(`f${i}`, `a + ${i}`))).rufid_short)
    c.federation = await startFederation(c.engine, c.identity, [addr(a), addr(b)])
    await waitFor(async () => (await c.engine.functions.ledger(tenant)).length >= 21, 15_000)
    await waitFor(async () => new Set(await Promise.all(all.map(digestOf))).size === 1, 15_000)
  })

  it('branch heads replicate: a deploy moves the head on every node, and a node that was away catches up', async () => {
    const first = await a.engine.branches.deploy(tenant, { ...fn('ship', 'a + 1'), branch: 'staging' })
    await waitFor(async () => (await c.engine.branches.head(tenant, 'ship', 'staging')).move_id === first.head.move_id)
    await c.federation.stop()
    const second = await b.engine.branches.deploy(tenant, { ...fn('ship', 'a + 2'), branch: 'staging', branch_key: first.branch_key })
    expect(second.head.version).toBe(2)
    c.federation = await startFederation(c.engine, c.identity, [addr(a), addr(b)])
    for (const m of all) {
      const head = await waitFor(async () => {
        const h = await m.engine.branches.head(tenant, 'ship', 'staging')
        return h.move_id === second.head.move_id ? h : undefined
      }, 15_000)
      expect(head).toMatchObject({ version: 2, rufid_short: second.rufid_short })
      expect((await m.engine.branches.verifyHeads()).differing).toEqual([])
    }
  })

  it('a deletion replicates as a tombstone', async () => {
    const created = await a.engine.functions.create(tenant, fn('gone', 'a - 1'))
    await waitFor(async () => (await b.engine.functions.ledger(tenant, 'gone')).length === 1)
    await a.engine.functions.delete(tenant, { short: created.rufid_short })
    await waitFor(async () => (await b.engine.functions.ledger(tenant, 'gone'))[0]?.deleted_at !== undefined)
    await expect(b.engine.functions.resolve(tenant, { short: created.rufid_short })).rejects.toMatchObject({ code: 1002 })
  })

  it('tenancy holds: another tenant does not see a replicated function', async () => {
    const created = await a.engine.functions.create(tenant, fn('private', 'a'))
    await waitFor(async () => (await b.engine.functions.ledger(tenant, 'private')).length === 1)
    await expect(b.engine.functions.resolve(principal('other'), { short: created.rufid_short })).rejects.toMatchObject({ code: 1002 })
  })

  it('a provider serving bytes that do not match the digest is refused and another provider is tried', async () => {
    const liarIdentity = await newIdentity()
    let lies = 0
    const { engine: liarEngine } = await createTestEngine()
    const liar: Member = {
      engine: liarEngine,
      identity: liarIdentity,
      federation: await startFederation(liarEngine, liarIdentity, [addr(a)], (f) => {
        (f.code as unknown as { serveCode: () => Promise<unknown> }).serveCode = async () => {
          lies++
          return { source_code: 'function honest(a) {\n  return 666\n}\n' }
        }
      }),
    }
    all.push(liar)
    const created = await a.engine.functions.create(tenant, fn('honest', 'a + 100'))
    await waitFor(async () => (await liar.engine.functions.ledger(tenant, 'honest')).length === 1)
    await liar.federation.node.provide(created.fn.content_digest)
    await waitFor(async () => (await b.engine.functions.ledger(tenant, 'honest')).length === 1)
    // provide resolves once ADD_PROVIDER is written (it has no answer): b may not have read it yet
    const named = async (): Promise<string[]> => (await b.federation.node.findProviders(created.fn.content_digest)).map((p) => p.peerId)
    await waitFor(async () => (await named()).includes(liar.identity.peerId), 5_000).catch(() => undefined)
    expect(await named()).toContain(liar.identity.peerId)
    // b would ask the publisher first (its gossip named it): make the liar the first candidate
    const hints = (b.federation.code as unknown as { holders: Map<string, string> }).holders
    await waitFor(() => hints.get(created.fn.content_digest) === a.identity.peerId, 5_000)
    hints.set(created.fn.content_digest, liar.identity.peerId)
    const resolved = await b.engine.functions.resolve(tenant, { short: created.rufid_short })
    expect(resolved.fn.source_code).toBe(created.fn.source_code)
    expect(lies).toBe(1)
  })

  it('no reachable provider → 2001', async () => {
    const lonely = await member([addr(b)])
    all.push(lonely)
    const created = await lonely.engine.functions.create(tenant, fn('lonely', 'a * 3'))
    await waitFor(async () => (await b.engine.functions.ledger(tenant, 'lonely')).length === 1)
    await lonely.federation.stop()
    await expect(b.engine.functions.resolve(tenant, { short: created.rufid_short })).rejects.toMatchObject({ code: 2001 })
  })

  it('registration: a valid registration is broadcast and listed; sync through the port answers changes above a vector', async () => {
    const outsider = await newIdentity()
    const registration = {
      node_id: outsider.peerId, endpoint: 'http://127.0.0.1:9/outsider',
      capabilities: { languages: ['python'], max_concurrent: 2, protocols: ['rest'] },
      auth: { certificate: issueNodeCertificate(testCa(), outsider.peerId).certPem, public_key: '' },
    }
    const list = await a.federation.register(registration)
    expect(list.map((n) => n.node_id)).toContain(outsider.peerId)
    await waitFor(() => c.federation.nodes().some((n) => n.node_id === outsider.peerId), 5_000)
    await expect(a.federation.register({ ...registration, node_id: b.identity.peerId })).rejects.toMatchObject({ code: 1003 })
    const batch = await a.federation.sync({ vector: {} })
    expect(batch.added.length).toBeGreaterThan(0)
    expect(batch.added.every((ch) => ch.kind !== 'branch' && ch.fn.source_code === '')).toBe(true)
    const none = await a.federation.sync({ vector: a.engine.replication.versionVector() })
    expect(none.added.length + none.updated.length + none.deleted.length).toBe(0)
  })

  it('a conflict during a partition ends with identical catalogs, a recorded conflict and 2002 for the loser', async () => {
    const d = await member()
    const e = await member()
    all.push(d, e)
    const onD = await d.engine.functions.create(tenant, fn('split', 'a + 1'))
    const onE = await e.engine.functions.create(tenant, fn('split', 'a + 2'))
    expect(onD.version).toBe('v1')
    expect(onE.version).toBe('v1')
    await d.federation.node.dial(addr(e))
    await waitFor(async () => (await d.engine.replication.conflicts()).length === 1 && (await e.engine.replication.conflicts()).length === 1, 5_000)
    await waitFor(async () => (await digestOf(d)) === (await digestOf(e)))
    const [conflict] = await d.engine.replication.conflicts()
    expect((await e.engine.replication.conflicts())[0]!.winner).toEqual(conflict!.winner)
    const loser = conflict!.winner.rufid_short === onD.rufid_short ? onE : onD
    const winner = loser === onD ? onE : onD
    for (const m of [d, e]) {
      await expect(m.engine.functions.resolve(tenant, { short: loser.rufid_short, version: 1 })).rejects.toMatchObject({ code: 2002 })
      expect((await m.engine.functions.ledger(tenant, 'split'))[0]!.rufid_short).toBe(winner.rufid_short)
    }
  })
})

describe('a federation of at most k (20) nodes: only publishers make provider records (in-process members)', () => {
  const all: Member[] = []
  afterAll(async () => {
    for (const m of all) {
      await m.federation.stop().catch(() => undefined)
      await m.engine.stop()
    }
  })

  async function plainMember(bootstrap: string[] = []): Promise<Member> {
    const { engine } = await createTestEngine()
    const identity = await newIdentity()
    const federation = createFederation({
      privateKey: identity.privateKey, listen: ['/ip4/127.0.0.1/tcp/0'], bootstrap, caCertPem: testCa().certPem,
      certPem: issueNodeCertificate(testCa(), identity.peerId).certPem, endpoint: `http://127.0.0.1/${identity.peerId.slice(-6)}`, syncIntervalMs: 500,
    }, { engine, metrics: engine.metrics })
    await federation.start()
    const m = { engine, identity, federation }
    all.push(m)
    return m
  }

  it('with its publisher gone, the code is found among the members at once (no fetcher record, no one-by-one walk)', async () => {
    const p = await plainMember()
    const h = await plainMember([addr(p)])
    const n = await plainMember([addr(p), addr(h)])
    await waitFor(() => [p, h, n].every((m) => m.federation.node.members().length === 2))
    const created = await p.engine.functions.create(tenant, fn('triple', 'a * 3'))
    const digest = created.fn.content_digest
    // h fetches the code from the publisher; at this size only the publisher announces it
    await waitFor(async () => (await h.engine.functions.resolve(tenant, { short: created.rufid_short })).fn, 10_000, 20)
    expect(h.federation.code.announces(digest)).toBe(false)
    expect(p.federation.code.announces(digest)).toBe(true)
    await waitFor(async () => (await n.engine.replication.digest()).digest === (await p.engine.replication.digest()).digest)
    // the publisher leaves for good
    await p.federation.stop()
    await waitFor(() => n.federation.node.member(p.identity.peerId) === undefined && h.federation.node.member(p.identity.peerId) === undefined, 20_000, 50)
    // no live provider record names a member that holds it (the publisher's, if it landed, names a node gone)
    expect((await n.federation.node.findProviders(digest, { timeoutMs: 1_000 })).map((x) => x.peerId)).not.toContain(h.identity.peerId)
    const resolved = await n.engine.functions.resolve(tenant, { short: created.rufid_short })
    expect(resolved.fn.source_code).toBe(created.fn.source_code)
  }, 60_000)
})
