import { receiptDigest, sha256Hex, type Receipt } from '../../core/receipt.js'
import { LruCache } from '../lru.js'
import type { ExecutionRecord } from '../types.js'
import type { JsonSublevel, QueuedPut } from './group-commit.js'

/**
 * How execution records keep their receipts (since 2026-11, data format 1 still): a record holds
 * its receipt's digest (`receipt_ref`), the receipt is stored once in `receipts` by that digest,
 * and the signer's certificate once in `receipt_certificates` by the SHA-256 of its PEM text. A
 * deterministic function's cached answers all carry the receipt of the execution that computed
 * the result, so each of them now writes ~0.1 KB of reference instead of the ~2.3 KB receipt (of
 * which ~1.3 KB is the certificate, the same in every receipt a node signs).
 *
 * Receipts are never removed with a result-cache entry: records outlive the bounded cache, and a
 * record's receipt stays readable as long as the record. Records written before (the receipt
 * inline in the record) read as they are.
 */

/** A receipt as stored: its certificate replaced, in place, by the reference of the stored PEM. */
type StoredReceipt = Omit<Receipt, 'certificate'> & { certificate: { sha256: string } }

/** An execution record as stored: the receipt by reference, or inline (records written before). */
export type StoredExecutionRecord = Omit<ExecutionRecord, 'receipt'> & { receipt?: Receipt | null; receipt_ref?: string }

/** What `split` makes of a record (see there). */
export interface SplitRecord {
  value: StoredExecutionRecord
  puts: QueuedPut[]
  /** the digest of the receipt the record refers to, and the reference of its certificate (null: none) */
  receiptRef: string | null
  certificateRef: string | null
  /** marks the receipt (and certificate) written: call it once the puts are queued */
  remember(): void
}

const noop = (): void => undefined

/** Receipt digests this store wrote or queued (a receipt already there is not written again). */
const RECEIPTS_REMEMBERED = 16_384
/** Certificates whose reference is known (a node signs with one; members' receipts bring theirs). */
const CERTIFICATES_REMEMBERED = 256

export interface ExecutionReceiptsComponents {
  receipts: JsonSublevel
  certificates: JsonSublevel
  /** the queued (not yet written) value of a key, if any */
  peek(sublevel: JsonSublevel, key: string): unknown
}

/** Splits records' receipts out when they are written and puts them back when they are read. */
export class ExecutionReceipts {
  /** digests of receipts written or queued by this store (bounded: one forgotten is written again, same bytes) */
  private readonly written = new LruCache<true>(RECEIPTS_REMEMBERED, () => undefined)
  /** certificate PEM text → its reference, for certificates written or queued by this store */
  private readonly certificateRefs = new LruCache<string>(CERTIFICATES_REMEMBERED, () => undefined)
  /** certificate reference → PEM text, for reading */
  private readonly certificatePems = new LruCache<string>(CERTIFICATES_REMEMBERED, () => undefined)

  constructor(private readonly c: ExecutionReceiptsComponents) {}

  /**
   * What to store for `record`: the record with its receipt by reference, and the puts of the
   * receipt and its certificate when this store has not written them yet. `digest`: the
   * receipt's digest when the caller knows it (else computed; free for a receipt signed here).
   * Nothing is remembered until `remember()` is called, once the puts are queued (a write refused
   * before, by a quota, must not leave the receipt taken for written).
   */
  split(record: ExecutionRecord, digest?: string): SplitRecord {
    const receipt = record.receipt
    if (receipt === undefined || receipt === null) return { value: record, puts: [], receiptRef: null, certificateRef: null, remember: noop }
    const ref = digest ?? receiptDigest(receipt)
    const value = withoutReceipt(record)
    value.receipt_ref = ref
    const knownCertificate = this.certificateRefs.touch(receipt.certificate)
    const certificateRef = knownCertificate ?? sha256Hex(receipt.certificate)
    if (this.written.touch(ref) !== undefined) return { value, puts: [], receiptRef: ref, certificateRef, remember: noop }
    const puts: QueuedPut[] = []
    if (knownCertificate === undefined) puts.push({ sublevel: this.c.certificates, key: certificateRef, value: receipt.certificate })
    const stored: StoredReceipt = { ...receipt, certificate: { sha256: certificateRef } }
    puts.push({ sublevel: this.c.receipts, key: ref, value: stored })
    const remember = (): void => {
      if (knownCertificate === undefined) {
        this.certificateRefs.put(receipt.certificate, certificateRef)
        this.certificatePems.put(certificateRef, receipt.certificate)
      }
      this.written.put(ref, true)
    }
    return { value, puts, receiptRef: ref, certificateRef, remember }
  }

  /** Whether this store wrote or queued the receipt (since it was last forgotten). */
  hasWritten(ref: string): boolean {
    return this.written.has(ref)
  }

  /** Whether this store wrote or queued the certificate (since it was last forgotten). */
  knowsCertificate(ref: string): boolean {
    for (const pem of this.certificateRefs.keys()) if (this.certificateRefs.peek(pem) === ref) return true
    return false
  }

  /** A receipt removed from the store (retention): the next record that carries it writes it again. */
  forgetReceipt(ref: string): void {
    this.written.take(ref)
  }

  /** A certificate removed from the store (retention): the next receipt that carries it writes it again. */
  forgetCertificate(ref: string): void {
    const pem = this.certificatePems.take(ref)
    if (pem !== undefined) this.certificateRefs.take(pem)
    for (const key of this.certificateRefs.keys()) if (this.certificateRefs.peek(key) === ref) this.certificateRefs.take(key)
  }

  /**
   * A stored record with its receipt as it was signed (member order included). A referenced
   * receipt that cannot be found (a damaged database) reads as `null`, like a record without one.
   */
  async join(stored: StoredExecutionRecord): Promise<ExecutionRecord> {
    const ref = stored.receipt_ref
    if (typeof ref !== 'string') return stored as ExecutionRecord
    const { receipt_ref: _ref, ...record } = stored
    return { ...record, receipt: await this.receipt(ref) }
  }

  /** The stored receipt of this digest, or null. */
  async receipt(ref: string): Promise<Receipt | null> {
    const stored = (this.c.peek(this.c.receipts, ref) ?? await this.c.receipts.get(ref)) as StoredReceipt | undefined
    if (stored === undefined) return null
    const certificate = stored.certificate
    // written before the split (never by this code), or by a future one: as it is
    if (typeof certificate !== 'object' || certificate === null) return stored as unknown as Receipt
    const pem = await this.certificate(certificate.sha256)
    return pem === undefined ? null : { ...stored, certificate: pem }
  }

  private async certificate(ref: string): Promise<string | undefined> {
    let pem = this.certificatePems.touch(ref)
    if (pem === undefined) {
      pem = (this.c.peek(this.c.certificates, ref) ?? await this.c.certificates.get(ref)) as string | undefined
      if (pem !== undefined) this.certificatePems.put(ref, pem)
    }
    return pem
  }
}

/**
 * A copy of the record without its receipt, member by member (V8 builds `{...rest, receipt_ref}`
 * after an object rest in its slow path, a few µs for every cached answer).
 */
function withoutReceipt(record: ExecutionRecord): StoredExecutionRecord {
  const copy: Record<string, unknown> = {}
  for (const key in record) if (key !== 'receipt') copy[key] = record[key as keyof ExecutionRecord]
  return copy as StoredExecutionRecord
}
