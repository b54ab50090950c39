import type { FederationLogger } from './logger.js'

/** Members announce where they listen on this topic (signed by gossipsub; members only, like every topic). */
export const PRESENCE_TOPIC = 'svc/presence/1'
/** a presence announcement carries at most this many addresses, each at most this long */
const MAX_PRESENCE_ADDRS = 8
const MAX_ADDR_CHARS = 256

export interface MemberKeeperInit {
  /** the bootstrap multiaddrs (with `/p2p/<peerId>`): redialled whenever they are not members */
  bootstrap: readonly string[]
  /** how often the keeper looks for members to (re)dial (default 2 s, with ±25 % jitter) */
  intervalMs?: number
  /** first retry after a failed dial; doubles per failure up to `maxBackoffMs` (default 1 s) */
  minBackoffMs?: number
  /** the longest wait between two dials of one peer (default 60 s) */
  maxBackoffMs?: number
  /** a non-bootstrap peer not seen as a member for this long is forgotten (default 1 h) */
  forgetAfterMs?: number
  /**
   * peers learnt from members (not the bootstrap list) are dialled only while this node has fewer
   * members than this (default 64): past it, the DHT and gossip reach the rest
   */
  targetMembers?: number
  /** how often a node repeats its presence announcement (default 60 s; 0: only when it joins) */
  presenceIntervalMs?: number
  /**
   * a member's presence announcements closer together than this are ignored (not delivered, not
   * forwarded, no penalty: gossipsub's 'ignore'); default 10 s
   */
  presenceMinIntervalMs?: number
  /** at most this many peers are remembered (default 10,000) */
  maxKnown?: number
  /** at most this many dials at once (default 4) */
  concurrency?: number
}

/** What the keeper needs of the node (FederationNode has it). */
export interface KeptNode {
  readonly peerId: string
  members(): Array<{ peerId: string }>
  isDenied(peerId: string): boolean
  multiaddrs(): string[]
  dial(addr: string): Promise<void>
  dialPeer(peerId: string): Promise<void>
  ensureMember(peerId: string): Promise<unknown>
  onMember(listener: (event: 'joined' | 'left', member: { peerId: string }) => void): () => void
  subscribe(topic: string, handler: (payload: unknown, origin: { peerId: string }) => void, validate?: (payload: unknown, publisher: { peerId: string }) => 'accept' | 'reject' | 'ignore', addressesOf?: (payload: unknown) => readonly string[]): void
  publish(topic: string, payload: unknown): Promise<void>
}

interface KnownPeer {
  /** dialable addresses with /p2p/ (bootstrap entries, presence announcements); empty: by PeerId */
  addrs: string[]
  bootstrap: boolean
  failures: number
  /** not dialled before this time (ms) */
  nextAt: number
  /** when it was last a member or announced itself (ms) */
  lastSeen: number
}

interface Presence {
  addrs: string[]
}

function presenceOf(payload: unknown): Presence | undefined {
  const p = payload as Partial<Presence> | null
  if (p === null || typeof p !== 'object' || !Array.isArray(p.addrs) || p.addrs.length > MAX_PRESENCE_ADDRS) return undefined
  if (!p.addrs.every((a) => typeof a === 'string' && a.length <= MAX_ADDR_CHARS && a.startsWith('/'))) return undefined
  return { addrs: p.addrs }
}

const peerOf = (addr: string): string | undefined => /\/p2p\/([^/]+)$/.exec(addr)?.[1]

/**
 * Keeps a node in its federation. libp2p's bootstrap module dials its list once; a dial refused
 * (libp2p limits inbound connections per host per second, and every peer of a loopback cluster is
 * one host), an exchange that timed out on a loaded machine, or a member that restarts would
 * otherwise leave two members apart for good. The keeper remembers the bootstrap peers, every
 * member it has seen, and the members that announce themselves on `svc/presence/1`, and redials
 * those that are not members, each with its own exponential back-off and jitter, a few at a time.
 * A refused peer is not dialled while its refusal lasts (the connection gater would refuse it
 * anyway). A fresh member announces its listen addresses once it has a member, so members that
 * were not on its bootstrap list connect to it; a member repeats that every `presenceIntervalMs`,
 * which also rejoins the two sides of a healed partition.
 */
