import { createPublicKey, randomBytes, sign, type KeyObject } from 'node:crypto'
import { PEER_ID_URI_SCHEME } from '../core/node-certificate.js'

/**
 * A self-signed X.509 v3 certificate for a node's own PeerId, signed with the node's Ed25519 key
 * itself (no CA, no RSA key to make: microseconds instead of the second an RSA issuer costs). A
 * node without federation attaches it to its receipts: it binds the PeerId (`URI:libp2p:<peerId>`)
 * and is not a CA certificate, so receipts verify without a CA (`certified: false`); it proves
 * nothing about membership. DER is written by hand (the few ASN.1 forms a certificate needs).
 */
export function selfSignedNodeCertificate(privateKey: KeyObject, peerId: string, options: { days?: number; now?: Date } = {}): string {
  const now = options.now ?? new Date()
  const notBefore = new Date(now.getTime() - 60_000)
  const notAfter = new Date(now.getTime() + (options.days ?? 36500) * 86_400_000)
  const ed25519 = seq(oid('1.3.101.112'))
  const name = seq(set(seq(oid('2.5.4.3'), utf8(`svc-node ${peerId} (self-signed)`.slice(0, 64)))))
  const spki = createPublicKey(privateKey).export({ type: 'spki', format: 'der' })
  const serial = randomBytes(16)
  serial[0] = (serial[0]! & 0x7f) | 0x10
  const extensions = seq(
    seq(oid('2.5.29.19'), bool(true), octets(seq())), // basicConstraints: critical, not a CA
    seq(oid('2.5.29.15'), bool(true), octets(bitString(Buffer.from([0x80]), 7))), // keyUsage: critical, digitalSignature
    seq(oid('2.5.29.17'), octets(seq(tlv(0x86, Buffer.from(`${PEER_ID_URI_SCHEME}${peerId}`, 'ascii'))))), // subjectAltName URI
  )
  const tbs = seq(
    tlv(0xa0, integer(Buffer.from([2]))), // v3
    integer(serial),
    ed25519,
    name,
    seq(time(notBefore), time(notAfter)),
    name,
    Buffer.from(spki),
    tlv(0xa3, extensions),
  )
  const signature = sign(null, tbs, privateKey)
  const der = seq(tbs, ed25519, bitString(signature, 0))
  const body = der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')
  return `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n`
}

function tlv(tag: number, content: Buffer): Buffer {
  const n = content.length
  const length = n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff])
  return Buffer.concat([Buffer.from([tag]), length, content])
}
const seq = (...items: Buffer[]): Buffer => tlv(0x30, Buffer.concat(items))
const set = (...items: Buffer[]): Buffer => tlv(0x31, Buffer.concat(items))
const octets = (content: Buffer): Buffer => tlv(0x04, content)
const utf8 = (text: string): Buffer => tlv(0x0c, Buffer.from(text, 'utf8'))
const bool = (value: boolean): Buffer => tlv(0x01, Buffer.from([value ? 0xff : 0]))
const bitString = (bytes: Buffer, unusedBits: number): Buffer => tlv(0x03, Buffer.concat([Buffer.from([unusedBits]), bytes]))
const integer = (bytes: Buffer): Buffer => tlv(0x02, bytes[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes)

function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number)
  const out = [a! * 40 + b!]
  for (const n of rest) {
    const bytes = [n & 0x7f]
    for (let v = n >>> 7; v > 0; v >>>= 7) bytes.unshift((v & 0x7f) | 0x80)
    out.push(...bytes)
  }
  return tlv(0x06, Buffer.from(out))
}

/** UTCTime before 2050, GeneralizedTime from 2050 (RFC 5280 §4.1.2.5). */
function time(date: Date): Buffer {
  const iso = date.toISOString()
  const digits = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`
  return date.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(digits.slice(2), 'ascii')) : tlv(0x18, Buffer.from(digits, 'ascii'))
}
