import { SvcError } from '../core/errors.js'
import { computeRufid } from '../core/rufid.js'
import { fitsUtf8Bytes } from '../core/text.js'
import type { SvcMetrics } from '../engine/metrics.js'
import type { FunctionRegistry } from '../engine/registry/function-registry.js'
import type { CatalogReplica } from '../engine/replication/catalog-replica.js'
import type { FederatedDiscovery } from '../engine/replication/federation-port.js'
import type { FunctionVersion, Principal } from '../engine/types.js'
import { ProviderAnnouncer } from './provider-announcer.js'
import { noopLogger, type FederationLogger } from './logger.js'
import type { FederationMember, FederationNode } from './node.js'

export const CODE_PROTOCOL = '/svc/code/1.0.0'

const MAX_HOLDER_HINTS = 10_000

/**
 * A node serving a digest's code tells the first this-many distinct members that fetch it from
 * here to announce themselves as its providers, and the later ones not to (see `serveCode`).
 */
export const ANNOUNCING_FETCHERS = 2
/** digests whose fetchers a serving node remembers (the least recently served go first) */
const MAX_SERVED_DIGESTS = 10_000

/**
 * Nodes that fetched code announce themselves as its providers only while the federation has more
 * nodes than this: kad-dht's bucket size (k = 20). Up to k nodes a DHT lookup reaches every member
 * anyway, so a fetcher's record finds nothing that asking the members at once does not; and the
 * records cost most of the federation's CPU per publish (when each was a DHT walk plus a stream
 * and an ADD_PROVIDER to every member at that size: 5 loopback daemons on 2 cores, publish →
 * resolvable everywhere p50 / p99 83 / 1,093 ms with every record, 64 / 135 ms with none, bench
 * federation suite; up to k nodes records now go in batches, one stream per member, but each is
 * still a message and a store write on every member). The publisher announces what it publishes
 * at any size (decisions.md: every published function is announced as a provider record).
 */
export const ANNOUNCE_PROVIDERS_ABOVE = 20
/** members asked at once when the code is looked for among all of them (kad-dht's alpha) */
const MEMBER_WAVE = 10

/** digests per provider-record batch made at start (`provideQuietly`) */
const START_BATCH = 1_000

/**
 * Announces this node as a provider of each of `digests` (DHT provider records, in batches:
 * `FederationNode.provideMany`); a failure is only logged.
 */
export async function provideQuietly(node: FederationNode, log: FederationLogger, digests: Iterable<string>): Promise<void> {
  const all = [...new Set(digests)]
  for (let i = 0; i < all.length; i += START_BATCH) {
    const batch = all.slice(i, i + START_BATCH)
    try {
      const { announced } = await node.provideMany(batch)
      if (announced.length < batch.length) log.debug({ digests: batch.length, announced: announced.length }, 'provide failed')
    } catch (err) {
      log.debug({ err, digests: batch.length }, 'provide failed')
    }
  }
}

export interface CodeProviderComponents {
  node: FederationNode
  /** the versions this node holds (with their code) and its change log */
  replica: Pick<CatalogReplica, 'localVersion' | 'changesSince' | 'onLocalChange'>
  /** discovery reads a function's lineage as the caller may see it */
  /** `maxSourceBytes`: code a member serves that is longer is refused before it is hashed */
  functions: Pick<FunctionRegistry, 'target' | 'lineage'> & Partial<Pick<FunctionRegistry, 'maxSourceBytes'>>
  logger?: FederationLogger
  metrics?: SvcMetrics
  /** how many fetchers of a digest served here are told to announce it (default ANNOUNCING_FETCHERS) */
  announcingFetchers?: number
  /** provider records are made only while the federation has more nodes than this (default ANNOUNCE_PROVIDERS_ABOVE) */
  announceProvidersAbove?: number
}

/** What a member asks on CODE_PROTOCOL: a version's code, or with `probe` only whether this node holds it. */
interface CodeRequest {
  tenant_id: string
  rufid_short: string
  version: number
  content_digest: string
  probe?: boolean
}

/** The first defined value the promises resolve with (undefined when none does). */
function firstFound<T>(attempts: Array<Promise<T | undefined>>): Promise<T | undefined> {
  return new Promise((resolve) => {
    let left = attempts.length
    if (left === 0) resolve(undefined)
    for (const a of attempts) {
      void a.then((v) => {
        if (v !== undefined) resolve(v)
        else if (--left === 0) resolve(undefined)
      })
    }
  })
}

/**
 * Code on demand: serves the code of the versions this node holds to members
 * (`/svc/code/1.0.0`), announces what it published as DHT provider records keyed by content
 * digest, fetches code it lacks from a provider (digest-checked), and answers discovery.
 */
