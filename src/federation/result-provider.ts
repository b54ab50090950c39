import { createHash } from 'node:crypto'
import { SvcError } from '../core/errors.js'
import { isReceiptError, resultDigest, verifyReceipt, type Receipt } from '../core/receipt.js'
import { parseRufid } from '../core/rufid.js'
import type { AuditLog } from '../engine/audit/audit-log.js'
import { resultCacheKey, type CachedResult, type ResultCache, type ResultKeyFields } from '../engine/executions/result-cache.js'
import { LruCache } from '../engine/lru.js'
import type { RemoteResult, RemoteResultQuery } from '../engine/replication/federation-port.js'
import { noopLogger, type FederationLogger } from './logger.js'
import { MemberSessions } from './member-sessions.js'
import type { FederationMember, FederationNode } from './node.js'

/**
 * Results of deterministic functions among federation members (docs/receipts.md "Once per
 * federation"), over one request/response protocol served to verified members only (the
 * membership gate holds every stream of a peer that is not one):
 *
 *   → {op: "get", tenant, content_digest, lockfile_digest, arguments_digest}
 *   ← {found: false} | {found: true, result, receipts: [Receipt, …]}
 *   → {op: "offer", tenant, content_digest, lockfile_digest, arguments_digest, result, receipts}
 *   ← {stored: boolean}
 *
 * Members ask each other over one long-lived stream per member (`RESULT_SESSION_PROTOCOL`, see
 * member-sessions.ts: the same requests and answers, framed with an id), which saves a remote
 * hit the stream's opening and protocol negotiation; a member that does not speak it (an older
 * build) is asked one stream per request on `RESULT_PROTOCOL`, which every node still serves.
 *
 * Where a key's results live: rendezvous (highest random weight) hashing of the result key over
 * the live members. A node that computed a result offers it to the key's first `replicas` members
 * (they verify it before keeping it); a node that misses asks the key's first `candidates`
 * members in that order, so the members that were offered a key are the ones asked for it, and
 * membership changes move only the keys of the members that came or went.
 *
 * Every answer is verified before it is used: each receipt's signature, that its certificate
 * chains to the federation CA, binds the signer and is not revoked, that it records a success for
 * exactly this tenant, content, lockfile and arguments, and that the result has the receipt's
 * result digest. A bad answer is refused (audited, logged) and the next candidate asked; two
 * verified receipts that disagree are a conflict (audited, naming the signers). The trust policy
 * then decides which verified receipts count: any member's, only trusted signers', or `quorum`
 * matching receipts of distinct signers.
 */
export const RESULT_PROTOCOL = '/svc/result/1.0.0'
/** the same requests over one long-lived stream per member */
export const RESULT_SESSION_PROTOCOL = '/svc/result-session/1.0.0'

export type ResultTrust = 'any_member' | 'trusted_signers' | 'quorum'

export interface ResultProviderInit {
  caCertPem: string
  revoked?: readonly string[]
  /** whether remote results are looked up and served at all (default true) */
  enabled?: boolean
  trust?: ResultTrust
  /** trusted_signers: the PeerIds whose receipts count */
  trustedSigners?: readonly string[]
  /** quorum: matching receipts of this many distinct signers (default 2) */
  quorum?: number
  /** the fraction (0–1) of remote hits also run here and compared (default 0) */
  reexecuteFraction?: number
  /** members asked for a key, in rendezvous order (default 3) */
  candidates?: number
  /** members a computed result is offered to, in rendezvous order (default 2) */
  replicas?: number
  /** per request (default 2000 ms) */
  timeoutMs?: number
}

export interface ResultProviderComponents {
  node: Pick<FederationNode, 'peerId' | 'members' | 'request' | 'handleMembers' | 'unhandle' | 'p2p' | 'member' | 'requireMember' | 'onMember'>
  /** this node's result cache (engine.executions.results) */
  results: ResultCache
  audit: Pick<AuditLog, 'record'>
  logger?: FederationLogger
  /** for tests: the re-execution draw (default Math.random) */
  random?: () => number
}

const HEX64 = /^[0-9a-f]{64}$/
/** receipts one answer may carry (a quorum needs a few; more is not looked at) */
const MAX_RECEIPTS = 16
/** certificates remembered as issued by the CA (members, and members that left) */
const MAX_CHAINED = 1024

/** Members in rendezvous order for `key`: highest sha256(key, member) first. */
export function rendezvousOrder(key: string, peerIds: readonly string[]): string[] {
  const score = (peerId: string): string => createHash('sha256').update(`${key}\n${peerId}`).digest('hex')
  return peerIds.map((p) => ({ p, s: score(p) })).sort((a, b) => (a.s < b.s ? 1 : a.s > b.s ? -1 : 0)).map((x) => x.p)
}

