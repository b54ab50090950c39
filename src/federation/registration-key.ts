import { X509Certificate, createPublicKey, type KeyObject } from 'node:crypto'
import { publicKeyFromMultihash, publicKeyFromProtobuf, publicKeyFromRaw } from '@libp2p/crypto/keys'
import type { PublicKey } from '@libp2p/interface'
import { peerIdFromPublicKey } from '@libp2p/peer-id'
import { decode as decodeMultihash } from 'multiformats/hashes/digest'
import { SvcError } from '../core/errors.js'

/** The longest `auth.public_key` read (a PEM RSA-4096 key is about 800 characters). */
export const MAX_PUBLIC_KEY_CHARS = 4096

const PEM_PUBLIC_KEY = /^-----BEGIN PUBLIC KEY-----\r?\n[A-Za-z0-9+/=\r\n]+-----END PUBLIC KEY-----\r?\n?$/
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/

/**
 * Checks a registration's `auth.public_key` (service-spec §2.7; §5: "federation nodes present a
 * certificate and a public key at registration") against its certificate, which the caller has
 * verified to bind `nodeId`. The key must be the certificate's: either the key of its
 * SubjectPublicKeyInfo, or the node's libp2p identity key, whose PeerId (`nodeId`) the
 * certificate binds. Accepted encodings:
 *
 * - PEM SubjectPublicKeyInfo (`-----BEGIN PUBLIC KEY-----`), of either key (an Ed25519 key is
 *   compared with the PeerId, any key with the certificate's own);
 * - base64 (standard or URL-safe, padding optional) of the libp2p `PublicKey` protobuf
 *   (`08 01 12 20 <32 bytes>` for Ed25519, what libp2p key files hold), or of that protobuf's
 *   identity multihash (`00 24 08 01 12 20 …`, what svc-node nodes send).
 *
 * Absent or empty: nothing to check. Throws 1006 for a key in none of these forms (or longer than
 * MAX_PUBLIC_KEY_CHARS) and 1003 (`details.failure: 'public_key_mismatch'`) for another key.
 */
export function checkRegistrationKey(publicKey: unknown, certificatePem: string, nodeId: string): void {
  if (publicKey === undefined || publicKey === null || publicKey === '') return
  if (typeof publicKey !== 'string' || publicKey.length > MAX_PUBLIC_KEY_CHARS) throw malformed('must be a string of at most 4096 characters')
  const text = publicKey.trim()
  if (text.startsWith('-----BEGIN')) {
    if (!PEM_PUBLIC_KEY.test(text + '\n')) throw malformed('a PEM key must be one SubjectPublicKeyInfo block (-----BEGIN PUBLIC KEY-----)')
    let key: KeyObject
    try {
      key = createPublicKey({ key: text, format: 'pem', type: 'spki' })
    } catch (err) {
      throw malformed(`the PEM key cannot be read: ${(err as Error).message}`)
    }
    const spki = key.export({ type: 'spki', format: 'der' })
    const certificateKey = new X509Certificate(certificatePem).publicKey.export({ type: 'spki', format: 'der' })
    if (spki.equals(certificateKey)) return
    if (key.asymmetricKeyType === 'ed25519') {
      const raw = Buffer.from(key.export({ format: 'jwk' }).x!, 'base64url')
      if (peerIdOf(publicKeyFromRaw(raw)) === nodeId) return
    }
    throw mismatch()
  }
  if (!BASE64.test(text)) throw malformed('must be a PEM public key or base64 of a libp2p public key')
  const bytes = Buffer.from(text, 'base64')
  let key: PublicKey
  try {
    key = bytes[0] === 0x00 ? publicKeyFromMultihash(decodeMultihash(bytes) as Parameters<typeof publicKeyFromMultihash>[0]) : publicKeyFromProtobuf(bytes)
  } catch (err) {
    throw malformed(`the libp2p public key cannot be read: ${(err as Error).message}`)
  }
  if (peerIdOf(key) !== nodeId) throw mismatch()
}

function peerIdOf(key: PublicKey): string {
  return peerIdFromPublicKey(key).toString()
}

function malformed(why: string): SvcError {
  return new SvcError('VALIDATION_FAILED', `invalid registration: /auth/public_key ${why}`, {
    details: { problems: [{ pointer: '/auth/public_key', message: why }] },
  })
}

function mismatch(): SvcError {
  return new SvcError('PERMISSION_DENIED', 'registration refused: auth.public_key is not the key of the certificate (neither its subject key nor the key of the PeerId it binds)', {
    details: { failure: 'public_key_mismatch' },
  })
}