export class CodeProvider {
  private readonly log: FederationLogger
  private readonly unsubscribe: Array<() => void> = []
  /**
   * content digest → the origin of the change that added that content (by gossip or sync; since
   * changes are signed, the node that published it): it holds the code, so a fetch asks it first
   * (the digest check still decides).
   * Bounded: the oldest hints are dropped past MAX_HOLDER_HINTS.
   */
  private readonly holders = new Map<string, string>()

  /** makes this node a provider of the code it fetched (batched, delayed: provider-announcer.ts) */
  private readonly announcer: ProviderAnnouncer
  /** content digest → the members told to announce it (at most `announcingFetchers`), by recency of serving */
  private readonly served = new Map<string, Set<string>>()
  private readonly announcingFetchers: number
  private readonly announceAbove: number

  constructor(private readonly c: CodeProviderComponents) {
    this.log = c.logger ?? noopLogger
    this.announcer = new ProviderAnnouncer({}, { provideMany: (digests, timeoutMs) => c.node.provideMany(digests, timeoutMs), logger: this.log })
    this.announcingFetchers = c.announcingFetchers ?? ANNOUNCING_FETCHERS
    this.announceAbove = c.announceProvidersAbove ?? ANNOUNCE_PROVIDERS_ABOVE
  }

  /** Whether fetchers' provider records are made: the federation (with this node) has more than `announceAbove` nodes. */
  private get recording(): boolean {
    return this.c.node.members().length + 1 > this.announceAbove
  }

  /** Queues the provider record of a digest this node fetched, when the federation is large enough for them (see ANNOUNCE_PROVIDERS_ABOVE). */
  private announceFetched(digest: string): void {
    if (this.recording) this.announcer.enqueue(digest)
  }

  /** Whether this node announces (or announced) itself as a provider of `digest` in this run. */
  announces(digest: string): boolean {
    return this.announcer.has(digest)
  }

  async start(): Promise<void> {
    const { node, replica } = this.c
    await node.handleMembers(CODE_PROTOCOL, async (request, from) => this.serveCode(request as CodeRequest, from.peerId))
    // what this node publishes is announced by the announcer too, not at the publish: a provider
    // record reaches each of the k closest members (at 20 members, every member; made by kad-dht's
    // provide, a walk plus a stream per member per record, it was ~half the federation's CPU per
    // publish, measured), and nothing needs it then: every member learns the publisher from the
    // signed change and asks it first (`holders`). The announcer sends what is due in one batch
    // (up to k nodes one stream per member: FederationNode.provideMany)
    this.unsubscribe.push(replica.onLocalChange((change) => {
      if (node.started && change.kind !== 'branch' && change.op === 'added') this.announcer.enqueue(change.fn.content_digest)
    }))
    // what it published at any size; what it fetched too once the federation is past k nodes, and
    // when it grows past them: once per run. Past k each record is a DHT walk, so announcing all
    // the code a node holds is a walk per digest; a federation whose size moves across k (a member
    // restarting in one of k + 1 nodes) would otherwise make every member do it again each time.
    // The records made once are kept by kad-dht's reprovider (refreshed daily, 48 h expiry).
    let wasRecording = this.recording
    let announcedAll = wasRecording
    this.unsubscribe.push(node.onMember(() => {
      const now = this.recording
      if (now && !wasRecording && !announcedAll) {
        announcedAll = true
        void this.provideAll()
      }
      wasRecording = now
    }))
    void this.provideAll()
    this.announcer.start()
  }

  async stop(): Promise<void> {
    for (const u of this.unsubscribe.splice(0)) u()
    await this.announcer.stop()
    await this.c.node.unhandle(CODE_PROTOCOL)
  }

  /** `origin` added the content with `digest` (it published it): a fetch asks it first. */
  hintHolder(digest: string, origin: string): void {
    this.holders.delete(digest)
    this.holders.set(digest, origin)
    if (this.holders.size > MAX_HOLDER_HINTS) this.holders.delete(this.holders.keys().next().value!)
  }

  /** Announces the code this node holds: all of it past k nodes, what it published below. */
  private async provideAll(): Promise<void> {
    const digests = new Set<string>()
    const ownOnly = !this.recording
    for await (const fn of this.heldVersions(ownOnly)) if (fn.deleted_at === undefined && fn.source_code !== '') digests.add(fn.content_digest)
    await provideQuietly(this.c.node, this.log, digests)
  }

  private async *heldVersions(ownOnly: boolean): AsyncGenerator<FunctionVersion> {
    // every version this node recorded or applied is in the replica's change log
    const batch = await this.c.replica.changesSince({})
    for (const c of [...batch.added, ...batch.updated]) {
      if (c.kind === 'branch' || (ownOnly && c.origin !== this.c.node.peerId)) continue
      const found = await this.c.replica.localVersion(c.fn.tenant_id, c.fn.rufid_short, c.fn.version)
      if (found) yield found
    }
  }

