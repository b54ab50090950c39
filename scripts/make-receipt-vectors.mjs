#!/usr/bin/env node
// Writes test/vectors/receipts-v1.json: the shared receipt vectors (docs/receipts.md) that the
// TypeScript, Python and Go suites all verify, agreeing on every verdict and failure.
//
// Everything is derived here from first principles, not from the implementations under test:
// node keys come from fixed seeds (Ed25519 signatures are deterministic), payloads are
// serialized by the small JCS below (their members are ASCII strings, integers and null), the
// expected canonical form of every `jcs` case is written by hand, and each case's verdict is
// what the case was built to break. The certificates (RSA, random) are made once and kept in the
// file: later runs read them back, so the output is reproducible. No private key is written.
//
//   node scripts/make-receipt-vectors.mjs                     rewrite the file (keeping its certificates)
//   node scripts/make-receipt-vectors.mjs --check             exit 1 if the file differs from what would be written
//   node scripts/make-receipt-vectors.mjs --new-certificates  make new certificates (needs `npm run build`)
import { createHash, createPrivateKey, createPublicKey, sign, X509Certificate } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const target = fileURLToPath(new URL('../test/vectors/receipts-v1.json', import.meta.url))
const check = process.argv.includes('--check')
const fresh = process.argv.includes('--new-certificates')

const NOW = '2026-06-01T00:00:00.000Z'
const PREFIX = 'svc-node/receipt/v1\n'
const sha256 = (text) => createHash('sha256').update(text, 'utf8').digest('hex')

// --- node keys (test keys: their seeds are public on purpose) ---
const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'
function base58(bytes) {
  let n = BigInt('0x' + (Buffer.from(bytes).toString('hex') || '0'))
  let s = ''
  while (n > 0n) { s = BASE58[Number(n % 58n)] + s; n /= 58n }
  for (const b of bytes) { if (b !== 0) break; s = '1' + s }
  return s
}
function nodeKey(name) {
  const seed = createHash('sha256').update(`svc-node receipts-v1 vector key ${name}`).digest()
  const privateKey = createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]), format: 'der', type: 'pkcs8' })
  const raw = Buffer.from(createPublicKey(privateKey).export({ format: 'jwk' }).x, 'base64url')
  const peerId = base58(Buffer.concat([Buffer.from('002408011220', 'hex'), raw]))
  return { privateKey, peerId }
}
const A = nodeKey('A')
const B = nodeKey('B')

// --- certificates: kept from the file, or made once with the project's own issuer ---
async function makeCertificates() {
  const { createFederationCa, issueNodeCertificate } = await import('../dist/federation/certificates.js')
  const { default: forge } = await import('node-forge')
  const start = new Date('2026-01-01T00:00:00.000Z')
  const ca = createFederationCa({ name: 'svc receipts vectors CA', now: start, days: 3650 })
  const foreign = createFederationCa({ name: 'another federation CA', now: start, days: 3650 })
  const twin = createFederationCa({ name: 'svc receipts vectors CA', now: start, days: 3650 })
  const issue = (authority, peerId, notBefore, days) => issueNodeCertificate(authority, peerId, { notBefore: new Date(notBefore), days }).certPem
  // a certificate from the CA that binds no PeerId (no URI:libp2p: name)
  const bare = forge.pki.createCertificate()
  const keys = forge.pki.rsa.generateKeyPair(2048)
  bare.publicKey = keys.publicKey
  bare.serialNumber = '3a5f00c0ffee'
  bare.validity.notBefore = start
  bare.validity.notAfter = new Date(start.getTime() + 3650 * 86_400_000)
  bare.setSubject([{ shortName: 'CN', value: 'svc-node without a PeerId' }])
  bare.setIssuer(forge.pki.certificateFromPem(ca.certPem).subject.attributes)
  bare.setExtensions([{ name: 'basicConstraints', cA: false }, { name: 'keyUsage', digitalSignature: true }])
  bare.sign(forge.pki.privateKeyFromPem(ca.keyPem), forge.md.sha256.create())
  return {
    ca: ca.certPem,
    foreign_ca: foreign.certPem,
    twin_ca: twin.certPem,
    node_a: issue(ca, A.peerId, '2026-01-01T00:00:00.000Z', 3650),
    node_a_renewed: issue(ca, A.peerId, '2026-03-01T00:00:00.000Z', 3650),
    node_b: issue(ca, B.peerId, '2026-01-01T00:00:00.000Z', 3650),
    node_a_foreign_ca: issue(foreign, A.peerId, '2026-01-01T00:00:00.000Z', 3650),
    node_a_twin_ca: issue(twin, A.peerId, '2026-01-01T00:00:00.000Z', 3650),
    node_a_expired: issue(ca, A.peerId, '2024-01-01T00:00:00.000Z', 366),
    node_a_not_yet_valid: issue(ca, A.peerId, '2030-01-01T00:00:00.000Z', 365),
    node_without_peer_id: forge.pki.certificateToPem(bare),
  }
}

