import { z } from 'zod'
import { canonicalJson } from '../../core/canonical-json.js'
import { notFound, SvcError } from '../../core/errors.js'
import { requirePermission } from '../authz.js'
import type { ExecutionService } from '../executions/execution-service.js'
import type { CreateResult, FunctionRegistry } from '../registry/function-registry.js'
import { FUNCTION_NAME } from '../registry/create-input.js'
import type { CatalogStore } from '../storage/catalog-store.js'
import type { ExecutionRecord, LedgerEntry, Principal } from '../types.js'
import { parseOrThrow } from '../validation.js'
import { MAX_BRANCH_KEY_LENGTH, MIN_BRANCH_KEY_LENGTH, hashBranchKey, mintBranchKey, verifyBranchKey } from './branch-keys.js'
import { branchStates, compareHeads, mergeMoves, moveIdOfHead, rebuildHeads } from './rebuild-heads.js'
import { BRANCH_NAME, DEFAULT_BRANCH, type BranchHead, type BranchMove, type BranchedLedgerEntry } from './types.js'

export interface BranchServiceComponents {
  registry: FunctionRegistry
  executions: ExecutionService
  store: CatalogStore
  /** a fresh, globally unique move id that sorts in clock order (`<hlc>@<origin>`) */
  newMoveId: () => string
}

export interface DeployResult extends CreateResult {
  branch: string
  /** true when this deploy created the branch */
  branch_created: boolean
  /** the branch key, present only when this deploy created the branch (shown once, stored hashed) */
  branch_key?: string
  /** whether the head moved (false when it already pointed at this version) */
  moved: boolean
  previous_version: number | null
  head: BranchHead
}

export interface InvokeResult {
  head: BranchHead
  record: ExecutionRecord
}

const branchName = z.string().regex(BRANCH_NAME, 'must be 1–64 letters, digits or ._- starting with a letter or digit')
const deploySchema = z.object({
  function_name: z.string().regex(FUNCTION_NAME, 'must be an identifier of at most 128 characters'),
  branch: branchName.optional(),
  branch_key: z.string().min(MIN_BRANCH_KEY_LENGTH, `must be at least ${MIN_BRANCH_KEY_LENGTH} characters`).max(MAX_BRANCH_KEY_LENGTH).nullable().optional(),
})
const invokeSchema = z.object({
  function_name: z.string().regex(FUNCTION_NAME, 'must be an identifier of at most 128 characters'),
  branch: branchName.optional(),
})
const headsSchema = z.object({
  function_name: z.string().regex(FUNCTION_NAME, 'must be an identifier of at most 128 characters').optional(),
})

const denied = (message: string, details: Record<string, unknown>): SvcError => new SvcError('PERMISSION_DENIED', message, { details })

/**
 * Branches (decisions.md): a named head per lineage (tenant, function_name), default `main`,
 * pointing at a version. The first deploy to a branch creates it with a branch key (minted, or
 * the caller's own), shown once and stored as a salted hash; moving the head again needs that
 * key (1003 otherwise). Every move is recorded on the ledger entry of the version it moved to, so
 * `rebuildHeads(ledger)` reproduces the stored heads.
 */
export class BranchService {
  private readonly c: BranchServiceComponents

  constructor(components: BranchServiceComponents) {
    this.c = components
  }

  /** Publishes a function (as `create` does) and points `branch` at the version. */
  async deploy(principal: Principal, raw: unknown): Promise<DeployResult> {
    requirePermission(principal, 'rufid.create')
    const body = raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {}
    const req = parseOrThrow(deploySchema, body, 'deploy request')
    this.c.registry.admitLanguage(body.language) // before the branch key or the source is hashed
    const tenant = principal.tenant_id
    const name = req.function_name
    const branch = req.branch ?? DEFAULT_BRANCH
    const supplied = req.branch_key ?? undefined
    const where = { function_name: name, branch }

    // the key is checked before anything is created: a refused deploy stores nothing
    const before = await this.c.store.getBranchHead(tenant, name, branch)
    let keyHash: string
    let newKey: string | undefined
    if (before) {
      if (supplied === undefined) throw denied(`branch ${branch} of ${name} exists: its branch key is required to move it`, where)
      if (!(await verifyBranchKey(supplied, before.key_hash))) {
        await this.refuseLostCreation(before, supplied)
        throw denied(`wrong branch key for branch ${branch} of ${name}`, where)
      }
      keyHash = before.key_hash
    } else {
      newKey = supplied ?? mintBranchKey()
      keyHash = await hashBranchKey(newKey)
    }

    const { branch: _b, branch_key: _k, ...definition } = body
    let outcome: { head: BranchHead; moved: boolean; previous: number | null } | undefined
    const created = await this.c.registry.create(principal, definition, {
      withinWrite: async (fn, ledger, _created) => {
        const current = await this.c.store.getBranchHead(tenant, name, branch)
        if ((current?.key_hash ?? null) !== (before?.key_hash ?? null)) {
          throw denied(`branch ${branch} of ${name} was ${before ? 'changed' : 'created'} by another deploy meanwhile; deploy again with its key`, where)
        }
        if (current && current.version === fn.version) {
          outcome = { head: current, moved: false, previous: current.version }
          return undefined
        }
        const lineageHeads = await this.c.store.branchHeads({ tenant, function_name: name })
        const seq = lineageHeads.reduce((max, h) => Math.max(max, h.seq), 0) + 1
        const now = new Date().toISOString()
        const move: BranchMove = {
          branch,
          seq,
          moved_at: now,
          moved_by: principal.user,
          key_hash: keyHash,
          from_version: current?.version ?? null,
          id: this.c.newMoveId(),
          parent: current ? moveIdOfHead(current) : null,
          version: fn.version,
          rufid_short: fn.rufid_short,
        }
        const head: BranchHead = {
          tenant_id: tenant,
          function_name: name,
          branch,
          version: fn.version,
          rufid_short: fn.rufid_short,
          key_hash: keyHash,
          seq,
          created_at: current?.created_at ?? now,
          updated_at: now,
          updated_by: principal.user,
          move_id: move.id!,
        }
        const entry = ledger as BranchedLedgerEntry
        const moved: BranchedLedgerEntry = { ...entry, branches: mergeMoves(entry.branches, [move]) }
        outcome = { head, moved: true, previous: current?.version ?? null }
        return { ledger: moved as LedgerEntry, head, move }
      },
    })
    const o = outcome!
    return {
      ...created,
      branch,
      branch_created: before === undefined,
      ...(before === undefined && newKey !== undefined ? { branch_key: newKey } : {}),
      moved: o.moved,
      previous_version: o.previous,
      head: o.head,
    }
  }

