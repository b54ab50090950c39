import type { BranchMove } from '../branches/types.js'
import type { FunctionVersion, LedgerEntry } from '../types.js'

/** What the function registry tells replication, and asks it. */
export interface RegistryReplicationHooks {
  /** a version was created or tombstoned on this node (inside the registry's write lock) */
  recorded(op: 'added' | 'deleted', fn: FunctionVersion, ledger: LedgerEntry): Promise<unknown>
  /**
   * a branch head of this node moved (`ledger` is the entry the move is recorded on, as stored);
   * inside the registry's write lock, after the store write
   */
  movedBranch?(ledger: LedgerEntry, move: BranchMove): Promise<unknown>
  /** throws 2002 when (tenant, short, version) lost a federation conflict */
  assertNotLoser(tenant: string, short: string, version: number): void
  /** completes a replicated version with its code from a federation provider (2001 when none) */
  fetchCode?(fn: FunctionVersion): Promise<FunctionVersion>
}

/** A replicated version whose code this node does not hold yet (code travels on demand). */
export const lacksCode = (fn: FunctionVersion): boolean => fn.source_code === '' && fn.deleted_at === undefined