/** The key fields of a request, checked (1006 otherwise). */
function keyFieldsOf(request: unknown): ResultKeyFields {
  const r = request as Partial<ResultKeyFields> | null
  if (r === null || typeof r !== 'object' || typeof r.tenant !== 'string' || r.tenant === '' || r.tenant.length > 256
    || ![r.content_digest, r.lockfile_digest, r.arguments_digest].every((d) => typeof d === 'string' && HEX64.test(d))) {
    throw new SvcError('VALIDATION_FAILED', 'a result is asked for by tenant, content_digest, lockfile_digest and arguments_digest (SHA-256 hex)')
  }
  return { tenant: r.tenant, content_digest: r.content_digest!, lockfile_digest: r.lockfile_digest!, arguments_digest: r.arguments_digest! }
}

type Verdict = { ok: true; receipts: Receipt[]; digest: string } | { ok: false; failure: string; detail: string }

export class ResultProvider {
  private readonly init: Required<Omit<ResultProviderInit, 'revoked' | 'trustedSigners'>> & { revoked: readonly string[]; trustedSigners: ReadonlySet<string> }
  private readonly log: FederationLogger
  private readonly random: () => number
  /**
   * Certificates (their exact PEM text) that verified as issued by the federation CA: whether a
   * certificate is issued by a CA depends on those two texts only, so it is checked once. Its
   * validity period, the PeerId it binds and the revocation list are checked on every receipt.
   * Bounded: the least recently seen goes first.
   */
  private readonly chained = new LruCache<true>(MAX_CHAINED, () => undefined)
  /** the asking side: a long-lived stream per member (RESULT_PROTOCOL for older members) */
  readonly sessions: MemberSessions

  constructor(init: ResultProviderInit, private readonly c: ResultProviderComponents) {
    this.init = {
      caCertPem: init.caCertPem,
      revoked: init.revoked ?? [],
      enabled: init.enabled ?? true,
      trust: init.trust ?? 'any_member',
      trustedSigners: new Set(init.trustedSigners ?? []),
      quorum: Math.max(1, init.quorum ?? 2),
      reexecuteFraction: Math.min(1, Math.max(0, init.reexecuteFraction ?? 0)),
      candidates: Math.max(0, init.candidates ?? 3),
      replicas: Math.max(0, init.replicas ?? 2),
      timeoutMs: init.timeoutMs ?? 2_000,
    }
    this.log = c.logger ?? noopLogger
    this.random = c.random ?? Math.random
    this.sessions = new MemberSessions({ protocol: RESULT_SESSION_PROTOCOL, fallback: RESULT_PROTOCOL }, { node: c.node, logger: this.log })
  }

  async start(): Promise<void> {
    const serve = async (request: unknown, from: FederationMember): Promise<unknown> => this.serve(request, from)
    await this.c.node.handleMembers(RESULT_PROTOCOL, serve)
    await this.sessions.start(serve)
  }

  async stop(): Promise<void> {
    await this.sessions.stop()
    await this.c.node.unhandle(RESULT_PROTOCOL)
  }

  // ---- serving ----------------------------------------------------------------------------------

  private async serve(request: unknown, from: FederationMember): Promise<unknown> {
    const op = (request as { op?: unknown } | null)?.op
    if (op !== 'get' && op !== 'offer') throw new SvcError('VALIDATION_FAILED', 'op must be "get" or "offer"')
    const fields = keyFieldsOf(request)
    const key = resultCacheKey(fields)
    if (op === 'get') {
      const entry = this.init.enabled ? this.c.results.get(key) : undefined
      if (entry === undefined || entry.receipts.length === 0) return { found: false }
      return { found: true, result: entry.result, receipts: entry.receipts }
    }
    if (!this.init.enabled) return { stored: false }
    const offered = request as { result?: unknown; receipts?: unknown }
    const verdict = this.verifyAnswer(fields, undefined, offered.result, offered.receipts)
    if (!verdict.ok) {
      this.refused(fields, from.peerId, 'offer', verdict)
      return { stored: false }
    }
    const entry: CachedResult = { ...fields, result: offered.result ?? null, resultBytes: JSON.stringify(offered.result ?? null).length, receipts: verdict.receipts, source: 'offered' }
    const held = this.c.results.get(key)
    if (!this.c.results.put(key, entry)) {
      this.conflict(fields, [...(held?.receipts ?? []), ...verdict.receipts], `offered by ${from.peerId}`)
      return { stored: false }
    }
    return { stored: true }
  }

