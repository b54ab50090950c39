/**
 * Execution receipts, format version 1, exactly as `docs/receipts.md` specifies: what a node
 * signs about one execution, and how anyone verifies it. The Python (`clients/python/svc/receipt.py`)
 * and Go (`clients/go/receipt.go`) clients implement the same verification; all three are checked
 * against `test/vectors/receipts-v1.json`.
 *
 * Core imports nothing of ours outside core/: the signer is a narrow port the engine fills with
 * the node's libp2p key, and the PeerId → Ed25519 key step is done by hand (`peer-id.ts`).
 */
import { createPublicKey, hash, verify as verifySignature, X509Certificate, type KeyObject } from 'node:crypto'
import { canonicalJsonStrict } from './canonical-json.js'
import { SvcError } from './errors.js'
import { normalizeCertificateId, nodeCertificateFault, peerIdsBoundBy, type NodeCertificateFailure } from './node-certificate.js'
import { ed25519KeyOfPeerId } from './peer-id.js'
import { base62, FULL_RUFID } from './rufid.js'

export const RECEIPT_VERSION = 1
/** Domain separation: the signed bytes are this prefix followed by the JCS of the payload. */
export const RECEIPT_SIGNING_PREFIX = 'svc-node/receipt/v1\n'

export type ReceiptStatus = 'success' | 'error' | 'timeout'

export interface ReceiptLimits {
  timeout_ms: number
  cpu_ms: number
  memory_mb: number
}

/** The signed members of a version 1 receipt (docs/receipts.md §2). */
export interface ReceiptPayload {
  receipt_version: 1
  execution_id: string
  rufid: string
  content_digest: string
  lockfile_digest: string
  arguments_digest: string
  status: ReceiptStatus
  result_digest: string | null
  error_code: number | null
  limits: ReceiptLimits
  started_at: string
  finished_at: string
  peer_id: string
}

/** A receipt: the payload, the signer's certificate (PEM) and the Ed25519 signature (base64url). */
export interface Receipt extends ReceiptPayload {
  certificate: string
  signature: string
}

/** What the engine fills in; `receipt_version` and `peer_id` come from the format and the signer. */
export type UnsignedReceipt = Omit<ReceiptPayload, 'receipt_version' | 'peer_id'>

/**
 * The node key, as narrow as signing needs: the engine adapts the libp2p private key to it, so
 * core never imports libp2p. `sign` returns the 64-byte Ed25519 signature of `bytes`.
 */
export interface ReceiptSigner {
  peerId: string
  /** the node certificate (PEM) binding `peerId`, attached to every receipt */
  certificatePem: string
  sign(bytes: Uint8Array): Uint8Array | Promise<Uint8Array>
}

export type ReceiptFailure =
  | 'malformed'
  | 'bad_signature'
  | NodeCertificateFailure
  | 'arguments_mismatch'
  | 'result_mismatch'

/** A receipt that does not verify: VALIDATION_FAILED (1006) naming the failed check in `failure`. */
export class ReceiptError extends SvcError {
  readonly failure: ReceiptFailure

  constructor(failure: ReceiptFailure, message: string) {
    super('VALIDATION_FAILED', `receipt ${failure.replace(/_/g, ' ')}: ${message}`, { details: { failure } })
    this.failure = failure
  }
}

export function isReceiptError(err: unknown): err is ReceiptError {
  return err instanceof ReceiptError
}

export interface VerifyReceiptOptions {
  /** the federation CA certificate (PEM); absent, the signer's certificate is not checked against a CA */
  caCertPem?: string
  /** revoked node certificates: serial numbers or SHA-256 fingerprints (hex, any case, colons allowed) */
  revoked?: readonly string[]
  /** the call's arguments (named object or positional array); absent: not checked */
  args?: unknown
  /** the execution's result; absent (undefined): not checked. `null` is a result. */
  result?: unknown
  /** the verification time (default: now) */
  now?: Date
}

