// A member that gets a gossiped announcement from a node it is not connected to proves that node's
// membership by dialling it. With the addresses the announcement carries (subscribe's
// `addressesOf`) it dials them; without, libp2p looks the peer up in the DHT first (a FIND_NODE
// walk: when a fresh node joined a federation, every member did one). Real nodes on loopback:
// C is connected to A only, B hears C through A.
import type { Connection, Stream } from '@libp2p/interface'
import { afterEach, describe, expect, it } from 'vitest'
import { DHT_PROTOCOL, type FederationNode } from '../../src/federation/node.js'
import { startNode, waitFor } from './fixtures.js'

const TOPIC = 'svc/test-presence/1'
const addrsOf = (payload: unknown): string[] => ((payload as { addrs?: unknown })?.addrs as string[] | undefined) ?? []

describe("proving a gossiped publisher's membership (3 nodes on loopback)", () => {
  const nodes: FederationNode[] = []
  afterEach(async () => {
    await Promise.all(nodes.splice(0).map((n) => n.stop()))
  })

  /** B's DHT streams to A while C announces itself; and whether B delivered the announcement and made C a member */
  async function announce(withHints: boolean): Promise<{ dhtStreams: number; delivered: boolean }> {
    const a = await startNode()
    const b = await startNode({ bootstrap: [a.multiaddrs()[0]!] })
    nodes.push(a, b)
    await waitFor(() => a.members().length === 1 && b.members().length === 1, 20_000)
    // B's start-up DHT queries are over before C exists: B knows nothing of C (as the members of a
    // running federation know nothing of a node that joins it)
    await new Promise((r) => setTimeout(r, 2_500))
    const c = await startNode({ bootstrap: [a.multiaddrs()[0]!] })
    nodes.push(c)
    await waitFor(() => a.members().length === 2 && c.members().length === 1, 20_000)
    expect(b.member(c.peerId)).toBeUndefined()
    let delivered = false
    for (const n of [a, b, c]) {
      n.subscribe(TOPIC, (_payload, origin) => {
        if (n === b && origin.peerId === c.peerId) delivered = true
      }, () => 'accept', withHints ? addrsOf : undefined)
    }
    let dhtStreams = 0
    a.p2p.use(DHT_PROTOCOL, (stream: Stream, connection: Connection, next: (stream: Stream, connection: Connection) => void) => {
      if (connection.remotePeer.toString() === b.peerId) dhtStreams++
      next(stream, connection)
    })
    // the mesh forms on gossipsub's heartbeat; announce until B has it (bounded)
    for (let i = 0; i < 40 && !delivered; i++) {
      await c.publish(TOPIC, { addrs: c.multiaddrs() })
      await new Promise((r) => setTimeout(r, 250))
    }
    expect(b.member(c.peerId)).toBeDefined()
    return { dhtStreams, delivered }
  }

  it('with the announced addresses, B dials C at them: no DHT lookup', async () => {
    const r = await announce(true)
    expect(r.delivered).toBe(true)
    expect(r.dhtStreams).toBe(0)
  })

  it('without them, B looks C up in the DHT first (what every member did when a node joined)', async () => {
    const r = await announce(false)
    expect(r.delivered).toBe(true)
    expect(r.dhtStreams).toBeGreaterThan(0)
  })
})
