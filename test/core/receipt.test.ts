import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey, peerIdFromString } from '@libp2p/peer-id'
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { canonicalJsonStrict } from '../../src/core/canonical-json.js'
import { SvcError } from '../../src/core/errors.js'
import { base58btcDecode, ed25519KeyOfPeerId, peerIdOfEd25519Key } from '../../src/core/peer-id.js'
import {
  argumentsDigest, lockfileDigest, receiptDigest, ReceiptError, resultDigest, signReceipt, verifyReceipt,
  type Receipt, type ReceiptSigner, type UnsignedReceipt,
} from '../../src/core/receipt.js'
import { createFederationCa, issueNodeCertificate } from '../../src/federation/certificates.js'

interface Vectors {
  now: string
  peers: { A: string; B: string }
  certificates: Record<string, { pem: string; serial: string; fingerprint256: string }>
  jcs: Array<{ id: string; json: string; canonical: string | null }>
  cases: Array<{
    id: string
    receipt: unknown
    verify: { ca?: string; revoked?: string[]; args_json?: string; result_json?: string }
    expect: { valid: true; certified: boolean; digest: string } | { valid: false; failure: string }
  }>
}

const vectors = JSON.parse(readFileSync(new URL('../vectors/receipts-v1.json', import.meta.url), 'utf8')) as Vectors
const sha256 = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex')

/** Runs one vector case: the verdict `{valid, certified, digest}` or `{valid: false, failure}`. */
function verdictOf(c: Vectors['cases'][number]): Record<string, unknown> {
  try {
    const v = verifyReceipt(c.receipt, {
      caCertPem: c.verify.ca === undefined ? undefined : vectors.certificates[c.verify.ca]!.pem,
      revoked: c.verify.revoked,
      args: c.verify.args_json === undefined ? undefined : JSON.parse(c.verify.args_json),
      result: c.verify.result_json === undefined ? undefined : JSON.parse(c.verify.result_json),
      now: new Date(vectors.now),
    })
    return { valid: true, certified: v.certified, digest: v.digest }
  } catch (err) {
    if (!(err instanceof ReceiptError)) throw err
    expect(err).toBeInstanceOf(SvcError)
    expect(err.code).toBe(1006)
    expect(err.details).toEqual({ failure: err.failure })
    return { valid: false, failure: err.failure }
  }
}

describe('receipt vectors (test/vectors/receipts-v1.json)', () => {
  it('cover every failure, valid receipts with and without a CA, and every JCS case both ways', () => {
    const failures = new Set(vectors.cases.map((c) => (c.expect.valid ? 'valid' : c.expect.failure)))
    for (const f of ['valid', 'malformed', 'bad_signature', 'foreign_ca', 'not_certified', 'peer_id_mismatch', 'not_yet_valid', 'expired', 'revoked', 'arguments_mismatch', 'result_mismatch']) {
      expect(failures, f).toContain(f)
    }
    expect(vectors.cases.some((c) => c.expect.valid && !c.expect.certified)).toBe(true)
    for (const j of vectors.jcs) expect(vectors.cases.map((c) => c.id), j.id).toContain(`arguments-${j.id}`)
  })

  for (const c of vectors.cases) {
    it(c.id, () => {
      expect(verdictOf(c)).toEqual(c.expect)
    })
  }

  for (const j of vectors.jcs) {
    it(`jcs ${j.id}`, () => {
      const parsed: unknown = JSON.parse(j.json)
      if (j.canonical === null) expect(() => canonicalJsonStrict(parsed)).toThrow(TypeError)
      else expect(canonicalJsonStrict(parsed)).toBe(j.canonical)
    })
  }

  // the message says which member or check failed and why: a verifier's user reads nothing else
  it('each refused vector has its message', () => {
    const messages: Record<string, string> = {}
    for (const c of vectors.cases) {
      if (c.expect.valid) continue
      try {
        verdictOf(c)
        verifyReceipt(c.receipt, {
          caCertPem: c.verify.ca === undefined ? undefined : vectors.certificates[c.verify.ca]!.pem,
          revoked: c.verify.revoked,
          args: c.verify.args_json === undefined ? undefined : JSON.parse(c.verify.args_json),
          result: c.verify.result_json === undefined ? undefined : JSON.parse(c.verify.result_json),
          now: new Date(vectors.now),
        })
      } catch (err) {
        // as JSON text: a lone surrogate in a message would not survive the snapshot file's UTF-8
        messages[c.id] = JSON.stringify((err as Error).message)
      }
    }
    expect(Object.keys(messages).length).toBe(vectors.cases.filter((c) => !c.expect.valid).length)
    expect(messages).toMatchSnapshot()
  })

  it('a verdict changes when the expectation is wrong (the suite can fail)', () => {
    const valid = vectors.cases.find((c) => c.id === 'valid')!
    const receipt = { ...(valid.receipt as Receipt), status: 'error' }
    expect(verdictOf({ ...valid, receipt })).toEqual({ valid: false, failure: 'bad_signature' })
  })
})