export interface VerifiedReceipt {
  receipt: Receipt
  /** SHA-256 hex of the signed bytes: the receipt's identity */
  digest: string
  peerId: string
  /** true when the certificate was checked against a CA */
  certified: boolean
  certificate: { serial: string; fingerprint256: string; subject: string; validFrom: string; validTo: string }
  /** which digests were compared with values the caller gave */
  checked: { arguments: boolean; result: boolean }
}

/** One-shot SHA-256 (node ≥ 20.12; a string is hashed as its UTF-8 bytes): a digest per call costs no Hash object. */
export const sha256Hex = (bytes: string | Uint8Array): string => hash('sha256', bytes, 'hex')

/** SHA-256 hex of the RFC 8785 canonical JSON of `value`; TypeError when it has no canonical form. */
export function jsonDigest(value: unknown): string {
  return sha256Hex(canonicalJsonStrict(value))
}

/**
 * `arguments_digest`: the call's arguments as the caller gave them, a named object or a positional
 * array (never rebound to parameters); absent or null is `{}`. TypeError for anything else.
 */
export function argumentsDigest(args: unknown): string {
  return sha256Hex(argumentsCanonicalText(args))
}

/** The RFC 8785 text `arguments_digest` is the SHA-256 of (see `argumentsDigest`); TypeError as it. */
export function argumentsCanonicalText(args: unknown): string {
  const value = args === undefined || args === null ? {} : args
  if (typeof value !== 'object') throw new TypeError('arguments must be an object of named arguments or an array')
  return canonicalJsonStrict(value)
}

/** `result_digest`: the digest of the result (a function returning nothing has the result `null`). */
export function resultDigest(result: unknown): string {
  return jsonDigest(result === undefined ? null : result)
}

/** `lockfile_digest`: the digest of the version's lockfile; a version without one has the lockfile `null`. */
export function lockfileDigest(lockfile: unknown): string {
  return jsonDigest(lockfile === undefined ? null : lockfile)
}

/** The exact bytes a receipt's signature covers: the prefix, then the JCS of its payload. */
export function receiptSigningBytes(receipt: ReceiptPayload): Uint8Array {
  return Buffer.from(RECEIPT_SIGNING_PREFIX + canonicalJsonStrict(payloadOf(receipt)), 'utf8')
}

/** The receipt's identity: SHA-256 hex of its signed bytes (the `/ws` event carries it). */
export function receiptDigest(receipt: ReceiptPayload): string {
  return SIGNED_DIGESTS.get(receipt) ?? sha256Hex(receiptSigningBytes(receipt))
}

/**
 * The digests of the receipts signReceipt made, by receipt object: the execution's event carries
 * the digest, and the bytes were canonicalized once already (a receipt is never changed after
 * signing; one that was built anew, e.g. read back from the store, is digested again).
 */
const SIGNED_DIGESTS = new WeakMap<object, string>()

/**
 * Signers whose key signed a receipt that verified under their PeerId's key, with that key and the
 * certificate check done (see signReceipt): later receipts of the signer skip both.
 */
const PROVEN_SIGNERS = new WeakMap<ReceiptSigner, KeyObject>()

/**
 * Signs an execution's receipt with the node key. The payload is checked first (a receipt this
 * node could not verify is never produced) and the first signature of each signer object is
 * verified against the key the signer's PeerId embeds, so a signer whose key is not its PeerId's
 * fails here, not at a verifier (a signer's `peerId` and key must not change afterwards).
 */
export async function signReceipt(unsigned: UnsignedReceipt, signer: ReceiptSigner): Promise<Receipt> {
  const proven = PROVEN_SIGNERS.get(signer)
  const { payload, publicKey } = parsePayload({ ...unsigned, receipt_version: RECEIPT_VERSION, peer_id: signer.peerId }, proven)
  const consistency = consistencyFault(payload)
  if (consistency !== undefined) throw malformed(consistency)
  if (proven === undefined) {
    const certificate = parseCertificate(signer.certificatePem)
    if (!peerIdsBoundBy(certificate).includes(signer.peerId)) {
      throw new ReceiptError('peer_id_mismatch', `the signer's certificate binds ${peerIdsBoundBy(certificate).join(', ') || 'no PeerId'}, not ${signer.peerId}`)
    }
  }
  const bytes = receiptSigningBytes(payload)
  const signature = Buffer.from(await signer.sign(bytes))
  // once a signer's key proved to be its PeerId's (and its certificate to bind that PeerId), later
  // signatures need neither check (Ed25519 signing is deterministic; verifying costs ~3× signing,
  // and parsing the certificate and the PeerId's key ~2×, on every execution)
  if (proven === undefined) {
    if (!verifySignature(null, bytes, publicKey, signature)) {
      throw new ReceiptError('bad_signature', `the signer's key is not the key of PeerId ${signer.peerId}`)
    }
    PROVEN_SIGNERS.set(signer, publicKey)
  }
  const receipt: Receipt = { ...payload, certificate: signer.certificatePem, signature: signature.toString('base64url') }
  SIGNED_DIGESTS.set(receipt, sha256Hex(bytes))
  return receipt
}

