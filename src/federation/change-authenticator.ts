import type { PrivateKey, PublicKey } from '@libp2p/interface'
import { createPrivateKey, createPublicKey, sign as nodeSign, verify as nodeVerify, type KeyObject } from 'node:crypto'
import { peerIdFromString } from '@libp2p/peer-id'
import type { ChangeAuthenticator, ChangeVerdict } from '../engine/replication/change-authenticator.js'
import type { CertificateVerifier, VerifiedMember } from './certificates.js'

/** verified certificates and origin keys kept at once (a federation has far fewer members) */
const MAX_CACHED = 4096

export interface ChangeAuthenticatorInit {
  /** this node's libp2p key: the key its certificate binds (through its PeerId) */
  privateKey: PrivateKey
  peerId: string
  /** this node's certificate (PEM) */
  certPem: string
  verifier: CertificateVerifier
}

/** A signer and a checker for one key: node:crypto key objects made once for Ed25519 (libp2p's own build one per call). */
interface Key {
  verify(bytes: Uint8Array, signature: Uint8Array): boolean | Promise<boolean>
}

const b64url = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64url')

function checkerOf(key: PublicKey): Key {
  if (key.type !== 'Ed25519') return key
  const object: KeyObject = createPublicKey({ format: 'jwk', key: { kty: 'OKP', crv: 'Ed25519', x: b64url(key.raw) } })
  return { verify: (bytes, signature) => signature.length === 64 && nodeVerify(null, bytes, object, signature) }
}

function signerOf(key: PrivateKey): (bytes: Uint8Array) => Uint8Array | Promise<Uint8Array> {
  if (key.type !== 'Ed25519') return (bytes) => key.sign(bytes)
  const object = createPrivateKey({ format: 'jwk', key: { kty: 'OKP', crv: 'Ed25519', d: b64url(key.raw.subarray(0, 32)), x: b64url(key.publicKey.raw) } })
  return (bytes) => nodeSign(null, bytes, object)
}

/**
 * Signs this node's replicated changes with its libp2p key, and checks another origin's: the
 * origin is a PeerId that carries its public key (Ed25519), the signature must verify with it,
 * and a certificate must bind that PeerId now (chain to the federation CA, validity, revocation).
 * The signature is checked first, so a forged or altered change is `bad_signature` whatever
 * certificate comes with it.
 */
export function createChangeAuthenticator(init: ChangeAuthenticatorInit): ChangeAuthenticator {
  const keys = new Map<string, Key | null>()
  const signer = signerOf(init.privateKey)
  const certificates = new Map<string, VerifiedMember>()
  const keyOf = (origin: string): Key | null => {
    let key = keys.get(origin)
    if (key === undefined) {
      try {
        const publicKey = peerIdFromString(origin).publicKey
        key = publicKey === undefined ? null : checkerOf(publicKey)
      } catch {
        key = null
      }
      if (keys.size >= MAX_CACHED) keys.clear()
      keys.set(origin, key)
    }
    return key
  }
  const vouches = (credential: string, origin: string): VerifiedMember => {
    const cacheKey = `${origin}\n${credential}`
    const known = certificates.get(cacheKey)
    // revocation and the CA are fixed for the life of the node; time is not
    if (known !== undefined && Date.now() <= Date.parse(known.validTo)) return known
    const member = init.verifier.verify(credential, origin)
    if (certificates.size >= MAX_CACHED) certificates.clear()
    certificates.set(cacheKey, member)
    return member
  }
  return {
    origin: init.peerId,
    credential: init.certPem,
    async sign(bytes: Uint8Array): Promise<Uint8Array> {
      return signer(bytes)
    },
    async verify(origin: string, bytes: Uint8Array, signature: Uint8Array, credential: string | undefined): Promise<ChangeVerdict> {
      const key = keyOf(origin)
      if (key === null) return { ok: false, reason: 'unknown_origin', detail: `origin ${origin} is not a PeerId that carries its public key` }
      let valid = false
      try {
        valid = await key.verify(bytes, signature)
      } catch {
        valid = false
      }
      if (!valid) return { ok: false, reason: 'bad_signature', detail: `the signature is not ${origin}'s over this change` }
      if (credential === undefined) return { ok: false, reason: 'unknown_origin', detail: `no certificate of ${origin} was presented or is held` }
      try {
        return { ok: true, credentialExpiresAt: vouches(credential, origin).validTo }
      } catch (err) {
        return { ok: false, reason: 'untrusted_origin', detail: (err as Error).message }
      }
    },
  }
}
