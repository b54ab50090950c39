import type { LedgerEntry } from '../types.js'

/** The default branch of every lineage. */
export const DEFAULT_BRANCH = 'main'

/** Branch names: letters, digits and `._-`, starting with a letter or digit, at most 64. */
export const BRANCH_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/

/**
 * One move of a branch head, recorded in the `branches` list of the ledger entry of the version
 * the head moved to. The moves in the ledger are the whole history of every head.
 */
export interface BranchMove {
  branch: string
  /** order of the moves of one lineage (all its branches), from 1 */
  seq: number
  moved_at: string
  moved_by: string
  /** the branch key's salted hash (never the key); carried on every move */
  key_hash: string
  /** the version the head pointed at before; null when this move created the branch */
  from_version: number | null
  /**
   * Unique id of the move, `<hybrid logical clock>@<replica origin>`: ids sort in clock order.
   * Moves recorded before branches replicated have none (their order is `seq`).
   */
  id?: string
  /** id of the move the head pointed at before (null: this move created the branch) */
  parent?: string | null
  /**
   * The version the move points at. The ledger entry the move is recorded on names the same
   * version; a move onto the losing content of a federation conflict names that content here.
   */
  version?: number
  rufid_short?: string
}

/** A ledger entry with the head moves it received (older entries have none). */
export type BranchedLedgerEntry = LedgerEntry & { branches?: BranchMove[] }

/** Where a branch of a lineage (tenant, function_name) points now. */
export interface BranchHead {
  tenant_id: string
  function_name: string
  branch: string
  version: number
  rufid_short: string
  key_hash: string
  /** seq of the move that put the head here */
  seq: number
  created_at: string
  updated_at: string
  updated_by: string
  /** id of the move that put the head here (absent for moves recorded before moves had ids) */
  move_id?: string
}