  // ---- asking -----------------------------------------------------------------------------------

  /** FederationPort.findResult: see the class comment. */
  async find(query: RemoteResultQuery): Promise<RemoteResult | undefined> {
    if (!this.init.enabled || this.init.candidates === 0) return undefined
    const fields: ResultKeyFields = { tenant: query.tenant, content_digest: query.content_digest, lockfile_digest: query.lockfile_digest, arguments_digest: query.arguments_digest }
    const members = this.c.node.members().map((m) => m.peerId).filter((p) => p !== this.c.node.peerId)
    const candidates = rendezvousOrder(query.key, members).slice(0, this.init.candidates)
    // verified, trusted receipts by result digest (distinct signers)
    const pools = new Map<string, { result: unknown; receipts: Map<string, Receipt> }>()
    for (const peerId of candidates) {
      let answer: { found?: unknown; result?: unknown; receipts?: unknown }
      try {
        answer = await this.sessions.request(peerId, { op: 'get', ...fields }, this.init.timeoutMs) as typeof answer
      } catch (err) {
        this.log.debug({ peer_id: peerId, err }, 'result lookup failed')
        continue
      }
      if (answer === null || typeof answer !== 'object' || answer.found !== true) continue
      const verdict = this.verifyAnswer(fields, query, answer.result, answer.receipts)
      if (!verdict.ok) {
        this.refused(fields, peerId, 'answer', verdict)
        continue
      }
      let pool = pools.get(verdict.digest)
      if (pool === undefined) pools.set(verdict.digest, pool = { result: answer.result ?? null, receipts: new Map() })
      for (const r of verdict.receipts) if (this.trusted(r) && !pool.receipts.has(r.peer_id)) pool.receipts.set(r.peer_id, r)
      if (pools.size > 1) {
        this.conflict(fields, [...pools.values()].flatMap((p) => [...p.receipts.values()]), `answers to ${this.c.node.peerId}`)
        return undefined // members disagree: run it here
      }
      if (pool.receipts.size >= (this.init.trust === 'quorum' ? this.init.quorum : 1)) {
        const receipts = [...pool.receipts.values()]
        return {
          result: pool.result,
          resultBytes: JSON.stringify(pool.result).length,
          receipts,
          reexecute: this.init.reexecuteFraction > 0 && this.random() < this.init.reexecuteFraction,
        }
      }
    }
    return undefined
  }

  /** FederationPort.offerResult: the key's first `replicas` members in rendezvous order, in the background. */
  offer(key: string, entry: CachedResult): void {
    if (!this.init.enabled || this.init.replicas === 0 || entry.receipts.length === 0) return
    const members = this.c.node.members().map((m) => m.peerId).filter((p) => p !== this.c.node.peerId)
    const fields: ResultKeyFields = { tenant: entry.tenant, content_digest: entry.content_digest, lockfile_digest: entry.lockfile_digest, arguments_digest: entry.arguments_digest }
    for (const peerId of rendezvousOrder(key, members).slice(0, this.init.replicas)) {
      void this.sessions.request(peerId, { op: 'offer', ...fields, result: entry.result, receipts: entry.receipts }, this.init.timeoutMs)
        .catch((err: unknown) => this.log.debug({ peer_id: peerId, err }, 'result offer failed'))
    }
  }

  /** FederationPort.compareResult: a re-executed remote hit; a different result is a conflict. */
  compare(remote: RemoteResult, local: Receipt): void {
    const theirs = remote.receipts[0]
    if (theirs === undefined || theirs.result_digest === local.result_digest) return
    const fields: ResultKeyFields = { tenant: parseRufid(local.rufid).tenant_id!, content_digest: local.content_digest, lockfile_digest: local.lockfile_digest, arguments_digest: local.arguments_digest }
    this.conflict(fields, [...remote.receipts, local], 're-executed here')
  }

  /** FederationPort.acceptsResult: an offered entry's receipts (verified when offered) under the trust policy; this node's own always count. */
  accepts(entry: CachedResult): boolean {
    if (!this.init.enabled) return false
    if (entry.receipts.some((r) => r.peer_id === this.c.node.peerId)) return true
    const signers = new Set(entry.receipts.filter((r) => this.trusted(r)).map((r) => r.peer_id))
    return signers.size >= (this.init.trust === 'quorum' ? this.init.quorum : 1)
  }

  // ---- verification -------------------------------------------------------------------------------

