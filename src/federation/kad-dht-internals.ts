import type { AbortOptions, PeerId, Stream } from '@libp2p/interface'
import { peerIdFromMultihash } from '@libp2p/peer-id'
import { pbStream } from '@libp2p/utils'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import type { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import type { Uint8ArrayList } from 'uint8arraylist'

/**
 * The one place this project reaches into @libp2p/kad-dht (16.x) past its public API: to write a
 * batch of provider records to a member over one stream (`FederationNode.provideMany`), to read
 * the records a node already holds, and to ask a member for its records of a key without a walk
 * (`FederationNode.providers`).
 *
 * Why: the public `contentRouting.provide(cid)` takes one key and always walks the DHT (a FIND_NODE
 * query for the k closest peers), then opens one stream per closest peer for its one ADD_PROVIDER
 * message, and writes a peer-store entry per stream on both sides. In a federation of at most k
 * nodes the k closest peers to any key are all the members, so the walk finds nothing new, and a
 * batch of N records costs N walks and N × members streams where members streams would do: kad-dht's
 * own inbound handler (rpc/index.js `onIncomingStream`) reads messages in a loop on one stream.
 *
 * What it reaches into (each checked for its shape; when one is missing, say after an upgrade,
 * `kadDhtBatchWriter` answers undefined and the caller falls back to `contentRouting.provide`):
 * - the module `dist/src/message/dht.js` next to the package's entry point, for kad-dht's protobuf
 *   `Message` codec and `MessageType` (the package exports its index only), so the messages are
 *   byte for byte what `provide` sends;
 * - the service instance's `providers` (`Providers.addProvider(cid, peerId)`): the record of this
 *   node as a provider in its own store, which `provide` writes first and kad-dht's reprovider
 *   reads (every node's own records under `<datastorePrefix>/provider`) to refresh them before
 *   they expire (48 h);
 * - the instance's `k` (its bucket size, 20 unless configured);
 * - `providers.getProviders(cid)`: the provider records this node holds for a key (what kad-dht's
 *   own `findProviders` yields first, before it walks), so that a small federation's lookups can
 *   answer from them (`FederationNode.providers`).
 */

/** kad-dht's bucket size when the instance does not say (@libp2p/kad-dht KBUCKET_SIZE) */
export const KAD_DHT_K = 20

interface DhtMessage {
  type: string
  key?: Uint8Array
  providers?: Array<{ id: Uint8Array; multiaddrs: Uint8Array[] }>
  closer?: unknown[]
}
interface DhtCodec {
  encode(message: DhtMessage): Uint8Array
  decode(bytes: Uint8Array | Uint8ArrayList): DhtMessage
}
interface MessageModule {
  Message: DhtCodec
  /** protons' string enum: { ADD_PROVIDER: 'ADD_PROVIDER', … } */
  MessageType: { ADD_PROVIDER: string; GET_PROVIDERS: string; PING: string }
}

/** What a batch of provider records needs from kad-dht. */
export interface KadDhtBatchWriter {
  /** the DHT's bucket size: up to this many nodes, the k closest peers to any key are every member */
  readonly k: number
  /** Records `self` as a provider of `cid` in this node's own provider store (what the reprovider refreshes). */
  recordSelf(cid: CID, self: PeerId, options?: AbortOptions): Promise<void>
  /**
   * Writes one ADD_PROVIDER message per key on `stream` (an outbound stream of the DHT protocol),
   * then a PING, and waits for the PING's echo: the remote handles a stream's messages one after
   * the other, so the echo says it has stored every record (a write alone says only that the
   * bytes left; `provide` knows no more), and a remote that failed on one aborts the stream
   * instead, which rejects. Closes the stream.
   */
  writeRecords(stream: Stream, keys: readonly CID[], provider: { id: PeerId; multiaddrs: readonly Multiaddr[] }, options: AbortOptions): Promise<void>
  /** The providers of `cid` in this node's own store (records other nodes wrote to it, and its own). */
  storedProviders(cid: CID, options?: AbortOptions): Promise<PeerId[]>
  /**
   * Asks the remote of `stream` (an outbound stream of the DHT protocol) for its records of `cid`:
   * one GET_PROVIDERS message, as a walk sends each peer it asks, and its answer's providers (the
   * closer peers it also answers with are left: no walk follows). Closes the stream.
   */
  askRecords(stream: Stream, cid: CID, options: AbortOptions): Promise<Array<{ id: PeerId; multiaddrs: Multiaddr[] }>>
  /** Stores `provider` as a provider of `cid` in this node's own store (as an ADD_PROVIDER from it would). */
  storeRecord(cid: CID, provider: PeerId, options?: AbortOptions): Promise<void>
}

let messageModule: Promise<MessageModule | undefined> | undefined

function loadMessageModule(): Promise<MessageModule | undefined> {
  messageModule ??= (async () => {
    try {
      const entry = import.meta.resolve('@libp2p/kad-dht')
      const mod = await import(new URL('./message/dht.js', entry).href) as Partial<MessageModule>
      const types = mod.MessageType as Partial<MessageModule['MessageType']> | undefined
      if (typeof mod.Message?.encode !== 'function' || typeof mod.Message.decode !== 'function') return undefined
      if (typeof types?.ADD_PROVIDER !== 'string' || typeof types.GET_PROVIDERS !== 'string' || typeof types.PING !== 'string') return undefined
      return mod as MessageModule
    } catch {
      return undefined
    }
  })()
  return messageModule
}

/** The batch writer over a kad-dht service instance, or undefined when its internals are not what this adapter knows. */
export async function kadDhtBatchWriter(dht: unknown): Promise<KadDhtBatchWriter | undefined> {
  const instance = dht as { providers?: { addProvider?: unknown; getProviders?: unknown }; k?: unknown } | undefined
  const providers = instance?.providers
  if (typeof providers?.addProvider !== 'function' || typeof providers.getProviders !== 'function') return undefined
  const mod = await loadMessageModule()
  if (mod === undefined) return undefined
  const { Message, MessageType } = mod
  const addProvider = providers.addProvider as (cid: CID, peer: PeerId, options?: AbortOptions) => Promise<void>
  const getProviders = providers.getProviders as (cid: CID, options?: AbortOptions) => Promise<PeerId[]>
  return {
    k: typeof instance!.k === 'number' && instance!.k > 0 ? instance!.k : KAD_DHT_K,
    recordSelf: (cid, self, options) => addProvider.call(providers, cid, self, options),
    storedProviders: (cid, options) => getProviders.call(providers, cid, options),
    storeRecord: (cid, provider, options) => addProvider.call(providers, cid, provider, options),
    async askRecords(stream, cid, options) {
      const pb = pbStream(stream)
      await pb.write({ type: MessageType.GET_PROVIDERS, key: cid.multihash.bytes }, Message, options)
      const answer = await pb.read(Message, options)
      await stream.close(options)
      if (answer.type !== MessageType.GET_PROVIDERS) throw new Error(`unexpected DHT answer to GET_PROVIDERS: type ${answer.type}`)
      const out: Array<{ id: PeerId; multiaddrs: Multiaddr[] }> = []
      for (const p of answer.providers ?? []) {
        try {
          out.push({ id: peerIdFromMultihash(Digest.decode(p.id)), multiaddrs: p.multiaddrs.map((bytes) => multiaddr(bytes)) })
        } catch {
          // not a PeerId, or an address that does not parse: skipped, as kad-dht skips them
        }
      }
      return out
    },
    async writeRecords(stream, keys, provider, options) {
      const peer = { id: provider.id.toMultihash().bytes, multiaddrs: provider.multiaddrs.map((ma) => ma.bytes) }
      const messages: DhtMessage[] = keys.map((cid) => ({ type: MessageType.ADD_PROVIDER, key: cid.multihash.bytes, providers: [peer] }))
      messages.push({ type: MessageType.PING })
      const pb = pbStream(stream)
      await pb.writeV(messages, Message, options)
      const echo = await pb.read(Message, options)
      if (echo.type !== MessageType.PING) throw new Error(`unexpected DHT answer to a provider batch: type ${echo.type}`)
      await stream.close(options)
    },
  }
}
