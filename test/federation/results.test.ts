// Deterministic results computed once per federation (issue 18): two svc-node daemons as separate
// processes, and a third member that lies — an in-process libp2p federation node with a valid
// certificate from the same CA that answers /svc/result/1.0.0 with a forged result. Node B answers
// a deterministic call from node A's receipt without running it, refuses the liar (audited), and
// still returns the right value. Needs the compiled daemon (`npm run build`).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { argumentsDigest, lockfileDigest, resultDigest, verifyReceipt, type Receipt } from '../../src/core/receipt.js'
import { resultCacheKey } from '../../src/engine/executions/result-cache.js'
import { issueNodeCertificate } from '../../src/federation/certificates.js'
import { createFederationNode, type FederationNode } from '../../src/federation/node.js'
import { rendezvousOrder, RESULT_PROTOCOL } from '../../src/federation/result-provider.js'
import { removeDir, tempDataDir } from '../fixtures/daemon-process.js'
import { federationOnDisk, logLines, prepareDaemon, rest, startFederatedDaemon, type FederatedDaemon, type FederationOnDisk } from './federated-daemon.js'
import { newIdentity, waitFor } from './fixtures.js'

const SQUARE = {
  function_name: 'square', signature: '(x)', language: 'javascript',
  source_code: 'function square(x) {\n  return { x, square: x * x }\n}\n',
  manifest: { schemaVersion: '1.0', name: 'square', deterministic: true },
}

/** `name` of a metric sample in a /metrics text (0 when absent). */
function sample(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(name + ' ') || l.startsWith(name + '{') && l.split(' ')[0] === name)
  return line === undefined ? 0 : Number(line.split(' ').pop())
}

