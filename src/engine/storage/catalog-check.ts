import { canonicalJson } from '../../core/canonical-json.js'
import { computeRufid } from '../../core/rufid.js'
import { compareHeads, rebuildHeads } from '../branches/rebuild-heads.js'
import type { BranchedLedgerEntry, BranchHead } from '../branches/types.js'
import { catalogKey, type CatalogReplica } from '../replication/catalog-replica.js'
import type { FunctionVersion, LedgerEntry } from '../types.js'
import type { CatalogStore, LevelDatabase } from './catalog-store.js'

/**
 * What `svc node check` verifies in a node's catalog, and what `--repair` can fix:
 *
 * - `content_digest`: a stored version's source no longer hashes to its content digest and short
 *   RUFID (the code was altered on disk). Not repairable here: restore a backup, or delete the
 *   version and have it fetched again from a federation member.
 * - `digest_index`: the hash → digest index (collision detection) lacks or contradicts a version.
 *   Repaired from the version.
 * - `ledger_without_function`: a ledger entry names a version that is not stored. Not repairable.
 * - `function_without_ledger`: a stored version has no ledger entry and lost no federation conflict.
 *   Repaired: the entry is rebuilt from the version (without branch moves).
 * - `ledger_mismatch`: ledger entry and version disagree on the name, hash, digest or deletion.
 *   Not repairable (it needs a person to say which side is right).
 * - `branch_head`: a stored branch head differs from the one the ledger gives. Repaired: heads are
 *   rebuilt from the ledger (decisions.md: heads are derived).
 * - `not_replicated`: a version (or its deletion) is in the catalog but not in the replication log,
 *   so no federation member will ever receive it. Repaired: recorded as this node's change.
 * - `unreadable`: a record that LevelDB or JSON cannot read.
 */
export type CheckProblemKind =
  | 'content_digest' | 'digest_index' | 'ledger_without_function' | 'function_without_ledger' | 'ledger_mismatch'
  | 'branch_head' | 'not_replicated' | 'unreadable'

export interface CheckProblem {
  kind: CheckProblemKind
  /** the record: `tenant:function_name:v<n>`, `tenant:hash:v<n>`, `tenant:function_name:branch`… */
  key: string
  message: string
  repairable: boolean
  repaired?: boolean
}

export interface CatalogCheckReport {
  checked: { functions: number; ledger_entries: number; branch_heads: number; api_keys: number; replication_entries: number }
  problems: CheckProblem[]
  /** no problem left unrepaired */
  ok: boolean
  repaired: number
}

export interface CatalogCheckComponents {
  db: LevelDatabase
  store: CatalogStore
  /** the started replica (its log is checked and, with repair, completed) */
  replication: CatalogReplica
}

interface Contender {
  rufid_short: string
  content_digest: string
  deleted_at?: string
}

const versionKey = (tenant: string, name: string, version: number): string => `${tenant}:${name}:v${version}`
const hashKey = (fn: FunctionVersion): string => `${fn.tenant_id}:${fn.rufid_short}:v${fn.version}`
/** a version replicated as metadata whose code this node has not fetched yet */
const lacksCode = (fn: FunctionVersion): boolean => fn.source_code === '' && fn.deleted_at === undefined

function ledgerOf(fn: FunctionVersion): LedgerEntry {
  return {
    tenant_id: fn.tenant_id, function_name: fn.function_name, version: fn.version, rufid_short: fn.rufid_short,
    content_digest: fn.content_digest, created_at: fn.created_at, author: fn.author,
    manifest_snapshot: {
      manifest: fn.manifest, lockfile: fn.lockfile,
      ...(fn.manifest_text !== undefined ? { manifest_text: fn.manifest_text } : {}),
      ...(fn.lockfile_text !== undefined ? { lockfile_text: fn.lockfile_text } : {}),
    },
    ...(fn.deleted_at !== undefined ? { deleted_at: fn.deleted_at } : {}),
  }
}