/**
 * Verifies a receipt (docs/receipts.md §5): shape, signature under the PeerId's key, internal
 * consistency, the certificate (against `caCertPem` when given: chain, node certificate, PeerId
 * binding; then validity at `now` and `revoked`), and the arguments and result when given.
 * Returns what was established, or throws ReceiptError naming the first check that failed.
 * A CA certificate that cannot be read is a VALIDATION_FAILED SvcError (the caller's input).
 */
export function verifyReceipt(receipt: unknown, options: VerifyReceiptOptions = {}): VerifiedReceipt {
  let ca: X509Certificate | undefined
  if (options.caCertPem !== undefined) {
    try {
      ca = new X509Certificate(options.caCertPem)
    } catch (err) {
      throw new SvcError('VALIDATION_FAILED', `the CA certificate is not an X.509 certificate: ${(err as Error).message}`)
    }
  }
  const parsed = parseReceipt(receipt)
  const r = parsed.receipt
  const bytes = receiptSigningBytes(r)
  if (!verifySignature(null, bytes, parsed.publicKey, parsed.signature)) {
    throw new ReceiptError('bad_signature', `the signature does not verify under the key of PeerId ${r.peer_id}`)
  }
  const consistency = consistencyFault(r)
  if (consistency !== undefined) throw malformed(consistency)

  const fault = nodeCertificateFault(parsed.certificate, {
    ca,
    peerId: r.peer_id,
    now: options.now ?? new Date(),
    revoked: new Set((options.revoked ?? []).map(normalizeCertificateId)),
  })
  if (fault !== undefined) throw new ReceiptError(fault.failure, fault.message)

  if (options.args !== undefined) {
    compareDigest('arguments_mismatch', 'arguments', () => argumentsDigest(options.args), r.arguments_digest)
  }
  if (options.result !== undefined) {
    if (r.result_digest === null) throw new ReceiptError('result_mismatch', `the receipt records error ${r.error_code} (${r.status}), not a result`)
    compareDigest('result_mismatch', 'result', () => resultDigest(options.result), r.result_digest)
  }
  const cert = parsed.certificate
  return {
    receipt: r,
    digest: sha256Hex(bytes),
    peerId: r.peer_id,
    certified: ca !== undefined,
    certificate: {
      serial: cert.serialNumber,
      fingerprint256: cert.fingerprint256,
      subject: cert.subject.replace(/\n/g, ', '),
      validFrom: new Date(cert.validFrom).toISOString(),
      validTo: new Date(cert.validTo).toISOString(),
    },
    checked: { arguments: options.args !== undefined, result: options.result !== undefined },
  }
}

/** §5 steps 5 and 6: a value the verifier holds against the digest the receipt signs. */
function compareDigest(failure: 'arguments_mismatch' | 'result_mismatch', what: string, digestOf: () => string, signed: string): void {
  let digest: string
  try {
    digest = digestOf()
  } catch (err) {
    throw new ReceiptError(failure, `the ${what} ha${what === 'arguments' ? 've' : 's'} no canonical JSON form: ${(err as Error).message}`)
  }
  if (digest !== signed) throw new ReceiptError(failure, `the ${what} digest is ${digest}, the receipt says ${signed}`)
}

// --- shape (§5 step 1) ---

