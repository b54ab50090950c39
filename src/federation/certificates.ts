import { generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto'
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import forge from 'node-forge'

/**
 * Federation certificates: a federation CA (node-forge) issues node certificates whose subject
 * alternative name `URI:libp2p:<peerId>` binds the node's libp2p PeerId. Verification uses
 * node:crypto `X509Certificate`: chain to the CA, validity period, revocation list, PeerId binding.
 */

export const CA_CERT_FILE = 'ca.crt'
export const CA_KEY_FILE = 'ca.key'
export const NODE_CERT_FILE = 'node.crt'
export const NODE_KEY_FILE = 'node.key'
export const PEER_ID_URI_PREFIX = 'libp2p:'

export interface CertificateAuthority {
  certPem: string
  keyPem: string
}

export interface NodeCertificate {
  certPem: string
  keyPem: string
  serial: string
  fingerprint256: string
}

function rsaKeyPair(): { privateKeyPem: string; publicKeyPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  }
}

/** A positive random serial (hex, high bit clear so DER keeps it positive). */
function randomSerial(): string {
  const bytes = randomBytes(16)
  bytes[0] = bytes[0]! & 0x7f | 0x10
  return bytes.toString('hex')
}

/** Creates a federation CA: a self-signed RSA 2048 certificate allowed to sign node certificates. */
export function createFederationCa(options: { name?: string; days?: number; now?: Date } = {}): CertificateAuthority {
  const keys = rsaKeyPair()
  const now = options.now ?? new Date()
  const cert = forge.pki.createCertificate()
  cert.publicKey = forge.pki.publicKeyFromPem(keys.publicKeyPem)
  cert.serialNumber = randomSerial()
  cert.validity.notBefore = new Date(now.getTime() - 60_000)
  cert.validity.notAfter = new Date(now.getTime() + (options.days ?? 3650) * 86_400_000)
  const subject = [{ shortName: 'CN', value: options.name ?? 'svc federation CA' }, { shortName: 'O', value: 'svc federation' }]
  cert.setSubject(subject)
  cert.setIssuer(subject)
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ])
  cert.sign(forge.pki.privateKeyFromPem(keys.privateKeyPem), forge.md.sha256.create())
  return { certPem: forge.pki.certificateToPem(cert), keyPem: keys.privateKeyPem }
}

export interface IssueOptions {
  /** validity in days from `notBefore` (default 365) */
  days?: number
  /** start of validity (default: one minute ago) */
  notBefore?: Date
  /** the common name (default `svc-node <peerId>`) */
  commonName?: string
  /**
   * the certificate's subject public key (PEM, SPKI); default a fresh RSA 2048 key. Membership is
   * bound to the PeerId in the certificate's SAN and proven by the libp2p key: this key signs nothing.
   */
  publicKeyPem?: string
}

/** Issues a node certificate for `peerId`, signed by `ca`. */
export function issueNodeCertificate(ca: CertificateAuthority, peerId: string, options: IssueOptions = {}): NodeCertificate {
  if (!/^[1-9A-HJ-NP-Za-km-z]{32,128}$/.test(peerId) && !/^b[a-z2-7]{32,}$/.test(peerId)) {
    throw new Error(`not a libp2p PeerId: ${JSON.stringify(peerId)}`)
  }
  const caCert = forge.pki.certificateFromPem(ca.certPem)
  const caKey = forge.pki.privateKeyFromPem(ca.keyPem)
  const keys = options.publicKeyPem === undefined ? rsaKeyPair() : { publicKeyPem: options.publicKeyPem, privateKeyPem: '' }
  const cert = forge.pki.createCertificate()
  cert.publicKey = forge.pki.publicKeyFromPem(keys.publicKeyPem)
  cert.serialNumber = randomSerial()
  const start = options.notBefore ?? new Date(Date.now() - 60_000)
  cert.validity.notBefore = start
  cert.validity.notAfter = new Date(start.getTime() + (options.days ?? 365) * 86_400_000)
  cert.setSubject([{ shortName: 'CN', value: options.commonName ?? `svc-node ${peerId}`.slice(0, 64) }, { shortName: 'O', value: 'svc federation' }])
  cert.setIssuer(caCert.subject.attributes)
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
    { name: 'extKeyUsage', serverAuth: true, clientAuth: true },
    { name: 'subjectAltName', altNames: [{ type: 6, value: `${PEER_ID_URI_PREFIX}${peerId}` }] },
  ])
  cert.sign(caKey, forge.md.sha256.create())
  const certPem = forge.pki.certificateToPem(cert)
  const x509 = new X509Certificate(certPem)
  return { certPem, keyPem: keys.privateKeyPem, serial: x509.serialNumber, fingerprint256: x509.fingerprint256 }
}

export type MembershipFailure =
  | 'malformed'
  | 'untrusted_chain'
  | 'not_yet_valid'
  | 'expired'
  | 'revoked'
  | 'peer_id_mismatch'

