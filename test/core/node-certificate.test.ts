// The checks of a federation node certificate (src/core/node-certificate.ts), on the certificates
// of the shared receipt vectors: each rule, its order, its message, and the validity bounds, which
// are inclusive (a certificate is valid at its notBefore and at its notAfter, not a millisecond
// outside them).
import { X509Certificate } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { nodeCertificateFault, normalizeCertificateId, peerIdsBoundBy, type NodeCertificateCheck } from '../../src/core/node-certificate.js'

const vectors = JSON.parse(readFileSync(new URL('../vectors/receipts-v1.json', import.meta.url), 'utf8')) as {
  now: string
  peers: { A: string; B: string }
  certificates: Record<string, { pem: string; serial: string; fingerprint256: string; valid_from: string; valid_to: string }>
}
const cert = (name: string): X509Certificate => new X509Certificate(vectors.certificates[name]!.pem)
const ca = cert('ca')
const nodeA = cert('node_a')
const A = vectors.peers.A
const now = new Date(vectors.now)
const fault = (c: X509Certificate, check: Partial<NodeCertificateCheck> = {}): ReturnType<typeof nodeCertificateFault> =>
  nodeCertificateFault(c, { ca, peerId: A, now, ...check })

describe('nodeCertificateFault', () => {
  it('accepts a node certificate of the CA binding the PeerId, with or without the CA', () => {
    expect(fault(nodeA)).toBeUndefined()
    expect(fault(nodeA, { ca: undefined })).toBeUndefined()
    expect(fault(cert('node_a_foreign_ca'), { ca: undefined })).toBeUndefined()
  })

  it('foreign_ca: another issuer, or the same name under another key', () => {
    expect(fault(cert('node_a_foreign_ca'))).toEqual({
      failure: 'foreign_ca',
      message: 'certificate of CN=svc-node 12D3KooWSPg3kpw1cR4SqWTJ4rZxYVr28qSaBrNJN41zzwiRT4wj, O=svc federation is not issued by the federation CA CN=svc receipts vectors CA, O=svc federation',
    })
    expect(fault(cert('node_a_twin_ca'))?.failure).toBe('foreign_ca')
    expect(fault(nodeA, { ca: cert('foreign_ca') })?.failure).toBe('foreign_ca')
  })

  it('not_certified: a CA certificate, or a certificate binding no PeerId', () => {
    expect(fault(ca)).toEqual({ failure: 'not_certified', message: 'the certificate is a CA certificate, not a node certificate' })
    expect(fault(cert('node_without_peer_id'))).toEqual({ failure: 'not_certified', message: 'the certificate binds no PeerId (no URI:libp2p: subject alternative name)' })
  })

  it('peer_id_mismatch names what the certificate binds', () => {
    expect(fault(cert('node_b'))).toEqual({ failure: 'peer_id_mismatch', message: `the certificate binds ${vectors.peers.B}, not ${A}` })
  })

  it('validity bounds are inclusive, to the millisecond', () => {
    const { valid_from: from, valid_to: to } = vectors.certificates.node_a!
    const at = (iso: string, ms = 0): Date => new Date(Date.parse(iso) + ms)
    expect(fault(nodeA, { now: at(from) })).toBeUndefined()
    expect(fault(nodeA, { now: at(to) })).toBeUndefined()
    expect(fault(nodeA, { now: at(from, -1) })).toEqual({ failure: 'not_yet_valid', message: `the certificate is valid from ${from}` })
    expect(fault(nodeA, { now: at(to, 1) })).toEqual({ failure: 'expired', message: `the certificate expired at ${to}` })
  })

  it('revoked: by serial or SHA-256 fingerprint, in any case, with or without colons and leading zeros', () => {
    const { serial, fingerprint256 } = vectors.certificates.node_a!
    const revoked = (ids: string[]): ReturnType<typeof nodeCertificateFault> => fault(nodeA, { revoked: new Set(ids.map(normalizeCertificateId)) })
    expect(revoked([serial])).toEqual({ failure: 'revoked', message: `certificate ${serial} is revoked` })
    expect(revoked([`00${serial.toLowerCase()}`])?.failure).toBe('revoked')
    expect(revoked([fingerprint256])?.failure).toBe('revoked')
    expect(revoked([fingerprint256.replace(/:/g, '').toLowerCase()])?.failure).toBe('revoked')
    expect(revoked([vectors.certificates.node_b!.serial, vectors.certificates.node_b!.fingerprint256])).toBeUndefined()
    expect(revoked([])).toBeUndefined()
  })

  it('checks in order: chain, node certificate, PeerId, validity, revocation', () => {
    // expired and of another peer: the PeerId comes first; foreign and expired: the chain
    expect(fault(cert('node_a_expired'), { peerId: vectors.peers.B })?.failure).toBe('peer_id_mismatch')
    expect(fault(cert('node_a_expired'), { ca: cert('foreign_ca') })?.failure).toBe('foreign_ca')
    expect(fault(cert('node_a_expired'), { revoked: new Set([normalizeCertificateId(vectors.certificates.node_a_expired!.serial)]) })?.failure).toBe('expired')
  })
})

describe('normalizeCertificateId and peerIdsBoundBy', () => {
  it('normalizes serials and fingerprints to lowercase hex without separators or leading zeros', () => {
    expect(normalizeCertificateId('00:0A:bC')).toBe('abc')
    expect(normalizeCertificateId(' 0a b\tC\n')).toBe('abc')
    expect(normalizeCertificateId('AB:CD:00')).toBe('abcd00')
    expect(normalizeCertificateId('000')).toBe('')
  })

  it('reads the URI:libp2p: names only', () => {
    expect(peerIdsBoundBy(nodeA)).toEqual([A])
    expect(peerIdsBoundBy(ca)).toEqual([])
    expect(peerIdsBoundBy(cert('node_without_peer_id'))).toEqual([])
  })
})