  /**
   * The code of a version this node holds, and whether the member that fetches it should announce
   * itself as a provider: yes for the first `announcingFetchers` distinct members served this
   * digest (and again for them), no for the later ones. Each announcement (past k nodes, where
   * fetchers announce) is a DHT walk plus an ADD_PROVIDER to the k closest members; when every
   * member fetched every new function, as in a busy federation, one announcement per fetcher was
   * most of the federation's CPU (5 loopback daemons on 2 cores: a sixth of the publishes took
   * ~1 s to be resolvable everywhere, none with no announcements). A few records per digest
   * already find a holder in O(log N) hops; a member that was told no still serves the code to
   * whoever asks it (the member scan).
   */
  private async serveCode(request: CodeRequest, from: string): Promise<{ source_code: string; announce: boolean } | { holds: true }> {
    const fn = await this.c.replica.localVersion(request.tenant_id, request.rufid_short, request.version)
    if (fn === undefined || fn.source_code === '' || fn.content_digest !== request.content_digest) {
      throw new SvcError('RUFID_NOT_FOUND', 'this node does not hold that code')
    }
    // discovery asks whether this node holds the code, not for it (a member without `probe` sends
    // the code: the asker reads that as a yes too)
    if (request.probe === true) return { holds: true }
    return { source_code: fn.source_code, announce: this.toldToAnnounce(fn.content_digest, from) }
  }

  private toldToAnnounce(digest: string, peerId: string): boolean {
    let told = this.served.get(digest)
    if (told !== undefined) this.served.delete(digest) // most recently served last
    told ??= new Set()
    this.served.set(digest, told)
    if (this.served.size > MAX_SERVED_DIGESTS) this.served.delete(this.served.keys().next().value!)
    if (told.has(peerId)) return true
    if (told.size >= this.announcingFetchers) return false
    told.add(peerId)
    return true
  }

  /**
   * FederationPort.fetchCode. Candidates, each tried once and in turn: the origin that added the
   * content (it published it), providers from the DHT as the query finds them
   * (members only), then the other members (a provider record may not have reached the DHT yet,
   * or its publisher left: nodes that fetched the code serve it too), connected ones first, then
   * those this node verified before and is not connected to now (dialled). The first code that
   * hashes to `contentDigest` wins; none → 2001.
   *
   * A publisher, and a node that fetched code when the member that served it says so (the first
   * ANNOUNCING_FETCHERS of each digest it serves), announce themselves as providers 5–10 s later,
   * what is due in one batch (provider-announcer.ts), so code outlives its publisher and is found in
   * O(log N) hops; the member scan above stays the last resort.
   */
  async fetchCode(tenant: string, short: string, version: number, contentDigest: string): Promise<string> {
    const { node } = this.c
    const fn = await this.c.replica.localVersion(tenant, short, version)
    const tried = new Set<string>()
    const attempt = async (peerId: string): Promise<string | undefined> => {
      if (tried.has(peerId) || peerId === node.peerId) return undefined
      tried.add(peerId)
      try {
        const answer = await node.request(peerId, CODE_PROTOCOL, { tenant_id: tenant, rufid_short: short, version, content_digest: contentDigest }, 5_000) as { source_code?: unknown; announce?: unknown }
        if (typeof answer.source_code !== 'string' || fn === undefined) return undefined
        const max = this.c.functions.maxSourceBytes
        if (max !== undefined && !fitsUtf8Bytes(answer.source_code, max)) {
          this.log.warn({ peer_id: peerId, rufid_short: short, chars: answer.source_code.length, max_source_bytes: max }, 'provider served code longer than registry.max_source_bytes: refused unhashed')
          return undefined
        }
        const digest = computeRufid({ ...fn, source_code: answer.source_code }).content_digest
        if (digest !== contentDigest) {
          this.log.warn({ peer_id: peerId, rufid_short: short, expected: contentDigest, got: digest }, 'provider served code that does not match its digest: refused')
          return undefined
        }
        // this node holds it now (the caller stores it): a provider when the server says so (a
        // member without the rule says nothing: announce, as before)
        if (answer.announce !== false) this.announceFetched(contentDigest)
        return answer.source_code
      } catch (err) {
        this.log.debug({ peer_id: peerId, err }, 'code fetch failed')
        return undefined
      }
    }
    const holder = this.holders.get(contentDigest)
    if (holder !== undefined && node.member(holder) !== undefined) {
      const code = await attempt(holder)
      if (code !== undefined) return code
    }
    for await (const provider of node.providers(contentDigest, { timeoutMs: 2_000 })) {
      const code = await attempt(provider.peerId)
      if (code !== undefined) return code
    }
    // then every other member, MEMBER_WAVE at a time: the first code that matches wins; then the
    // members this node verified before and is not connected to now (in its DHT routing table: a
    // partition that just healed, a member being dialled again by the keeper), each dialled and
    // proven first. Connected members alone answered 2001 while the only live holder was one whose
    // connection was down for a moment (found by federation-faults after a partition healed)
    const connected = new Set(node.members().map((m) => m.peerId))
    const known = node.routingTable().verified.filter((p) => !connected.has(p)).sort()
    const rest = [...[...connected].sort(), ...known].filter((p) => !tried.has(p))
    for (let i = 0; i < rest.length; i += MEMBER_WAVE) {
      const code = await firstFound(rest.slice(i, i + MEMBER_WAVE).map(attempt))
      if (code !== undefined) return code
    }
    throw new SvcError('FEDERATION_UNREACHABLE', `no reachable provider holds ${short} v${version}`, { details: { rufid_short: short, content_digest: contentDigest, tried: [...tried] } })
  }

