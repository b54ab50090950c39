import type { AbortOptions, Connection, PeerId, Stream, StreamMiddleware, Topology } from '@libp2p/interface'

/**
 * The one place every libp2p protocol of a federation node passes through before a peer is a
 * member. A libp2p service (listed first among the node's services) that wraps the registrar:
 *
 * - every stream, inbound (before its handler runs) and outbound (before `dialProtocol` or
 *   `newStream` returns it), of every protocol but the open ones (identify, ping, the membership
 *   exchange) waits for the peer's membership and is aborted unless the peer is a member. This is
 *   default-deny: it covers protocols registered later and protocols this node does not handle
 *   (the middleware chain runs for any negotiated protocol, in `libp2p/src/connection.ts`), so
 *   the DHT, pubsub and request/response handlers cannot be reached around it;
 * - topologies (how gossipsub adds a peer to its mesh and kad-dht to its routing table) are told
 *   of a peer only once it is a member.
 *
 * What "member" means, and how long a peer may take to prove it, is the caller's (`admit`).
 */
export interface MembershipGateInit {
  /** protocols a peer may use before it is a member */
  openProtocols: readonly string[]
  /**
   * true when `peer` is a member; otherwise a promise that settles once its membership exchange
   * has (true: verified) or has not (false: refused, bounded by the membership deadline)
   */
  admit(peer: PeerId): boolean | Promise<boolean>
}

/** The part of libp2p's registrar the gate wraps (`@libp2p/interface-internal` Registrar). */
export interface GatedRegistrar {
  getMiddleware(protocol: string): StreamMiddleware[]
  register(protocol: string, topology: Topology, options?: AbortOptions): Promise<string>
}

export class NotAMemberError extends Error {
  override readonly name = 'NotAMemberError'
}

export class MembershipGate {
  readonly [Symbol.toStringTag] = '@svc/membership-gate'
  private readonly open: ReadonlySet<string>

  constructor(components: { registrar: GatedRegistrar }, private readonly init: MembershipGateInit) {
    this.open = new Set(init.openProtocols)
    const registrar = components.registrar
    const getMiddleware = registrar.getMiddleware.bind(registrar)
    const register = registrar.register.bind(registrar)
    const gate: StreamMiddleware = async (stream: Stream, connection: Connection, next) => {
      if (await this.init.admit(connection.remotePeer)) {
        next(stream, connection)
        return
      }
      throw new NotAMemberError(`${connection.remotePeer.toString()} is not a federation member: ${stream.protocol ?? 'stream'} refused`)
    }
    // a fresh array each time: libp2p appends the handler to the array it gets (connection.ts)
    registrar.getMiddleware = (protocol: string): StreamMiddleware[] => {
      const rest = getMiddleware(protocol)
      return this.open.has(protocol) ? [...rest] : [gate, ...rest]
    }
    registrar.register = (protocol: string, topology: Topology, options?: AbortOptions): Promise<string> =>
      register(protocol, this.open.has(protocol) ? topology : this.gatedTopology(topology), options)
  }

  /** A topology whose `onConnect` runs once the peer is a member (and only if its connection is still open). */
  private gatedTopology(topology: Topology): Topology {
    const admit = this.init.admit
    return {
      get filter() {
        return topology.filter
      },
      get notifyOnLimitedConnection() {
        return topology.notifyOnLimitedConnection
      },
      onConnect(peer: PeerId, connection: Connection): void | Promise<void> {
        const admitted = admit(peer)
        if (admitted === true) return topology.onConnect?.(peer, connection)
        if (admitted === false) return
        void admitted.then(async (ok) => {
          if (ok && connection.status === 'open') await topology.onConnect?.(peer, connection)
        }).catch(() => undefined)
      },
      onDisconnect(peer: PeerId): void | Promise<void> {
        return topology.onDisconnect?.(peer)
      },
    }
  }
}

/** The gate as a libp2p service factory (`services: { gate: membershipGate({...}), … }`, listed first). */
export function membershipGate(init: MembershipGateInit): (components: { registrar: GatedRegistrar }) => MembershipGate {
  return (components) => new MembershipGate(components, init)
}
