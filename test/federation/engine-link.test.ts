// The engine's side of a federation (issue 13 §5), in process: the link a federation connects its
// port to (once at a time), what a federation reports through it (refusals audited, member
// changes published), and replicated changes and conflicts the engine publishes and audits itself,
// with no federation object involved.
import { afterAll, describe, expect, it } from 'vitest'
import type { AuditEntry, CatalogChange, FederationPort, SyncBatch, SystemEvent } from '../../src/engine/index.js'
import { createTestEngine, principal, type TestEngine } from '../fixtures/engine.js'
import { signingReplica, waitFor } from './fixtures.js'

const dev = principal('acme')
const fn = (name: string, n = 1) => ({
  function_name: name, signature: '(a)', language: 'javascript', source_code: `function ${name}(a) {\n  return a + ${n}\n}\n`,
})
const all = (batch: SyncBatch): CatalogChange[] => [...batch.added, ...batch.updated, ...batch.deleted]

const engines: TestEngine[] = []
async function node(): Promise<TestEngine> {
  const t = await createTestEngine()
  engines.push(t)
  return t
}
afterAll(async () => {
  for (const t of engines) await t.engine.stop().catch(() => undefined)
})

function systemEvents(t: TestEngine): SystemEvent[] {
  const seen: SystemEvent[] = []
  t.engine.events.on('system', (e: SystemEvent) => seen.push(e))
  return seen
}

const port = (nodeId: string): FederationPort => ({
  nodeId, nodes: () => [], register: async () => [], sync: async () => ({ added: [], updated: [], deleted: [], timestamp: '', vector: {} }),
  discover: async () => { throw new Error('not used') },
})

async function auditOf(t: TestEngine, operation: string): Promise<AuditEntry[]> {
  return waitFor(async (): Promise<AuditEntry[] | false> => {
    const { items } = await t.engine.auditLog.query({ operation, limit: 10 })
    return items.length > 0 ? items : false
  }, 10_000) as Promise<AuditEntry[]>
}

describe("the engine's federation link", () => {
  it('holds one connected port at a time; a disconnect removes only its own port', async () => {
    const { engine } = await node()
    expect(engine.federation.port).toBeUndefined()
    const first = port('first')
    const disconnectFirst = engine.federation.connect(first)
    expect(engine.federation.port).toBe(first)
    expect(() => engine.federation.connect(port('second'))).toThrow(/already connected/)
    expect(engine.federation.port).toBe(first)
    disconnectFirst()
    expect(engine.federation.port).toBeUndefined()
    const second = port('second')
    const disconnectSecond = engine.federation.connect(second)
    disconnectFirst() // a stale disconnect leaves the port connected since
    expect(engine.federation.port).toBe(second)
    disconnectSecond()
    expect(engine.federation.port).toBeUndefined()
  })

  it('audits a refused peer and publishes member changes the federation reports', async () => {
    const t = await node()
    const events = systemEvents(t)
    await t.engine.federation.memberRefused({ peer_id: '12D3KooWRefused', reason: 'bad_chain', detail: 'not our CA', remote_addr: '/ip4/127.0.0.1/tcp/9', denied_until: '2030-01-01T00:00:00.000Z' })
    const [entry] = await auditOf(t, 'federation.membership.refused')
    expect(entry).toMatchObject({ user: '12D3KooWRefused', code: 1003, ip: '/ip4/127.0.0.1/tcp/9', tenant: null })
    expect(entry!.result).toContain('refused (bad_chain): not our CA')
    t.engine.federation.memberChanged('joined', { node_id: '12D3KooWJoined', endpoint: 'http://127.0.0.1:9' })
    t.engine.federation.memberChanged('left', { node_id: '12D3KooWJoined', endpoint: 'http://127.0.0.1:9' })
    expect(events.map((e) => [e.type, e.data.node_id])).toEqual([['peer.joined', '12D3KooWJoined'], ['peer.left', '12D3KooWJoined']])
  })

  it('publishes a version applied from a peer and audits a conflict itself, with no federation connected', async () => {
    const a = await node()
    const b = await node()
    await signingReplica(a.engine)
    await signingReplica(b.engine)
    await a.engine.functions.create(dev, fn('shared', 1))
    const onB = await b.engine.functions.create(dev, fn('shared', 2)) // the same name and version: a conflict
    const events = systemEvents(b)
    expect(b.engine.federation.port).toBeUndefined()
    const batch = await a.engine.replication.changesSince({})
    const result = await b.engine.replication.apply(all(batch), { credentials: batch.certificates ?? {} })
    expect(result.rejected).toEqual([])
    const [conflict] = await b.engine.replication.conflicts()
    expect(conflict).toBeDefined()
    const [audited] = await auditOf(b, 'federation.conflict')
    expect(audited).toMatchObject({ code: 2002, user: 'federation', tenant: 'acme' })
    expect(audited!.rufid).toBe(conflict!.losers.map((l) => l.rufid_short).join(','))
    const replicated = events.filter((e) => e.type === 'function.created' && e.data.replicated === true)
    expect(replicated.map((e) => e.data.function_name)).toEqual(['shared'])
    expect(replicated[0]!.rufid).toMatch(/^rufid:[A-Za-z0-9]{12}:v1:acme$/)
    expect(onB.version).toBe('v1')
  })
})
