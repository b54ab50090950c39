import { argumentsCanonicalText, jsonDigest, sha256Hex, type Receipt } from '../../core/receipt.js'
import { FairLru } from '../fair-lru.js'
import { LruCache } from '../lru.js'

/**
 * What identifies the result of a deterministic function: the tenant (results never cross
 * tenants), the function's content and pinned dependencies, and the call's arguments.
 */
export interface ResultKeyFields {
  tenant: string
  content_digest: string
  lockfile_digest: string
  arguments_digest: string
}

/** sha256 hex of the RFC 8785 canonical JSON of the key fields: one string per (tenant, content, lockfile, arguments). */
export function resultCacheKey(fields: ResultKeyFields): string {
  return jsonDigest({
    tenant: fields.tenant, content_digest: fields.content_digest, lockfile_digest: fields.lockfile_digest, arguments_digest: fields.arguments_digest,
  })
}

/**
 * A stored result of a deterministic function and the receipts that vouch for it: every receipt
 * records a success with this result's digest, each from a distinct signer; the first is the
 * receipt of the execution that computed it (the one a hit answers with).
 */
export interface CachedResult extends ResultKeyFields {
  result: unknown
  /** length of the result's JSON text */
  resultBytes: number
  receipts: Receipt[]
  /**
   * where the entry came from: this node's execution, a member's answer this node accepted under
   * its trust policy, or a member's offer (kept to serve members; answered here only once the
   * trust policy accepts its receipts: `FederationPort.acceptsResult`)
   */
  source: 'local' | 'remote' | 'offered'
  /** the digest of `receipts[0]` (what a hit's event carries), kept at the first hit that needed it */
  receiptDigest?: string
}

export interface ResultCacheInit {
  /** entries kept at most (0 disables the cache) */
  maxEntries: number
  /** total size (results' JSON and receipts) kept at most */
  maxBytes: number
  /** a result whose JSON is larger is not cached */
  maxResultBytes: number
  /** what one tenant's results may hold at most (absent or 0: only the shared bounds) */
  maxBytesPerTenant?: number
  /** receipts kept per entry (distinct signers; a quorum policy needs k) */
  maxReceipts?: number
}

export const RESULT_CACHE_DEFAULTS: ResultCacheInit = { maxEntries: 10_000, maxBytes: 64 * 2 ** 20, maxResultBytes: 2 ** 20, maxReceipts: 8 }

/** ~ what an entry costs in memory: its result's JSON plus its receipts (a certificate is ~1.3 KB). */
const weightOf = (entry: CachedResult): number => entry.resultBytes + entry.receipts.reduce((n, r) => n + 600 + r.certificate.length, 256)

/** The account that members' offered results are charged to: they share one share of the room. */
export const OFFERED_ACCOUNT = '<federation>'

/**
 * The results of deterministic functions, bounded by count and bytes, shared fairly between
 * tenants: past a bound the least recently used result of the tenant holding the most goes
 * (FairLru), so one tenant's churn evicts its own results, never another's share; a tenant past
 * `maxBytesPerTenant` loses its own oldest. Keys include the tenant (`resultCacheKey`). Results
 * offered by members (not computed or asked for here) share one account of their own.
 */
export class ResultCache {
  private readonly lru: FairLru<CachedResult>
  readonly init: ResultCacheInit

  constructor(init: ResultCacheInit) {
    this.init = init
    this.lru = new FairLru<CachedResult>({
      maxEntries: Math.max(0, init.maxEntries),
      maxWeight: init.maxBytes,
      ...(init.maxBytesPerTenant ? { maxWeightPerAccount: init.maxBytesPerTenant } : {}),
    })
  }

  get size(): number {
    return this.lru.size
  }

  get bytes(): number {
    return this.lru.weight
  }

  /** The entry (marked recently used), or undefined. */
  get(key: string): CachedResult | undefined {
    return this.lru.touch(key)
  }

  /** Whether a result of this JSON size would be kept. */
  admits(resultBytes: number): boolean {
    return this.init.maxEntries > 0 && resultBytes <= this.init.maxResultBytes
  }

  /**
   * Stores `entry`, charged to `account` (the root tenant whose call computed or asked for it;
   * default: the entry's tenant, or OFFERED_ACCOUNT for a member's offer), or adds its receipts to
   * the entry already stored with the same result (distinct signers only, bounded). Returns false
   * when a stored entry disagrees (another result digest): the caller records the conflict; the
   * stored entry stays.
   */
  put(key: string, entry: CachedResult, account = entry.source === 'offered' ? OFFERED_ACCOUNT : entry.tenant): boolean {
    if (!this.admits(entry.resultBytes)) return true
    const held = this.lru.peek(key)
    if (held === undefined) {
      const kept = { ...entry, receipts: entry.receipts.slice(0, this.init.maxReceipts ?? 8) }
      this.lru.put(key, kept, account, weightOf(kept))
      return true
    }
    const digest = held.receipts[0]?.result_digest ?? null
    const incoming = entry.receipts[0]?.result_digest ?? null
    if (digest !== null && incoming !== null && digest !== incoming) return false
    const signers = new Set(held.receipts.map((r) => r.peer_id))
    const added = entry.receipts.filter((r) => !signers.has(r.peer_id))
    if (added.length > 0 || (held.receipts.length === 0 && entry.receipts.length > 0)) {
      const receipts = [...held.receipts, ...added].slice(0, this.init.maxReceipts ?? 8)
      const kept = { ...held, receipts }
      // the entry stays with the account that stored it first
      this.lru.put(key, kept, this.lru.accountOf(key) ?? account, weightOf(kept))
    }
    return true
  }

  delete(key: string): void {
    this.lru.delete(key)
  }
}

/** A call's result key and its fields. */
export interface KeyedCall {
  fields: ResultKeyFields
  key: string
}

/** calls whose keys are remembered (a hot function's recent argument sets) */
const KEYS_REMEMBERED = 4096
/** arguments whose canonical text is longer are keyed anew on every call (bounds the memory: ~5 MB) */
const MAX_REMEMBERED_ARGUMENTS = 1024

/**
 * The result key of a call (`resultCacheKey`): the arguments digest and the key are two SHA-256 of
 * canonical JSON, the most a cache hit computed. Remembered for recent calls by the function's
 * identity and the arguments' canonical text (RFC 8785 text is one per JSON value, so the same
 * text is the same arguments): a hit canonicalizes its arguments once and hashes nothing.
 */
export class ResultKeys {
  private readonly memo = new LruCache<KeyedCall>(KEYS_REMEMBERED, () => undefined)

  /** The key of a call, or undefined when its arguments have no canonical form (the call is not cached). */
  of(tenant: string, content_digest: string, lockfile_digest: string, args: unknown): KeyedCall | undefined {
    let text: string
    try {
      text = argumentsCanonicalText(args)
    } catch {
      return undefined
    }
    const memoKey = text.length <= MAX_REMEMBERED_ARGUMENTS ? `${tenant}\n${content_digest}\n${lockfile_digest}\n${text}` : undefined
    const known = memoKey === undefined ? undefined : this.memo.touch(memoKey)
    if (known !== undefined) return known
    // the arguments digest is the SHA-256 of that same text (argumentsDigest): canonicalized once
    const fields: ResultKeyFields = { tenant, content_digest, lockfile_digest, arguments_digest: sha256Hex(text) }
    const keyed: KeyedCall = { fields, key: resultCacheKey(fields) }
    if (memoKey !== undefined) this.memo.put(memoKey, keyed)
    return keyed
  }
}