  private trusted(r: Receipt): boolean {
    return this.init.trust !== 'trusted_signers' || this.init.trustedSigners.has(r.peer_id)
  }

  /**
   * Every receipt of an answer verified for `fields` (and `query.args` when asking): signature,
   * member certificate (CA, not revoked, valid now), a success of this tenant, content, lockfile
   * and arguments, the result's digest. One bad receipt refuses the whole answer.
   */
  private verifyAnswer(fields: ResultKeyFields, query: RemoteResultQuery | undefined, result: unknown, receipts: unknown): Verdict {
    if (!Array.isArray(receipts) || receipts.length === 0 || receipts.length > MAX_RECEIPTS) {
      return { ok: false, failure: 'malformed', detail: `an answer carries 1 to ${MAX_RECEIPTS} receipts` }
    }
    let digest: string
    try {
      digest = resultDigest(result)
    } catch (err) {
      return { ok: false, failure: 'result_mismatch', detail: `the result has no canonical JSON form: ${(err as Error).message}` }
    }
    const out: Receipt[] = []
    for (const raw of receipts) {
      let receipt: Receipt
      try {
        const pem = (raw as { certificate?: unknown } | null)?.certificate
        const chained = typeof pem === 'string' && this.chained.touch(pem) !== undefined
        // a certificate already found issued by the CA is not checked against it again (the CA's
        // parse and signature check were most of a verification); every other step runs every time
        receipt = verifyReceipt(raw, {
          ...(chained ? {} : { caCertPem: this.init.caCertPem }), revoked: this.init.revoked, result: result ?? null, ...(query ? { args: query.args } : {}),
        }).receipt
        if (!chained) this.chained.put(receipt.certificate, true)
      } catch (err) {
        if (isReceiptError(err)) return { ok: false, failure: err.failure, detail: err.message }
        return { ok: false, failure: 'malformed', detail: (err as Error).message }
      }
      const tenant = parseRufid(receipt.rufid).tenant_id
      const mismatch = tenant !== fields.tenant ? `tenant ${tenant}`
        : receipt.content_digest !== fields.content_digest ? 'content_digest'
          : receipt.lockfile_digest !== fields.lockfile_digest ? 'lockfile_digest'
            : receipt.arguments_digest !== fields.arguments_digest ? 'arguments_digest'
              : receipt.status !== 'success' ? `status ${receipt.status}` : undefined
      if (mismatch !== undefined) return { ok: false, failure: 'key_mismatch', detail: `the receipt of ${receipt.execution_id} is not about this call (${mismatch})` }
      out.push(receipt)
    }
    return { ok: true, receipts: out, digest }
  }

  private refused(fields: ResultKeyFields, peerId: string, what: 'answer' | 'offer', verdict: Verdict & { ok: false }): void {
    this.log.warn({ peer_id: peerId, tenant: fields.tenant, failure: verdict.failure, detail: verdict.detail }, `a member's result ${what} was refused`)
    void this.c.audit.record({
      operation: 'federation.result.refused', rufid: null, user: peerId, tenant: fields.tenant, ip: '',
      result: `refused ${what} of ${peerId} (${verdict.failure}): ${verdict.detail}; content ${fields.content_digest}, arguments ${fields.arguments_digest}`,
      duration_ms: 0, code: 1006,
    }).catch((err: unknown) => this.log.warn({ err }, 'audit of a refused result failed'))
  }

  /** Two verified results for one key: recorded for operators, naming the signers of each. */
  private conflict(fields: ResultKeyFields, receipts: Receipt[], how: string): void {
    const bySigner = new Map<string, string>()
    for (const r of receipts) bySigner.set(r.peer_id, r.result_digest ?? `error ${r.error_code}`)
    const sides = new Map<string, string[]>()
    for (const [signer, digest] of bySigner) sides.set(digest, [...(sides.get(digest) ?? []), signer])
    const text = [...sides].map(([digest, signers]) => `result ${digest.slice(0, 16)}… signed by ${signers.join(', ')}`).join(' vs ')
    const rufid = receipts[0]?.rufid ?? null
    this.log.warn({ tenant: fields.tenant, rufid, signers: [...bySigner.keys()], how }, 'members disagree on a deterministic result')
    void this.c.audit.record({
      operation: 'federation.result.conflict', rufid, user: 'federation', tenant: fields.tenant, ip: '',
      result: `deterministic result conflict (${how}): ${text}; arguments ${fields.arguments_digest}`, duration_ms: 0, code: 2002,
    }).catch((err: unknown) => this.log.warn({ err }, 'audit of a result conflict failed'))
  }
}
