import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { z } from 'zod'
import { notFound, SvcError, validationFailed } from '../../core/errors.js'
import { LruCache } from '../lru.js'
import { Mutex } from '../mutex.js'
import { base62 } from '../../core/rufid.js'
import { requirePermission } from '../authz.js'
import type { Principal } from '../types.js'
import { parseOrThrow } from '../validation.js'
import { permissionsOf, SCOPES } from './permissions.js'

/** What is kept of a key: never the key itself, only a hash of its secret part. */
export interface ApiKeyRecord {
  key_id: string
  name: string
  tenant_id: string
  scopes: string[]
  created_at: string
  created_by: string
  expires_at: string | null
  revoked_at?: string
  secret_sha256: string
}

/** Where key records live: LevelDB normally, memory in native test mode. */
export interface ApiKeyStorage {
  get(keyId: string): Promise<ApiKeyRecord | undefined>
  put(record: ApiKeyRecord): Promise<void>
  list(tenant?: string): Promise<ApiKeyRecord[]>
}

export function createMemoryKeyStorage(): ApiKeyStorage {
  const records = new Map<string, ApiKeyRecord>()
  return {
    async get(id) {
      return records.get(id)
    },
    async put(r) {
      records.set(r.key_id, { ...r })
    },
    async list(tenant) {
      return [...records.values()].filter((r) => tenant === undefined || r.tenant_id === tenant)
    },
  }
}

export interface MintRequest {
  name: string
  scopes: string[]
  /** days until the key expires; `null`: never; absent: the node's default lifetime */
  expires_days?: number | null
}

export interface MintedKey {
  /** the only time the key is ever shown */
  api_key: string
  key_id: string
  name: string
  tenant_id: string
  scopes: string[]
  expires_at: string | null
}

export interface ApiKeyServiceInit {
  /**
   * lifetime of a key minted without `expires_days`; null: no expiry. While it is a number, keys
   * minted through the API expire: `expires_days: null` (never) is refused with 1006.
   */
  defaultExpiresDays: number | null
  /** the longest `expires_days` the API accepts */
  maxExpiresDays: number
}

const PREFIX = 'svck_'
const TOKEN = /^svck_([0-9A-Za-z]{16})_([0-9A-Za-z]{40,50})$/
const NAME = /^[\p{L}\p{N} _.:@/-]{1,100}$/u

/** key records kept in memory, most recently used last */
const CACHE_ENTRIES = 10_000

const sha256 = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest()
const randomBase62 = (bytes: number, length: number): string => {
  let s = ''
  while (s.length < length) s += base62(randomBytes(bytes))
  return s.slice(0, length)
}

/**
 * A minted key carries its id: `svck_<id>_<secret>`. Any other string (an operator-chosen
 * ADMIN_API_KEY) is its own secret, with an id derived from its hash.
 */
function splitKey(token: string): { keyId: string; secret: string } {
  const m = TOKEN.exec(token)
  if (m) return { keyId: m[1]!, secret: m[2]! }
  return { keyId: `x${base62(sha256(`key-id:${token}`)).slice(0, 15)}`, secret: token }
}

/**
 * Static API keys: `svck_<key id>_<secret>`. Minted by an admin of the tenant, shown once, kept
 * as a SHA-256 of the 256-bit secret (no slow hash is needed for a random secret) and compared in
 * constant time; each has a name, tenant, scopes and expiry, and can be revoked.
 */
export class ApiKeyService {
  /**
   * Records of keys presented lately, so that a request (and above all a flood of refused ones)
   * costs no storage read. Coherent because this service is the only writer of its storage while
   * the node runs (`svc keys create --admin` needs the node stopped); unknown ids are not cached.
   */
  private readonly cache = new LruCache<ApiKeyRecord>(CACHE_ENTRIES, () => undefined)
  /** bumped by every write, so a read that overlapped a write (a revocation) is not cached */
  private writes = 0
  private readonly revocationListeners = new Set<(keyId: string) => void>()
  /** revocations one at a time: two of them cannot both pass the last-admin-key rule on the same view */
  private readonly revocations = new Mutex()

  constructor(private readonly init: ApiKeyServiceInit, private readonly storage: ApiKeyStorage) {}

