// The gossipsub mesh degree a member runs with: the degrees derived from D keep gossipsub's own
// proportions (D=6 gives its defaults) and its constraints, and a node runs with the D it is given
// (3 unless configured: docs/federation-scale.md "Copies per change").
import { afterAll, describe, expect, it } from 'vitest'
import { CATALOG_TOPIC } from '../../src/federation/catalog-sync.js'
import { DEFAULT_GOSSIP_MESH_DEGREE, meshDegrees } from '../../src/federation/node.js'
import { federationConfigDefaults } from '../../src/federation/daemon-wiring.js'
import { loopbackPair, stopMembers, type LoopbackMember as Member } from './fixtures.js'

describe('gossip mesh degree', () => {
  it('derives the other degrees as gossipsub does at its default, within its constraints for every D', () => {
    expect(meshDegrees(6)).toEqual({ D: 6, Dlo: 4, Dhi: 12, Dscore: 4, Dout: 2, Dlazy: 6 })
    expect(meshDegrees(3)).toEqual({ D: 3, Dlo: 2, Dhi: 6, Dscore: 2, Dout: 1, Dlazy: 3 })
    for (let D = 1; D <= 12; D++) {
      const d = meshDegrees(D)
      expect(d.Dlo).toBeLessThanOrEqual(d.D)
      expect(d.D).toBeLessThanOrEqual(d.Dhi)
      expect(d.Dscore).toBeLessThanOrEqual(d.D)
      expect(d.Dout === 0 || d.Dout < d.Dlo).toBe(true)
      expect(d.Dout).toBeLessThanOrEqual(d.D / 2)
    }
    expect(federationConfigDefaults.gossip_mesh_degree).toBe(DEFAULT_GOSSIP_MESH_DEGREE)
  })

  let pair: Member[] = []
  afterAll(() => stopMembers(pair))
  it('a member runs gossipsub with the degree it is given, 3 when none', async () => {
    pair = await loopbackPair(CATALOG_TOPIC, [{}, { gossipMeshDegree: 5 }])
    const opts = (m: Member): Record<string, unknown> => (m.federation.node.p2p.services.pubsub as unknown as { opts: Record<string, unknown> }).opts
    expect(opts(pair[0]!)).toMatchObject({ D: 3, Dlo: 2, Dhi: 6, Dout: 1, Dlazy: 3, floodPublish: true })
    expect(opts(pair[1]!)).toMatchObject({ D: 5, Dlo: 3, Dhi: 10, Dout: 1, Dlazy: 5 })
  }, 60_000)
})
