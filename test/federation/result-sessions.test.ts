// The long-lived member streams results travel on (src/federation/member-sessions.ts), in process
// over real libp2p: three federation nodes with certificates from the test CA, one of them an
// "older member" that serves only the one-stream-per-request protocol, and a plain js-libp2p peer
// that is not a member.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SvcError } from '../../src/core/errors.js'
import { MemberSessions } from '../../src/federation/member-sessions.js'
import type { FederationNode } from '../../src/federation/node.js'
import { startNode, waitFor } from './fixtures.js'
import { startPlainPeer, type PlainPeer } from './plain-peer.js'

const SESSION = '/svc/test-session/1.0.0'
const FALLBACK = '/svc/test-session-fallback/1.0.0'

describe('member sessions: one long-lived stream per member', () => {
  let a: FederationNode
  let b: FederationNode
  let old: FederationNode
  let aSessions: MemberSessions
  let bSessions: MemberSessions
  let plain: PlainPeer | undefined
  /** requests A's handler saw, and how it answers */
  const seen: unknown[] = []
  let hold: Promise<void> | undefined

  /** session streams B holds open to `peer` */
  const streamsTo = (peer: FederationNode, protocol = SESSION): number =>
    b.p2p.getConnections().filter((c) => c.remotePeer.toString() === peer.peerId).flatMap((c) => c.streams).filter((s) => s.protocol === protocol).length

  beforeAll(async () => {
    a = await startNode()
    const bootstrap = a.multiaddrs().slice(0, 1)
    b = await startNode({ bootstrap })
    old = await startNode({ bootstrap })
    const handler = async (request: unknown, from: { peerId: string }) => {
      seen.push(request)
      const r = request as { n?: number; fail?: boolean; stall?: boolean }
      if (r.fail) throw new SvcError('VALIDATION_FAILED', `refused ${r.n}`)
      if (r.stall) await hold
      return { n: r.n, from: from.peerId, by: a.peerId }
    }
    aSessions = new MemberSessions({ protocol: SESSION, fallback: FALLBACK }, { node: a })
    await aSessions.start(handler)
    await a.handleMembers(FALLBACK, handler)
    // an older member: the same requests, one stream each, no session protocol
    await old.handleMembers(FALLBACK, async (request) => ({ n: (request as { n: number }).n, by: old.peerId }))
    bSessions = new MemberSessions({ protocol: SESSION, fallback: FALLBACK }, { node: b })
    await bSessions.start(async () => ({}))
    await waitFor(() => b.members().length === 2 && a.members().length === 2, 20_000, 100)
  }, 60_000)

  afterAll(async () => {
    await plain?.stop().catch(() => undefined)
    await bSessions?.stop()
    await aSessions?.stop()
    await Promise.allSettled([a, b, old].map((n) => n?.stop()))
  })

  it('answers concurrent and sequential requests over one stream, each with its own answer', async () => {
    const answers = await Promise.all(Array.from({ length: 40 }, (_, n) => bSessions.request(a.peerId, { n }, 10_000)))
    expect(answers).toEqual(Array.from({ length: 40 }, (_, n) => ({ n, from: b.peerId, by: a.peerId })))
    for (let n = 40; n < 60; n++) expect(await bSessions.request(a.peerId, { n }, 10_000)).toMatchObject({ n })
    expect(streamsTo(a)).toBe(1)
    expect(streamsTo(a, FALLBACK)).toBe(0)
    expect(bSessions.size).toBe(1)
  })

  it('carries an error answer as the member\'s error and keeps the stream', async () => {
    const err = await bSessions.request(a.peerId, { n: 7, fail: true }, 10_000).catch((e: unknown) => e) as Error & { remote?: { code: number; message: string } }
    expect(err.remote).toMatchObject({ code: 1006, message: 'refused 7' })
    expect(await bSessions.request(a.peerId, { n: 8 }, 10_000)).toMatchObject({ n: 8 })
    expect(streamsTo(a)).toBe(1)
  })

  it('asks a member without the session protocol one stream per request', async () => {
    for (let n = 0; n < 3; n++) expect(await bSessions.request(old.peerId, { n }, 10_000)).toEqual({ n, by: old.peerId })
    expect(streamsTo(old)).toBe(0)
  })

  it('drops a stream whose answer does not come in time; the next request opens a new one', async () => {
    let release!: () => void
    hold = new Promise((r) => { release = r })
    const stalled = await bSessions.request(a.peerId, { n: 1, stall: true }, 300).catch((e: unknown) => e)
    expect(String(stalled)).toMatch(/no answer within 300 ms/)
    release()
    hold = undefined
    expect(await bSessions.request(a.peerId, { n: 2 }, 10_000)).toMatchObject({ n: 2 })
    await waitFor(() => streamsTo(a) === 1, 5_000)
  })

  it('refuses a peer that is not a member: its session stream is never served', async () => {
    plain = await startPlainPeer({ membership: { kind: 'none' } })
    await plain.dial(a.multiaddrs()[0]!)
    const before = seen.length
    const asked = await plain.request(a.peerId, SESSION, { id: 1, body: { n: 99 } }, 3_000)
    expect(asked.answered).toBe(false)
    expect(seen.length).toBe(before)
  })
})
