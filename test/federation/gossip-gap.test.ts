// A gossiped change above a gap in its origin's sequence (the message before it was missed) is not
// applied on its own: the receiver's version vector would move past the missing change and no
// sync would ever offer it again (the replicas' digests would differ for good while their vector
// roots agree). The receiver syncs with the origin instead, which brings both. In-process members
// over real libp2p, anti-entropy off: only the join's round and what the gap starts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CATALOG_TOPIC } from '../../src/federation/catalog-sync.js'
import { principal } from '../fixtures/engine.js'
import { loopbackPair, stopMembers, waitFor, withLostGossip, type LoopbackMember as Member } from './fixtures.js'

const fn = (name: string): Record<string, unknown> => ({ function_name: name, signature: '(a, b)', language: 'javascript', source_code: `function ${name}(a, b) { return a + b }` })
const digestOf = async (m: Member): Promise<string> => (await m.engine.replication.digest()).digest

describe('a gossiped change above a gap in its origin sequence', () => {
  let a: Member, b: Member
  beforeAll(async () => {
    ;[a, b] = await loopbackPair(CATALOG_TOPIC)
  }, 60_000)
  afterAll(() => stopMembers([a, b]))

  it('is not applied alone: the receiver syncs with its origin and gets the missed change too', async () => {
    const dev = principal('acme')
    await a.engine.functions.create(dev, fn('gap_first'))
    await waitFor(async () => (await digestOf(a)) === (await digestOf(b)), 10_000)
    const origin = a.engine.replication.origin
    const before = b.engine.replication.versionVector()[origin] ?? 0
    // A's gossip of its next change is lost on the way
    const dropped = await withLostGossip(a, CATALOG_TOPIC, async () => {
      await a.engine.functions.create(dev, fn('gap_missed'))
      await a.engine.functions.create(dev, fn('gap_after'))
    })
    expect(dropped).toBe(1)
    // B heard only of the third change; it must end with all of A's, its vector an unbroken prefix
    await waitFor(async () => (await digestOf(a)) === (await digestOf(b)), 10_000)
    expect(b.engine.replication.versionVector()[origin]).toBe(before + 2)
  }, 30_000)
})