describe('deterministic results once per federation (daemon processes)', () => {
  let fed: FederationOnDisk
  let root: string
  let a: FederatedDaemon
  let b: FederatedDaemon
  let liar: FederationNode
  /** what the liar answers with (set by each test) */
  let lie: (request: Record<string, unknown>) => unknown = () => ({ found: false })
  const asked: string[] = []

  beforeAll(async () => {
    root = tempDataDir()
    fed = await federationOnDisk(root, 'results test CA')
    a = await prepareDaemon(fed, 'a')
    b = await prepareDaemon(fed, 'b')
    // replicas 0: a result stays with the node that computed it, so B must ask (and verify) members
    const results = { replicas: 0, candidates: 3 }
    await startFederatedDaemon(fed, a, [], { results: { enabled: true, trust: 'any_member', trusted_signers: [], quorum: 2, reexecute_fraction: 0, timeout_ms: 2000, ...results } })
    await startFederatedDaemon(fed, b, a.p2p.slice(0, 1), { results: { enabled: true, trust: 'any_member', trusted_signers: [], quorum: 2, reexecute_fraction: 0, timeout_ms: 2000, ...results } })
    const identity = await newIdentity()
    liar = createFederationNode({
      privateKey: identity.privateKey, listen: ['/ip4/127.0.0.1/tcp/0'], bootstrap: [a.p2p[0]!, b.p2p[0]!],
      caCertPem: fed.ca.certPem, certPem: issueNodeCertificate(fed.ca, identity.peerId).certPem, endpoint: 'http://127.0.0.1:9/liar',
    })
    await liar.start()
    await liar.handleMembers(RESULT_PROTOCOL, async (request) => {
      asked.push((request as { op: string }).op)
      return lie(request as Record<string, unknown>)
    })
    await waitFor(async () => {
      const lists = await Promise.all([a, b].map((n) => rest(n, 'GET', '/api/v1/federation/nodes')))
      return lists.every((l) => (l.body.nodes as unknown[]).length === 3)
    }, 20_000, 200)
  }, 120_000)

  afterAll(async () => {
    await liar?.stop().catch(() => undefined)
    await Promise.allSettled([a, b].map((n) => n.proc?.stop()))
    removeDir(root)
  })

  it('B answers from A\'s verified receipt without running, after refusing a member that lies', async () => {
    const created = await rest(a, 'POST', '/api/v1/functions/create', SQUARE)
    expect(created.status).toBe(201)
    const short = created.body.rufid_short as string
    const fullRufid = created.body.full_rufid as string
    const tenant = fullRufid.split(':')[3]!
    const resolved = await rest(a, 'POST', '/api/v1/functions/resolve', { rufid: short })
    const fields = { tenant, content_digest: created.body.content_digest as string, lockfile_digest: lockfileDigest(resolved.body.lockfile) }
    // arguments whose key the liar ranks before A among B's members: B asks the liar first
    let x = 0
    for (let i = 1; i < 200; i++) {
      const key = resultCacheKey({ ...fields, arguments_digest: argumentsDigest({ x: i }) })
      if (rendezvousOrder(key, [a.peerId, liar.peerId])[0] === liar.peerId) {
        x = i
        break
      }
    }
    expect(x).toBeGreaterThan(0)
    await waitFor(async () => (await rest(b, 'POST', '/api/v1/functions/resolve', { rufid: short })).status === 200, 10_000, 100)

    // A computes it and signs the receipt
    const onA = await rest(a, 'POST', `/api/v1/functions/${short}/execute`, { arguments: { x } })
    expect(onA.status).toBe(200)
    expect(onA.body).toMatchObject({ result: { x, square: x * x }, cached: false })
    const receiptA = onA.body.receipt as Receipt
    expect(receiptA.peer_id).toBe(a.peerId)
    verifyReceipt(receiptA, { caCertPem: fed.ca.certPem, args: { x }, result: { x, square: x * x } })

    // the liar answers with A's receipt re-signed… by nobody: a wrong result and a result digest to match
    lie = () => ({ found: true, result: { x, square: -1 }, receipts: [{ ...receiptA, result_digest: resultDigest({ x, square: -1 }) }] })
    const before = (await rest(b, 'GET', '/metrics')).text
    const onB = await rest(b, 'POST', `/api/v1/functions/${short}/execute`, { arguments: { x } })
    expect(onB.status).toBe(200)
    expect(onB.body).toMatchObject({ result: { x, square: x * x }, cached: true })
    expect(onB.body.receipt).toEqual(receiptA) // A's receipt, unchanged
    expect(asked).toContain('get')
    const after = (await rest(b, 'GET', '/metrics')).text
    // nothing ran on B: no execution counted, one remote hit
    const executions = (t: string) => t.split('\n').filter((l) => l.startsWith('svc_function_executions_total{')).reduce((n, l) => n + Number(l.split(' ').pop()), 0)
    expect(executions(after)).toBe(executions(before))
    expect(sample(after, 'svc_result_cache_lookups_total{result="remote_hit"}')).toBe(sample(before, 'svc_result_cache_lookups_total{result="remote_hit"}') + 1)
    // B's record says so, and B refused the liar, naming it
    const record = await rest(b, 'GET', `/v1/executions/${onB.body.execution_id as string}`)
    expect(record.body).toMatchObject({ cached: true, status: 'success' })
    expect((await rest(b, 'GET', `/v1/executions/${onB.body.execution_id as string}/receipt`)).body).toEqual(receiptA)
    // (these local-mode nodes have no operator to read the audit log: the same refusal is logged at warn)
    const refusal = await waitFor(() => logLines(b).find((l) => l.msg === "a member's result answer was refused" && l.peer_id === liar.peerId), 5_000, 100)
    expect(refusal).toMatchObject({ failure: 'bad_signature', level: 40 })
  })

  it('a result no member holds runs locally; a deterministic function that fails is never cached', async () => {
    const created = await rest(a, 'POST', '/api/v1/functions/create', {
      function_name: 'half', signature: '(x)', language: 'javascript', source_code: 'function half(x) {\n  if (x % 2) throw new Error("odd")\n  return x / 2\n}\n',
      manifest: { schemaVersion: '1.0', name: 'half', deterministic: true },
    })
    const short = created.body.rufid_short as string
    await waitFor(async () => (await rest(b, 'POST', '/api/v1/functions/resolve', { rufid: short })).status === 200, 10_000, 100)
    lie = () => ({ found: false })
    const first = await rest(b, 'POST', `/api/v1/functions/${short}/execute`, { arguments: { x: 8 } })
    expect(first.body).toMatchObject({ result: 4, cached: false })
    expect((first.body.receipt as Receipt).peer_id).toBe(b.peerId)
    const odd1 = await rest(b, 'POST', `/api/v1/functions/${short}/execute`, { arguments: { x: 3 } })
    const odd2 = await rest(b, 'POST', `/api/v1/functions/${short}/execute`, { arguments: { x: 3 } })
    expect(odd1.status).toBeGreaterThanOrEqual(400)
    expect(odd2.status).toBe(odd1.status)
    const id1 = (odd1.body.error as { details: { execution_id: string } }).details.execution_id
    const id2 = (odd2.body.error as { details: { execution_id: string } }).details.execution_id
    expect(id1).not.toBe(id2)
    const r2 = (await rest(b, 'GET', `/v1/executions/${id2}`)).body
    expect(r2.cached).toBe(false)
    expect((r2.receipt as Receipt).status).toBe('error')
  })
})