  async mint(principal: Principal, raw: unknown): Promise<MintedKey> {
    requirePermission(principal, 'rufid.admin')
    const request = parseMintRequest(raw, this.init)
    if (request.expires_days === null && this.init.defaultExpiresDays !== null) {
      throw validationFailed(`expires_days: null (a key that never expires) is refused: keys of this node expire (at most ${this.init.maxExpiresDays} days)`, [
        { pointer: '/expires_days', message: `must be an integer from 1 to ${this.init.maxExpiresDays}` },
      ])
    }
    return this.mintFor(principal.tenant_id, principal.user, request)
  }

  /**
   * Mints without a calling principal: bootstrap (start-up admin key, `svc keys create --admin`).
   * `expires_days: null` is a key that never expires (an operator's own admin key must not lock
   * the node out after the default lifetime); absent, the default lifetime applies.
   * `fixedKey` is an operator-chosen key (ADMIN_API_KEY) kept as given.
   */
  async mintFor(tenant: string, createdBy: string, request: MintRequest, fixedKey?: string): Promise<MintedKey> {
    const api_key = fixedKey ?? `${PREFIX}${randomBase62(12, 16)}_${randomBase62(32, 43)}`
    const { keyId, secret } = splitKey(api_key)
    const days = request.expires_days === undefined ? this.init.defaultExpiresDays : request.expires_days
    const now = new Date()
    const record: ApiKeyRecord = {
      key_id: keyId,
      name: request.name,
      tenant_id: tenant,
      scopes: [...new Set(request.scopes)],
      created_at: now.toISOString(),
      created_by: createdBy,
      expires_at: days === null ? null : new Date(now.getTime() + days * 86_400_000).toISOString(),
      secret_sha256: sha256(secret).toString('hex'),
    }
    await this.put(record)
    return { api_key, key_id: keyId, name: record.name, tenant_id: tenant, scopes: record.scopes, expires_at: record.expires_at }
  }

  /** The record of a presented key, or 1003/unauthenticated (unknown, wrong secret, expired, revoked). */
  async verify(token: string): Promise<ApiKeyRecord> {
    const { keyId, secret } = splitKey(token)
    const record = await this.lookup(keyId)
    // compare even when the id is unknown, so both cases take the same time
    const expected = record ? Buffer.from(record.secret_sha256, 'hex') : randomBytes(32)
    const match = timingSafeEqual(sha256(secret), expected)
    if (!record || !match) throw unauthenticated('invalid API key')
    if (record.revoked_at !== undefined) throw unauthenticated('API key revoked')
    if (record.expires_at !== null && Date.parse(record.expires_at) <= Date.now()) throw unauthenticated('API key expired')
    return record
  }

  /**
   * Revokes a key of the caller's tenant (1011, `resource: api_key`, when there is none of that id). The last active
   * administrator key of a tenant is not revoked (1003, `details.reason` `last_admin_key`): with
   * it gone, nobody holding a key could act as an admin there again, and only a stopped node lets
   * an operator mint one (`svc keys create --admin`). The way to replace it is a rotation: mint
   * the new admin key first, then revoke the old one. A key is active until it is revoked or its
   * expiry has passed; an admin key of the tenant or of a tenant it is a namespace of (`acme` for
   * `acme.team1`, see `narrow`) keeps the tenant reachable. A caller that did not authenticate with
   * an API key (a JWT, a client certificate) keeps its own way in and may revoke the last one.
   * Revocations run one at a time, so two revoking the last two admin keys cannot both succeed.
   */
  async revoke(principal: Principal, keyId: unknown): Promise<ApiKeyRecord> {
    requirePermission(principal, 'rufid.admin')
    return this.revocations.run(async () => {
      const record = typeof keyId === 'string' ? await this.storage.get(keyId) : undefined
      if (!record || record.tenant_id !== principal.tenant_id) {
        throw notFound('api_key', `API key ${String(keyId)} does not exist`, { key_id: keyId })
      }
      const now = Date.now()
      if (principal.method === 'api_key' && isActiveAdminKey(record, now) && !(await this.anotherAdminKeyReaches(record, now))) {
        throw lastAdminKey(record)
      }
      const revoked = { ...record, revoked_at: record.revoked_at ?? new Date(now).toISOString() }
      await this.put(revoked)
      return revoked
    })
  }

