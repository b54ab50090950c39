// A node's provider records past k (CodeProvider): what it fetched is announced once per run when
// the federation grows past k, not again each time its size moves back and forth across k (each
// record past k is a DHT walk). Fakes for the node and the replica: the rule is the provider's.
import { afterEach, describe, expect, it } from 'vitest'
import { CodeProvider } from '../../src/federation/code-provider.js'

const SELF = 'self-peer'
const version = (short: string, origin: string) => ({
  kind: 'version', op: 'added', origin,
  fn: { tenant_id: 't', rufid_short: short, version: 1, content_digest: `digest-${short}`, source_code: 'function f() {}' },
})
/** one version this node published, one it fetched from another origin */
const held = [version('own', SELF), version('fetched', 'other-peer')]

function fakes() {
  let members: Array<{ peerId: string }> = []
  const listeners: Array<(event: 'joined' | 'left', member: { peerId: string }) => void> = []
  const batches: string[][] = []
  const node = {
    peerId: SELF,
    started: true,
    members: () => members,
    member: (id: string) => members.find((m) => m.peerId === id),
    onMember: (l: (typeof listeners)[number]) => {
      listeners.push(l)
      return () => undefined
    },
    handleMembers: async () => undefined,
    unhandle: async () => undefined,
    provideMany: async (digests: readonly string[]) => {
      batches.push([...digests].sort())
      return { path: 'walk', announced: [...digests], reached: 0, failed: 0 }
    },
  }
  const replica = {
    changesSince: async () => ({ added: held, updated: [], deleted: [] }),
    localVersion: async (_t: string, short: string) => held.find((c) => c.fn.rufid_short === short)?.fn,
    onLocalChange: () => () => undefined,
  }
  /** the federation now has `n` other members (each change told to the node's listeners) */
  const setMembers = (n: number): void => {
    const joined = n > members.length
    members = Array.from({ length: n }, (_, i) => ({ peerId: `member-${i}` }))
    for (const l of listeners) l(joined ? 'joined' : 'left', { peerId: 'member-0' })
  }
  return { node, replica, batches, setMembers }
}

const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 20))

describe('provider records of fetched code, past k (CodeProvider)', () => {
  let provider: CodeProvider | undefined
  afterEach(async () => {
    await provider?.stop()
    provider = undefined
  })

  it('are made once when the federation grows past k, not again when it shrinks and grows back', async () => {
    const f = fakes()
    // past 2 nodes counts as past k here (3 nodes: this one and 2 members)
    provider = new CodeProvider({ node: f.node as never, replica: f.replica as never, functions: {} as never, announceProvidersAbove: 2 })
    await provider.start()
    await settle()
    // alone: what it published only
    expect(f.batches).toEqual([['digest-own']])
    f.setMembers(1)
    await settle()
    expect(f.batches).toHaveLength(1)
    f.setMembers(2) // past k: all the code it holds
    await settle()
    expect(f.batches).toEqual([['digest-own'], ['digest-fetched', 'digest-own']])
    for (let i = 0; i < 3; i++) {
      f.setMembers(1) // a member restarts: back to k
      await settle()
      f.setMembers(2)
      await settle()
    }
    expect(f.batches).toHaveLength(2)
  })

  it('a node that starts in a federation already past k announces everything at start, and not again', async () => {
    const f = fakes()
    f.setMembers(3)
    provider = new CodeProvider({ node: f.node as never, replica: f.replica as never, functions: {} as never, announceProvidersAbove: 2 })
    await provider.start()
    await settle()
    expect(f.batches).toEqual([['digest-fetched', 'digest-own']])
    f.setMembers(1)
    await settle()
    f.setMembers(3)
    await settle()
    expect(f.batches).toHaveLength(1)
  })
})
