// GET /federation/nodes (Federation.nodes) lists connected members always, and nodes known only
// from a registration while they keep being heard of: a registration not renewed within
// `registrationTtlMs` is forgotten, and at most `maxRegistrations` are kept (in-process members).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueNodeCertificate } from '../../src/federation/certificates.js'
import { NODES_TOPIC } from '../../src/federation/federation.js'
import { loopbackPair, newIdentity, stopMembers, testCa, waitFor, type LoopbackMember as Member, type TestIdentity } from './fixtures.js'

const TTL_MS = 1_500
const MAX = 3

async function outsider(identity?: TestIdentity): Promise<{ node_id: string; endpoint: string; capabilities: object; auth: { certificate: string; public_key: string } }> {
  identity ??= await newIdentity()
  return {
    node_id: identity.peerId, endpoint: `http://127.0.0.1:9/${identity.peerId.slice(-6)}`,
    capabilities: { languages: ['javascript'], max_concurrent: 1, protocols: ['rest'] },
    auth: { certificate: issueNodeCertificate(testCa(), identity.peerId).certPem, public_key: '' },
  }
}

const listed = (m: Member): string[] => m.federation.nodes().map((n) => n.node_id)

describe('registered nodes expire unless renewed, and are bounded in number', () => {
  let a: Member, b: Member
  beforeAll(async () => {
    // A's broadcast reaches B only once A knows B subscribes to the nodes topic (a gossipsub heartbeat or so)
    ;[a, b] = await loopbackPair(NODES_TOPIC, { registrationTtlMs: TTL_MS, maxRegistrations: MAX })
  }, 60_000)
  afterAll(() => stopMembers([a, b]))

  it('at most maxRegistrations are kept (the least recently heard of go first); past the TTL they are gone, connected members stay', async () => {
    const regs = [await outsider(), await outsider(), await outsider(), await outsider(), await outsider()]
    for (const r of regs) await a.federation.register(r)
    const ids = regs.map((r) => r.node_id)
    expect(listed(a).filter((id) => ids.includes(id)).sort()).toEqual(ids.slice(2).sort())
    // the broadcast reached B, bounded the same way
    await waitFor(() => ids.some((id) => listed(b).includes(id)), 10_000, 20)
    expect(listed(b).filter((id) => ids.includes(id)).length).toBeLessThanOrEqual(MAX)
    await new Promise((r) => setTimeout(r, TTL_MS + 300))
    for (const m of [a, b]) {
      const now = listed(m)
      expect(now.filter((id) => ids.includes(id))).toEqual([])
      // itself and its connected member, whatever the TTL
      expect(now).toContain(a.federation.nodeId)
      expect(now).toContain(b.federation.nodeId)
      expect((await m.federation.registrar.memberStatus()).map((s) => s.node_id).filter((id) => ids.includes(id))).toEqual([])
    }
  })

  it('a registration renewed within the TTL stays listed; members renew their own at a third of it', async () => {
    const r = await outsider()
    const published: number[] = []
    const publish = b.federation.node.publish.bind(b.federation.node)
    b.federation.node.publish = async (topic, payload) => {
      if (topic === NODES_TOPIC && (payload as { node_id?: string }).node_id === b.federation.nodeId) published.push(Date.now())
      return publish(topic, payload)
    }
    try {
      const until = Date.now() + 2 * TTL_MS
      while (Date.now() < until) {
        await a.federation.register(r)
        await new Promise((res) => setTimeout(res, TTL_MS / 3))
        expect(listed(a)).toContain(r.node_id)
      }
    } finally {
      b.federation.node.publish = publish
    }
    expect(published.length).toBeGreaterThanOrEqual(3)
    await new Promise((res) => setTimeout(res, TTL_MS + 300))
    expect(listed(a)).not.toContain(r.node_id)
  })

  it('a registration whose auth.public_key is not its certificate\'s is refused (1003) and not broadcast; its own key is accepted', async () => {
    const identity = await newIdentity()
    const other = await newIdentity()
    const r = await outsider(identity)
    const wrong = { ...r, auth: { ...r.auth, public_key: Buffer.from(other.privateKey.publicKey.toMultihash().bytes).toString('base64') } }
    await expect(a.federation.register(wrong)).rejects.toMatchObject({ code: 1003, details: { failure: 'public_key_mismatch' } })
    await expect(a.federation.register({ ...r, auth: { ...r.auth, public_key: 'not a key' } })).rejects.toMatchObject({ code: 1006 })
    expect(listed(a)).not.toContain(r.node_id)
    // a broadcast carrying a wrong key (from a registry that did not check) is not applied by B
    // either: B hears the right registration published after it, and not the wrong one
    const unchecked = await outsider()
    await a.federation.node.publish(NODES_TOPIC, { ...unchecked, auth: { ...unchecked.auth, public_key: wrong.auth.public_key } })
    const right = { ...r, auth: { ...r.auth, public_key: Buffer.from(identity.privateKey.publicKey.toMultihash().bytes).toString('base64') } }
    await a.federation.register(right)
    expect(listed(a)).toContain(r.node_id)
    await waitFor(() => listed(b).includes(r.node_id), 10_000, 20)
    expect(listed(b)).not.toContain(unchecked.node_id)
  })
})
