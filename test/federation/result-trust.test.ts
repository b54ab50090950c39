// The trust policy of results shared among federation members (docs/receipts.md §11), in process:
// a real engine (memory LevelDB, isolated-vm sandbox) whose federation port asks members over real
// libp2p through a ResultProvider, and three members — in-process federation nodes with valid
// certificates from the same CA — that answer /svc/result/1.0.0 with receipts they sign with
// their own keys (so every answer verifies; only the policy decides whether it counts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { argumentsDigest, receiptDigest, resultDigest, signReceipt, type Receipt, type ReceiptSigner } from '../../src/core/receipt.js'
import type { AuditEntry, Engine, EngineComponents, ExecutionEvent, FederationPort } from '../../src/engine/index.js'
import { createFederationCa, issueNodeCertificate } from '../../src/federation/certificates.js'
import type { FederationNode } from '../../src/federation/node.js'
import { timeOrderedId } from '../../src/engine/ids.js'
import { receiptSignerOf } from '../../src/federation/receipt-signer.js'
import { RESULT_PROTOCOL, ResultProvider, type ResultProviderInit } from '../../src/federation/result-provider.js'
import { createTestEngine, principal, realSandbox } from '../fixtures/engine.js'
import { newIdentity, startNode, testCa, waitFor, type TestIdentity } from './fixtures.js'

const dev = principal('acme')
const SQUARE = {
  function_name: 'square', signature: '(x)', language: 'javascript',
  source_code: 'function square(x) {\n  return { x, square: x * x }\n}\n',
  manifest: { schemaVersion: '1.0', name: 'square', deterministic: true },
}

interface Member {
  node: FederationNode
  signer: ReceiptSigner
  /** what this member answers a "get" with (found: false unless a test sets it) */
  answer: (x: number) => Promise<unknown>
  asked: number
}