export class MemberKeeper {
  private readonly known = new Map<string, KnownPeer>()
  private readonly dialling = new Set<string>()
  private timer: NodeJS.Timeout | undefined
  private presenceTimer: NodeJS.Timeout | undefined
  private readonly offs: Array<() => void> = []
  private running = false
  private announced = false
  private readonly intervalMs: number
  private readonly minBackoffMs: number
  private readonly maxBackoffMs: number
  private readonly forgetAfterMs: number
  private readonly targetMembers: number
  private readonly presenceIntervalMs: number
  private readonly maxKnown: number
  private readonly concurrency: number
  private readonly presenceMinIntervalMs: number
  /** publisher → when its last presence announcement was accepted (ms) */
  private readonly lastPresence = new Map<string, number>()
  /** presence announcements ignored because their publisher announced too often */
  presenceIgnored = 0

  constructor(init: MemberKeeperInit, private readonly c: { node: KeptNode; logger: FederationLogger }) {
    this.intervalMs = init.intervalMs ?? 2_000
    this.minBackoffMs = init.minBackoffMs ?? 1_000
    this.maxBackoffMs = init.maxBackoffMs ?? 60_000
    this.forgetAfterMs = init.forgetAfterMs ?? 3_600_000
    this.targetMembers = init.targetMembers ?? 64
    this.presenceIntervalMs = init.presenceIntervalMs ?? 60_000
    this.maxKnown = init.maxKnown ?? 10_000
    this.concurrency = init.concurrency ?? 4
    this.presenceMinIntervalMs = init.presenceMinIntervalMs ?? 10_000
    const now = Date.now()
    for (const addr of init.bootstrap) {
      const id = peerOf(addr)
      if (id === undefined) continue
      const known = this.known.get(id)
      if (known) known.addrs.push(addr)
      else this.known.set(id, { addrs: [addr], bootstrap: true, failures: 0, nextAt: now + this.intervalMs, lastSeen: now })
    }
  }

  /** Peers the keeper would redial (for tests and status): PeerId → consecutive failed dials. */
  knownPeers(): Map<string, number> {
    return new Map([...this.known].map(([id, k]) => [id, k.failures]))
  }

  start(): void {
    if (this.running) return
    this.running = true
    const { node } = this.c
    node.subscribe(PRESENCE_TOPIC, (payload, origin) => {
      const presence = presenceOf(payload)
      if (presence === undefined || origin.peerId === node.peerId) return
      const addrs = presence.addrs.map((a) => (a.includes('/p2p/') ? a : `${a}/p2p/${origin.peerId}`)).filter((a) => peerOf(a) === origin.peerId)
      this.remember(origin.peerId, addrs)
    }, (payload, publisher) => {
      if (presenceOf(payload) === undefined) return 'reject'
      return this.admitPresence(publisher.peerId)
    }, (payload) => presenceOf(payload)?.addrs ?? []) // a fresh node is dialled at the addresses it announces, not looked up in the DHT
    this.offs.push(node.onMember((event, member) => {
      if (event === 'joined') {
        this.remember(member.peerId, [])
        const k = this.known.get(member.peerId)
        if (k) k.failures = 0
        if (!this.announced) {
          this.announced = true
          // once now and once more when the gossip mesh has formed around the new member
          for (const delay of [1_000, 5_000]) this.later(delay, () => this.announce())
        }
      } else {
        // a member that left (a restart, a dropped connection): try it again soon
        const k = this.known.get(member.peerId)
        if (k) k.nextAt = Date.now() + this.jitter(this.minBackoffMs)
      }
    }))
    this.schedule()
    if (this.presenceIntervalMs > 0) {
      this.presenceTimer = setInterval(() => void this.announce(), this.presenceIntervalMs)
      this.presenceTimer.unref()
    }
  }

  stop(): void {
    this.running = false
    if (this.timer) clearTimeout(this.timer)
    if (this.presenceTimer) clearInterval(this.presenceTimer)
    this.timer = undefined
    this.presenceTimer = undefined
    for (const off of this.offs.splice(0)) off()
  }

  /**
   * One presence announcement per publisher per `presenceMinIntervalMs`: more are ignored (a flood
   * of a genuine member is not forwarded; the member is not penalized or disconnected).
   */
  private admitPresence(peerId: string): 'accept' | 'ignore' {
    const now = Date.now()
    const last = this.lastPresence.get(peerId)
    if (last !== undefined && now - last < this.presenceMinIntervalMs) {
      this.presenceIgnored++
      if (this.presenceIgnored % 100 === 1) this.c.logger.debug({ peer_id: peerId, ignored: this.presenceIgnored }, 'presence announcement too soon: ignored')
      return 'ignore'
    }
    this.lastPresence.delete(peerId)
    this.lastPresence.set(peerId, now)
    // bounded: the oldest entries go (an entry older than the interval limits nothing)
    for (const [id, at] of this.lastPresence) {
      if (this.lastPresence.size <= this.maxKnown && now - at < this.presenceMinIntervalMs) break
      this.lastPresence.delete(id)
    }
    return 'accept'
  }

