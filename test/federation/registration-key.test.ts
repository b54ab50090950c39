// A registration's auth.public_key (service-spec §2.7, §5), when given, must be the key of the
// certificate that binds its node_id: its subject key (PEM SPKI) or the libp2p identity key of the
// PeerId it binds (PEM, libp2p protobuf, or its identity multihash, what svc-node members send).
// And a node declares the capabilities of its configuration, not fixed ones.
import { generateKeyPairSync } from 'node:crypto'
import { publicKeyToProtobuf } from '@libp2p/crypto/keys'
import { describe, expect, it } from 'vitest'
import { SvcError } from '../../src/core/errors.js'
import { issueNodeCertificate } from '../../src/federation/certificates.js'
import { nodeCapabilities } from '../../src/federation/node.js'
import { checkRegistrationKey, MAX_PUBLIC_KEY_CHARS } from '../../src/federation/registration-key.js'
import { newIdentity, testCa } from './fixtures.js'

function refusal(run: () => void): SvcError {
  try {
    run()
  } catch (err) {
    expect(err).toBeInstanceOf(SvcError)
    return err as SvcError
  }
  throw new Error('not refused')
}

/** the Ed25519 identity key as PEM SPKI (its raw 32 bytes behind the fixed SPKI prefix) */
function ed25519Pem(raw: Uint8Array): string {
  const der = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(raw)])
  return `-----BEGIN PUBLIC KEY-----\n${der.toString('base64')}\n-----END PUBLIC KEY-----\n`
}

describe('checkRegistrationKey', () => {
  it('accepts the node key in each documented encoding, and the certificate subject key', async () => {
    const id = await newIdentity()
    const subject = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }).toString()
    const cert = issueNodeCertificate(testCa(), id.peerId, { publicKeyPem: subject }).certPem
    const multihash = Buffer.from(id.privateKey.publicKey.toMultihash().bytes).toString('base64')
    const protobuf = Buffer.from(publicKeyToProtobuf(id.privateKey.publicKey))
    for (const key of [undefined, null, '', multihash, protobuf.toString('base64'), protobuf.toString('base64url'), ed25519Pem(id.privateKey.publicKey.raw), subject, `  ${subject}  `]) {
      expect(() => checkRegistrationKey(key, cert, id.peerId)).not.toThrow()
    }
  })

  it('refuses another key with 1003 public_key_mismatch, in every encoding', async () => {
    const id = await newIdentity()
    const other = await newIdentity()
    const cert = issueNodeCertificate(testCa(), id.peerId).certPem
    const otherRsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }).toString()
    for (const key of [
      Buffer.from(other.privateKey.publicKey.toMultihash().bytes).toString('base64'),
      Buffer.from(publicKeyToProtobuf(other.privateKey.publicKey)).toString('base64'),
      ed25519Pem(other.privateKey.publicKey.raw),
      otherRsa,
    ]) {
      const err = refusal(() => checkRegistrationKey(key, cert, id.peerId))
      expect(err.code).toBe(1003)
      expect(err.details).toMatchObject({ failure: 'public_key_mismatch' })
    }
  })

  it('refuses what is no key at all with 1006 naming /auth/public_key', async () => {
    const id = await newIdentity()
    const cert = issueNodeCertificate(testCa(), id.peerId).certPem
    const certificateAsKey = cert
    for (const key of [42, { pem: 'x' }, 'not base64!', 'AAAA', Buffer.from('hello world').toString('base64'), certificateAsKey,
      '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n', 'A'.repeat(MAX_PUBLIC_KEY_CHARS + 1)]) {
      const err = refusal(() => checkRegistrationKey(key, cert, id.peerId))
      expect(err.code).toBe(1006)
      expect(JSON.stringify(err.details)).toContain('/auth/public_key')
    }
  })
})

describe('nodeCapabilities', () => {
  it('declares its sandbox languages, one call per worker and the doors it serves', () => {
    expect(nodeCapabilities({ sandboxWorkers: 5, grpc: true })).toEqual({ languages: ['javascript', 'typescript', 'python'], max_concurrent: 5, protocols: ['rest', 'grpc', 'graphql'] })
    expect(nodeCapabilities({ sandboxWorkers: 1, grpc: false })).toEqual({ languages: ['javascript', 'typescript', 'python'], max_concurrent: 1, protocols: ['rest', 'graphql'] })
  })
})
