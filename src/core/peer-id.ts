/**
 * libp2p PeerIds of Ed25519 keys, decoded by hand so that core needs no libp2p: the string form
 * is base58btc of an identity multihash (0x00, length 36) of the libp2p `PublicKey` protobuf
 * (field 1 `Type` = 1 Ed25519, field 2 `Data` = the 32-byte raw key), i.e. the 38 bytes
 * `00 24 08 01 12 20 <key>`: every such PeerId starts with `12D3KooW`.
 */

const BASE58_ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'
const BASE58_INDEX = new Map([...BASE58_ALPHABET].map((c, i) => [c, i]))
/** identity multihash header + PublicKey protobuf header of an Ed25519 key */
const ED25519_PEER_ID_PREFIX = Uint8Array.of(0x00, 0x24, 0x08, 0x01, 0x12, 0x20)

export function base58btcEncode(bytes: Uint8Array): string {
  let zeros = 0
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++
  let n = 0n
  for (const b of bytes) n = (n << 8n) | BigInt(b)
  let out = ''
  while (n > 0n) {
    out = BASE58_ALPHABET[Number(n % 58n)] + out
    n /= 58n
  }
  return '1'.repeat(zeros) + out
}

/** Throws TypeError for a character outside the base58btc alphabet. */
export function base58btcDecode(text: string): Uint8Array {
  let zeros = 0
  while (zeros < text.length && text[zeros] === '1') zeros++
  let n = 0n
  for (const c of text) {
    const digit = BASE58_INDEX.get(c)
    if (digit === undefined) throw new TypeError(`'${c}' is not a base58btc character`)
    n = n * 58n + BigInt(digit)
  }
  const body: number[] = []
  while (n > 0n) {
    body.unshift(Number(n & 0xffn))
    n >>= 8n
  }
  return Uint8Array.from([...new Array<number>(zeros).fill(0), ...body])
}

/** The PeerId (base58btc string form) of a raw 32-byte Ed25519 public key. */
export function peerIdOfEd25519Key(publicKey: Uint8Array): string {
  if (publicKey.length !== 32) throw new TypeError('an Ed25519 public key has 32 bytes')
  const bytes = new Uint8Array(ED25519_PEER_ID_PREFIX.length + 32)
  bytes.set(ED25519_PEER_ID_PREFIX)
  bytes.set(publicKey, ED25519_PEER_ID_PREFIX.length)
  return base58btcEncode(bytes)
}

/**
 * The raw 32-byte Ed25519 public key a PeerId embeds. Throws TypeError for anything that is not
 * the base58btc form of an Ed25519 PeerId (an RSA or secp256k1 PeerId, a CID form, garbage).
 */
export function ed25519KeyOfPeerId(peerId: string): Uint8Array {
  if (typeof peerId !== 'string' || peerId.length < 46 || peerId.length > 60) throw new TypeError('not an Ed25519 PeerId')
  const bytes = base58btcDecode(peerId)
  if (bytes.length !== ED25519_PEER_ID_PREFIX.length + 32 || !ED25519_PEER_ID_PREFIX.every((b, i) => bytes[i] === b)) {
    throw new TypeError('not an Ed25519 PeerId (expected an identity multihash of an Ed25519 libp2p public key)')
  }
  // one string per key: base58btc has a single encoding of given bytes
  if (base58btcEncode(bytes) !== peerId) throw new TypeError('not the canonical base58btc form of a PeerId')
  return bytes.slice(ED25519_PEER_ID_PREFIX.length)
}