  /** Whether an active admin key other than `record` acts in `record`'s tenant (its own, or one its tenant is a namespace of). */
  private async anotherAdminKeyReaches(record: ApiKeyRecord, now: number): Promise<boolean> {
    const tenant = record.tenant_id
    for (const other of await this.storage.list()) {
      if (other.key_id === record.key_id || !isActiveAdminKey(other, now)) continue
      if (other.tenant_id === tenant || tenant.startsWith(`${other.tenant_id}.`)) return true
    }
    return false
  }

  /**
   * Calls `listener` with the key id each time a revoked key's record is written (a revocation;
   * any later path that deletes or rotates a key writes it revoked through here too), once the
   * write succeeded: what ends the key's open streams (auth/credential-streams.ts). Listeners run
   * synchronously and must not throw. Returns the function that removes the listener.
   */
  onRevoked(listener: (keyId: string) => void): () => void {
    this.revocationListeners.add(listener)
    return () => this.revocationListeners.delete(listener)
  }

  private async lookup(keyId: string): Promise<ApiKeyRecord | undefined> {
    const cached = this.cache.take(keyId)
    if (cached) {
      this.cache.put(keyId, cached) // most recently used
      return cached
    }
    const writes = this.writes
    const record = await this.storage.get(keyId)
    if (record && writes === this.writes) this.cache.put(record.key_id, record)
    return record
  }

  private async put(record: ApiKeyRecord): Promise<void> {
    this.writes++
    this.cache.delete(record.key_id)
    try {
      await this.storage.put(record)
    } finally {
      this.writes++
    }
    this.cache.put(record.key_id, record)
    if (record.revoked_at !== undefined) for (const listener of this.revocationListeners) listener(record.key_id)
  }

  async list(principal: Principal): Promise<Array<Omit<ApiKeyRecord, 'secret_sha256'>>> {
    requirePermission(principal, 'rufid.admin')
    return (await this.storage.list(principal.tenant_id)).map(({ secret_sha256: _s, ...rest }) => rest)
  }

  async count(): Promise<number> {
    return (await this.storage.list()).length
  }
}

/** A key that admits its holder as an administrator now: admin scope, not revoked, not past its expiry. */
function isActiveAdminKey(record: ApiKeyRecord, now: number): boolean {
  if (record.revoked_at !== undefined) return false
  if (record.expires_at !== null && Date.parse(record.expires_at) <= now) return false
  return permissionsOf({ scopes: record.scopes }).has('rufid.admin')
}

/** 1003: the revocation would leave the tenant without an administrator key (see ApiKeyService.revoke). */
function lastAdminKey(record: ApiKeyRecord): SvcError {
  return new SvcError(
    'PERMISSION_DENIED',
    `API key ${record.key_id} is the last active administrator key of tenant ${record.tenant_id}: revoked, it would lock the tenant's administrators out ` +
      '(only a stopped node could then mint one, with svc keys create --admin). To replace it, rotate: mint the new administrator key first ' +
      '(POST /api/v1/auth/v2/api-keys with scopes ["admin"], or svc keys create --name <name> --scopes admin), then revoke this one',
    { details: { reason: 'last_admin_key', key_id: record.key_id, tenant_id: record.tenant_id } },
  )
}

export function unauthenticated(message: string): SvcError {
  return new SvcError('PERMISSION_DENIED', message, { reason: 'unauthenticated' })
}

/** The API key request of service-spec §2.7, as validated (also published in /openapi.json). */
export function mintRequestSchema(init: ApiKeyServiceInit) {
  return z.object({
    name: z.string().regex(NAME, 'must be 1–100 letters, digits, spaces or _.:@/-'),
    scopes: z.array(z.enum(SCOPES as [string, ...string[]])).min(1, `must name at least one of ${SCOPES.join(', ')}`),
    expires_days: z.number().int().min(1).max(init.maxExpiresDays).nullable().optional(),
  })
}

function parseMintRequest(raw: unknown, init: ApiKeyServiceInit): MintRequest {
  return parseOrThrow(mintRequestSchema(init), raw ?? {}, 'API key request')
}