  /**
   * A key that is not the branch's may be the key of a creation of the same branch that lost a
   * federation fork (two nodes created it concurrently, each with its own key): that caller acts
   * on the losing side, 2002 naming the winning head. Otherwise it returns (the caller answers 1003).
   */
  private async refuseLostCreation(head: BranchHead, supplied: string): Promise<void> {
    const state = branchStates(await this.c.store.ledgerEntries({ tenant: head.tenant_id, function_name: head.function_name }))
      .find((s) => s.branch === head.branch)
    const losingKeys = new Set((state?.forks ?? []).flatMap((f) => f.losers.map((l) => l.key_hash)).filter((h) => h !== head.key_hash))
    for (const hash of losingKeys) {
      if (!(await verifyBranchKey(supplied, hash))) continue
      throw new SvcError('SYNC_CONFLICT', `branch ${head.branch} of ${head.function_name} was created concurrently on another federation node, and that creation won: this key belongs to the losing one`, {
        details: { function_name: head.function_name, branch: head.branch, winner: { version: `v${head.version}`, rufid_short: head.rufid_short, move_id: head.move_id ?? null } },
      })
    }
  }

  /** The head a branch of a lineage points at; 1011 (`resource: branch`) when the branch does not exist. */
  async head(principal: Principal, functionName: unknown, branch: unknown = DEFAULT_BRANCH, permission: 'rufid.read' | 'rufid.execute' = 'rufid.read'): Promise<BranchHead> {
    requirePermission(principal, permission)
    const req = parseOrThrow(invokeSchema, { function_name: functionName, branch: branch ?? DEFAULT_BRANCH }, 'branch')
    const b = req.branch ?? DEFAULT_BRANCH
    const head = await this.c.store.getBranchHead(principal.tenant_id, req.function_name, b)
    if (!head) {
      throw notFound('branch', `function ${req.function_name} has no branch ${b}`, { function_name: req.function_name, branch: b })
    }
    return head
  }

  /** Runs the version a branch head points at (`arguments` as in execute). */
  async invoke(principal: Principal, functionName: unknown, branch: unknown, args: unknown): Promise<InvokeResult> {
    const head = await this.head(principal, functionName, branch, 'rufid.execute')
    const record = await this.c.executions.execute(principal, { short: head.rufid_short, version: head.version }, args)
    return { head, record }
  }

  /** The heads of the tenant, or of one lineage. */
  async heads(principal: Principal, functionName?: unknown): Promise<BranchHead[]> {
    requirePermission(principal, 'rufid.read')
    const req = parseOrThrow(headsSchema, { function_name: functionName === '' || functionName === null ? undefined : functionName }, 'branch query')
    return this.c.store.branchHeads({ tenant: principal.tenant_id, ...(req.function_name ? { function_name: req.function_name } : {}) })
  }

  /** Every head rebuilt from the ledger alone (all tenants), in store order. */
  async rebuildFromLedger(): Promise<BranchHead[]> {
    return rebuildHeads(await this.c.store.ledgerEntries())
  }

  /**
   * Compares the stored heads with the ones the ledger gives; with `repair`, replaces the stored
   * heads by the rebuilt ones. Returns the branches that differed.
   */
  async verifyHeads(options: { repair?: boolean } = {}): Promise<{ rebuilt: BranchHead[]; differing: string[] }> {
    const rebuilt = await this.rebuildFromLedger()
    const stored = (await this.c.store.branchHeads()).sort(compareHeads)
    const key = (h: BranchHead): string => `${h.tenant_id}:${h.function_name}:${h.branch}`
    const storedBy = new Map(stored.map((h) => [key(h), canonicalJson(h)]))
    const rebuiltBy = new Map(rebuilt.map((h) => [key(h), canonicalJson(h)]))
    const differing = [...new Set([...storedBy.keys(), ...rebuiltBy.keys()])].filter((k) => storedBy.get(k) !== rebuiltBy.get(k)).sort()
    if (options.repair && differing.length > 0) await this.c.store.replaceBranchHeads(rebuilt)
    return { rebuilt, differing }
  }

  /** Ledger entries of a lineage with each move's key hash removed (for presentation). */
  static withoutKeyHashes(entries: LedgerEntry[]): Array<Omit<BranchedLedgerEntry, 'branches'> & { branches?: Array<Omit<BranchMove, 'key_hash'>> }> {
    return (entries as BranchedLedgerEntry[]).map((e) => {
      if (!e.branches) return e
      return { ...e, branches: e.branches.map(({ key_hash: _h, ...m }) => m) }
    })
  }
}
