import {
  argumentsDigest, lockfileDigest, receiptDigest, resultDigest, signReceipt, type Receipt, type ReceiptSigner, type UnsignedReceipt,
} from '../../core/receipt.js'
import type { ExecutionLimits } from '../sandbox/index.js'
import type { ExecutionRecord, FunctionVersion } from '../types.js'

/**
 * Signs a receipt (docs/receipts.md) for every finished execution with the node's key. The signer
 * is the daemon's: the node's libp2p Ed25519 key with its federation certificate, or, on a node
 * without federation, the same key with a certificate the node made for itself (such receipts prove
 * authorship by a PeerId, not membership). An engine without a signer issues none (`null`).
 */
export class ReceiptIssuer {
  private signer: ReceiptSigner | undefined
  /** lockfile digests by lockfile object (a version's lockfile never changes) */
  private readonly lockfiles = new WeakMap<object, string>()

  use(signer: ReceiptSigner | undefined): void {
    this.signer = signer
  }

  /** The signing node's PeerId (undefined: no signer). */
  get peerId(): string | undefined {
    return this.signer?.peerId
  }

  get enabled(): boolean {
    return this.signer !== undefined
  }

  lockfileDigestOf(fn: FunctionVersion): string {
    const lock = fn.lockfile
    if (lock === null || typeof lock !== 'object') return lockfileDigest(null)
    let digest = this.lockfiles.get(lock)
    if (digest === undefined) {
      digest = lockfileDigest(lock)
      this.lockfiles.set(lock, digest)
    }
    return digest
  }

  /**
   * The signed receipt of a finished record, or null when there is no signer or the execution has
   * no receipt form (arguments or a result without canonical JSON, e.g. a lone surrogate).
   */
  async issue(record: ExecutionRecord, fn: FunctionVersion, argsDigest: string | undefined, limits: ExecutionLimits): Promise<Receipt | null> {
    const signer = this.signer
    if (signer === undefined || argsDigest === undefined || record.finished_at === undefined) return null
    let unsigned: UnsignedReceipt
    try {
      const success = record.status === 'success'
      unsigned = {
        execution_id: record.execution_id,
        rufid: record.rufid,
        content_digest: fn.content_digest,
        lockfile_digest: this.lockfileDigestOf(fn),
        arguments_digest: argsDigest,
        status: record.status as UnsignedReceipt['status'],
        result_digest: success ? resultDigest(record.result) : null,
        error_code: success ? null : record.status === 'timeout' ? 1004 : (record.error?.code ?? 1007),
        limits: { timeout_ms: Math.ceil(limits.timeoutMs), cpu_ms: Math.ceil(limits.cpuMs), memory_mb: Math.ceil(limits.memoryMb) },
        started_at: record.started_at,
        finished_at: record.finished_at < record.started_at ? record.started_at : record.finished_at,
      }
    } catch {
      return null // no canonical form: nothing to sign
    }
    return signReceipt(unsigned, signer)
  }
}

/** The arguments digest of a call, or undefined when the arguments have no canonical JSON form. */
export function argumentsDigestOrUndefined(args: unknown): string | undefined {
  try {
    return argumentsDigest(args)
  } catch {
    return undefined
  }
}

export { receiptDigest }
