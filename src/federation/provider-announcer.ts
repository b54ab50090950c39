import type { FederationLogger } from './logger.js'

export interface ProviderAnnouncerInit {
  /** a fetched digest is announced this long after the fetch (default 5 s) plus up to as much again of jitter */
  delayMs?: number
  /** at most this many digests wait for their announcement; the oldest are dropped first (default 10,000) */
  maxPending?: number
  /** digests announced already are remembered (not announced twice; default 100,000) */
  maxAnnounced?: number
  /** one batch's time limit, per member (or per DHT walk past k nodes; default 10 s) */
  timeoutMs?: number
  /** at most this many digests are announced in one batch (default 1,000) */
  maxBatch?: number
}

export interface ProviderAnnouncerComponents {
  /**
   * announces this node as a provider of each of `digests` (DHT provider records:
   * `FederationNode.provideMany`) and resolves with those whose records were made
   */
  provideMany(digests: string[], timeoutMs: number): Promise<{ announced: string[] }>
  logger: FederationLogger
}

/**
 * Makes the nodes that hold a function's code (its publisher, and past 20 members the first nodes
 * that fetched it from a holder: code-provider.ts) its providers, so that code outlives its
 * publisher and is found in O(log N) DHT hops rather than by asking members one by one. (The
 * publisher announced at once until 2026-11-25: at 20 members that doubled the federation's CPU
 * per publish, during the publish's own gossip.)
 *
 * Announcing at the moment of the fetch costs what the issue measured (5 nodes: publish → resolvable
 * everywhere p99 113 → 934 ms): a publish makes every node that runs the function fetch it within
 * the same few hundred ms, and each record made by kad-dht's `provide` is a DHT query (a FIND_NODE
 * walk, then a stream and a message to each of the k closest members) competing with the publish's
 * own gossip, sync and fetches. So a digest waits `delayMs` plus jitter (the burst after a publish
 * is over by then, and the nodes' announcements spread out), and every digest due is announced in
 * one batch (`FederationNode.provideMany`): up to k = 20 nodes, one stream per member carrying all
 * the batch's records and no walk; past k, a walk per digest. A digest is announced once per run;
 * kad-dht's reprovider refreshes the record (every 24 h of its 48 h validity) while the node holds
 * the code, and the record expires when the node is gone. At start the node announces again what
 * it published, and past 20 members all the code it holds (CodeProvider.provideAll).
 */
export class ProviderAnnouncer {
  private readonly pending = new Map<string, number>() // digest → when due (ms)
  private readonly announced = new Set<string>()
  /** the batch being announced (neither waiting nor announced yet: not queued again meanwhile) */
  private inFlight: ReadonlySet<string> = new Set()
  private timer: NodeJS.Timeout | undefined
  private draining: Promise<void> | undefined
  private running = false
  private readonly delayMs: number
  private readonly maxPending: number
  private readonly maxAnnounced: number
  private readonly timeoutMs: number
  private readonly maxBatch: number
  /** announcements made (digests; for tests and metrics) */
  count = 0
  /** batches announced (for tests and metrics) */
  batches = 0

  constructor(init: ProviderAnnouncerInit, private readonly c: ProviderAnnouncerComponents) {
    this.delayMs = init.delayMs ?? 5_000
    this.maxPending = init.maxPending ?? 10_000
    this.maxAnnounced = init.maxAnnounced ?? 100_000
    this.timeoutMs = init.timeoutMs ?? 10_000
    this.maxBatch = Math.max(1, init.maxBatch ?? 1_000)
  }

  start(): void {
    this.running = true
  }

  async stop(): Promise<void> {
    this.running = false
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
    this.pending.clear()
    await this.draining
  }

  /** Whether `digest` waits for its announcement or was announced in this run. */
  has(digest: string): boolean {
    return this.pending.has(digest) || this.inFlight.has(digest) || this.announced.has(digest)
  }

  /** How many digests wait for their announcement. */
  get waiting(): number {
    return this.pending.size
  }

  /** This node now holds the content with `digest` (it fetched it): announce it, later. */
  enqueue(digest: string): void {
    if (!this.running || this.has(digest)) return
    if (this.pending.size >= this.maxPending) this.pending.delete(this.pending.keys().next().value!)
    this.pending.set(digest, Date.now() + this.delayMs + Math.random() * this.delayMs)
    this.arm()
  }

  private arm(): void {
    if (this.timer !== undefined || this.draining !== undefined || !this.running) return
    let next = Infinity
    for (const due of this.pending.values()) next = Math.min(next, due)
    if (next === Infinity) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.draining = this.drain().finally(() => {
        this.draining = undefined
        this.arm()
      })
    }, Math.max(0, next - Date.now()))
    this.timer.unref()
  }

  /** Announces every digest that is due, in batches of at most `maxBatch`. */
  private async drain(): Promise<void> {
    for (;;) {
      if (!this.running) return
      const now = Date.now()
      const due: string[] = []
      for (const [digest, at] of this.pending) {
        if (at > now) continue
        due.push(digest)
        if (due.length >= this.maxBatch) break
      }
      if (due.length === 0) return
      for (const d of due) this.pending.delete(d)
      this.inFlight = new Set(due)
      try {
        const { announced } = await this.c.provideMany(due, this.timeoutMs)
        this.batches++
        this.count += announced.length
        for (const d of announced) {
          if (this.announced.size >= this.maxAnnounced) this.announced.delete(this.announced.values().next().value!)
          this.announced.add(d)
        }
        if (announced.length < due.length) this.c.logger.debug({ digests: due.length, announced: announced.length }, 'provider announcements failed')
      } catch (err) {
        this.c.logger.debug({ err, digests: due.length }, 'provider announcement failed')
      } finally {
        this.inFlight = new Set()
      }
    }
  }
}