const PAYLOAD_MEMBERS = [
  'receipt_version', 'execution_id', 'rufid', 'content_digest', 'lockfile_digest', 'arguments_digest', 'status',
  'result_digest', 'error_code', 'limits', 'started_at', 'finished_at', 'peer_id',
] as const
const RECEIPT_MEMBERS = new Set<string>([...PAYLOAD_MEMBERS, 'certificate', 'signature'])
const LIMIT_MEMBERS = ['timeout_ms', 'cpu_ms', 'memory_mb'] as const
const STATUSES = new Set<string>(['success', 'error', 'timeout'])
const EXECUTION_ID = /^ex_[0-9A-HJKMNP-TV-Z]{26}$/
const HEX_DIGEST = /^[0-9a-f]{64}$/
const TIMESTAMP = /^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$/
const BASE64URL_SIGNATURE = /^[A-Za-z0-9_-]{86}$/
const PEM_CERTIFICATE = /^[ \t\r\n]*-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+-----END CERTIFICATE-----[ \t\r\n]*$/

interface ParsedReceipt {
  receipt: Receipt
  publicKey: KeyObject
  signature: Buffer
  certificate: X509Certificate
}

/** The payload members of `r`, and only those (what the signature covers). */
function payloadOf(r: ReceiptPayload): ReceiptPayload {
  const out: Record<string, unknown> = {}
  for (const k of PAYLOAD_MEMBERS) out[k] = k === 'limits' && isPlainObject(r.limits) ? { ...r.limits } : r[k]
  return out as unknown as ReceiptPayload
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && [Object.prototype, null].includes(Object.getPrototypeOf(v))
const isPositiveSafeInteger = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) > 0

const malformed = (message: string): ReceiptError => new ReceiptError('malformed', message)

function parseReceipt(value: unknown): ParsedReceipt {
  if (!isPlainObject(value)) throw malformed('a receipt is a JSON object')
  const unknown = Object.keys(value).filter((k) => !RECEIPT_MEMBERS.has(k))
  if (unknown.length > 0) throw malformed(`unknown member${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}`)
  for (const k of RECEIPT_MEMBERS) if (!(k in value) || value[k] === undefined) throw malformed(`member ${k} is missing`)
  const { payload, publicKey } = parsePayload(value)
  const text = value.signature
  if (typeof text !== 'string' || !BASE64URL_SIGNATURE.test(text)) throw malformed('signature must be a 64-byte signature in unpadded base64url')
  const signature = Buffer.from(text, 'base64url')
  if (signature.length !== 64 || signature.toString('base64url') !== text) throw malformed('signature is not the canonical base64url of 64 bytes')
  const certificate = parseCertificate(value.certificate)
  return { receipt: { ...payload, certificate: value.certificate as string, signature: text }, publicKey, signature, certificate }
}

