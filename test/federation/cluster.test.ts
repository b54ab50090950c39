// Five svc-node daemons as separate processes on loopback, federated (issue 4 "Done when").
// Needs the compiled daemon (`npm run build`; the test command builds first).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFederationCa, issueNodeCertificate, type CertificateAuthority } from '../../src/federation/certificates.js'
import { CATALOG_TOPIC, SYNC_PROTOCOL } from '../../src/federation/federation.js'
import { removeDir, tempDataDir } from '../fixtures/daemon-process.js'
import { digestOf, federationOnDisk, prepareDaemon, rest as call, startFederatedDaemon, type FederatedDaemon as ClusterNode, type FederationOnDisk } from './federated-daemon.js'
import { newIdentity, startNode, testCa, waitFor } from './fixtures.js'

describe('a federation of 5 daemon processes', () => {
  let ca: CertificateAuthority
  let fed: FederationOnDisk
  let root: string
  const nodes: ClusterNode[] = []
  let revokedIdentity: Awaited<ReturnType<typeof newIdentity>>
  let revokedCert: { certPem: string; serial: string }

  const start = async (node: ClusterNode, bootstrap: string[]): Promise<void> => {
    await startFederatedDaemon(fed, node, bootstrap, { revoked: [revokedCert.serial] })
  }

  const bootstrapFor = (node: ClusterNode): string[] => nodes.filter((n) => n !== node && n.proc).flatMap((n) => n.p2p.slice(0, 1))

  beforeAll(async () => {
    root = tempDataDir()
    fed = await federationOnDisk(root, 'cluster test CA')
    ca = fed.ca
    revokedIdentity = await newIdentity()
    revokedCert = issueNodeCertificate(ca, revokedIdentity.peerId)
    for (let i = 1; i <= 5; i++) nodes.push(await prepareDaemon(fed, `node${i}`))
    for (const node of nodes) await start(node, bootstrapFor(node))
    await waitFor(async () => {
      const lists = await Promise.all(nodes.map((n) => call(n, 'GET', '/api/v1/federation/nodes')))
      return lists.every((l) => (l.body.nodes as unknown[]).length === 5)
    }, 15_000, 200)
  }, 120_000)

  afterAll(async () => {
    await Promise.allSettled(nodes.map((n) => n.proc?.stop()))
    removeDir(root)
  })

  it('a function published on node 1 is discoverable, resolvable and executable on node 5 within 1 s', async () => {
    const created = await call(nodes[0]!, 'POST', '/api/v1/functions/create', {
      function_name: 'triple', signature: '(a)', language: 'javascript', source_code: 'function triple(a) {\n  return a * 3\n}\n',
    })
    expect(created.status).toBe(201)
    const short = created.body.rufid_short as string
    const started = Date.now()
    const executed = await waitFor(async () => {
      const r = await call(nodes[4]!, 'POST', `/api/v1/functions/${short}/execute`, { arguments: { a: 7 } })
      return r.status === 200 ? r : undefined
    }, 5_000, 25)
    const elapsed = Date.now() - started
    expect(executed!.body.result).toBe(21)
    const resolved = await call(nodes[4]!, 'POST', '/api/v1/functions/resolve', { rufid: short })
    expect(resolved.status).toBe(200)
    const discovered = await call(nodes[4]!, 'GET', `/api/v1/federation/discover/${short}`)
    expect(discovered.status).toBe(200)
    const providers = (discovered.body.nodes as Array<{ node_id: string; source: string }>)
    expect(providers.map((p) => p.node_id)).toContain(nodes[0]!.peerId)
    expect(providers.find((p) => p.node_id === nodes[4]!.peerId)?.source).toBe('self') // it holds the fetched code now
    expect(elapsed).toBeLessThan(1_000)
  })

  it('node 3 stopped, 20 functions published on node 2, node 3 restarted: it holds all 20 within 5 s, digests agree', async () => {
    const node3 = nodes[2]!
    await node3.proc!.stop()
    node3.proc = undefined
    for (let i = 0; i < 20; i++) {
      const r = await call(nodes[1]!, 'POST', '/api/v1/functions/create', {
        function_name: `batch${i}`, signature: '(a)', language: 'javascript', source_code: `function batch${i}(a) {\n  return a + ${i}\n}\n`,
      })
      expect(r.status).toBe(201)
    }
    await start(node3, bootstrapFor(node3))
    const started = Date.now()
    await waitFor(async () => {
      const digests = await Promise.all(nodes.map(digestOf))
      return new Set(digests).size === 1
    }, 5_000, 100)
    expect(Date.now() - started).toBeLessThan(5_000)
    const { body } = await call(node3, 'GET', '/api/v1/federation/catalog/digest')
    expect(body.entries).toBe(21)
  }, 60_000)

  it('a branch deployed on node 1 is invoked on node 5, and moved from node 5 with its key', async () => {
    const deployed = await call(nodes[0]!, 'POST', '/api/v1/functions/deploy', {
      function_name: 'shipped', signature: '(a)', language: 'javascript', source_code: 'function shipped(a) {\n  return a + 1\n}\n', branch: 'staging',
    })
    expect(deployed.status).toBe(201)
    const key = deployed.body.branch_key as string
    const invokeOn = (node: ClusterNode) => call(node, 'POST', '/api/v1/functions/branches/staging/invoke', { function_name: 'shipped', arguments: { a: 1 } })
    const first = await waitFor(async () => {
      const r = await invokeOn(nodes[4]!)
      return r.status === 200 ? r : undefined
    }, 5_000, 50)
    expect(first!.body).toMatchObject({ result: 2, version: 'v1', branch: 'staging' })
    const moved = await call(nodes[4]!, 'POST', '/api/v1/functions/deploy', {
      function_name: 'shipped', signature: '(a)', language: 'javascript', source_code: 'function shipped(a) {\n  return a + 2\n}\n', branch: 'staging', branch_key: key,
    })
    expect(moved.status).toBe(201)
    const second = await waitFor(async () => {
      const r = await invokeOn(nodes[0]!)
      return r.status === 200 && r.body.version === 'v2' ? r : undefined
    }, 5_000, 50)
    expect(second!.body.result).toBe(3)
  })

  it('two nodes publishing different code as the same (tenant, name, version) during a partition converge after healing', async () => {
    const islands: ClusterNode[] = []
    for (const name of ['island-a', 'island-b']) {
      const node = await prepareDaemon(fed, name)
      await start(node, []) // partitioned: knows no one
      islands.push(node)
    }
    const published = []
    for (const [i, island] of islands.entries()) {
      const r = await call(island, 'POST', '/api/v1/functions/create', {
        function_name: 'contested', signature: '(a)', language: 'javascript', source_code: `function contested(a) {\n  return a + ${i + 1}00\n}\n`,
      })
      expect(r.status).toBe(201)
      expect(r.body.rufid).toMatch(/:v1:acme$/)
      published.push({ island, short: r.body.rufid_short as string })
    }
    // heal: both restart knowing the federation
    for (const island of islands) {
      await island.proc!.stop()
      island.proc = undefined
    }
    nodes.push(...islands)
    for (const island of islands) await start(island, bootstrapFor(island))
    await waitFor(async () => new Set(await Promise.all(nodes.map(digestOf))).size === 1, 10_000, 200)
    const conflicts = await Promise.all(nodes.map(async (n) => (await call(n, 'GET', '/api/v1/federation/conflicts')).body.items as Array<{ winner: { rufid_short: string } }>))
    for (const list of conflicts) expect(list.map((c) => c.winner.rufid_short)).toEqual([conflicts[0]![0]!.winner.rufid_short])
    const winner = conflicts[0]![0]!.winner.rufid_short
    const loser = published.find((p) => p.short !== winner)!
    const answer = await call(loser.island, 'POST', '/api/v1/functions/resolve', { rufid: loser.short, version: 'v1' })
    expect(answer.status).toBe(409)
    expect((answer.body.error as { code: number }).code).toBe(2002)
    const winning = await call(nodes[0]!, 'POST', '/api/v1/functions/resolve', { rufid: winner, version: 'v1' })
    expect(winning.status).toBe(200)
  }, 90_000) // daemon processes start in several seconds each on a loaded 2-core machine

  it('intruders (self-signed, expired, other PeerId, revoked) fail to register and change no catalog', async () => {
    const before = await Promise.all(nodes.map(digestOf))
    const rogueCa = createFederationCa({ name: 'rogue' })
    const cases: Array<{ kind: string; certPem: string; peerId: string; identity: Awaited<ReturnType<typeof newIdentity>> }> = []
    for (const kind of ['self-signed', 'expired', 'other-peer', 'revoked']) {
      const identity = kind === 'revoked' ? revokedIdentity : await newIdentity()
      const other = await newIdentity()
      const certPem = kind === 'self-signed' ? issueNodeCertificate(rogueCa, identity.peerId).certPem
        : kind === 'expired' ? issueNodeCertificate(ca, identity.peerId, { notBefore: new Date(Date.now() - 9 * 86_400_000), days: 1 }).certPem
          : kind === 'other-peer' ? issueNodeCertificate(ca, other.peerId).certPem
            : revokedCert.certPem
      cases.push({ kind, certPem, peerId: identity.peerId, identity })
    }
    // registration over REST: the certificate must chain to the CA, be valid and bind node_id
    for (const c of cases) {
      const r = await call(nodes[0]!, 'POST', '/api/v1/federation/nodes', {
        node_id: c.peerId, endpoint: 'http://127.0.0.1:1', capabilities: { languages: ['javascript'], max_concurrent: 1, protocols: ['rest'] },
        auth: { certificate: c.certPem, public_key: '' },
      })
      expect(r.status, c.kind).toBe(403)
    }
    // as libp2p peers: gossip and sync from each is not applied
    for (const c of cases) {
      const intruder = await startNode({ identity: c.identity, certPem: c.certPem, skipSelfCheck: true, ca: c.kind === 'self-signed' ? rogueCa : testCa() })
      try {
        intruder.subscribe(CATALOG_TOPIC, () => undefined)
        await intruder.dial(nodes[0]!.p2p[0]!).catch(() => undefined)
        const fake = {
          origin: 'intruder', seq: 1, hlc: '000009999999999999-000000', op: 'added', key: `acme\u0000evil\u00000000000001`,
          fn: { tenant_id: 'acme', function_name: 'evil', version: 1, rufid_short: 'EvilEvilEvil', content_digest: 'e'.repeat(64), source_code: '' },
          ledger: { tenant_id: 'acme', function_name: 'evil', version: 1, rufid_short: 'EvilEvilEvil', content_digest: 'e'.repeat(64) },
        }
        await intruder.publish(CATALOG_TOPIC, fake).catch(() => undefined)
        await expect(intruder.request(nodes[0]!.peerId, SYNC_PROTOCOL, { added: [fake], updated: [], deleted: [], vector: {} }, 2_000)).rejects.toThrow()
      } finally {
        await intruder.stop()
      }
    }
    await new Promise((r) => setTimeout(r, 1_000))
    expect(await Promise.all(nodes.map(digestOf))).toEqual(before)
    const members = await call(nodes[0]!, 'GET', '/api/v1/federation/nodes')
    const ids = (members.body.nodes as Array<{ node_id: string }>).map((n) => n.node_id)
    for (const c of cases) expect(ids).not.toContain(c.peerId)
  }, 60_000)
})
