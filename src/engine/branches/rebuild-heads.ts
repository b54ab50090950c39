import type { BranchHead, BranchedLedgerEntry, BranchMove } from './types.js'

const headKey = (tenant: string, name: string, branch: string): string => `${tenant}\u0000${name}\u0000${branch}`

/**
 * Every branch head, rebuilt from ledger entries alone: for each (tenant, function_name, branch)
 * the move with the highest `seq` names the version; the first move names when the branch was
 * created. The result is in `compareHeads` order.
 */
export function rebuildHeads(ledger: Iterable<BranchedLedgerEntry>): BranchHead[] {
  const moves = new Map<string, Array<{ entry: BranchedLedgerEntry; move: BranchMove }>>()
  for (const entry of ledger) {
    for (const move of entry.branches ?? []) {
      const key = headKey(entry.tenant_id, entry.function_name, move.branch)
      const list = moves.get(key) ?? []
      list.push({ entry, move })
      moves.set(key, list)
    }
  }
  const heads: BranchHead[] = []
  for (const list of moves.values()) {
    list.sort((a, b) => a.move.seq - b.move.seq)
    const first = list[0]!
    const last = list[list.length - 1]!
    heads.push({
      tenant_id: last.entry.tenant_id,
      function_name: last.entry.function_name,
      branch: last.move.branch,
      version: last.entry.version,
      rufid_short: last.entry.rufid_short,
      key_hash: last.move.key_hash,
      seq: last.move.seq,
      created_at: first.move.moved_at,
      updated_at: last.move.moved_at,
      updated_by: last.move.moved_by,
    })
  }
  return heads.sort(compareHeads)
}

/** Orders heads by their store key `tenant:function_name:branch` (UTF-16 code units). */
export function compareHeads(a: BranchHead, b: BranchHead): number {
  const ka = `${a.tenant_id}:${a.function_name}:${a.branch}`
  const kb = `${b.tenant_id}:${b.function_name}:${b.branch}`
  return ka < kb ? -1 : ka > kb ? 1 : 0
}