/** `knownKey`: the key of `value.peer_id`, when the caller derived it before (a proven signer's). */
function parsePayload(value: Record<string, unknown>, knownKey?: KeyObject): { payload: ReceiptPayload; publicKey: KeyObject } {
  const r = value as unknown as ReceiptPayload
  if (r.receipt_version !== RECEIPT_VERSION) throw malformed(`receipt_version ${JSON.stringify(r.receipt_version)} is not 1`)
  const expect = (ok: boolean, member: keyof ReceiptPayload, what: string): void => {
    if (!ok) throw malformed(`${member} must be ${what}, not ${String(JSON.stringify(r[member])).slice(0, 80)}`)
  }
  expect(typeof r.execution_id === 'string' && EXECUTION_ID.test(r.execution_id), 'execution_id', 'an execution id (ex_ and 26 Crockford base32 characters)')
  expect(typeof r.rufid === 'string' && FULL_RUFID.test(r.rufid), 'rufid', 'a full RUFID')
  for (const k of ['content_digest', 'lockfile_digest', 'arguments_digest'] as const) {
    expect(typeof r[k] === 'string' && HEX_DIGEST.test(r[k]), k, 'a lowercase SHA-256 hex digest')
  }
  expect(typeof r.status === 'string' && STATUSES.has(r.status), 'status', 'success, error or timeout')
  expect(r.result_digest === null || (typeof r.result_digest === 'string' && HEX_DIGEST.test(r.result_digest)), 'result_digest', 'null or a lowercase SHA-256 hex digest')
  expect(r.error_code === null || isPositiveSafeInteger(r.error_code), 'error_code', 'null or a positive integer')
  if (!isPlainObject(r.limits)) throw malformed('limits must be an object')
  const limitKeys = Object.keys(r.limits)
  if (limitKeys.length !== LIMIT_MEMBERS.length || !LIMIT_MEMBERS.every((k) => limitKeys.includes(k))) {
    throw malformed(`limits must have exactly ${LIMIT_MEMBERS.join(', ')}`)
  }
  for (const k of LIMIT_MEMBERS) {
    if (!isPositiveSafeInteger(r.limits[k])) throw malformed(`limits.${k} must be a positive integer`)
  }
  for (const k of ['started_at', 'finished_at'] as const) {
    const t = r[k]
    expect(typeof t === 'string' && TIMESTAMP.test(t) && !Number.isNaN(Date.parse(t)) && new Date(t).toISOString() === t, k, 'a UTC time YYYY-MM-DDTHH:MM:SS.sssZ')
  }
  let publicKey: KeyObject
  try {
    publicKey = knownKey ?? publicKeyOfPeerId(r.peer_id)
  } catch (err) {
    throw malformed(`peer_id ${String(JSON.stringify(r.peer_id)).slice(0, 80)}: ${(err as Error).message}`)
  }
  return { payload: payloadOf(r), publicKey }
}

/**
 * Parsed keys and certificates, by their exact text: parsing is most of the cost of signing and
 * verifying (an X.509 parse is ~0.7 ms, a PeerId's key ~0.3 ms; the signature ~0.1 ms), and a node
 * signs with one key and certificate and sees receipts of few members. Both are immutable values;
 * the caches are bounded (oldest out).
 */
const PARSED_KEYS = new Map<string, KeyObject>()
const PARSED_CERTIFICATES = new Map<string, X509Certificate>()
const MAX_PARSED = 256

function remember<V>(cache: Map<string, V>, key: string, value: V): V {
  if (cache.size >= MAX_PARSED) cache.delete(cache.keys().next().value as string)
  cache.set(key, value)
  return value
}

/** The Ed25519 public key a PeerId embeds, as a node:crypto key (TypeError for anything else). */
function publicKeyOfPeerId(peerId: string): KeyObject {
  const known = PARSED_KEYS.get(peerId)
  if (known !== undefined) return known
  const raw = ed25519KeyOfPeerId(peerId)
  return remember(PARSED_KEYS, peerId, createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(raw).toString('base64url') }, format: 'jwk' }))
}

function parseCertificate(pem: unknown): X509Certificate {
  if (typeof pem !== 'string') throw malformed('certificate must be one PEM certificate')
  const known = PARSED_CERTIFICATES.get(pem)
  if (known !== undefined) return known
  if (!PEM_CERTIFICATE.test(pem)) throw malformed('certificate must be one PEM certificate')
  try {
    return remember(PARSED_CERTIFICATES, pem, new X509Certificate(pem))
  } catch (err) {
    throw malformed(`certificate is not an X.509 certificate: ${(err as Error).message}`)
  }
}

// --- consistency (§5 step 3) ---

function consistencyFault(r: ReceiptPayload): string | undefined {
  const hash = r.rufid.split(':')[1]
  if (base62(Buffer.from(r.content_digest, 'hex')).slice(0, 12) !== hash) {
    return `content_digest ${r.content_digest} is not the content of ${r.rufid}`
  }
  if (r.status === 'success' && (r.result_digest === null || r.error_code !== null)) {
    return 'a success has a result_digest and no error_code'
  }
  if (r.status !== 'success' && (r.result_digest !== null || r.error_code === null)) {
    return `a${r.status === 'error' ? 'n' : ''} ${r.status} has an error_code and no result_digest`
  }
  if (r.status === 'timeout' && r.error_code !== 1004) return 'a timeout has error_code 1004'
  if (r.finished_at < r.started_at) return 'finished_at is before started_at'
  return undefined
}