describe('result trust policy (engine + libp2p members)', () => {
  let engine: Engine
  let sandboxCalls = 0
  let here: FederationNode
  const members: Member[] = []
  let provider: ResultProvider
  let rufid: string
  /** a receipt this engine signed for the function: the template members' receipts follow */
  let template: Receipt

  /** `signer`'s receipt of square(x) with the result `result` (default: the right one). */
  const receiptBy = (signer: ReceiptSigner, x: number, result: unknown = { x, square: x * x }): Promise<Receipt> => {
    const { peer_id: _p, receipt_version: _v, signature: _s, certificate: _c, ...unsigned } = template
    return signReceipt({ ...unsigned, execution_id: timeOrderedId('ex_'), arguments_digest: argumentsDigest({ x }), result_digest: resultDigest(result) }, signer)
  }
  /** the member answers with its own receipt of `result` */
  const holds = (m: Member, result?: (x: number) => unknown) => {
    m.answer = async (x) => {
      const r = result ? result(x) : { x, square: x * x }
      return { found: true, result: r, receipts: [await receiptBy(m.signer, x, r)] }
    }
  }
  const usePolicy = (init: Omit<ResultProviderInit, 'caCertPem'>) => {
    provider = new ResultProvider({ caCertPem: testCa().certPem, replicas: 0, ...init }, { node: here, results: engine.executions.results, audit: engine.auditLog })
    for (const m of members) {
      m.answer = async () => ({ found: false })
      m.asked = 0
    }
  }
  const call = (x: number) => engine.executions.execute(dev, engine.functions.target(dev, rufid), { x })
  const auditOf = async (operation: string): Promise<AuditEntry[]> => (await engine.auditLog.query({ operation, limit: 20 })).items
  /** the conflict audited for square(x) (audits are written in the background) */
  const conflictAbout = (x: number): Promise<AuditEntry> => waitFor(async () => (await auditOf('federation.result.conflict')).find((e) => e.result.includes(argumentsDigest({ x }))), 5_000) as Promise<AuditEntry>

  beforeAll(async () => {
    const real = await realSandbox(1)
    const sandbox: EngineComponents['sandbox'] = { start: () => real.start(), stop: () => real.stop(), execute: (req) => { sandboxCalls++; return real.execute(req) } }
    engine = (await createTestEngine({ sandbox })).engine
    const self: TestIdentity = await newIdentity()
    const selfCert = issueNodeCertificate(testCa(), self.peerId).certPem
    engine.useReceiptSigner(receiptSignerOf(self.privateKey, self.peerId, selfCert))
    here = await startNode({ identity: self, certPem: selfCert })
    const bootstrap = here.multiaddrs().slice(0, 1)
    for (let i = 0; i < 3; i++) {
      const id = await newIdentity()
      const certPem = issueNodeCertificate(testCa(), id.peerId).certPem
      const node = await startNode({ identity: id, certPem, bootstrap })
      const m: Member = { node, signer: receiptSignerOf(id.privateKey, id.peerId, certPem), answer: async () => ({ found: false }), asked: 0 }
      await node.handleMembers(RESULT_PROTOCOL, async (request) => {
        const r = request as { op: string; arguments_digest: string }
        if (r.op !== 'get') return { stored: false }
        m.asked++
        // the x whose arguments digest was asked for (tests use small integers)
        const x = Array.from({ length: 1000 }, (_, k) => k).find((k) => argumentsDigest({ x: k }) === r.arguments_digest)
        return x === undefined ? { found: false } : m.answer(x)
      })
      members.push(m)
    }
    await waitFor(() => here.members().length === 3, 20_000, 100)
    // the engine asks the federation through the provider the current test set
    const port: FederationPort = {
      nodeId: self.peerId, nodes: () => [], register: async () => [],
      sync: async () => ({ added: [], updated: [], deleted: [], timestamp: '', vector: {} }),
      discover: async () => { throw new Error('not used') },
      findResult: (q) => provider.find(q),
      offerResult: (key, entry) => provider.offer(key, entry),
      acceptsResult: (entry) => provider.accepts(entry),
      compareResult: (remote, local) => provider.compare(remote, local),
    }
    engine.federation.connect(port)
    rufid = (await engine.functions.create(dev, SQUARE)).rufid
    usePolicy({ enabled: false })
    template = (await call(0)).receipt as Receipt
    expect(template.peer_id).toBe(self.peerId)
  }, 120_000)

  afterAll(async () => {
    await Promise.allSettled(members.map((m) => m.node.stop()))
    await here?.stop().catch(() => undefined)
    await engine?.stop()
  })

  it('trusted_signers: a receipt of a member not on the list is not answered from (the call runs here); one on the list is', async () => {
    const [m1, m2, m3] = members as [Member, Member, Member]
    usePolicy({ trust: 'trusted_signers', trustedSigners: [m2.signer.peerId] })
    holds(m1)
    // only m1 holds it: its valid receipt does not count
    let before = sandboxCalls
    const untrusted = await call(11)
    expect(m1.asked).toBe(1)
    expect(untrusted.cached).toBeUndefined()
    expect(untrusted.result).toEqual({ x: 11, square: 121 })
    expect((untrusted.receipt as Receipt).peer_id).toBe(template.peer_id)
    expect(sandboxCalls).toBe(before + 1)

    // m2 (trusted) holds another call's result: answered from its receipt, nothing runs
    holds(m2)
    holds(m3)
    before = sandboxCalls
    const trusted = await call(12)
    expect(trusted).toMatchObject({ cached: true, cache_source: 'remote', result: { x: 12, square: 144 } })
    expect((trusted.receipt as Receipt).peer_id).toBe(m2.signer.peerId)
    expect(sandboxCalls).toBe(before)
  })

  it('quorum 2: one member\'s receipt is not enough; matching receipts of two distinct members are', async () => {
    const [m1, m2, m3] = members as [Member, Member, Member]
    usePolicy({ trust: 'quorum', quorum: 2 })
    holds(m1)
    let before = sandboxCalls
    const one = await call(21)
    expect(m1.asked + m2.asked + m3.asked).toBe(3) // every candidate asked, still one signer
    expect(one.cached).toBeUndefined()
    expect((one.receipt as Receipt).peer_id).toBe(template.peer_id)
    expect(sandboxCalls).toBe(before + 1)

    // one member answering twice with its own receipt is still one signer
    m1.answer = async (x) => ({ found: true, result: { x, square: x * x }, receipts: [await receiptBy(m1.signer, x), await receiptBy(m1.signer, x)] })
    before = sandboxCalls
    expect((await call(22)).cached).toBeUndefined()
    expect(sandboxCalls).toBe(before + 1)

    // two distinct members with matching receipts: answered, nothing runs
    holds(m1)
    holds(m3)
    before = sandboxCalls
    const two = await call(23)
    expect(two).toMatchObject({ cached: true, cache_source: 'remote', result: { x: 23, square: 529 } })
    expect(sandboxCalls).toBe(before)
    expect([m1.signer.peerId, m3.signer.peerId]).toContain((two.receipt as Receipt).peer_id)
  })

  it('quorum 2: two members whose valid receipts disagree are a conflict naming both; the call runs here', async () => {
    const [m1, m2] = members as [Member, Member, Member]
    usePolicy({ trust: 'quorum', quorum: 2 })
    holds(m1)
    holds(m2, (x) => ({ x, square: x * x + 1 })) // m3 holds nothing: neither side reaches 2 alone
    const before = sandboxCalls
    const record = await call(31)
    expect(record.cached).toBeUndefined()
    expect(record.result).toEqual({ x: 31, square: 961 })
    expect(sandboxCalls).toBe(before + 1)
    const conflict = await conflictAbout(31)
    expect(conflict).toMatchObject({ code: 2002, tenant: 'acme' })
    expect(conflict.result).toContain(m1.signer.peerId)
    expect(conflict.result).toContain(m2.signer.peerId)
  })

  it('reexecute_fraction 1: a remote hit also runs here; a disagreement is a conflict naming the signers, and the local result is answered', async () => {
    const [m1, m2, m3] = members as [Member, Member, Member]
    usePolicy({ trust: 'any_member', reexecuteFraction: 1 })
    // every member vouches (with a valid signature) for a wrong result
    for (const m of [m1, m2, m3]) holds(m, (x) => ({ x, square: -1 }))
    const before = sandboxCalls
    const record = await call(41)
    expect(m1.asked + m2.asked + m3.asked).toBeGreaterThanOrEqual(1)
    expect(sandboxCalls).toBe(before + 1) // run here despite the remote hit
    expect(record.cached).toBeUndefined()
    expect(record.result).toEqual({ x: 41, square: 1681 })
    expect((record.receipt as Receipt).peer_id).toBe(template.peer_id)
    const conflict = await conflictAbout(41)
    expect(conflict).toMatchObject({ code: 2002, tenant: 'acme', operation: 'federation.result.conflict' })
    expect(conflict.result).toContain('re-executed here')
    expect(conflict.result).toContain(template.peer_id) // this node signed one side…
    expect([m1, m2, m3].some((m) => conflict.result.includes(m.signer.peerId))).toBe(true) // …a member the other
    // the local result is what the cache keeps: the next call is a local hit with the right value
    const again = await call(41)
    expect(again).toMatchObject({ cached: true, cache_source: 'local', result: { x: 41, square: 1681 } })

    // a remote hit that agrees is run too, and no conflict is recorded for it
    for (const m of [m1, m2, m3]) holds(m)
    const runs = sandboxCalls
    expect((await call(42)).result).toEqual({ x: 42, square: 1764 })
    expect(sandboxCalls).toBe(runs + 1)
    await new Promise((r) => setTimeout(r, 200))
    expect((await auditOf('federation.result.conflict')).some((e) => e.result.includes(argumentsDigest({ x: 42 })))).toBe(false)
  })

  it('a member\'s certificate is checked against the CA once: the same PeerId with a foreign CA\'s certificate is still refused', async () => {
    const [m1] = members as [Member, Member, Member]
    usePolicy({ trust: 'any_member' })
    holds(m1)
    // m1's certificate verifies under the CA and is remembered as issued by it
    const events: ExecutionEvent[] = []
    const listener = (e: ExecutionEvent) => events.push(e)
    engine.events.on('execution', listener)
    let before = sandboxCalls
    const remote = await call(51)
    expect(remote).toMatchObject({ cached: true, cache_source: 'remote', result: { x: 51, square: 2601 } })
    expect(sandboxCalls).toBe(before)
    // the remote receipt's digest is in the event of the remote hit and of the local hits after it
    const again = await call(51)
    // a cached answer's event is published right after the answer (the execution service's bookkeeping)
    await new Promise((r) => setImmediate(r))
    engine.events.off('execution', listener)
    expect(again.receipt).toEqual(remote.receipt)
    for (const r of [remote, again]) expect(events.find((e) => e.execution_id === r.execution_id)?.receipt_digest).toBe(receiptDigest(remote.receipt as Receipt))
    // m1's own key, but a certificate binding its PeerId from another CA: remembering by PeerId
    // (or by anything but the certificate itself) would let it through
    const foreign = createFederationCa({ name: 'foreign CA' })
    const forged: ReceiptSigner = { ...m1.signer, certificatePem: issueNodeCertificate(foreign, m1.signer.peerId).certPem }
    m1.answer = async (x) => ({ found: true, result: { x, square: x * x }, receipts: [await receiptBy(forged, x)] })
    before = sandboxCalls
    const record = await call(52)
    expect(record.cached).toBeUndefined()
    expect((record.receipt as Receipt).peer_id).toBe(template.peer_id)
    expect(sandboxCalls).toBe(before + 1)
    const refused = await waitFor(async () => (await auditOf('federation.result.refused')).find((e) => e.result.includes(argumentsDigest({ x: 52 }))), 5_000) as AuditEntry
    expect(refused.result).toContain('foreign_ca')
    // and its genuine certificate still counts afterwards
    holds(m1)
    before = sandboxCalls
    expect(await call(53)).toMatchObject({ cached: true, cache_source: 'remote', result: { x: 53, square: 2809 } })
    expect(sandboxCalls).toBe(before)
  })
})
