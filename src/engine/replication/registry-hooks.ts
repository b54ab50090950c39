import type { BranchMove } from '../branches/types.js'
import type { FunctionVersion, LedgerEntry } from '../types.js'
import type { PlannedChange } from './catalog-replica.js'

/** What the function registry tells replication, and asks it. */
export interface RegistryReplicationHooks {
  /**
   * a version is being created or tombstoned on this node (inside the registry's write lock): the
   * replication records to write in the same batch as the version, and the commit to call once
   * written; undefined when this node records no changes
   */
  planned(op: 'added' | 'deleted', fn: FunctionVersion, ledger: LedgerEntry): Promise<PlannedChange | undefined>
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
