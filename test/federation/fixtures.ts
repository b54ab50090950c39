import { generateKeyPair } from '@libp2p/crypto/keys'
import type { PrivateKey } from '@libp2p/interface'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { createFederationCa, issueNodeCertificate, type CertificateAuthority, type IssueOptions } from '../../src/federation/certificates.js'
import { createFederationNode, type FederationNode, type FederationNodeInit } from '../../src/federation/node.js'

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
  options: { identity?: TestIdentity; certPem?: string; ca?: CertificateAuthority; bootstrap?: string[]; revoked?: string[]; issue?: IssueOptions; skipSelfCheck?: boolean } = {},
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
  }
  const node = createFederationNode(init)
  await node.start()
  return node
}

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
