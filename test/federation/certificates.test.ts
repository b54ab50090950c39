import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { federationCommand } from '../../src/cli/federation-command.js'
import {
  CertificateVerifier, createFederationCa, issueNodeCertificate, MembershipError, type CertificateAuthority,
} from '../../src/federation/certificates.js'
import { loadOrCreatePeerIdentity } from '../../src/federation/identity.js'

const failureOf = (fn: () => unknown): string | undefined => {
  try {
    fn()
    return undefined
  } catch (err) {
    expect(err).toBeInstanceOf(MembershipError)
    return (err as MembershipError).failure
  }
}

describe('federation certificates', () => {
  let ca: CertificateAuthority
  let dir: string
  let peerA: string
  let peerB: string

  beforeAll(async () => {
    ca = createFederationCa()
    dir = await mkdtemp(join(tmpdir(), 'svc-fed-cert-'))
    peerA = (await loadOrCreatePeerIdentity(join(dir, 'a'))).peerId
    peerB = (await loadOrCreatePeerIdentity(join(dir, 'b'))).peerId
  })
  afterAll(async () => rm(dir, { recursive: true, force: true }))

  it('accepts a certificate issued by the CA for the connection PeerId', () => {
    const cert = issueNodeCertificate(ca, peerA)
    const member = new CertificateVerifier({ caCertPem: ca.certPem }).verify(cert.certPem, peerA)
    expect(member.peerId).toBe(peerA)
    expect(member.serial).toBe(cert.serial)
  })

  it('refuses a certificate from another CA (self-signed federation)', () => {
    const other = createFederationCa({ name: 'rogue CA' })
    const cert = issueNodeCertificate(other, peerA)
    expect(failureOf(() => new CertificateVerifier({ caCertPem: ca.certPem }).verify(cert.certPem, peerA))).toBe('untrusted_chain')
  })

  it('refuses the CA certificate itself', () => {
    expect(failureOf(() => new CertificateVerifier({ caCertPem: ca.certPem }).verify(ca.certPem, peerA))).toBe('untrusted_chain')
  })

  it('refuses an expired and a not-yet-valid certificate', () => {
    const expired = issueNodeCertificate(ca, peerA, { notBefore: new Date(Date.now() - 10 * 86_400_000), days: 1 })
    const future = issueNodeCertificate(ca, peerA, { notBefore: new Date(Date.now() + 86_400_000), days: 1 })
    const verifier = new CertificateVerifier({ caCertPem: ca.certPem })
    expect(failureOf(() => verifier.verify(expired.certPem, peerA))).toBe('expired')
    expect(failureOf(() => verifier.verify(future.certPem, peerA))).toBe('not_yet_valid')
  })

  it('refuses a revoked certificate by serial or by fingerprint', () => {
    const bySerial = issueNodeCertificate(ca, peerA)
    const byFingerprint = issueNodeCertificate(ca, peerA)
    const verifier = new CertificateVerifier({ caCertPem: ca.certPem, revoked: [bySerial.serial.toLowerCase(), byFingerprint.fingerprint256] })
    expect(failureOf(() => verifier.verify(bySerial.certPem, peerA))).toBe('revoked')
    expect(failureOf(() => verifier.verify(byFingerprint.certPem, peerA))).toBe('revoked')
  })

  it('refuses a certificate issued for another PeerId', () => {
    const cert = issueNodeCertificate(ca, peerB)
    expect(failureOf(() => new CertificateVerifier({ caCertPem: ca.certPem }).verify(cert.certPem, peerA))).toBe('peer_id_mismatch')
  })

  it('refuses garbage', () => {
    expect(failureOf(() => new CertificateVerifier({ caCertPem: ca.certPem }).verify('not a cert', peerA))).toBe('malformed')
  })

  it('keeps the peer identity across loads, mode 0600', async () => {
    const again = await loadOrCreatePeerIdentity(join(dir, 'a'))
    expect(again.peerId).toBe(peerA)
    expect((await stat(again.file)).mode & 0o777).toBe(0o600)
  })

  it('svc federation ca init / peer-id / cert issue', async () => {
    const out: string[] = []
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out.push(String(chunk))
      return true
    })
    try {
      const caDir = join(dir, 'cli-ca')
      await federationCommand().parseAsync(['ca', 'init', '--out', caDir], { from: 'user' })
      expect((await stat(join(caDir, 'ca.key'))).mode & 0o777).toBe(0o600)
      await federationCommand().parseAsync(['peer-id', '--data-dir', join(dir, 'cli-node')], { from: 'user' })
      const peerId = out.pop()!.trim()
      await federationCommand().parseAsync(['cert', 'issue', '--ca', caDir, '--data-dir', join(dir, 'cli-node'), '--out', join(dir, 'cli-cert'), '--days', '10'], { from: 'user' })
      const issued = JSON.parse(out.pop()!) as { peer_id: string; cert_file: string }
      expect(issued.peer_id).toBe(peerId)
      const verifier = new CertificateVerifier({ caCertPem: await readFile(join(caDir, 'ca.crt'), 'utf8') })
      expect(verifier.verify(await readFile(issued.cert_file, 'utf8'), peerId).peerId).toBe(peerId)
      expect((await stat(join(dir, 'cli-cert', 'node.key'))).mode & 0o777).toBe(0o600)
    } finally {
      write.mockRestore()
    }
  })
})