/**
 * Verifies the catalog of a node whose database nothing else writes to (a stopped node's data
 * directory): every stored version against its digest, ledger ↔ versions, branch heads rebuilt from
 * the ledger = stored heads, every version in the replication log, API key records readable. With
 * `repair`, fixes what is repairable (see CheckProblemKind) and says so on each problem.
 */
export async function checkCatalog(components: CatalogCheckComponents, options: { repair?: boolean } = {}): Promise<CatalogCheckReport> {
  const { db, store, replication } = components
  const repair = options.repair === true
  const problems: CheckProblem[] = []
  const checked = { functions: 0, ledger_entries: 0, branch_heads: 0, api_keys: 0, replication_entries: 0 }
  const entries = db.sublevel<string, unknown>('repl_entries', { valueEncoding: 'json' })
  const found = (p: CheckProblem): CheckProblem => {
    problems.push(p)
    return p
  }

  // 1. every stored version: its digest, the digest index, its ledger entry, its replication entry
  let ledger: LedgerEntry[] = []
  try {
    ledger = await store.ledgerEntries()
  } catch (err) {
    found({ kind: 'unreadable', key: 'function_version_ledger', message: `the ledger cannot be read: ${(err as Error).message}`, repairable: false })
  }
  const ledgerBy = new Map(ledger.map((e) => [versionKey(e.tenant_id, e.function_name, e.version), e]))
  try {
    for await (const fn of store.allFunctions()) {
      checked.functions++
      if (!lacksCode(fn)) {
        const computed = computeRufid(fn)
        if (computed.content_digest !== fn.content_digest || computed.rufid_short !== fn.rufid_short) {
          found({ kind: 'content_digest', key: hashKey(fn), message: `its source hashes to ${computed.rufid_short} (${computed.content_digest.slice(0, 16)}…), not to its own ${fn.rufid_short} (${fn.content_digest.slice(0, 16)}…)`, repairable: false })
          continue
        }
      }
      const indexed = await store.digestOf(fn.rufid_short)
      if (indexed !== fn.content_digest) {
        const p = found({ kind: 'digest_index', key: fn.rufid_short, message: indexed === undefined ? 'missing from the digest index' : `the digest index says ${indexed.slice(0, 16)}…`, repairable: true })
        if (repair) {
          await db.sublevel<string, unknown>('digests', { valueEncoding: 'json' }).put(fn.rufid_short, fn.content_digest, { sync: true } as object)
          p.repaired = true
        }
      }
      const loser = replication.conflictOf(fn.tenant_id, fn.rufid_short, fn.version) !== undefined
      const entry = ledgerBy.get(versionKey(fn.tenant_id, fn.function_name, fn.version))
      if (entry === undefined && !loser) {
        const p = found({ kind: 'function_without_ledger', key: versionKey(fn.tenant_id, fn.function_name, fn.version), message: `version ${fn.rufid_short} has no ledger entry`, repairable: true })
        if (repair) {
          const rebuilt = ledgerOf(fn)
          await store.putLedgerEntry(rebuilt)
          ledgerBy.set(versionKey(fn.tenant_id, fn.function_name, fn.version), rebuilt)
          ledger.push(rebuilt)
          p.repaired = true
        }
      } else if (entry !== undefined && !loser && entry.rufid_short === fn.rufid_short) {
        const mismatch = entry.content_digest !== fn.content_digest ? 'content digest'
          : (entry.deleted_at === undefined) !== (fn.deleted_at === undefined) ? 'deletion' : undefined
        if (mismatch) found({ kind: 'ledger_mismatch', key: versionKey(fn.tenant_id, fn.function_name, fn.version), message: `ledger entry and version ${fn.rufid_short} disagree on the ${mismatch}`, repairable: false })
      } else if (entry !== undefined && !loser) {
        found({ kind: 'ledger_mismatch', key: versionKey(fn.tenant_id, fn.function_name, fn.version), message: `the ledger entry names ${entry.rufid_short}, the stored version is ${fn.rufid_short}, and no conflict explains it`, repairable: false })
      }
      const contenders = (await entries.get(catalogKey(fn.tenant_id, fn.function_name, fn.version))) as Contender[] | undefined
      const mine = contenders?.find((c) => c.rufid_short === fn.rufid_short)
      const missing = mine === undefined ? 'the version' : fn.deleted_at !== undefined && mine.deleted_at === undefined ? 'its deletion' : undefined
      if (missing !== undefined) {
        const p = found({ kind: 'not_replicated', key: hashKey(fn), message: `${missing} is not in the replication log: no federation member will receive it`, repairable: true })
        if (repair) {
          const withLedger = ledgerBy.get(versionKey(fn.tenant_id, fn.function_name, fn.version)) ?? ledgerOf(fn)
          if (mine === undefined) {
            const { deleted_at: _fnDeleted, ...live } = fn
            const { deleted_at: _ledgerDeleted, ...liveLedger } = withLedger
            await replication.recordLocal('added', live, liveLedger)
          }
          if (fn.deleted_at !== undefined) await replication.recordLocal('deleted', fn, withLedger)
          p.repaired = true
        }
      }
    }
  } catch (err) {
    found({ kind: 'unreadable', key: 'functions', message: `the stored versions cannot all be read (stopped after ${checked.functions}): ${(err as Error).message}`, repairable: false })
  }

  // 2. every ledger entry names a stored version
  for (const entry of ledger) {
    checked.ledger_entries++
    const fn = await store.getFunction(entry.tenant_id, entry.rufid_short, entry.version)
    if (fn === undefined) {
      found({ kind: 'ledger_without_function', key: versionKey(entry.tenant_id, entry.function_name, entry.version), message: `names ${entry.rufid_short}, which is not stored`, repairable: false })
    }
  }

  // 3. branch heads are what the ledger gives
  try {
    const rebuilt = rebuildHeads(ledger as BranchedLedgerEntry[])
    const stored = (await store.branchHeads()).sort(compareHeads)
    checked.branch_heads = stored.length
    const key = (h: BranchHead): string => `${h.tenant_id}:${h.function_name}:${h.branch}`
    const storedBy = new Map(stored.map((h) => [key(h), canonicalJson(h)]))
    const rebuiltBy = new Map(rebuilt.map((h) => [key(h), canonicalJson(h)]))
    const differing = [...new Set([...storedBy.keys(), ...rebuiltBy.keys()])].filter((k) => storedBy.get(k) !== rebuiltBy.get(k)).sort()
    for (const k of differing) {
      found({
        kind: 'branch_head', key: k, repairable: true, ...(repair ? { repaired: true } : {}),
        message: !storedBy.has(k) ? 'the ledger gives a head that is not stored' : !rebuiltBy.has(k) ? 'a stored head the ledger does not give' : 'the stored head differs from the one the ledger gives',
      })
    }
    if (repair && differing.length > 0) await store.replaceBranchHeads(rebuilt)
  } catch (err) {
    found({ kind: 'unreadable', key: 'branch_heads', message: `branch heads cannot be read: ${(err as Error).message}`, repairable: false })
  }

  // 4. records read back: replication entries and API keys
  try {
    for await (const value of entries.values()) {
      checked.replication_entries++
      if (!Array.isArray(value) || value.length === 0) found({ kind: 'unreadable', key: 'repl_entries', message: 'an entry without contenders', repairable: false })
    }
    for await (const [id, record] of db.sublevel<string, unknown>('api_keys', { valueEncoding: 'json' }).iterator()) {
      checked.api_keys++
      const r = record as { key_id?: unknown; tenant_id?: unknown; secret_sha256?: unknown }
      if (r.key_id !== id || typeof r.tenant_id !== 'string' || typeof r.secret_sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(r.secret_sha256)) {
        found({ kind: 'unreadable', key: `api_keys:${id}`, message: 'an API key record without its id, tenant or secret hash', repairable: false })
      }
    }
  } catch (err) {
    found({ kind: 'unreadable', key: 'records', message: `records cannot be read: ${(err as Error).message}`, repairable: false })
  }

  const repaired = problems.filter((p) => p.repaired).length
  return { checked, problems, ok: problems.every((p) => p.repaired === true), repaired }
}