describe('PeerId → Ed25519 key', () => {
  it('agrees with libp2p for fresh keys both ways', async () => {
    for (let i = 0; i < 5; i++) {
      const key = await generateKeyPair('Ed25519')
      const peerId = peerIdFromPrivateKey(key).toString()
      expect(Buffer.from(ed25519KeyOfPeerId(peerId))).toEqual(Buffer.from(key.publicKey.raw))
      expect(peerIdOfEd25519Key(key.publicKey.raw)).toBe(peerId)
      expect(Buffer.from(base58btcDecode(peerId))).toEqual(Buffer.from(peerIdFromString(peerId).toMultihash().bytes))
    }
  })

  it('refuses PeerIds of other key types and non-canonical text', () => {
    expect(() => ed25519KeyOfPeerId('QmYyQSo1c1Ym7orWxLYvCrM2EmxFTANf8wXmmE7DWjhx5N')).toThrow(TypeError)
    expect(() => ed25519KeyOfPeerId(vectors.peers.A.slice(0, -1) + '0')).toThrow(TypeError)
    expect(() => ed25519KeyOfPeerId('1' + vectors.peers.A)).toThrow(TypeError)
  })
})

describe('digests', () => {
  it('are SHA-256 of the canonical JSON; absent arguments are {}, an absent lockfile or result is null', () => {
    expect(argumentsDigest({ b: 3, a: 2 })).toBe(sha256('{"a":2,"b":3}'))
    expect(argumentsDigest(undefined)).toBe(sha256('{}'))
    expect(argumentsDigest(null)).toBe(sha256('{}'))
    expect(argumentsDigest([2, 3])).toBe(sha256('[2,3]'))
    expect(() => argumentsDigest(5)).toThrow(TypeError)
    expect(resultDigest(undefined)).toBe(sha256('null'))
    expect(resultDigest(0.1 + 0.2)).toBe(sha256('0.30000000000000004'))
    expect(lockfileDigest(null)).toBe('74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b')
    expect(() => resultDigest('\ud800')).toThrow(TypeError)
    expect(() => resultDigest({ when: new Date() })).toThrow(TypeError)
  })
})

