import { X509Certificate } from 'node:crypto'

/**
 * Checks of a federation node certificate (an X.509 certificate issued by the federation CA whose
 * subject alternative name `URI:libp2p:<peerId>` binds a libp2p PeerId), with node:crypto only.
 * Receipts use it in core; `federation/certificates.ts` applies the same rules to members.
 */

export const PEER_ID_URI_SCHEME = 'libp2p:'

export type NodeCertificateFailure = 'foreign_ca' | 'not_certified' | 'peer_id_mismatch' | 'not_yet_valid' | 'expired' | 'revoked'

export interface NodeCertificateCheck {
  /** the federation CA; absent: the chain is not checked */
  ca?: X509Certificate
  /** the PeerId the certificate must bind */
  peerId: string
  now: Date
  /** normalized revoked serials and SHA-256 fingerprints (see `normalizeCertificateId`) */
  revoked?: ReadonlySet<string>
}

export interface NodeCertificateFault {
  failure: NodeCertificateFailure
  message: string
}

/** A serial number or fingerprint in the one form revocation lists are compared in. */
export const normalizeCertificateId = (id: string): string => id.replace(/[:\s]/g, '').toLowerCase().replace(/^0+/, '')

/** The PeerIds a certificate binds (its `URI:libp2p:<peerId>` subject alternative names). */
export function peerIdsBoundBy(cert: X509Certificate): string[] {
  return (cert.subjectAltName ?? '').split(/,\s*/)
    .map((part) => part.trim())
    .filter((part) => part.startsWith(`URI:${PEER_ID_URI_SCHEME}`))
    .map((part) => part.slice(`URI:${PEER_ID_URI_SCHEME}`.length))
}

/**
 * The first rule `cert` breaks, in this order: issued by `ca` (issuer name = the CA's subject and
 * signature valid under the CA's key) → `foreign_ca`; a node certificate (not a CA, binds at
 * least one PeerId) → `not_certified`; binds `peerId` → `peer_id_mismatch`; valid at `now`
 * (bounds inclusive) → `not_yet_valid` / `expired`; serial and SHA-256 fingerprint not revoked
 * → `revoked`. Undefined when it breaks none.
 */
export function nodeCertificateFault(cert: X509Certificate, check: NodeCertificateCheck): NodeCertificateFault | undefined {
  if (check.ca !== undefined && (!cert.checkIssued(check.ca) || !cert.verify(check.ca.publicKey))) {
    return { failure: 'foreign_ca', message: `certificate of ${oneLine(cert.subject)} is not issued by the federation CA ${oneLine(check.ca.subject)}` }
  }
  const bound = peerIdsBoundBy(cert)
  if (cert.ca) return { failure: 'not_certified', message: 'the certificate is a CA certificate, not a node certificate' }
  if (bound.length === 0) return { failure: 'not_certified', message: 'the certificate binds no PeerId (no URI:libp2p: subject alternative name)' }
  if (!bound.includes(check.peerId)) {
    return { failure: 'peer_id_mismatch', message: `the certificate binds ${bound.join(', ')}, not ${check.peerId}` }
  }
  const from = new Date(cert.validFrom)
  const to = new Date(cert.validTo)
  if (check.now < from) return { failure: 'not_yet_valid', message: `the certificate is valid from ${from.toISOString()}` }
  if (check.now > to) return { failure: 'expired', message: `the certificate expired at ${to.toISOString()}` }
  const revoked = check.revoked
  if (revoked !== undefined && (revoked.has(normalizeCertificateId(cert.serialNumber)) || revoked.has(normalizeCertificateId(cert.fingerprint256)))) {
    return { failure: 'revoked', message: `certificate ${cert.serialNumber} is revoked` }
  }
  return undefined
}

const oneLine = (dn: string): string => dn.replace(/\n/g, ', ')
