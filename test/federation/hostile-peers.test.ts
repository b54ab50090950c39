// The federation's trust boundary tried from outside (issue 12): two svc-node daemons as real
// processes, and plain js-libp2p peers built from the libp2p packages alone (plain-peer.ts) that
// connect to them. A peer that does not prove membership (no handler, silence, garbage, a slow
// drip, an oversized answer, a certificate from another CA, bound to another PeerId, expired or
// revoked) is refused within the membership deadline, gets no answer to anything it asks (DHT,
// sync, code), has nothing it sent applied or stored, is sent nothing, is not listed to others,
// and its refusal shows in the log, the audit log and /metrics. A genuine member that forges
// another origin's change, replays an old one, or presents a second certificate is refused too.
// Needs the compiled daemon (`npm run build`; the test command builds first).
import { generateKeyPair, publicKeyToProtobuf } from '@libp2p/crypto/keys'
import type { PrivateKey } from '@libp2p/interface'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFederationCa, issueNodeCertificate, type CertificateAuthority } from '../../src/federation/certificates.js'
import { removeDir, tempDataDir } from '../fixtures/daemon-process.js'
import { digestOf, federationOnDisk, logLines, prepareDaemon, rest, startFederatedDaemon, type FederatedDaemon, type FederationOnDisk } from './federated-daemon.js'
import { waitFor } from './fixtures.js'
import { KadMessageType, peersIn, startPlainPeer, type MembershipMode, type PlainPeer } from './plain-peer.js'
// the Kademlia record codec of the kad-dht package (a PUT_VALUE carries one)
import { Record as KadRecord } from '../../node_modules/@libp2p/kad-dht/dist/src/message/dht.js'

const CATALOG_TOPIC = 'svc/catalog/1'
const SYNC = '/svc/sync/1.0.0'
const SYNC_SUMMARY = '/svc/sync-summary/1.0.0'
const CODE = '/svc/code/1.0.0'
/** the daemons' `federation.membership_timeout_ms` */
const DEADLINE_MS = 2_000
/** what a loaded 2-core machine may add to the deadline before a refusal is seen from outside */
const MARGIN_MS = 6_000

const fn = (name: string, body: string) => ({
  function_name: name, signature: '(a)', language: 'javascript', source_code: `function ${name}(a) {\n  return ${body}\n}\n`,
})

interface Change {
  origin: string
  seq: number
  key: string
  kind?: string
  op: string
  sig?: string
  fn: Record<string, unknown> & { function_name: string; rufid_short: string; content_digest: string }
  ledger: Record<string, unknown>
}
interface SyncAnswer { ok?: { added: Change[]; updated: Change[]; deleted: Change[]; certificates?: Record<string, string>; vector: Record<string, number> }; error?: { code: number } }

const cidOf = async (text: string): Promise<CID> => CID.createV1(raw.code, await sha256.digest(new TextEncoder().encode(text)))

