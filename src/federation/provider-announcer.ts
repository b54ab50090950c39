import type { FederationLogger } from './logger.js'

export interface ProviderAnnouncerInit {
  /** a fetched digest is announced this long after the fetch (default 5 s) plus up to as much again of jitter */
  delayMs?: number
  /** at most this many digests wait for their announcement; the oldest are dropped first (default 10,000) */
  maxPending?: number
  /** digests announced already are remembered (not announced twice; default 100,000) */
  maxAnnounced?: number
  /** one announcement's time limit (default 10 s) */
  timeoutMs?: number
}

export interface ProviderAnnouncerComponents {
  /** announces this node as a provider of `digest` (a DHT ADD_PROVIDER to the closest members) */
  provide(digest: string, timeoutMs: number): Promise<void>
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
 * the same few hundred ms, and each fetch's ADD_PROVIDER is a DHT query (a FIND_NODE walk, then a
 * message to each of the k closest members) competing with the publish's own gossip, sync and
 * fetches. So a fetched digest waits `delayMs` plus jitter (the burst after a publish is over by
 * then, and the nodes' announcements spread out), and the queue is announced one digest at a time.
 * A digest is announced once per run; kad-dht's reprovider refreshes the record (every 24 h of its
 * 48 h validity) while the node holds the code, and the record expires when the node is gone. At
 * start the node announces again what it published, and past 20 members all the code it holds
 * (CodeProvider.provideAll).
 */
export class ProviderAnnouncer {
  private readonly pending = new Map<string, number>() // digest → when due (ms)
  private readonly announced = new Set<string>()
  private timer: NodeJS.Timeout | undefined
  private draining: Promise<void> | undefined
  private running = false
  private readonly delayMs: number
  private readonly maxPending: number
  private readonly maxAnnounced: number
  private readonly timeoutMs: number
  /** announcements made (for tests and metrics) */
  count = 0

  constructor(init: ProviderAnnouncerInit, private readonly c: ProviderAnnouncerComponents) {
    this.delayMs = init.delayMs ?? 5_000
    this.maxPending = init.maxPending ?? 10_000
    this.maxAnnounced = init.maxAnnounced ?? 100_000
    this.timeoutMs = init.timeoutMs ?? 10_000
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
    return this.pending.has(digest) || this.announced.has(digest)
  }

  /** How many digests wait for their announcement. */
  get waiting(): number {
    return this.pending.size
  }

  /** This node now holds the content with `digest` (it fetched it): announce it, later. */
  enqueue(digest: string): void {
    if (!this.running || this.announced.has(digest) || this.pending.has(digest)) return
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

  /** Announces the digests that are due, one at a time. */
  private async drain(): Promise<void> {
    for (;;) {
      if (!this.running) return
      const now = Date.now()
      const due = [...this.pending].find(([, at]) => at <= now)?.[0]
      if (due === undefined) return
      this.pending.delete(due)
      try {
        await this.c.provide(due, this.timeoutMs)
        this.count++
        if (this.announced.size >= this.maxAnnounced) this.announced.delete(this.announced.values().next().value!)
        this.announced.add(due)
      } catch (err) {
        this.c.logger.debug({ err, digest: due }, 'provider announcement failed')
      }
    }
  }
}