  /**
   * The connected members that say they hold a version's code, asked MEMBER_WAVE at a time (a
   * probe each, 2 s at most) until a wave names one. Only for discovery up to k nodes: past k
   * fetchers make provider records, and asking every member is the walk those records avoid.
   */
  private async membersHolding(tenant: string, short: string, version: number, contentDigest: string): Promise<FederationMember[]> {
    const { node } = this.c
    const members = node.members().sort((x, y) => x.peerId.localeCompare(y.peerId))
    for (let i = 0; i < members.length; i += MEMBER_WAVE) {
      const wave = members.slice(i, i + MEMBER_WAVE)
      const holds = await Promise.all(wave.map(async (m) => {
        try {
          const answer = await node.request(m.peerId, CODE_PROTOCOL, { tenant_id: tenant, rufid_short: short, version, content_digest: contentDigest, probe: true } satisfies CodeRequest, 2_000) as { holds?: unknown; source_code?: unknown }
          return answer.holds === true || typeof answer.source_code === 'string'
        } catch {
          return false
        }
      }))
      const found = wave.filter((_, j) => holds[j])
      if (found.length > 0) return found
    }
    return []
  }

  /** FederationPort.discover: the versions of a RUFID the caller may see, and the nodes that hold its code. */
  async discover(principal: Principal, rufid: string): Promise<FederatedDiscovery> {
    const { node, functions, replica, metrics } = this.c
    try {
      const target = functions.target(principal, rufid)
      const lineage = await functions.lineage(principal, target)
      const entries = lineage.entries.filter((e) => e.rufid_short === target.short && (target.version === undefined || e.version === target.version))
      const digest = entries[0]?.content_digest ?? null
      const nodes: FederatedDiscovery['nodes'] = []
      if (digest) {
        const local = await replica.localVersion(principal.tenant_id, target.short, entries[entries.length - 1]!.version)
        if (local && local.source_code !== '') nodes.push({ node_id: node.peerId, endpoint: node.self.endpoint, source: 'self' })
        for (const p of await node.findProviders(digest, { timeoutMs: 2_000 })) {
          nodes.push({ node_id: p.peerId, endpoint: p.registration.endpoint, source: 'dht' })
        }
        // the member whose signed change added the content holds it, provider record or not yet
        const origin = this.holders.get(digest)
        const member = origin === undefined ? undefined : node.member(origin)
        if (member !== undefined && !nodes.some((n) => n.node_id === member.peerId)) {
          nodes.push({ node_id: member.peerId, endpoint: member.registration.endpoint, source: 'catalog' })
        }
        // up to k nodes the members that fetched code make no provider records (see
        // ANNOUNCE_PROVIDERS_ABOVE): once its publisher left, nothing above names the members that
        // hold it. Ask them (whether they hold it, not for the code)
        if (nodes.length === 0 && !this.recording) {
          const version = entries[entries.length - 1]!.version
          for (const holder of await this.membersHolding(principal.tenant_id, target.short, version, digest)) {
            nodes.push({ node_id: holder.peerId, endpoint: holder.registration.endpoint, source: 'member' })
          }
        }
      }
      metrics?.federationDiscoveryRequests.inc({ result: nodes.length ? 'found' : 'not_found' })
      return {
        rufid, rufid_short: target.short, content_digest: digest, function_name: lineage.function_name,
        versions: entries.filter((e) => e.deleted_at === undefined).map((e) => `v${e.version}`), nodes,
      }
    } catch (err) {
      metrics?.federationDiscoveryRequests.inc({ result: 'error' })
      throw err
    }
  }
}