describe('signReceipt with a libp2p key (the engine\'s port)', () => {
  const ca = createFederationCa({ name: 'receipt test CA' })

  async function node(): Promise<{ signer: ReceiptSigner; certPem: string; peerId: string }> {
    const key = await generateKeyPair('Ed25519')
    const peerId = peerIdFromPrivateKey(key).toString()
    const certPem = issueNodeCertificate(ca, peerId).certPem
    return { signer: { peerId, certificatePem: certPem, sign: (bytes) => key.sign(bytes) }, certPem, peerId }
  }

  const unsigned = (): UnsignedReceipt => ({
    execution_id: 'ex_01JD8X9R6Q4M2N0P5S7T3V1W9Y',
    rufid: (vectors.cases[0]!.receipt as Receipt).rufid,
    content_digest: (vectors.cases[0]!.receipt as Receipt).content_digest,
    lockfile_digest: lockfileDigest(null),
    arguments_digest: argumentsDigest({ a: 2, b: 3 }),
    status: 'success',
    result_digest: resultDigest(5),
    error_code: null,
    limits: { timeout_ms: 5000, cpu_ms: 5000, memory_mb: 64 },
    started_at: new Date(Date.now() - 5).toISOString(),
    finished_at: new Date().toISOString(),
  })

  it('produces a receipt that verifies against the CA, with its arguments and result', async () => {
    const { signer, peerId } = await node()
    const receipt = await signReceipt(unsigned(), signer)
    expect(receipt.peer_id).toBe(peerId)
    expect(receipt.receipt_version).toBe(1)
    expect(receipt.signature).toMatch(/^[A-Za-z0-9_-]{86}$/)
    const verified = verifyReceipt(JSON.parse(JSON.stringify(receipt)), { caCertPem: ca.certPem, args: { b: 3, a: 2 }, result: 5 })
    expect(verified).toMatchObject({ peerId, certified: true, digest: receiptDigest(receipt), checked: { arguments: true, result: true } })
    // and fails for the wrong result, and for another federation's CA
    expect(() => verifyReceipt(receipt, { caCertPem: ca.certPem, result: 6 })).toThrow(expect.objectContaining({ failure: 'result_mismatch' }))
    expect(() => verifyReceipt(receipt, { caCertPem: createFederationCa().certPem })).toThrow(expect.objectContaining({ failure: 'foreign_ca' }))
  })

  it('signs only the payload members, whatever else the engine passes', async () => {
    const { signer } = await node()
    const receipt = await signReceipt({ ...unsigned(), cached: true } as UnsignedReceipt, signer)
    expect(receipt).not.toHaveProperty('cached')
    expect(verifyReceipt(receipt).certified).toBe(false)
  })

  it('refuses a signer whose key is not its PeerId\'s, or whose certificate binds another PeerId', async () => {
    const a = await node()
    const b = await node()
    await expect(signReceipt(unsigned(), { ...a.signer, sign: b.signer.sign })).rejects.toMatchObject({ failure: 'bad_signature' })
    await expect(signReceipt(unsigned(), { ...a.signer, certificatePem: b.certPem })).rejects.toMatchObject({ failure: 'peer_id_mismatch' })
  })

  it('refuses an inconsistent or malformed payload before signing', async () => {
    const { signer } = await node()
    let signed = 0
    const counting: ReceiptSigner = { ...signer, sign: (bytes) => { signed++; return signer.sign(bytes) } }
    await expect(signReceipt({ ...unsigned(), status: 'error' }, counting)).rejects.toMatchObject({ failure: 'malformed' })
    await expect(signReceipt({ ...unsigned(), limits: { timeout_ms: 0, cpu_ms: 1, memory_mb: 1 } }, counting)).rejects.toMatchObject({ failure: 'malformed' })
    await expect(signReceipt({ ...unsigned(), started_at: 'yesterday' }, counting)).rejects.toMatchObject({ failure: 'malformed' })
    expect(signed).toBe(0)
  })

  it('a CA certificate that cannot be read is the caller\'s error, not a verdict on the receipt', async () => {
    const { signer } = await node()
    const receipt = await signReceipt(unsigned(), signer)
    let caught: unknown
    try {
      verifyReceipt(receipt, { caCertPem: 'nope' })
    } catch (err) {
      caught = err
    }
    expect(caught).toBeInstanceOf(SvcError)
    expect(caught).not.toBeInstanceOf(ReceiptError)
    expect((caught as SvcError).code).toBe(1006)
  })
})
