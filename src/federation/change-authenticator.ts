import type { PrivateKey, PublicKey } from '@libp2p/interface'
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

/**
 * Signs this node's replicated changes with its libp2p key, and checks another origin's: the
 * origin is a PeerId that carries its public key (Ed25519), the signature must verify with it,
 * and a certificate must bind that PeerId now (chain to the federation CA, validity, revocation).
 * The signature is checked first, so a forged or altered change is `bad_signature` whatever
 * certificate comes with it.
 */
export function createChangeAuthenticator(init: ChangeAuthenticatorInit): ChangeAuthenticator {
  const keys = new Map<string, PublicKey | null>()
  const certificates = new Map<string, VerifiedMember>()
  const keyOf = (origin: string): PublicKey | null => {
    let key = keys.get(origin)
    if (key === undefined) {
      try {
        key = peerIdFromString(origin).publicKey ?? null
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
      return init.privateKey.sign(bytes)
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
