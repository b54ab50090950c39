// The member keeper (member-keeper.ts): members that could not connect at first, that restart, or
// that join with a bootstrap list naming only some members end up connected to every member.
import { createServer } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { issueNodeCertificate } from '../../src/federation/certificates.js'
import { PRESENCE_TOPIC } from '../../src/federation/member-keeper.js'
import { createFederationNode, type FederationNode } from '../../src/federation/node.js'
import { newIdentity, testCa, waitFor, type TestIdentity } from './fixtures.js'

const started: FederationNode[] = []
afterEach(async () => {
  await Promise.allSettled(started.splice(0).map((n) => n.stop()))
})

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => resolve(port))
    })
  })
}

async function node(identity: TestIdentity, port: number, bootstrap: string[], keeper = true, presenceMinIntervalMs?: number): Promise<FederationNode> {
  const n = createFederationNode({
    privateKey: identity.privateKey,
    listen: [`/ip4/127.0.0.1/tcp/${port}`],
    bootstrap,
    caCertPem: testCa().certPem,
    certPem: issueNodeCertificate(testCa(), identity.peerId).certPem,
    endpoint: `http://127.0.0.1:0/${identity.peerId.slice(-6)}`,
    memberKeeper: keeper ? { intervalMs: 300, minBackoffMs: 200, maxBackoffMs: 1_000, presenceIntervalMs: 0, ...(presenceMinIntervalMs ? { presenceMinIntervalMs } : {}) } : false,
  })
  started.push(n)
  await n.start()
  return n
}

const isMember = (n: FederationNode, other: FederationNode): boolean => n.member(other.peerId) !== undefined

describe('member keeper', () => {
  it('a bootstrap peer that was down when the node started, and a member that restarts, are dialled again', async () => {
    const [ia, ib] = [await newIdentity(), await newIdentity()]
    const [pa, pb] = [await freePort(), await freePort()]
    const addrA = `/ip4/127.0.0.1/tcp/${pa}/p2p/${ia.peerId}`
    const b = await node(ib, pb, [addrA]) // A is not up: the first dial fails
    await new Promise((r) => setTimeout(r, 500))
    let a = await node(ia, pa, []) // A knows nobody: only B's keeper can join them
    await waitFor(() => isMember(b, a) && isMember(a, b), 20_000, 50)
    // A restarts (same identity and port): B dials it again
    await a.stop()
    await waitFor(() => !isMember(b, a), 10_000, 50)
    a = await node(ia, pa, [])
    await waitFor(() => isMember(b, a) && isMember(a, b), 20_000, 50)
  }, 60_000)

  it('a fresh node that bootstraps to one member is connected to by the others (presence)', async () => {
    const ids = [await newIdentity(), await newIdentity(), await newIdentity()]
    // port 0: a port found free and released could be taken by another test file before the node listens
    const a = await node(ids[0]!, 0, [])
    const addrA = a.multiaddrs()[0]!
    const b = await node(ids[1]!, 0, [addrA])
    await waitFor(() => isMember(a, b) && isMember(b, a), 20_000, 50)
    // C names A only; B never heard of C but learns of it from C's presence announcement
    const c = await node(ids[2]!, 0, [addrA])
    await waitFor(() => isMember(b, c) && isMember(c, b), 20_000, 50)
    expect(isMember(a, c)).toBe(true)
  }, 60_000)

  it('a member that floods presence announcements has the extra ones ignored (not delivered, not penalized) and stays a member', async () => {
    const [ia, ib] = [await newIdentity(), await newIdentity()]
    const a = await node(ia, 0, [], true, 2_000)
    const b = await node(ib, 0, [a.multiaddrs()[0]!], true, 2_000)
    await waitFor(() => isMember(a, b) && isMember(b, a), 20_000, 50)
    await waitFor(() => a.p2p.services.pubsub.getSubscribers(PRESENCE_TOPIC).some((p) => p.toString() === b.peerId), 20_000, 50)
    await new Promise((r) => setTimeout(r, 2_500)) // past the announcements of the join and the interval
    const delivered: number[] = []
    a.p2p.services.pubsub.addEventListener('message', (evt) => {
      if (evt.detail.topic === PRESENCE_TOPIC) delivered.push(Date.now())
    })
    const keeper = (a as unknown as { keeper: { presenceIgnored: number } }).keeper
    const ignoredBefore = keeper.presenceIgnored
    for (let i = 0; i < 30; i++) await b.publish(PRESENCE_TOPIC, { addrs: b.multiaddrs() })
    // the first may be delivered (or ignored, when the join's second announcement came just before)
    await waitFor(() => keeper.presenceIgnored - ignoredBefore + delivered.length === 30, 10_000, 50)
    expect(delivered.length).toBeLessThanOrEqual(1)
    const deliveredBefore = delivered.length
    expect((a.p2p.services.pubsub as unknown as { getScore(id: string): number }).getScore(b.peerId)).toBeGreaterThanOrEqual(0)
    // once the interval has passed, its next announcement is delivered again; it was never refused
    await new Promise((r) => setTimeout(r, 2_100))
    await b.publish(PRESENCE_TOPIC, { addrs: b.multiaddrs() })
    await waitFor(() => delivered.length === deliveredBefore + 1, 10_000, 50)
    expect(isMember(a, b) && isMember(b, a)).toBe(true)
    expect(a.isDenied(b.peerId)).toBe(false)
  }, 60_000)
})