export class MembershipError extends Error {
  override readonly name = 'MembershipError'
  constructor(readonly failure: MembershipFailure, message: string) {
    super(message)
  }
}

export interface VerifyInit {
  /** the federation CA certificate (PEM) */
  caCertPem: string
  /**
   * Revoked certificates: serial numbers (hex, any case, colons allowed) or SHA-256 fingerprints
   * (`AA:BB:…` or plain hex).
   */
  revoked?: readonly string[]
}

export interface VerifiedMember {
  peerId: string
  serial: string
  fingerprint256: string
  subject: string
  validTo: string
}

const normalizeId = (s: string): string => s.replace(/[:\s]/g, '').toLowerCase().replace(/^0+/, '')

/** Checks node certificates against one CA and revocation list. */
export class CertificateVerifier {
  private readonly ca: X509Certificate
  private readonly revoked: Set<string>

  constructor(init: VerifyInit) {
    this.ca = new X509Certificate(init.caCertPem)
    this.revoked = new Set((init.revoked ?? []).map(normalizeId))
  }

  /**
   * Verifies `certPem` as the certificate of `remotePeerId` (the PeerId Noise proved) at `now`.
   * Throws MembershipError naming the first check that failed.
   */
  verify(certPem: string, remotePeerId: string, now: Date = new Date()): VerifiedMember {
    let cert: X509Certificate
    try {
      cert = new X509Certificate(certPem)
    } catch (err) {
      throw new MembershipError('malformed', `not an X.509 certificate: ${(err as Error).message}`)
    }
    if (!cert.checkIssued(this.ca) || !cert.verify(this.ca.publicKey)) {
      throw new MembershipError('untrusted_chain', `certificate ${cert.subject.replace(/\n/g, ', ')} is not signed by the federation CA`)
    }
    if (cert.ca) throw new MembershipError('untrusted_chain', 'a CA certificate is not a node certificate')
    const from = new Date(cert.validFrom)
    const to = new Date(cert.validTo)
    if (now < from) throw new MembershipError('not_yet_valid', `certificate is valid from ${from.toISOString()}`)
    if (now > to) throw new MembershipError('expired', `certificate expired at ${to.toISOString()}`)
    if (this.revoked.has(normalizeId(cert.serialNumber)) || this.revoked.has(normalizeId(cert.fingerprint256))) {
      throw new MembershipError('revoked', `certificate ${cert.serialNumber} is revoked`)
    }
    const bound = peerIdsOf(cert)
    if (!bound.includes(remotePeerId)) {
      throw new MembershipError('peer_id_mismatch', `certificate binds ${bound.join(', ') || 'no PeerId'}, not ${remotePeerId}`)
    }
    return { peerId: remotePeerId, serial: cert.serialNumber, fingerprint256: cert.fingerprint256, subject: cert.subject, validTo: to.toISOString() }
  }
}

/** The PeerIds a certificate binds (its `URI:libp2p:<peerId>` subject alternative names). */
export function peerIdsOf(cert: X509Certificate): string[] {
  const san = cert.subjectAltName ?? ''
  return san.split(/,\s*/)
    .map((part) => part.trim())
    .filter((part) => part.startsWith(`URI:${PEER_ID_URI_PREFIX}`))
    .map((part) => part.slice(`URI:${PEER_ID_URI_PREFIX}`.length))
}

async function writePrivate(path: string, text: string): Promise<void> {
  await writeFile(path, text, { mode: 0o600 })
  await chmod(path, 0o600)
}

/** Writes `ca.crt` and `ca.key` (0600) into `dir`. */
export async function writeCa(dir: string, ca: CertificateAuthority): Promise<{ certFile: string; keyFile: string }> {
  await mkdir(dir, { recursive: true })
  const certFile = join(dir, CA_CERT_FILE)
  const keyFile = join(dir, CA_KEY_FILE)
  await writeFile(certFile, ca.certPem)
  await writePrivate(keyFile, ca.keyPem)
  return { certFile, keyFile }
}

export async function readCa(dir: string): Promise<CertificateAuthority> {
  return { certPem: await readFile(join(dir, CA_CERT_FILE), 'utf8'), keyPem: await readFile(join(dir, CA_KEY_FILE), 'utf8') }
}

/** Writes `node.crt`, `node.key` (0600) and a copy of the CA certificate as `ca.crt` into `dir`. */
export async function writeNodeCertificate(dir: string, cert: NodeCertificate, caCertPem: string): Promise<{ certFile: string; keyFile: string; caFile: string }> {
  await mkdir(dir, { recursive: true })
  const certFile = join(dir, NODE_CERT_FILE)
  const keyFile = join(dir, NODE_KEY_FILE)
  const caFile = join(dir, CA_CERT_FILE)
  await writeFile(certFile, cert.certPem)
  await writePrivate(keyFile, cert.keyPem)
  await writeFile(caFile, caCertPem)
  return { certFile, keyFile, caFile }
}
