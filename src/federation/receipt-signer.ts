import { createPrivateKey, sign, X509Certificate, type KeyObject } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import { isAbsolute, join, resolve } from 'node:path'
import type { PrivateKey } from '@libp2p/interface'
import type { ReceiptSigner } from '../core/receipt.js'
import { peerIdsBoundBy } from '../core/node-certificate.js'
import type { FederationConfig } from './daemon-wiring.js'
import { loadOrCreatePeerIdentity } from './identity.js'
import { selfSignedNodeCertificate } from './self-certificate.js'

/** Where a node without federation keeps the certificate it made for its own PeerId. */
export const SELF_CERTIFICATE_FILE = 'receipt-cert.pem'

/** An Ed25519 libp2p private key as a node:crypto key (made once: signing then costs one `crypto.sign`). */
export function ed25519KeyObject(privateKey: PrivateKey): KeyObject {
  if (privateKey.type !== 'Ed25519') throw new Error(`receipts are signed with an Ed25519 key, not ${privateKey.type}`)
  const raw = privateKey.raw // 64 bytes: the 32-byte seed, then the 32-byte public key
  return createPrivateKey({
    key: { kty: 'OKP', crv: 'Ed25519', d: Buffer.from(raw.subarray(0, 32)).toString('base64url'), x: Buffer.from(raw.subarray(32, 64)).toString('base64url') },
    format: 'jwk',
  })
}

/** A receipt signer over the node's libp2p key and the certificate binding its PeerId. */
export function receiptSignerOf(privateKey: PrivateKey, peerId: string, certificatePem: string): ReceiptSigner {
  const key = ed25519KeyObject(privateKey)
  return { peerId, certificatePem, sign: (bytes) => sign(null, bytes, key) }
}

/**
 * The node's receipt signer: its libp2p identity (the key federation uses, `<data_dir>/peer-key`
 * by default) with, when federation is enabled, its federation certificate; otherwise a
 * certificate the node signs itself once with the same key (kept in `<data_dir>/receipt-cert.pem`,
 * see self-certificate.ts). Such receipts verify without a CA (`certified: false`): they prove
 * that the holder of the PeerId's key signed them, not membership of any federation.
 */
export async function loadNodeReceiptSigner(config: Pick<FederationConfig, 'enabled' | 'identity_file' | 'cert_file'>, dataDir: string): Promise<ReceiptSigner> {
  const path = (p: string): string => (isAbsolute(p) ? p : resolve(p))
  const identity = await loadOrCreatePeerIdentity(dataDir, config.identity_file ? path(config.identity_file) : join(dataDir, 'peer-key'))
  let certificatePem: string
  if (config.enabled && config.cert_file !== '') {
    certificatePem = await readFile(path(config.cert_file), 'utf8')
  } else {
    const file = join(dataDir, SELF_CERTIFICATE_FILE)
    certificatePem = await readFile(file, 'utf8').catch(() => '')
    if (!bindsPeerId(certificatePem, identity.peerId)) {
      certificatePem = selfSignedNodeCertificate(ed25519KeyObject(identity.privateKey), identity.peerId)
      await writeFile(file, certificatePem)
    }
  }
  return receiptSignerOf(identity.privateKey, identity.peerId, certificatePem)
}

function bindsPeerId(pem: string, peerId: string): boolean {
  try {
    const cert = new X509Certificate(pem)
    return peerIdsBoundBy(cert).includes(peerId) && new Date(cert.validTo) > new Date()
  } catch {
    return false
  }
}