  private later(ms: number, fn: () => Promise<void> | void): void {
    const t = setTimeout(() => {
      if (this.running) void fn()
    }, ms)
    t.unref()
  }

  private jitter(ms: number): number {
    return Math.round(ms * (0.75 + Math.random() * 0.5))
  }

  private schedule(): void {
    if (!this.running) return
    this.timer = setTimeout(() => {
      this.tick()
      this.schedule()
    }, this.jitter(this.intervalMs))
    this.timer.unref()
  }

  private remember(peerId: string, addrs: string[]): void {
    if (peerId === this.c.node.peerId) return
    const now = Date.now()
    const known = this.known.get(peerId)
    if (known) {
      known.lastSeen = now
      for (const a of addrs) if (!known.addrs.includes(a)) known.addrs.push(a)
      known.addrs.splice(0, Math.max(0, known.addrs.length - MAX_PRESENCE_ADDRS))
      return
    }
    if (this.known.size >= this.maxKnown) {
      // forget the peer seen longest ago that is not on the bootstrap list
      let oldest: [string, KnownPeer] | undefined
      for (const e of this.known) if (!e[1].bootstrap && (oldest === undefined || e[1].lastSeen < oldest[1].lastSeen)) oldest = e
      if (oldest === undefined) return
      this.known.delete(oldest[0])
    }
    this.known.set(peerId, { addrs: addrs.slice(0, MAX_PRESENCE_ADDRS), bootstrap: false, failures: 0, nextAt: now, lastSeen: now })
  }

  private async announce(): Promise<void> {
    const { node } = this.c
    if (node.members().length === 0) return
    await node.publish(PRESENCE_TOPIC, { addrs: node.multiaddrs().slice(0, MAX_PRESENCE_ADDRS) }).catch((err: unknown) => this.c.logger.debug({ err }, 'presence announcement failed'))
  }

  /**
   * Dials, a few at a time, the known peers that are not members and whose back-off has ended
   * (those due longest first). One pass over the known peers; nothing is copied or sorted unless a
   * peer is due, which in a formed federation none is.
   */
  private tick(): void {
    const { node } = this.c
    const now = Date.now()
    const members = new Set(node.members().map((m) => m.peerId))
    let due: Array<[string, KnownPeer]> | undefined
    for (const [id, k] of this.known) {
      if (members.has(id)) {
        k.lastSeen = now
        k.failures = 0
        continue
      }
      // a refused peer is forgotten (a bootstrap peer is tried again once its refusal ends)
      if (!k.bootstrap && (now - k.lastSeen > this.forgetAfterMs || node.isDenied(id))) {
        this.known.delete(id)
        continue
      }
      if (!this.dialling.has(id) && k.nextAt <= now && !node.isDenied(id) && (k.bootstrap || members.size < this.targetMembers)) (due ??= []).push([id, k])
    }
    if (due === undefined) return
    due.sort((a, b) => a[1].nextAt - b[1].nextAt)
    for (const [id, k] of due) {
      if (this.dialling.size >= this.concurrency) break
      this.dialling.add(id)
      void this.redial(id, k).finally(() => this.dialling.delete(id))
    }
  }

  private async redial(peerId: string, k: KnownPeer): Promise<void> {
    const { node } = this.c
    let ok = false
    try {
      if (k.addrs.length > 0) {
        for (const addr of k.addrs) {
          try {
            await node.dial(addr)
            break
          } catch (err) {
            if (addr === k.addrs[k.addrs.length - 1]) throw err
          }
        }
      } else {
        await node.dialPeer(peerId)
      }
      ok = (await node.ensureMember(peerId)) !== undefined
    } catch (err) {
      this.c.logger.debug({ peer_id: peerId, err }, 'member redial failed')
    }
    if (ok) {
      k.failures = 0
      k.lastSeen = Date.now()
      return
    }
    k.failures++
    k.nextAt = Date.now() + this.jitter(Math.min(this.maxBackoffMs, this.minBackoffMs * 2 ** (k.failures - 1)))
  }
}
