import { StreamState, YamuxStream } from '@libp2p/yamux/stream'
import type { FederationLogger } from './logger.js'

/**
 * The one place this project changes @libp2p/yamux (8.x): when a stream's receiver grants its
 * sender more window.
 *
 * Yamux is flow-controlled per stream: a sender may have at most the receiver's window (256 KiB to
 * start) in flight, and the receiver grants more with WINDOW_UPDATE frames. js-yamux sends one after
 * EVERY data frame it receives, so each gossiped change (~1 KiB, received by a member about D + 1
 * times) made the receiver write a frame back: Noise-encrypted, a socket write, and on the other
 * side a read, a decryption and a decode, for 12 bytes that grant nothing the sender lacked. In a
 * 20-node federation's CPU profile under churn `sendWindowUpdate` alone was 7 % of the daemons' busy
 * time. go-yamux, rust-yamux and py-libp2p grant window once at least half of it was consumed; this
 * does the same: an update whose delta is less than half the receive window is held until more data
 * is consumed (the sender still has more than half a window to send in, so it never waits on one),
 * and one that carries a flag (SYN/ACK) goes at once, as before.
 *
 * Applied once per process, to yamux's stream class (every yamux stream of this process; members of
 * another build or another implementation interoperate: a window update is credit, and its timing
 * is the receiver's choice). The replacement is the original method with the threshold added; it is
 * installed only when the original is the one it was written against (its source names the fields
 * it uses), otherwise yamux is left as it is and a warning says so.
 */
export function holdSmallWindowUpdates(log?: FederationLogger): boolean {
  const proto = YamuxStream.prototype as unknown as Record<string, unknown> & { [PATCHED]?: true }
  if (proto[PATCHED] === true) return true
  const original = proto.sendWindowUpdate
  const source = typeof original === 'function' ? String(original) : ''
  const known = ['recvWindowCapacity', 'recvWindow', 'maxStreamWindowSize', 'epochStart', 'getSendFlags', 'getRTT', 'sendFrame', 'Paused']
  if (!known.every((name) => source.includes(name)) || StreamState?.Paused === undefined) {
    log?.warn({ module: '@libp2p/yamux' }, 'yamux is not the version whose window updates this node holds: it sends one per data frame')
    return false
  }
  proto.sendWindowUpdate = function sendWindowUpdate(this: WindowedStream): void {
    if (this.state === StreamState.Paused) {
      // we want no more data for now: the epoch starts when we resume
      this.epochStart = Date.now()
      return
    }
    const flags = this.getSendFlags()
    // data processed within 4 round trips of the last update: (up to) double the window
    const now = Date.now()
    const rtt = this.getRTT()
    if (flags === 0 && rtt > -1 && now - this.epochStart <= rtt * 4) this.recvWindow = Math.min(this.recvWindow * 2, this.maxStreamWindowSize)
    if (this.recvWindowCapacity >= this.recvWindow && flags === 0) return
    const delta = this.recvWindow - this.recvWindowCapacity
    // the sender still has more than half a window to send in: no frame for this yet
    if (flags === 0 && delta < this.recvWindow / 2) return
    this.recvWindowCapacity = this.recvWindow
    this.epochStart = now
    this.sendFrame({ type: WINDOW_UPDATE, flag: flags, streamID: this.streamId, length: delta })
  }
  proto[PATCHED] = true
  return true
}

const PATCHED = Symbol.for('svc-node.yamux-window-updates')
/** yamux frame type of a window update (the yamux spec: data 0, window update 1, ping 2, go away 3) */
const WINDOW_UPDATE = 1

/** The fields of a yamux stream the window update reads and writes (private in yamux's types). */
interface WindowedStream {
  state: StreamState
  streamId: number
  recvWindow: number
  recvWindowCapacity: number
  maxStreamWindowSize: number
  epochStart: number
  getSendFlags(): number
  getRTT(): number
  sendFrame(header: { type: number; flag: number; streamID: number; length: number }): boolean
}
