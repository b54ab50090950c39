import { generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto'
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import forge from 'node-forge'
import { nodeCertificateFault, normalizeCertificateId, PEER_ID_URI_SCHEME, type NodeCertificateFailure } from '../core/node-certificate.js'

/**
 * Federation certificates: a federation CA (node-forge) issues node certificates whose subject
 * alternative name `URI:libp2p:<peerId>` binds the node's libp2p PeerId. Verification applies the
 * rules of `core/node-certificate.ts` (the same receipts are checked with): chain to the CA, a node
 * certificate bound to the PeerId, validity period, revocation list.
 */

export const CA_CERT_FILE = 'ca.crt'
export const CA_KEY_FILE = 'ca.key'
export const NODE_CERT_FILE = 'node.crt'
export const NODE_KEY_FILE = 'node.key'

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
    { name: 'subjectAltName', altNames: [{ type: 6, value: `${PEER_ID_URI_SCHEME}${peerId}` }] },
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

/** A core rule broken, as a membership failure (the names refusals, audits and metrics use). */
function membershipFailureOf(failure: NodeCertificateFailure, cert: X509Certificate): MembershipFailure {
  switch (failure) {
    case 'foreign_ca': return 'untrusted_chain'
    // a CA certificate is not a member's; a node certificate that binds no PeerId binds not this one
    case 'not_certified': return cert.ca ? 'untrusted_chain' : 'peer_id_mismatch'
    default: return failure
  }
}

/** Checks node certificates against one CA and revocation list (the rules of core/node-certificate.ts). */
export class CertificateVerifier {
  private readonly ca: X509Certificate
  private readonly revoked: Set<string>

  constructor(init: VerifyInit) {
    this.ca = new X509Certificate(init.caCertPem)
    this.revoked = new Set((init.revoked ?? []).map(normalizeCertificateId))
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
    const fault = nodeCertificateFault(cert, { ca: this.ca, peerId: remotePeerId, now, revoked: this.revoked })
    if (fault !== undefined) throw new MembershipError(membershipFailureOf(fault.failure, cert), fault.message)
    return { peerId: remotePeerId, serial: cert.serialNumber, fingerprint256: cert.fingerprint256, subject: cert.subject, validTo: new Date(cert.validTo).toISOString() }
  }
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
