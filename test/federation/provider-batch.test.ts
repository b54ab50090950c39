// A batch of provider records (FederationNode.provideMany): up to k nodes, one DHT stream per
// member carrying every record, no walk; past k (or without kad-dht's internals), a walk per digest.
// Real libp2p nodes on loopback, in process.
import type { Connection, PeerId, Stream } from '@libp2p/interface'
import { createHash } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFederationCa, issueNodeCertificate } from '../../src/federation/certificates.js'
import { KAD_DHT_K, kadDhtBatchWriter } from '../../src/federation/kad-dht-internals.js'
import { cidOfDigest, DHT_PROTOCOL, type FederationNode, type ProvideManyResult } from '../../src/federation/node.js'
import { newIdentity, startNode, waitFor } from './fixtures.js'

const digestOf = (text: string): string => createHash('sha256').update(text).digest('hex')
const digests = (label: string, n: number): string[] => Array.from({ length: n }, (_, i) => digestOf(`${label} ${i}`))

/**
 * `from.provideMany(batch)`, counting the DHT streams each of `nodes` accepts from `from` meanwhile
 * (libp2p middleware, after the membership gate).
 */
function provideCountingStreams(from: FederationNode, nodes: FederationNode[], batch: string[]): Promise<{ result: ProvideManyResult; streams: Map<string, number> }> {
  return countingStreams(from, nodes, () => from.provideMany(batch))
}

/** `action()`, counting the DHT streams each of `nodes` accepts from `from` meanwhile. */
async function countingStreams<T>(from: FederationNode, nodes: FederationNode[], action: () => Promise<T>): Promise<{ result: T; streams: Map<string, number> }> {
  const streams = new Map<string, number>()
  for (const n of nodes) {
    streams.set(n.peerId, 0)
    n.p2p.use(DHT_PROTOCOL, (stream: Stream, connection: Connection, next: (stream: Stream, connection: Connection) => void) => {
      if (connection.remotePeer.toString() === from.peerId) streams.set(n.peerId, streams.get(n.peerId)! + 1)
      next(stream, connection)
    })
  }
  try {
    return { result: await action(), streams }
  } finally {
    for (const n of nodes) n.p2p.unuse(DHT_PROTOCOL)
  }
}

/** The providers of `digest` in `node`'s own kad-dht store (what its reprovider reads). */
async function ownStore(node: FederationNode, digest: string): Promise<string[]> {
  const providers = (node.p2p.services.dht as unknown as { providers: { getProviders(cid: unknown): Promise<PeerId[]> } }).providers
  return (await providers.getProviders(cidOfDigest(digest))).map((p) => p.toString())
}

