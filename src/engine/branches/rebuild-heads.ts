import type { LedgerEntry } from '../types.js'
import type { BranchHead, BranchedLedgerEntry, BranchMove } from './types.js'

const headKey = (tenant: string, name: string, branch: string): string => `${tenant}\u0000${name}\u0000${branch}`

/** A move with everything the head rule needs: its id, its parent and its target. */
export interface PlacedMove extends BranchMove {
  id: string
  parent: string | null
  version: number
  rufid_short: string
}

/** Concurrent moves of one branch: siblings with the same parent; the earliest (smallest id) wins. */
export interface BranchFork {
  parent: string | null
  winner: PlacedMove
  losers: PlacedMove[]
}

/** One branch of one lineage as its moves determine it. */
export interface BranchState {
  tenant_id: string
  function_name: string
  branch: string
  /** undefined while no move of the branch is reachable from a creation (a parent not yet received) */
  head: BranchHead | undefined
  /** the forks on the winning path, oldest first */
  forks: BranchFork[]
}

const legacyId = (seq: number): string => `legacy-${String(seq).padStart(10, '0')}`

/** The id a head is known by when a new move names it as its parent. */
export const moveIdOfHead = (head: BranchHead): string => head.move_id ?? legacyId(head.seq)

/** A move with an id, completed: no parent is a creation; the target defaults to its ledger entry's. */
export function placeMove(move: BranchMove & { id: string }, entry: Pick<LedgerEntry, 'version' | 'rufid_short'>): PlacedMove {
  return { ...move, parent: move.parent ?? null, version: move.version ?? entry.version, rufid_short: move.rufid_short ?? entry.rufid_short }
}

/**
 * Gives every move an id and a parent: moves recorded before branches replicated have neither, and
 * form one line in `seq` order (`legacy-<seq>`, each the parent of the next).
 */
function place(moves: Array<{ move: BranchMove; entry: LedgerEntry }>): PlacedMove[] {
  const legacy = moves.filter((m) => m.move.id === undefined).sort((a, b) => a.move.seq - b.move.seq)
  const placed = new Map<string, PlacedMove>()
  let previous: string | null = null
  for (const { move, entry } of legacy) {
    const id = legacyId(move.seq)
    placed.set(id, placeMove({ ...move, id, parent: previous }, entry))
    previous = id
  }
  for (const { move, entry } of moves) {
    if (move.id === undefined || placed.has(move.id)) continue
    placed.set(move.id, placeMove({ ...move, id: move.id }, entry))
  }
  return [...placed.values()]
}

/**
 * The head rule, the same on every node whatever order moves arrived in: start at the creations
 * (moves without a parent), and at each step follow the earliest child (smallest id = earliest
 * hybrid logical clock, then origin). Siblings are moves made concurrently, without knowledge of
 * each other: a fork, whose later moves lose (they stay in the ledger). Moves whose parent has not
 * arrived are not reachable yet and do not count.
 */
export function walkBranch(moves: readonly PlacedMove[]): { path: PlacedMove[]; forks: BranchFork[] } {
  const children = new Map<string | null, PlacedMove[]>()
  for (const m of moves) {
    const list = children.get(m.parent) ?? []
    list.push(m)
    children.set(m.parent, list)
  }
  const path: PlacedMove[] = []
  const forks: BranchFork[] = []
  let parent: string | null = null
  // ids are unique, so the path never revisits a move: at most moves.length steps
  for (let step = 0; step < moves.length; step++) {
    const siblings: PlacedMove[] = (children.get(parent) ?? []).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    const [winner, ...losers] = siblings
    if (winner === undefined) break
    if (losers.length > 0) forks.push({ parent, winner, losers })
    path.push(winner)
    parent = winner.id
  }
  return { path, forks }
}

/** Every branch of the given ledger entries, its head and forks, in `compareHeads` order. */
export function branchStates(ledger: Iterable<BranchedLedgerEntry>): BranchState[] {
  const moves = new Map<string, { tenant_id: string; function_name: string; branch: string; moves: Array<{ move: BranchMove; entry: LedgerEntry }> }>()
  for (const entry of ledger) {
    for (const move of entry.branches ?? []) {
      const key = headKey(entry.tenant_id, entry.function_name, move.branch)
      const group = moves.get(key) ?? { tenant_id: entry.tenant_id, function_name: entry.function_name, branch: move.branch, moves: [] }
      group.moves.push({ move, entry })
      moves.set(key, group)
    }
  }
  const states: BranchState[] = []
  for (const group of moves.values()) {
    const { path, forks } = walkBranch(place(group.moves))
    const root = path[0]
    const tip = path[path.length - 1]
    const head: BranchHead | undefined = root === undefined || tip === undefined ? undefined : {
      tenant_id: group.tenant_id,
      function_name: group.function_name,
      branch: group.branch,
      version: tip.version,
      rufid_short: tip.rufid_short,
      key_hash: tip.key_hash,
      seq: tip.seq,
      created_at: root.moved_at,
      updated_at: tip.moved_at,
      updated_by: tip.moved_by,
      ...(tip.id.startsWith('legacy-') ? {} : { move_id: tip.id }),
    }
    states.push({ tenant_id: group.tenant_id, function_name: group.function_name, branch: group.branch, head, forks })
  }
  const order = (s: BranchState): string => `${s.tenant_id}:${s.function_name}:${s.branch}`
  return states.sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0))
}

/**
 * Every branch head, rebuilt from ledger entries alone (the rule of `walkBranch`). The result is
 * in `compareHeads` order.
 */
export function rebuildHeads(ledger: Iterable<BranchedLedgerEntry>): BranchHead[] {
  return branchStates(ledger).flatMap((s) => (s.head ? [s.head] : []))
}

/**
 * The union of two lists of moves of one ledger entry (a move is known by its id; moves without
 * an id by branch and seq), in a stable order: every replica that holds the same moves writes the
 * same list.
 */
export function mergeMoves(a: readonly BranchMove[] | undefined, b: readonly BranchMove[] | undefined): BranchMove[] {
  const byId = new Map<string, BranchMove>()
  for (const m of [...(a ?? []), ...(b ?? [])]) {
    const id = m.id ?? `${m.branch}\u0000${legacyId(m.seq)}`
    if (!byId.has(id)) byId.set(id, m)
  }
  return [...byId.entries()].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)).map(([, m]) => m)
}

/** Orders heads by their store key `tenant:function_name:branch` (UTF-16 code units). */
export function compareHeads(a: BranchHead, b: BranchHead): number {
  const ka = `${a.tenant_id}:${a.function_name}:${a.branch}`
  const kb = `${b.tenant_id}:${b.function_name}:${b.branch}`
  return ka < kb ? -1 : ka > kb ? 1 : 0
}