describe('hostile peers against federated daemons (plain js-libp2p peers, real processes)', () => {
  let root: string
  let fed: FederationOnDisk
  let a: FederatedDaemon
  let b: FederatedDaemon
  let witness: PlainPeer
  let seed: { rufid_short: string; content_digest: string }
  let revoked: { privateKey: PrivateKey; certPem: string }
  const peers: PlainPeer[] = []

  const registrationOf = (peerId: string, certPem: string) => ({
    node_id: peerId, endpoint: 'http://127.0.0.1:9/plain-peer',
    capabilities: { languages: ['javascript'], max_concurrent: 1, protocols: ['rest'] },
    auth: { certificate: certPem, public_key: '' },
  })

  const plain = async (membership: MembershipMode, privateKey?: PrivateKey, slowToTakeStreamsMs?: number): Promise<PlainPeer> => {
    const peer = await startPlainPeer({ membership, topics: [CATALOG_TOPIC], ...(privateKey ? { privateKey } : {}), ...(slowToTakeStreamsMs ? { slowToTakeStreamsMs } : {}) })
    peers.push(peer)
    return peer
  }

  /** A plain peer holding a valid certificate from the federation CA: a genuine member. */
  const plainMember = async (ca: CertificateAuthority = fed.ca): Promise<PlainPeer & { certPem: string }> => {
    const privateKey = await generateKeyPair('Ed25519')
    const peerId = peerIdFromPrivateKey(privateKey).toString()
    const certPem = issueNodeCertificate(ca, peerId).certPem
    return Object.assign(await plain({ kind: 'answer', registration: registrationOf(peerId, certPem) }, privateKey), { certPem })
  }

  const listedBy = async (node: FederatedDaemon, peerId: string): Promise<boolean> =>
    ((await rest(node, 'GET', '/api/v1/federation/nodes')).body.nodes as Array<{ node_id: string }>).some((n) => n.node_id === peerId)

  const joinBoth = async (peer: PlainPeer): Promise<void> => {
    await peer.dial(a.p2p[0]!)
    await peer.dial(b.p2p[0]!)
    await waitFor(async () => (await listedBy(a, peer.peerId)) && (await listedBy(b, peer.peerId)), 15_000, 100)
  }

  const metric = async (node: FederatedDaemon, series: string): Promise<number> => {
    const { text } = await rest(node, 'GET', '/metrics')
    const line = text.split('\n').find((l) => l.startsWith(`${series} `))
    return line === undefined ? Number.NaN : Number(line.slice(series.length + 1))
  }

  /** The refusal of `peer` by `node` for `reason`, seen from outside: warn log, audit entry, metric. */
  const expectRefusalVisible = async (node: FederatedDaemon, peer: PlainPeer, reason: string): Promise<void> => {
    const line = await waitFor(() => logLines(node).find((l) => l.peer_id === peer.peerId && l.msg === 'peer refused federation membership: disconnected'), 5_000)
    expect(line).toMatchObject({ level: 40, reason })
    const audit = await waitFor(async () => {
      const r = await rest(node, 'GET', '/api/v1/audit?operation=federation.membership.refused&limit=1000')
      expect(r.status).toBe(200)
      return (r.body.items as Array<{ user: string; result: string; code: number }>).find((e) => e.user === peer.peerId)
    }, 5_000)
    expect(audit!.result).toContain(`refused (${reason})`)
    expect(audit!.code).toBe(1003)
    expect(await metric(node, `svc_federation_membership_refusals_total{reason="${reason}"}`)).toBeGreaterThanOrEqual(1)
  }

  /** Disconnected within the deadline (plus a margin for a loaded machine), and a redial is refused. */
  const expectDisconnected = async (peer: PlainPeer, node: FederatedDaemon, since: number): Promise<void> => {
    await waitFor(() => !peer.connected(node.peerId), DEADLINE_MS + MARGIN_MS, 25)
    expect(Date.now() - since).toBeLessThan(DEADLINE_MS + MARGIN_MS)
    await peer.dial(node.p2p[0]!).catch(() => undefined)
    await waitFor(() => !peer.connected(node.peerId), 3_000, 25)
  }

  beforeAll(async () => {
    root = tempDataDir()
    fed = await federationOnDisk(root, 'hostile-peers test CA')
    revoked = { privateKey: await generateKeyPair('Ed25519'), certPem: '' }
    const revokedCert = issueNodeCertificate(fed.ca, peerIdFromPrivateKey(revoked.privateKey).toString())
    revoked.certPem = revokedCert.certPem
    a = await prepareDaemon(fed, 'a')
    b = await prepareDaemon(fed, 'b')
    const federation = { membership_timeout_ms: DEADLINE_MS, refusal_backoff_ms: 120_000, revoked: [revokedCert.serial] }
    await startFederatedDaemon(fed, a, [], federation, { AUTH_PROVIDER: 'standard' })
    await startFederatedDaemon(fed, b, [a.p2p[0]!], federation, { AUTH_PROVIDER: 'standard' })
    expect(a.adminKey && b.adminKey).toBeTruthy()
    await waitFor(async () => (await listedBy(a, b.peerId)) && (await listedBy(b, a.peerId)), 20_000, 100)
    const created = await rest(a, 'POST', '/api/v1/functions/create', fn('seed', 'a + 1'))
    expect(created.status).toBe(201)
    seed = { rufid_short: created.body.rufid_short as string, content_digest: (created.body.content_digest as string) }
    await waitFor(async () => (await digestOf(a)) === (await digestOf(b)), 15_000, 100)
    witness = await plainMember()
    await joinBoth(witness)
  }, 120_000)

  afterAll(async () => {
    await Promise.allSettled(peers.map((p) => p.stop()))
    await Promise.allSettled([a?.proc?.stop(), b?.proc?.stop()])
    if (root) removeDir(root)
  })

  const nonMembers: Array<{ name: string; reason: string; make: () => Promise<PlainPeer> }> = [
    // slow to take the streams a node opens to it (identify, membership): its own go out at once
    { name: 'no membership handler (slow to take streams)', reason: 'no_protocol', make: () => plain({ kind: 'none' }, undefined, DEADLINE_MS / 2) },
    { name: 'a membership handler that never answers', reason: 'timeout', make: () => plain({ kind: 'hang' }) },
    { name: 'an answer that is not JSON', reason: 'malformed', make: () => plain({ kind: 'garbage' }) },
    { name: 'an answer dripped a byte at a time', reason: 'timeout', make: () => plain({ kind: 'drip', dripMs: 300 }) },
    { name: 'an oversized answer', reason: 'oversized', make: () => plain({ kind: 'oversized' }) },
    {
      name: 'a certificate from another CA', reason: 'bad_chain',
      make: async () => {
        const privateKey = await generateKeyPair('Ed25519')
        const peerId = peerIdFromPrivateKey(privateKey).toString()
        const rogue = createFederationCa({ name: 'rogue CA' })
        return plain({ kind: 'answer', registration: registrationOf(peerId, issueNodeCertificate(rogue, peerId).certPem) }, privateKey)
      },
    },
    {
      name: 'a valid certificate bound to another PeerId', reason: 'peer_id_mismatch',
      make: async () => {
        const privateKey = await generateKeyPair('Ed25519')
        const other = peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString()
        return plain({ kind: 'answer', registration: registrationOf(peerIdFromPrivateKey(privateKey).toString(), issueNodeCertificate(fed.ca, other).certPem) }, privateKey)
      },
    },
    {
      name: 'an expired certificate', reason: 'expired',
      make: async () => {
        const privateKey = await generateKeyPair('Ed25519')
        const peerId = peerIdFromPrivateKey(privateKey).toString()
        const certPem = issueNodeCertificate(fed.ca, peerId, { notBefore: new Date(Date.now() - 10 * 86_400_000), days: 2 }).certPem
        return plain({ kind: 'answer', registration: registrationOf(peerId, certPem) }, privateKey)
      },
    },
    {
      name: 'a revoked certificate', reason: 'revoked',
      make: () => plain({ kind: 'answer', registration: registrationOf(peerIdFromPrivateKey(revoked.privateKey).toString(), revoked.certPem) }, revoked.privateKey),
    },
  ]

  for (const { name, reason, make } of nonMembers) {
    it(`a peer with ${name} is refused (${reason}) within the deadline, answered nothing, sent nothing, stores nothing`, async () => {
      const before = { a: await digestOf(a), b: await digestOf(b) }
      const peer = await make()
      const seedCid = await cidOf(`${seed.content_digest}`) // any CID: what matters is that no answer comes
      const ownCid = await cidOf(`provided by ${peer.peerId}`)
      // a record a node would store from anyone: a public key under /pk/<its PeerId> (an RSA key: a
      // node derives Ed25519 keys from the PeerId itself, so only a stored record can answer for it)
      const rsa = await generateKeyPair('RSA', 1024)
      const pkKey = new Uint8Array([...new TextEncoder().encode('/pk/'), ...peerIdFromPrivateKey(rsa).toMultihash().bytes])
      const record = KadRecord.encode({ key: pkKey, value: publicKeyToProtobuf(rsa.publicKey), timeReceived: new Date().toISOString() })
      const forged = {
        origin: peer.peerId, seq: 1, hlc: '000009999999999999-000000', op: 'added', key: 'default\u0000evil\u00000000000001', sig: 'AAAA',
        fn: { tenant_id: 'default', function_name: 'evil', version: 1, rufid_short: 'EvilEvilEvil', content_digest: 'e'.repeat(64), source_code: '' },
        ledger: { tenant_id: 'default', function_name: 'evil', version: 1, rufid_short: 'EvilEvilEvil', content_digest: 'e'.repeat(64) },
      }
      const since = Date.now()
      await peer.dial(a.p2p[0]!)
      // everything at once, while its membership is still being checked
      const wait = DEADLINE_MS + MARGIN_MS
      const summaryAsked = peer.request(a.peerId, SYNC_SUMMARY, { root: '0'.repeat(64) }, wait)
      const [findNode, getProviders, putValue, sync, code] = await Promise.all([
        peer.kad(a.peerId, { type: KadMessageType.FIND_NODE, key: randomBytes(32) }, wait),
        peer.kad(a.peerId, { type: KadMessageType.GET_PROVIDERS, key: seedCid.multihash.bytes }, wait),
        peer.kad(a.peerId, { type: KadMessageType.PUT_VALUE, key: pkKey, record }, wait),
        peer.request(a.peerId, SYNC, { added: [forged], updated: [], deleted: [], timestamp: new Date().toISOString(), vector: {} }, wait),
        peer.request(a.peerId, CODE, { tenant_id: 'default', rufid_short: seed.rufid_short, version: 1, content_digest: seed.content_digest }, wait),
        peer.kadSend(a.peerId, { type: KadMessageType.ADD_PROVIDER, key: ownCid.multihash.bytes, providers: [{ id: peer.node.peerId.toMultihash().bytes, multiaddrs: peer.node.getMultiaddrs().map((m) => m.bytes) }] }, wait),
        peer.publish(CATALOG_TOPIC, forged).catch(() => undefined),
      ])
      const summary = await summaryAsked
      await expectDisconnected(peer, a, since)

      // no answer to anything it asked
      for (const [what, answer] of Object.entries({ findNode, getProviders, putValue, sync, code, summary })) {
        expect(answer.answered, `${what}: ${JSON.stringify(answer.value ?? null)}`).toBe(false)
      }
      // nothing sent to it: identify, ping and the membership exchange only, and only by the node it dialled
      expect(peer.gated()).toEqual([])
      expect(peer.gossip).toEqual([])
      expect(peer.inbound.filter((s) => s.from !== a.peerId)).toEqual([])
      expect(peer.connected(b.peerId)).toBe(false)

      // nothing it sent applied or stored, and it is listed to no one
      expect(await digestOf(a)).toBe(before.a)
      expect(await digestOf(b)).toBe(before.b)
      for (const node of [a, b]) {
        const providers = await witness.kad(node.peerId, { type: KadMessageType.GET_PROVIDERS, key: ownCid.multihash.bytes })
        expect(providers.answered, providers.error).toBe(true)
        expect(peersIn(providers.value).providers).toEqual([])
        const value = await witness.kad(node.peerId, { type: KadMessageType.GET_VALUE, key: pkKey })
        expect(value.answered, value.error).toBe(true)
        expect(value.value!.record ?? null).toBeNull()
        const closest = await witness.kad(node.peerId, { type: KadMessageType.FIND_NODE, key: peer.node.peerId.toMultihash().bytes })
        expect(closest.answered, closest.error).toBe(true)
        expect(peersIn(closest.value).closer).not.toContain(peer.peerId)
        expect(await listedBy(node, peer.peerId)).toBe(false)
        expect(await metric(node, 'svc_federation_dht_routing_table_peers{verified="false"}')).toBe(0)
      }

      await expectRefusalVisible(a, peer, reason)
    }, 60_000)
  }

  it('a peer that opens the exchange itself with bytes that are not JSON is refused (malformed), and what it asked before goes unanswered', async () => {
    const peer = await plain({ kind: 'hang' })
    const since = Date.now()
    await peer.dial(a.p2p[0]!)
    const wait = DEADLINE_MS + MARGIN_MS
    const asked = Promise.all([
      peer.kad(a.peerId, { type: KadMessageType.FIND_NODE, key: randomBytes(32) }, wait),
      peer.request(a.peerId, SYNC, { added: [], updated: [], deleted: [], vector: {} }, wait),
    ])
    await new Promise((r) => setTimeout(r, DEADLINE_MS / 4)) // its questions are out (and held)
    const claimed = await peer.claim(a.peerId, new TextEncoder().encode('}{ not a registration'))
    expect(claimed.answered).toBe(false)
    await expectDisconnected(peer, a, since)
    for (const answer of await asked) expect(answer.answered, JSON.stringify(answer.value ?? null)).toBe(false)
    expect(peer.gated()).toEqual([])
    await expectRefusalVisible(a, peer, 'malformed')
  }, 60_000)

  it('a member whose second exchange presents another certificate is refused (disagreement)', async () => {
    const member = await plainMember()
    await joinBoth(member)
    const second = issueNodeCertificate(fed.ca, member.peerId).certPem // valid too, but not the one it proved with
    const since = Date.now()
    await member.claim(a.peerId, registrationOf(member.peerId, second))
    await expectDisconnected(member, a, since)
    expect(await listedBy(a, member.peerId)).toBe(false)
    await expectRefusalVisible(a, member, 'disagreement')
  }, 60_000)

  it('a genuine member that forges or alters another origin\'s change is refused, and nothing of it is applied', async () => {
    const forger = await plainMember()
    await joinBoth(forger)
    // genuine changes, as any member gets them: signed by their origin, with the origin's certificate
    const pulled = await forger.request(a.peerId, SYNC, { added: [], updated: [], deleted: [], vector: {} }) as { answered: boolean; value: SyncAnswer }
    expect(pulled.answered).toBe(true)
    const genuine = pulled.value.ok!.added.find((c) => c.origin === a.peerId && c.fn.function_name === 'seed')!
    expect(genuine.sig).toMatch(/^[A-Za-z0-9+/]+=*$/)
    expect(pulled.value.ok!.certificates?.[a.peerId]).toContain('BEGIN CERTIFICATE')
    const before = { a: await digestOf(a), b: await digestOf(b) }

    // over sync, to b: the change of a, altered (its description), under a sequence number b has not seen
    const altered = { ...genuine, seq: genuine.seq + 1000, fn: { ...genuine.fn, description: 'altered by a member' } }
    const since = Date.now()
    const pushed = await forger.request(b.peerId, SYNC, { added: [altered], updated: [], deleted: [], vector: {}, certificates: pulled.value.ok!.certificates })
    if (pushed.answered) expect((pushed.value as SyncAnswer).error?.code).toBe(1003)
    await expectDisconnected(forger, b, since)
    expect(await digestOf(b)).toBe(before.b)
    expect(((await rest(b, 'GET', '/api/v1/federation/catalog/digest')).body.vector as Record<string, number>)[a.peerId]).toBeLessThan(altered.seq)
    await expectRefusalVisible(b, forger, 'forged_change')

    // over gossip, to a: a change in a's name it did not sign
    await waitFor(() => forger.subscribed(a.peerId, CATALOG_TOPIC), 10_000)
    const inAsName = { ...genuine, seq: genuine.seq + 2000, fn: { ...genuine.fn, function_name: 'seed', description: 'forged' } }
    const gossiped = Date.now()
    await forger.publish(CATALOG_TOPIC, inAsName)
    await expectDisconnected(forger, a, gossiped)
    expect(await digestOf(a)).toBe(before.a)
    await expectRefusalVisible(a, forger, 'forged_change')
  }, 90_000)

  it('a genuine member that replays an old change is refused, and the change stays undone', async () => {
    const created = await rest(a, 'POST', '/api/v1/functions/create', fn('ephemeral', 'a - 1'))
    expect(created.status).toBe(201)
    const short = created.body.rufid_short as string
    await waitFor(async () => (await digestOf(a)) === (await digestOf(b)), 15_000, 100)
    const replayer = await plainMember()
    await joinBoth(replayer)
    const pulled = await replayer.request(b.peerId, SYNC, { added: [], updated: [], deleted: [], vector: {} }) as { answered: boolean; value: SyncAnswer }
    const old = pulled.value.ok!.added.find((c) => c.fn.function_name === 'ephemeral')!
    expect(old.origin).toBe(a.peerId)
    expect((await rest(a, 'DELETE', `/api/v1/functions/${short}`)).status).toBe(200)
    // the tombstone is in b's catalog (the digest) and in its store (a resolve is 404)
    await waitFor(async () => (await digestOf(a)) === (await digestOf(b)), 15_000, 100)
    await waitFor(async () => (await rest(b, 'POST', '/api/v1/functions/resolve', { rufid: short })).status === 404, 15_000, 100)
    const before = { a: await digestOf(a), b: await digestOf(b) }

    // by sync: a change b holds already is not applied again (and an honest race looks the same: not refused)
    const again = await replayer.request(b.peerId, SYNC, { added: [old], updated: [], deleted: [], vector: {}, certificates: pulled.value.ok!.certificates })
    expect(again.answered).toBe(true)
    expect(await digestOf(b)).toBe(before.b)

    // by gossip: a member gossips its own changes only; another origin's genuine change is a replay
    await waitFor(() => replayer.subscribed(a.peerId, CATALOG_TOPIC) && replayer.subscribed(b.peerId, CATALOG_TOPIC), 10_000)
    const since = Date.now()
    await replayer.publish(CATALOG_TOPIC, old)
    await expectDisconnected(replayer, b, since)
    await expectDisconnected(replayer, a, since)
    expect(await digestOf(a)).toBe(before.a)
    expect(await digestOf(b)).toBe(before.b)
    expect((await rest(b, 'POST', '/api/v1/functions/resolve', { rufid: short })).status).toBe(404)
    await expectRefusalVisible(b, replayer, 'replayed_change')
    await expectRefusalVisible(a, replayer, 'replayed_change')
  }, 90_000)

  it('the members stay members: the witness was refused nowhere and the catalogs agree', async () => {
    expect(witness.connected(a.peerId) && witness.connected(b.peerId)).toBe(true)
    expect(await listedBy(a, witness.peerId)).toBe(true)
    expect(await listedBy(b, a.peerId)).toBe(true)
    expect(await digestOf(a)).toBe(await digestOf(b))
  })
})