describe('provider records in batches (4 members on loopback)', () => {
  const nodes: FederationNode[] = []
  /** a member that never batches (providerBatchMaxNodes 3 < 4 nodes: as past k) */
  let walker: FederationNode

  beforeAll(async () => {
    const first = await startNode()
    nodes.push(first)
    const addr = first.multiaddrs()[0]!
    nodes.push(await startNode({ bootstrap: [addr] }), await startNode({ bootstrap: [addr] }))
    walker = await startNode({ bootstrap: [addr], init: { providerBatchMaxNodes: 3 } })
    nodes.push(walker)
    for (const n of nodes) for (const o of nodes) if (n !== o) await n.dial(o.multiaddrs()[0]!).catch(() => undefined)
    await waitFor(() => nodes.every((n) => n.members().length === nodes.length - 1), 20_000)
    // kad-dht's own start-up queries (query-self, routing-table refresh) are over
    await new Promise((r) => setTimeout(r, 1_500))
  })
  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop()))
  })

  it('a batch of 12 records reaches every member over one stream each, and each record is found', async () => {
    const [publisher, ...members] = nodes as [FederationNode, ...FederationNode[]]
    const batch = digests('batch', 12)
    const { result, streams } = await provideCountingStreams(publisher, members, batch)
    expect(result).toEqual({ path: 'members', announced: batch, reached: 3, failed: 0 })
    // one stream per member, not one per record (the walk opens two per record: FIND_NODE, ADD_PROVIDER)
    for (const m of members) expect(streams.get(m.peerId), `streams to ${m.peerId}`).toBeLessThanOrEqual(2)
    expect([...streams.values()].reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(members.length)
    // the publisher's own record of each, as kad-dht's provide writes it (its reprovider refreshes those)
    for (const d of batch) expect(await ownStore(publisher, d)).toContain(publisher.peerId)
    // every member holds every record by the time provideMany resolved (the PING's echo), and finds it
    for (const m of members) {
      for (const d of batch) expect(await ownStore(m, d), `record of ${d} on ${m.peerId}`).toContain(publisher.peerId)
      for (const d of [batch[0]!, batch[11]!]) {
        expect((await m.findProviders(d, { timeoutMs: 3_000 })).map((p) => p.peerId)).toEqual([publisher.peerId])
      }
    }
  })

  it('past k nodes (here: a limit of 3 for 4 nodes) each record is made by a DHT walk, and is found', async () => {
    const others = nodes.filter((n) => n !== walker)
    const batch = digests('walk', 4)
    const { result, streams } = await provideCountingStreams(walker, others, batch)
    expect(result.path).toBe('walk')
    expect(result.announced).toEqual(batch)
    // a stream per record per member at least (the walk's ADD_PROVIDER), FIND_NODE queries besides
    for (const m of others) expect(streams.get(m.peerId)).toBeGreaterThanOrEqual(batch.length)
    // kad-dht's ADD_PROVIDER has no answer: provide resolves once the message is written, and the
    // member stores the record when it has read it (the members path confirms by a PING's echo)
    const missing = async (): Promise<string[]> => {
      const out: string[] = []
      for (const m of others) for (const d of batch) if (!(await ownStore(m, d)).includes(walker.peerId)) out.push(`${d} on ${m.peerId}`)
      return out
    }
    await waitFor(async () => (await missing()).length === 0, 5_000).catch(() => undefined)
    expect(await missing(), 'records not held').toEqual([])
    for (const m of others) {
      expect((await m.findProviders(batch[3]!, { timeoutMs: 3_000 })).map((p) => p.peerId)).toEqual([walker.peerId])
    }
  })

  it('within k, a lookup answers from the records the node holds (no DHT stream); with none it asks members; past k it walks', async () => {
    const [publisher, looker] = nodes as [FederationNode, FederationNode]
    const others = (n: FederationNode): FederationNode[] => nodes.filter((o) => o !== n)
    const total = (streams: Map<string, number>): number => [...streams.values()].reduce((a, b) => a + b, 0)
    const [digest] = digests('held', 1) as [string]
    expect((await publisher.provideMany([digest])).path).toBe('members')
    const held = await countingStreams(looker, others(looker), () => looker.findProviders(digest, { timeoutMs: 3_000 }))
    expect(held.result.map((p) => p.peerId)).toEqual([publisher.peerId])
    expect(total(held.streams)).toBe(0)
    // a digest nobody announced: no record here, so the node asks members for theirs (and finds none)
    const unknown = await countingStreams(looker, others(looker), () => looker.findProviders(digestOf('announced by nobody'), { timeoutMs: 3_000 }))
    expect(unknown.result).toEqual([])
    expect(total(unknown.streams)).toBeGreaterThan(0)
    // the walker (a limit of 3 for 4 nodes: as past k) holds the record too, and walks all the same
    expect(await ownStore(walker, digest)).toContain(publisher.peerId)
    const walked = await countingStreams(walker, others(walker), () => walker.findProviders(digest, { timeoutMs: 3_000 }))
    expect(walked.result.map((p) => p.peerId)).toEqual([publisher.peerId])
    expect(total(walked.streams)).toBeGreaterThan(0)
  })

  it('within k, a node without the record asks a few members once each (no walk), and keeps what they hold', async () => {
    const [publisher, looker] = nodes as [FederationNode, FederationNode]
    const others = nodes.filter((o) => o !== looker)
    const total = (streams: Map<string, number>): number => [...streams.values()].reduce((a, b) => a + b, 0)
    const [digest] = digests('restarted', 1) as [string]
    // the members hold the publisher's record and the looker does not (as after its restart: kad-dht keeps records in memory)
    for (const m of others) {
      const writer = await kadDhtBatchWriter(m.p2p.services.dht)
      await writer!.storeRecord(cidOfDigest(digest), publisher.p2p.peerId)
    }
    expect(await ownStore(looker, digest)).toEqual([])
    const asked = await countingStreams(looker, others, () => looker.findProviders(digest, { timeoutMs: 3_000 }))
    expect(asked.result.map((p) => p.peerId)).toEqual([publisher.peerId])
    for (const m of others) expect(asked.streams.get(m.peerId), `streams to ${m.peerId}`).toBeLessThanOrEqual(1)
    expect(total(asked.streams)).toBeGreaterThan(0)
    expect(total(asked.streams)).toBeLessThanOrEqual(3)
    // kept: the next lookup answers from it, no stream
    expect(await ownStore(looker, digest)).toContain(publisher.peerId)
    const again = await countingStreams(looker, others, () => looker.findProviders(digest, { timeoutMs: 3_000 }))
    expect(again.result.map((p) => p.peerId)).toEqual([publisher.peerId])
    expect(total(again.streams)).toBe(0)
  })

  it('a malformed digest refuses the whole batch before anything is sent', async () => {
    await expect(nodes[0]!.provideMany([digestOf('fine'), 'not-a-digest'])).rejects.toThrow(/not a SHA-256 hex digest/)
    expect(await ownStore(nodes[0]!, digestOf('fine'))).toEqual([])
  })

  it("the adapter recognises this kad-dht's internals, and answers undefined (the walk) for anything else", async () => {
    const writer = await kadDhtBatchWriter(nodes[0]!.p2p.services.dht)
    expect(writer?.k).toBe(KAD_DHT_K)
    expect(await kadDhtBatchWriter({})).toBeUndefined()
    expect(await kadDhtBatchWriter({ providers: {} })).toBeUndefined()
    expect(await kadDhtBatchWriter(undefined)).toBeUndefined()
  })

  it("a non-member's batch is refused by the membership gate: no record is kept", async () => {
    const identity = await newIdentity()
    const intruder = await startNode({ identity, certPem: issueNodeCertificate(createFederationCa({ name: 'rogue' }), identity.peerId).certPem, skipSelfCheck: true })
    try {
      const target = nodes[1]!
      const batch = digests('intruder', 5)
      const writer = (await kadDhtBatchWriter(intruder.p2p.services.dht))!
      const sent = (async () => {
        await intruder.dial(target.multiaddrs()[0]!)
        const stream = await intruder.p2p.dialProtocol(target.p2p.peerId, DHT_PROTOCOL, { signal: AbortSignal.timeout(10_000) })
        await writer.writeRecords(stream, batch.map(cidOfDigest), { id: intruder.p2p.peerId, multiaddrs: intruder.p2p.getMultiaddrs() }, { signal: AbortSignal.timeout(10_000) })
      })()
      await expect(sent).rejects.toThrow()
      for (const d of batch) expect(await ownStore(target, d)).toEqual([])
      expect(target.member(intruder.peerId)).toBeUndefined()
    } finally {
      await intruder.stop()
    }
  })

  it('a member that left does not count towards k while the DHT routing table still holds it', async () => {
    // within k for it: the 4 members and itself (a limit of 5)
    const judge = await startNode({ bootstrap: [nodes[0]!.multiaddrs()[0]!], init: { providerBatchMaxNodes: 5 } })
    let extra: FederationNode | undefined
    try {
      for (const n of nodes) await judge.dial(n.multiaddrs()[0]!).catch(() => undefined)
      await waitFor(() => judge.members().length === nodes.length, 20_000)
      expect((await judge.provideMany(digests('judge within', 1))).path).toBe('members')
      // a sixth node: past the limit
      extra = await startNode({ bootstrap: [judge.multiaddrs()[0]!] })
      await waitFor(() => judge.member(extra!.peerId) !== undefined && judge.routingTable().verified.includes(extra!.peerId), 20_000)
      expect((await judge.provideMany(digests('judge past', 1))).path).toBe('walk')
      // it leaves: its connection closes, and kad-dht's routing table still lists it
      await extra.stop()
      await waitFor(() => judge.member(extra!.peerId) === undefined, 20_000)
      expect(judge.routingTable().verified).toContain(extra.peerId)
      expect((await judge.provideMany(digests('judge after', 1))).path).toBe('members')
      extra = undefined
    } finally {
      await extra?.stop()
      await judge.stop()
    }
  })
})
