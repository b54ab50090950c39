import { generateKeyPair } from '@libp2p/crypto/keys'
import { generateKeyPairSync } from 'node:crypto'
import type { PrivateKey } from '@libp2p/interface'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { catalogKey, signedBytes, type CatalogChange, type Engine, type VersionChange } from '../../src/engine/index.js'
import { CertificateVerifier, createFederationCa, issueNodeCertificate, type CertificateAuthority, type IssueOptions } from '../../src/federation/certificates.js'
import { createChangeAuthenticator } from '../../src/federation/change-authenticator.js'
import { createFederation, type Federation, type FederationInit } from '../../src/federation/federation.js'
import { createFederationNode, type FederationNode, type FederationNodeInit } from '../../src/federation/node.js'
import { createTestEngine, principal } from '../fixtures/engine.js'

export interface TestIdentity {
  privateKey: PrivateKey
  peerId: string
}

export async function newIdentity(): Promise<TestIdentity> {
  const privateKey = await generateKeyPair('Ed25519')
  return { privateKey, peerId: peerIdFromPrivateKey(privateKey).toString() }
}

let sharedCa: CertificateAuthority | undefined
/** one federation CA per test process (RSA keys are slow to make) */
export const testCa = (): CertificateAuthority => (sharedCa ??= createFederationCa({ name: 'svc test federation' }))

export async function startNode(
  options: { identity?: TestIdentity; certPem?: string; ca?: CertificateAuthority; bootstrap?: string[]; revoked?: string[]; issue?: IssueOptions; skipSelfCheck?: boolean; init?: Partial<FederationNodeInit> } = {},
): Promise<FederationNode> {
  const identity = options.identity ?? await newIdentity()
  const ca = testCa()
  const certPem = options.certPem ?? issueNodeCertificate(options.ca ?? ca, identity.peerId, options.issue).certPem
  const init: FederationNodeInit = {
    privateKey: identity.privateKey,
    listen: ['/ip4/127.0.0.1/tcp/0'],
    bootstrap: options.bootstrap ?? [],
    caCertPem: ca.certPem,
    certPem,
    revoked: options.revoked ?? [],
    endpoint: `http://127.0.0.1:0/${identity.peerId.slice(-6)}`,
    denyMs: 60_000,
    ...(options.skipSelfCheck ? { skipSelfCheck: true } : {}),
    ...options.init,
  }
  const node = createFederationNode(init)
  await node.start()
  return node
}

let sharedSubjectKey: string | undefined

/**
 * Makes an engine's replica sign its changes as a federation member would (a fresh PeerId and a
 * certificate from the test CA), without a network: for tests that carry changes by hand.
 */
export async function signingReplica(engine: Engine): Promise<{ origin: string; certPem: string }> {
  const identity = await newIdentity()
  // one subject key for every such certificate (it signs nothing; RSA keys are slow to make)
  sharedSubjectKey ??= generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }).toString()
  const certPem = issueNodeCertificate(testCa(), identity.peerId, { publicKeyPem: sharedSubjectKey }).certPem
  await engine.replication.useAuthenticator(createChangeAuthenticator({
    privateKey: identity.privateKey, peerId: identity.peerId, certPem, verifier: new CertificateVerifier({ caCertPem: testCa().certPem }),
  }))
  return { origin: identity.peerId, certPem }
}

/** An origin that signs changes by hand (a member that is not running): its identity and certificate. */
export interface HandOrigin {
  origin: string
  certPem: string
  sign(change: CatalogChange): Promise<CatalogChange>
}

/** `count` origins with certificates from the test CA, each able to sign changes (no node, no network). */
export async function handOrigins(count: number): Promise<HandOrigin[]> {
  sharedSubjectKey ??= generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }).toString()
  const verifier = new CertificateVerifier({ caCertPem: testCa().certPem })
  const out: HandOrigin[] = []
  for (let i = 0; i < count; i++) {
    const identity = await newIdentity()
    const certPem = issueNodeCertificate(testCa(), identity.peerId, { publicKeyPem: sharedSubjectKey }).certPem
    const auth = createChangeAuthenticator({ privateKey: identity.privateKey, peerId: identity.peerId, certPem, verifier })
    out.push({
      origin: identity.peerId, certPem,
      sign: async (change) => ({ ...change, sig: Buffer.from(await auth.sign(signedBytes(change))).toString('base64') }),
    })
  }
  return out
}

/**
 * A version change of `origin` (sequence `seq`, clock `hlc`) made from `template` (a real change of
 * the same function, from an engine): version `version` of its function, signed by the origin.
 */