const previous = existsSync(target) ? JSON.parse(readFileSync(target, 'utf8')) : undefined
let pems
if (fresh || previous === undefined) {
  if (check) {
    console.error(`${target} is missing`)
    process.exit(1)
  }
  pems = await makeCertificates()
} else {
  pems = Object.fromEntries(Object.entries(previous.certificates).map(([name, c]) => [name, c.pem]))
}
const certificates = Object.fromEntries(Object.entries(pems).map(([name, pem]) => {
  const x = new X509Certificate(pem)
  return [name, { pem, serial: x.serialNumber, fingerprint256: x.fingerprint256, subject: x.subject.replace(/\n/g, ', '), valid_from: new Date(x.validFrom).toISOString(), valid_to: new Date(x.validTo).toISOString() }]
}))

// --- JCS cases: the expected canonical text is written by hand (RFC 8785 §3.2) ---
const J = (id, json, canonical, note) => ({ id, json, canonical, ...(note && { note }) })
const jcs = [
  J('nested-key-order', '{"b":[{"z":1,"y":{"d":null,"c":true}}],"a":"x","A":false,"":0}',
    '{"":0,"A":false,"a":"x","b":[{"y":{"c":true,"d":null},"z":1}]}'),
  J('utf16-key-order', '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control","\\u00f6":"Latin Small Letter O With Diaeresis"}',
    '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    'members sort by UTF-16 code units: U+1F600 (D83D DE00) sorts before U+FB33'),
  J('numbers', '[0,-0,-0.0,1.0,1E2,1e21,1e20,123e18,1234.5e18,1e-6,1e-7,0.000001234,-1e-7,5e-324,1.7976931348623157e308,0.1,0.30000000000000004,333333333.33333329,4.50,2e-3,-1.5e-10,9007199254740993,100000000000000000000000,295147905179352825856]',
    '[0,0,0,1,100,1e+21,100000000000000000000,123000000000000000000,1.2345e+21,0.000001,1e-7,0.000001234,-1e-7,5e-324,1.7976931348623157e+308,0.1,0.30000000000000004,333333333.3333333,4.5,0.002,-1.5e-10,9007199254740992,1e+23,295147905179352830000]',
    'ECMAScript Number::toString of the IEEE 754 double each literal denotes (0.1+0.2 is 0.30000000000000004; -0 is 0)'),
  J('strings', '["\\u0000\\b\\t\\n\\f\\r\\u001f\\"\\\\\\/\\u007f\\u2028\\u00e9\\ud83d\\ude00 plain"]',
    '["\\u0000\\b\\t\\n\\f\\r\\u001f\\"\\\\/\u007f\u2028\u00e9\ud83d\ude00 plain"]',
    'only " \\ and U+0000..U+001F are escaped, the six short forms where they exist, else \\u00xx in lowercase'),
  J('literals-and-empties', '{"t":true,"f":false,"n":null,"e":{},"a":[],"s":""}', '{"a":[],"e":{},"f":false,"n":null,"s":"","t":true}'),
  J('whitespace', ' {\n\t"a" : [ 1 , 2 ] ,\r\n "b" : { } }\n', '{"a":[1,2],"b":{}}'),
  J('lone-high-surrogate', '["\\ud800"]', null, 'a lone surrogate has no UTF-8 form: no canonical JSON (RFC 8785 §3.2.2.2)'),
  J('lone-low-surrogate-in-name', '{"\\udc00x":1}', null, 'a lone surrogate has no UTF-8 form: no canonical JSON'),
  J('number-out-of-range', '[1e400]', null, 'not an IEEE 754 double (I-JSON)'),
  J('integer-out-of-range', `[1${'0'.repeat(400)}]`, null, 'not an IEEE 754 double (I-JSON)'),
]

// --- receipts ---
// the payload's members are ASCII strings, integers, null and one flat object: sorted keys suffice
const payloadJcs = (v) => v === null || typeof v !== 'object'
  ? JSON.stringify(v)
  : '{' + Object.keys(v).sort().map((k) => JSON.stringify(k) + ':' + payloadJcs(v[k])).join(',') + '}'
const PAYLOAD = ['receipt_version', 'execution_id', 'rufid', 'content_digest', 'lockfile_digest', 'arguments_digest', 'status', 'result_digest', 'error_code', 'limits', 'started_at', 'finished_at', 'peer_id']
const signedBytes = (p) => PREFIX + payloadJcs(Object.fromEntries(PAYLOAD.map((k) => [k, p[k]])))
const signWith = (key, payload, certificate) => ({
  ...payload,
  certificate,
  signature: sign(null, Buffer.from(signedBytes(payload), 'utf8'), key.privateKey).toString('base64url'),
})
const digestOf = (payload) => sha256(signedBytes(payload))

const rufidVectors = JSON.parse(readFileSync(new URL('../test/vectors/rufid-v1.json', import.meta.url), 'utf8')).cases
const fn = rufidVectors.find((c) => c.id === 'js-basic')
const other = rufidVectors.find((c) => c.id === 'py-basic')
const LOCKFILE = '{"dependencies":{"pip":[{"name":"six","source":"pypi","version":"1.16.0"}],"system":[]},"generated_at":"2026-01-01T00:00:00.000Z","generator":"svc-node","manifest_digest":"' + sha256('{"name":"add"}') + '","schemaVersion":"1.0"}'

const base = {
  receipt_version: 1,
  execution_id: 'ex_01JD8X9R6Q4M2N0P5S7T3V1W9Y',
  rufid: `rufid:${fn.rufid_short}:v1:acme`,
  content_digest: fn.sha256_hex,
  lockfile_digest: sha256(LOCKFILE),
  arguments_digest: sha256('{"a":2,"b":3}'),
  status: 'success',
  result_digest: sha256('5'),
  error_code: null,
  limits: { timeout_ms: 5000, cpu_ms: 5000, memory_mb: 64 },
  started_at: '2026-05-31T12:00:00.000Z',
  finished_at: '2026-05-31T12:00:00.012Z',
  peer_id: A.peerId,
}
const failed = { ...base, execution_id: 'ex_01JD8X9R6Q4M2N0P5S7T3V1WA0', lockfile_digest: sha256('null'), status: 'error', result_digest: null, error_code: 1007 }
const timedOut = { ...base, execution_id: 'ex_01JD8X9R6Q4M2N0P5S7T3V1WA1', status: 'timeout', result_digest: null, error_code: 1004, finished_at: '2026-05-31T12:00:05.003Z' }

const signedA = (payload, cert = pems.node_a) => signWith(A, payload, cert)
const valid = signedA(base)
const validFailed = signedA(failed)
const validTimeout = signedA(timedOut)
const withCa = { ca: 'ca' }
const ok = (payload, certified = true) => ({ valid: true, certified, digest: digestOf(payload) })
const no = (failure) => ({ valid: false, failure })
const C = (id, description, receipt, verify, expect) => ({ id, description, receipt, verify, expect })
const flip = (sig) => { const b = Buffer.from(sig, 'base64url'); b[10] ^= 0x01; return b.toString('base64url') }
const without = (obj, key) => Object.fromEntries(Object.entries(obj).filter(([k]) => k !== key))

const cases = [
  // valid receipts
  C('valid', 'a success, checked against the CA, with its arguments and result', valid,
    { ...withCa, args_json: '{ "b": 3, "a": 2 }', result_json: '5.0' }, ok(base)),
  C('valid-without-ca', 'the same receipt with no CA: signature and PeerId binding only', valid, {}, ok(base, false)),
  C('valid-error', 'an execution that failed with 1007; a version without lockfile has the digest of null', validFailed, { ...withCa, args_json: '{"a":2,"b":3}' }, ok(failed)),
  C('valid-timeout', 'an execution that timed out (1004)', validTimeout, withCa, ok(timedOut)),
  C('valid-renewed-certificate', 'the certificate is not signed: another valid certificate of the same PeerId may be attached', { ...valid, certificate: pems.node_a_renewed }, withCa, ok(base)),
  C('valid-not-revoked', 'a revocation list naming other certificates', valid, { ...withCa, revoked: [certificates.node_b.serial, certificates.node_a_expired.fingerprint256] }, ok(base)),
  C('valid-arguments-null', 'a call without arguments has the arguments {}', signedA({ ...base, arguments_digest: sha256('{}') }), { ...withCa, args_json: 'null' }, ok({ ...base, arguments_digest: sha256('{}') })),
  C('valid-positional-arguments', 'positional arguments are digested as the array they are, not rebound to names', signedA({ ...base, arguments_digest: sha256('[2,3]') }), { ...withCa, args_json: '[2, 3]' }, ok({ ...base, arguments_digest: sha256('[2,3]') })),
  C('valid-result-null', 'a function that returns nothing has the result null', signedA({ ...base, result_digest: sha256('null') }), { ...withCa, result_json: 'null' }, ok({ ...base, result_digest: sha256('null') })),
]

// JCS edge cases, as arguments and as results
for (const j of jcs) {
  if (j.canonical === null) {
    cases.push(C(`arguments-${j.id}`, `arguments with no canonical form (${j.note})`, valid, { ...withCa, args_json: j.json }, no('arguments_mismatch')))
    continue
  }
  const p = { ...base, arguments_digest: sha256(j.canonical), result_digest: sha256(j.canonical) }
  cases.push(C(`arguments-${j.id}`, `JCS edge case as arguments: ${j.id}`, signedA(p), { ...withCa, args_json: j.json }, ok(p)))
  cases.push(C(`result-${j.id}`, `JCS edge case as result: ${j.id}`, signedA(p), { ...withCa, result_json: j.json }, ok(p)))
}

// every signed member tampered with a well-formed value
const tampered = {
  execution_id: 'ex_01JD8X9R6Q4M2N0P5S7T3V1W9Z',
  rufid: `rufid:${fn.rufid_short}:v1:acme2`,
  content_digest: other.sha256_hex,
  lockfile_digest: sha256('null'),
  arguments_digest: sha256('{"a":2,"b":4}'),
  status: 'timeout',
  result_digest: sha256('6'),
  limits: { ...base.limits, timeout_ms: 30000 },
  started_at: '2026-05-31T12:00:00.001Z',
  finished_at: '2026-05-31T12:00:00.011Z',
  peer_id: B.peerId,
}
for (const [member, value] of Object.entries(tampered)) {
  cases.push(C(`tampered-${member.replace(/_/g, '-')}`, `${member} changed after signing`, { ...valid, [member]: value }, withCa, no('bad_signature')))
}
cases.push(C('tampered-error-code', 'error_code changed after signing', { ...validFailed, error_code: 1006 }, withCa, no('bad_signature')))
cases.push(C('tampered-limits-memory', 'limits.memory_mb changed after signing', { ...valid, limits: { ...base.limits, memory_mb: 256 } }, withCa, no('bad_signature')))
cases.push(C('tampered-signature', 'one bit of the signature flipped', { ...valid, signature: flip(valid.signature) }, withCa, no('bad_signature')))
cases.push(C('tampered-receipt-version', 'receipt_version changed: not a version 1 receipt', { ...valid, receipt_version: 2 }, withCa, no('malformed')))

// keys and certificates
cases.push(C('wrong-key', 'signed with the key of PeerId B, claiming PeerId A and carrying A\'s certificate', signWith(B, base, pems.node_a), withCa, no('bad_signature')))
cases.push(C('certificate-of-another-peer', 'B signs its own receipt but attaches A\'s certificate', signWith(B, { ...base, peer_id: B.peerId }, pems.node_a), withCa, no('peer_id_mismatch')))
cases.push(C('certificate-swapped-for-another-peer', 'A\'s receipt with B\'s certificate attached', { ...valid, certificate: pems.node_b }, withCa, no('peer_id_mismatch')))
cases.push(C('foreign-ca', 'A\'s certificate is issued by another federation\'s CA', signedA(base, pems.node_a_foreign_ca), withCa, no('foreign_ca')))
cases.push(C('foreign-ca-same-name', 'issued by a CA with the same name but another key', signedA(base, pems.node_a_twin_ca), withCa, no('foreign_ca')))
cases.push(C('foreign-ca-without-ca', 'the foreign certificate, verified with no CA: signature and binding only', signedA(base, pems.node_a_foreign_ca), {}, ok(base, false)))
cases.push(C('ca-certificate-as-node-certificate', 'the CA\'s own certificate is attached', signedA(base, pems.ca), withCa, no('not_certified')))
cases.push(C('certificate-without-peer-id', 'a certificate from the CA that binds no PeerId', signedA(base, pems.node_without_peer_id), withCa, no('not_certified')))
cases.push(C('expired-certificate', 'the certificate expired before the verification time', signedA(base, pems.node_a_expired), withCa, no('expired')))
cases.push(C('expired-certificate-without-ca', 'validity is checked with or without a CA', signedA(base, pems.node_a_expired), {}, no('expired')))
cases.push(C('certificate-not-yet-valid', 'the certificate starts after the verification time', signedA(base, pems.node_a_not_yet_valid), withCa, no('not_yet_valid')))
cases.push(C('revoked-serial', 'the certificate\'s serial is revoked (written in upper case with colons)', valid,
  { ...withCa, revoked: [certificates.node_a.serial.toUpperCase().match(/.{1,2}/g).join(':')] }, no('revoked')))
cases.push(C('revoked-fingerprint', 'the certificate\'s SHA-256 fingerprint is revoked', valid, { ...withCa, revoked: [certificates.node_a.fingerprint256] }, no('revoked')))

// digests given by the verifier
cases.push(C('arguments-mismatch', 'other arguments than the receipt\'s', valid, { ...withCa, args_json: '{"a":2,"b":4}' }, no('arguments_mismatch')))
cases.push(C('arguments-bound-to-positions', 'named arguments are not the same as the positional array', valid, { ...withCa, args_json: '[2,3]' }, no('arguments_mismatch')))
cases.push(C('result-mismatch', 'another result than the receipt\'s', valid, { ...withCa, result_json: '6' }, no('result_mismatch')))
cases.push(C('result-of-an-error', 'a result given for a receipt that records an error', validFailed, { ...withCa, result_json: 'null' }, no('result_mismatch')))

// which check fails first
cases.push(C('order-signature-before-certificate', 'tampered and expired: the signature is checked first', { ...signedA(base, pems.node_a_expired), status: 'error' }, withCa, no('bad_signature')))
cases.push(C('order-chain-before-validity', 'foreign and expired would both fail: the chain is checked first', signedA(base, pems.node_a_expired), { ca: 'foreign_ca' }, no('foreign_ca')))
cases.push(C('order-certificate-before-arguments', 'revoked, and the arguments differ: the certificate is checked first', valid,
  { ...withCa, revoked: [certificates.node_a.serial], args_json: '{}' }, no('revoked')))

// malformed receipts
const M = (id, description, receipt) => cases.push(C(`malformed-${id}`, description, receipt, withCa, no('malformed')))
M('missing-member', 'limits is missing', without(valid, 'limits'))
M('unknown-member', '`cached` belongs to the execution record, never to the receipt', { ...valid, cached: true })
M('version-as-string', 'receipt_version is the number 1', { ...valid, receipt_version: '1' })
M('padded-signature', 'the signature is unpadded base64url', { ...valid, signature: valid.signature + '==' })
M('non-canonical-signature', 'the signature\'s last character has non-zero unused bits', { ...valid, signature: valid.signature.slice(0, -1) + String.fromCharCode(valid.signature.charCodeAt(85) ^ 1) })
M('short-signature', 'a signature has 64 bytes', { ...valid, signature: valid.signature.slice(0, 84) })
M('rsa-peer-id', 'a PeerId that embeds no Ed25519 key (an RSA PeerId is a SHA-256 multihash)', { ...valid, peer_id: 'QmYyQSo1c1Ym7orWxLYvCrM2EmxFTANf8wXmmE7DWjhx5N' })
M('peer-id-not-base58', 'a PeerId in base58btc', { ...valid, peer_id: A.peerId.slice(0, -1) + '0' })
M('certificate-not-pem', 'the certificate is a PEM certificate', { ...valid, certificate: 'not a certificate' })
M('certificate-garbage', 'a PEM block that is no certificate', { ...valid, certificate: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n' })
M('impossible-date', '2026-02-30 does not exist', signedA({ ...base, started_at: '2026-02-30T12:00:00.000Z' }))
M('date-without-milliseconds', 'times have milliseconds and Z', signedA({ ...base, started_at: '2026-05-31T12:00:00Z' }))
M('non-ascii-digits', 'times are ASCII digits (\\d is wider in some regex engines)', signedA({ ...base, started_at: '\u0662\u0660\u0662\u0666-05-31T12:00:00.000Z' }))
M('certificate-non-ascii-space', 'only ASCII white space may surround the PEM block', { ...valid, certificate: valid.certificate + '\u00a0' })
M('uppercase-digest', 'digests are lowercase hex', signedA({ ...base, result_digest: base.result_digest.toUpperCase() }))
M('error-code-zero', 'error codes are positive integers', signedA({ ...failed, error_code: 0 }))
M('limits-extra-member', 'limits has exactly timeout_ms, cpu_ms, memory_mb', signedA({ ...base, limits: { ...base.limits, gpu_ms: 1 } }))
M('limit-fraction', 'limits are integers', signedA({ ...base, limits: { ...base.limits, memory_mb: 64.5 } }))
M('short-rufid', 'the RUFID is the full form', signedA({ ...base, rufid: fn.rufid_short }))
M('signed-content-not-of-rufid', 'correctly signed, but content_digest is not the content the RUFID names', signedA({ ...base, content_digest: other.sha256_hex }))
M('signed-success-with-error-code', 'correctly signed, but a success carries an error code', signedA({ ...base, error_code: 1007 }))
M('signed-error-with-result', 'correctly signed, but an error carries a result digest', signedA({ ...failed, result_digest: sha256('5') }))
M('signed-timeout-not-1004', 'correctly signed, but a timeout is not 1004', signedA({ ...timedOut, error_code: 1007 }))
M('signed-finished-before-started', 'correctly signed, but it finished before it started', signedA({ ...base, finished_at: '2026-05-31T11:59:59.999Z' }))
M('not-an-object', 'a receipt is a JSON object', [valid])
// each field's pattern is the whole value: correctly signed values with something before or after (issue 28)
M('execution-id-with-prefix', 'correctly signed, but text precedes the execution id', signedA({ ...base, execution_id: `ex_bad-${base.execution_id}` }))
M('execution-id-with-suffix', 'correctly signed, but text follows the execution id', signedA({ ...base, execution_id: `${base.execution_id}-ex_bad` }))
M('rufid-with-prefix', 'correctly signed, but text precedes the full RUFID', signedA({ ...base, rufid: `x${base.rufid}` }))
M('rufid-with-suffix', 'correctly signed, but text follows the full RUFID', signedA({ ...base, rufid: `${base.rufid} extra` }))
M('digest-with-prefix', 'correctly signed, but text precedes a digest', signedA({ ...base, lockfile_digest: `x${base.lockfile_digest}` }))
M('digest-too-long', 'correctly signed, but a digest has 65 hex digits', signedA({ ...base, arguments_digest: `${base.arguments_digest}0` }))
M('result-digest-too-long', 'correctly signed, but the result digest has 65 hex digits', signedA({ ...base, result_digest: `${base.result_digest}0` }))
M('certificate-leading-text', 'only ASCII white space may precede the PEM block', { ...valid, certificate: `note\n${valid.certificate}` })
M('certificate-trailing-text', 'only ASCII white space may follow the PEM block', { ...valid, certificate: `${valid.certificate}trailer\n` })

const ids = new Set()
for (const c of cases) {
  if (ids.has(c.id)) throw new Error(`duplicate case id ${c.id}`)
  ids.add(c.id)
}

const vectors = {
  description: 'Execution receipt v1 test vectors (docs/receipts.md). Read by the TypeScript, Python and Go test suites, which must agree on every verdict and failure. Written by scripts/make-receipt-vectors.mjs.',
  format: 'svc-node receipt v1',
  signing_prefix: PREFIX,
  now: NOW,
  usage: 'verify each case\'s receipt at `now` with verify.ca (a name in `certificates`; absent: no CA), verify.revoked, and the arguments and result parsed from verify.args_json / verify.result_json (absent: not checked). expect.valid true: expect.certified says whether a CA was used and expect.digest is SHA-256 hex of the signed bytes; false: expect.failure names the first check that failed. Each jcs case: parse json, canonicalize, compare with canonical (null: canonicalization must fail).',
  peers: { A: A.peerId, B: B.peerId },
  certificates,
  jcs,
  cases,
}
const text = JSON.stringify(vectors, null, 2) + '\n'
if (check) {
  if (readFileSync(target, 'utf8') !== text) {
    console.error('test/vectors/receipts-v1.json is not what scripts/make-receipt-vectors.mjs writes')
    process.exit(1)
  }
} else {
  writeFileSync(target, text)
  console.log(`wrote ${cases.length} receipt cases and ${jcs.length} JCS cases to ${target}`)
}
