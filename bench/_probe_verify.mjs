import '../dist/polyfill.js'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
const { createFederationCa, issueNodeCertificate } = await import('../dist/federation/certificates.js')
const { signReceipt, verifyReceipt, argumentsDigest, resultDigest, lockfileDigest } = await import('../dist/core/receipt.js')
const ca = createFederationCa({ name: 'x' })
const pk = await generateKeyPair('Ed25519')
const peerId = peerIdFromPrivateKey(pk).toString()
const certPem = issueNodeCertificate(ca, peerId).certPem
const signer = { peerId, certificatePem: certPem, sign: (b) => pk.sign(b) }
const r = await signReceipt({ execution_id: 'ex_01M886XR7BMGTXDQ24WANJGBY0', rufid: 'rufid:7Zne5Beaqdav:v1:acme', content_digest: '1ff463df7d8c50b9705178a4c6900c397194698d245d5d20a5cda86ee40ed627', lockfile_digest: lockfileDigest(null), arguments_digest: argumentsDigest({ a: 2, b: 3 }), status: 'success', result_digest: resultDigest(5), error_code: null, limits: { timeout_ms: 1, cpu_ms: 1, memory_mb: 1 }, started_at: '2026-01-01T00:00:00.000Z', finished_at: '2026-01-01T00:00:00.000Z' }, signer).catch(e => { console.log('sign', e.message); process.exit(1) })
const time = (name, f) => { for (let i = 0; i < 200; i++) f(); const t = performance.now(); for (let i = 0; i < 2000; i++) f(); console.log(name, ((performance.now() - t) / 2000).toFixed(4), 'ms') }
const copy = () => JSON.parse(JSON.stringify(r))
time('with CA', () => verifyReceipt(copy(), { caCertPem: ca.certPem, revoked: [], args: { a: 2, b: 3 }, result: 5 }))
time('without CA', () => verifyReceipt(copy(), { revoked: [], args: { a: 2, b: 3 }, result: 5 }))
time('copy only', () => copy())