export async function handChange(from: HandOrigin, template: VersionChange, seq: number, version: number, hlc: string): Promise<CatalogChange> {
  const fn = { ...template.fn, version, source_code: '' }
  const ledger = { ...template.ledger, version }
  const change: VersionChange = { ...template, origin: from.origin, seq, hlc, fn, ledger, key: catalogKey(fn.tenant_id, fn.function_name, version) }
  delete change.sig
  return from.sign(change)
}

/** A real signed change to copy by hand (`handChange`): a function of tenant acme, from an engine that is not a member. */
export async function templateChange(functionName: string): Promise<VersionChange> {
  const scratch = await createTestEngine()
  await signingReplica(scratch.engine)
  await scratch.engine.functions.create(principal('acme'), {
    function_name: functionName, signature: '(a)', language: 'javascript', source_code: `function ${functionName}(a) {\n  return a\n}\n`,
  })
  const template = (await scratch.engine.replication.changesSince({})).added[0] as VersionChange
  await scratch.engine.stop()
  return template
}

/**
 * The federation of `engine` on loopback as `identity` (a certificate from the test CA), not
 * started; anti-entropy off unless `init` says otherwise.
 */
export function loopbackFederation(engine: Engine, identity: TestIdentity, bootstrap: string[], init: Partial<FederationInit> = {}): Federation {
  return createFederation({
    privateKey: identity.privateKey, listen: ['/ip4/127.0.0.1/tcp/0'], bootstrap, caCertPem: testCa().certPem,
    certPem: issueNodeCertificate(testCa(), identity.peerId).certPem, endpoint: `http://127.0.0.1/${identity.peerId.slice(-6)}`,
    syncIntervalMs: 0, ...init,
  }, { engine, metrics: engine.metrics })
}

/** An in-process member: its engine and its federation (see `loopbackFederation`). */
export interface LoopbackMember {
  engine: Engine
  federation: Federation
}

/**
 * Two started in-process members over real libp2p, B bootstrapped to A, once each lists the other
 * as a member and A knows B subscribes to `topic` (a message A publishes on it then reaches B).
 * `init` is both members' settings, or `[A's, B's]`.
 */
export async function loopbackPair(topic: string, init: Partial<FederationInit> | [Partial<FederationInit>, Partial<FederationInit>] = {}): Promise<[LoopbackMember, LoopbackMember]> {
  const [initA, initB] = Array.isArray(init) ? init : [init, init]
  const member = async (bootstrap: string[], settings: Partial<FederationInit>): Promise<LoopbackMember> => {
    const { engine } = await createTestEngine()
    const federation = loopbackFederation(engine, await newIdentity(), bootstrap, settings)
    await federation.start()
    return { engine, federation }
  }
  const a = await member([], initA)
  const b = await member([a.federation.node.multiaddrs()[0]!], initB)
  await waitFor(() => a.federation.node.members().length === 1 && b.federation.node.members().length === 1, 20_000)
  await waitFor(() => a.federation.node.p2p.services.pubsub.getSubscribers(topic).some((p) => p.toString() === b.federation.nodeId), 20_000)
  return [a, b]
}

/**
 * Runs `run` while the first message `m` gossips on `topic` is lost on the way (never published);
 * resolves how many were dropped (1 when `run` published at least one).
 */
export async function withLostGossip(m: LoopbackMember, topic: string, run: () => Promise<unknown>): Promise<number> {
  const node = m.federation.node
  const publish = node.publish.bind(node)
  let dropped = 0
  node.publish = async (t, payload) => {
    if (t === topic && dropped === 0) {
      dropped++
      return
    }
    return publish(t, payload)
  }
  try {
    await run()
  } finally {
    node.publish = publish
  }
  return dropped
}

/** Stops members started by `loopbackPair` (each federation, then its engine). */
export async function stopMembers(members: Array<LoopbackMember | undefined>): Promise<void> {
  for (const m of members) {
    await m?.federation.stop().catch(() => undefined)
    await m?.engine.stop().catch(() => undefined)
  }
}

/** An HLC stamp at wall time `ms`. */
export const hlcAt = (ms: number, counter = 0): string => `${String(ms).padStart(18, '0')}-${String(counter).padStart(6, '0')}`

export async function waitFor<T>(probe: () => T | Promise<T>, timeoutMs = 10_000, stepMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const value = await probe()
      if (value) return value
    } catch (err) {
      last = err
    }
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms${last ? `: ${String(last)}` : ''}`)
    await new Promise((r) => setTimeout(r, stepMs))
  }
}
