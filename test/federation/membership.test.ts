import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFederationCa, issueNodeCertificate } from '../../src/federation/certificates.js'
import type { FederationNode } from '../../src/federation/node.js'
import { newIdentity, startNode, testCa, waitFor } from './fixtures.js'

const TOPIC = 'svc/test/1'

describe('federation membership (3 members on loopback + intruders)', () => {
  const nodes: FederationNode[] = []
  const received = new Map<string, Array<{ payload: unknown; origin: string }>>()

  beforeAll(async () => {
    const first = await startNode()
    nodes.push(first)
    const addr = first.multiaddrs()[0]!
    nodes.push(await startNode({ bootstrap: [addr] }), await startNode({ bootstrap: [addr] }))
    for (const n of nodes) {
      received.set(n.peerId, [])
      n.subscribe(TOPIC, (payload, origin) => {
        received.get(n.peerId)!.push({ payload, origin: origin.peerId })
      })
      await n.handleMembers('/svc/test-echo/1.0.0', async (req, from) => ({ echo: req, from: from.peerId }))
    }
    await nodes[1]!.dial(nodes[2]!.multiaddrs()[0]!)
  })
  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop()))
  })

  it('members verify each other', async () => {
    await waitFor(() => nodes.every((n) => n.members().length === 2))
    for (const n of nodes) {
      expect(n.members().map((m) => m.peerId).sort()).toEqual(nodes.filter((o) => o !== n).map((o) => o.peerId).sort())
    }
  })

  it('request/response between members', async () => {
    const answer = await nodes[0]!.request(nodes[2]!.peerId, '/svc/test-echo/1.0.0', { hello: 1 })
    expect(answer).toEqual({ echo: { hello: 1 }, from: nodes[0]!.peerId })
  })

  it('gossip from a member reaches every member', async () => {
    await waitFor(async () => {
      await nodes[0]!.publish(TOPIC, { n: 1 })
      return nodes.slice(1).every((n) => received.get(n.peerId)!.some((r) => (r.payload as { n: number }).n === 1))
    }, 10_000, 300)
    expect(received.get(nodes[1]!.peerId)!.find((r) => (r.payload as { n: number }).n === 1)!.origin).toBe(nodes[0]!.peerId)
  })

  it('DHT provider records of members are found', async () => {
    const digest = 'ab'.repeat(32)
    await nodes[1]!.provide(digest)
    const providers = await waitFor(async () => {
      const found = await nodes[2]!.findProviders(digest)
      return found.length ? found : undefined
    })
    expect(providers!.map((p) => p.peerId)).toEqual([nodes[1]!.peerId])
  })

  const intruders: Array<[string, () => Promise<{ certPem: string; revoked?: boolean; identity: Awaited<ReturnType<typeof newIdentity>> }>]> = [
    ['self-signed (another CA)', async () => {
      const identity = await newIdentity()
      return { identity, certPem: issueNodeCertificate(createFederationCa({ name: 'rogue' }), identity.peerId).certPem }
    }],
    ['expired', async () => {
      const identity = await newIdentity()
      return { identity, certPem: issueNodeCertificate(testCa(), identity.peerId, { notBefore: new Date(Date.now() - 5 * 86_400_000), days: 1 }).certPem }
    }],
    ['issued for another PeerId', async () => {
      const identity = await newIdentity()
      const other = await newIdentity()
      return { identity, certPem: issueNodeCertificate(testCa(), other.peerId).certPem }
    }],
    ['revoked', async () => {
      const identity = await newIdentity()
      return { identity, certPem: issueNodeCertificate(testCa(), identity.peerId).certPem, revoked: true }
    }],
  ]

  for (const [kind, make] of intruders) {
    it(`an intruder with a certificate ${kind} is disconnected and its gossip ignored`, async () => {
      const made = await make()
      // revocation is the verifier's configuration: a node that revokes this serial
      let target = nodes[0]!
      let extra: FederationNode | undefined
      if (made.revoked) {
        const { X509Certificate } = await import('node:crypto')
        const serial = new X509Certificate(made.certPem).serialNumber
        extra = await startNode({ revoked: [serial] })
        target = extra
        received.set(extra.peerId, [])
        extra.subscribe(TOPIC, (payload, origin) => {
          received.get(extra!.peerId)!.push({ payload, origin: origin.peerId })
        })
      }
      const intruder = await startNode({ identity: made.identity, certPem: made.certPem, skipSelfCheck: true })
      try {
        intruder.subscribe(TOPIC, () => undefined)
        await intruder.dial(target.multiaddrs()[0]!).catch(() => undefined)
        await waitFor(() => target.p2p.getConnections().every((c) => c.remotePeer.toString() !== made.identity.peerId), 5_000)
        expect(target.members().map((m) => m.peerId)).not.toContain(made.identity.peerId)
        await intruder.publish(TOPIC, { intruder: kind }).catch(() => undefined)
        await expect(intruder.request(target.peerId, '/svc/test-echo/1.0.0', {}, 2_000)).rejects.toThrow()
        await new Promise((r) => setTimeout(r, 500))
        expect(received.get(target.peerId)!.some((r) => (r.payload as { intruder?: string }).intruder !== undefined)).toBe(false)
        // refused afterwards: a new dial fails or is hung up at once
        await intruder.dial(target.multiaddrs()[0]!).catch(() => undefined)
        await new Promise((r) => setTimeout(r, 200))
        expect(target.members().map((m) => m.peerId)).not.toContain(made.identity.peerId)
      } finally {
        await intruder.stop()
        await extra?.stop()
      }
    })
  }
})
