// A yamux stream's receiver grants window once half of it is consumed, not after every data frame
// (src/federation/yamux-window.ts; issue 17: one window-update frame back per gossiped copy was 7 %
// of a 20-node federation's CPU). Two plain js-libp2p nodes (TCP, Noise, yamux) on loopback: the
// window updates a sender receives are counted while small messages and then a large transfer go
// over one stream, with yamux as it ships and with updates held.
import { noise } from '@chainsafe/libp2p-noise'
import { tcp } from '@libp2p/tcp'
import { lpStream } from '@libp2p/utils'
import { yamux } from '@libp2p/yamux'
import { YamuxStream } from '@libp2p/yamux/stream'
import { createLibp2p, type Libp2p } from 'libp2p'
import { createHash } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { holdSmallWindowUpdates } from '../../src/federation/yamux-window.js'

const PROTOCOL = '/svc-test/window/1.0.0'
const nodes: Libp2p[] = []
afterAll(async () => {
  for (const n of nodes) await n.stop()
})

async function plainNode(): Promise<Libp2p> {
  const node = await createLibp2p({
    addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
  })
  nodes.push(node)
  return node
}

/** The window updates the sender got, and what the receiver got, for `messages` sent over one stream. */
async function transfer(messages: Uint8Array[]): Promise<{ updates: number; received: string; sent: string }> {
  const receiver = await plainNode()
  const sender = await plainNode()
  type Frame = { header: { flag: number; length: number } }
  const proto = YamuxStream.prototype as unknown as { handleWindowUpdate(this: { direction: string }, frame: Frame): void }
  const handle = proto.handleWindowUpdate
  let updates = 0
  proto.handleWindowUpdate = function (frame) {
    // what the receiver granted the sender (the dialler's stream): no flag, some window
    if (this.direction === 'outbound' && frame.header.flag === 0 && frame.header.length > 0) updates++
    return handle.call(this, frame)
  }
  try {
    const received = createHash('sha256')
    const done = new Promise<void>((resolve, reject) => {
      void receiver.handle(PROTOCOL, async (stream) => {
        try {
          const lp = lpStream(stream, { maxDataLength: 4 * 1024 * 1024 })
          for (let i = 0; i < messages.length; i++) received.update((await lp.read()).subarray())
          await lp.write(new Uint8Array([1]))
          await stream.close()
          resolve()
        } catch (err) {
          reject(err as Error)
        }
      })
    })
    const stream = await sender.dialProtocol(receiver.getMultiaddrs()[0]!, PROTOCOL)
    const lp = lpStream(stream, { maxDataLength: 4 * 1024 * 1024 })
    const sent = createHash('sha256')
    for (const m of messages) {
      sent.update(m)
      await lp.write(m)
    }
    await lp.read() // the receiver read them all
    await done
    await stream.close()
    return { updates, received: received.digest('hex'), sent: sent.digest('hex') }
  } finally {
    proto.handleWindowUpdate = handle
  }
}

const small = (n: number): Uint8Array[] => Array.from({ length: n }, (_, i) => new Uint8Array(1024).fill(i % 251))

describe('yamux window updates', () => {
  // in this order: yamux as it ships first (the patch applies to the whole process from then on)
  it('as yamux ships: a window update for every data frame', async () => {
    const { updates, received, sent } = await transfer(small(60))
    expect(received).toBe(sent)
    expect(updates).toBeGreaterThanOrEqual(50)
  })

  it('held: a few for 60 KiB of small messages, not one per message, and a 3 MiB transfer still completes', async () => {
    expect(holdSmallWindowUpdates()).toBe(true)
    expect(holdSmallWindowUpdates()).toBe(true) // once per process
    const few = await transfer(small(60))
    expect(few.received).toBe(few.sent)
    // 60 KiB is less than half the 256 KiB window: the updates left are yamux's auto-tuning, which
    // doubles the window of a stream whose data arrives within 4 round trips of the last update, from
    // 256 KiB up to its 16 MiB maximum: at most 6 doublings, each granted by one update
    expect(few.updates).toBeLessThanOrEqual(6)
    // more than ten windows' worth, in messages larger than a window: the sender is never stuck
    const big = Array.from({ length: 6 }, (_, i) => new Uint8Array(512 * 1024).fill(i + 1))
    const many = await transfer([...small(100), ...big])
    expect(many.received).toBe(many.sent)
    expect(many.updates).toBeGreaterThan(0)
    expect(many.updates).toBeLessThan(100)
  }, 60_000)
})
