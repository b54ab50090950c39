import { afterEach, describe, expect, it, vi } from 'vitest'
import { SvcError } from '../../src/core/errors.js'
import { ApiKeyService, AuditLog, createMemoryKeyStorage, permissionsOf } from '../../src/engine/index.js'
import { narrow } from '../../src/engine/auth/credential-authenticator.js'
import { createTestEngine, principal, rejectionOf } from '../fixtures/engine.js'

const service = () => new ApiKeyService({ defaultExpiresDays: 90, maxExpiresDays: 3650 }, createMemoryKeyStorage())
const admin = principal('acme', ['rufid.admin'])

describe('permissions (service-spec §5, decisions.md scopes)', () => {
  it('maps roles exactly as the spec table', () => {
    expect([...permissionsOf({ roles: ['developer'] })].sort()).toEqual(['rufid.create', 'rufid.execute', 'rufid.read'])
    expect([...permissionsOf({ roles: ['consumer'] })].sort()).toEqual(['rufid.execute', 'rufid.read'])
    expect([...permissionsOf({ roles: ['admin'] })].sort()).toEqual(['rufid.admin', 'rufid.create', 'rufid.delete', 'rufid.execute', 'rufid.read'])
    expect([...permissionsOf({ roles: ['root'] })]).toEqual([])
  })

  it('maps scopes to permissions', () => {
    expect([...permissionsOf({ scopes: ['functions:execute'] })]).toEqual(['rufid.execute'])
    expect([...permissionsOf({ scopes: ['functions:create', 'functions:delete'] })].sort()).toEqual(['rufid.create', 'rufid.delete'])
    expect(permissionsOf({ scopes: ['admin'] }).has('rufid.admin')).toBe(true)
    expect(permissionsOf({ scopes: ['rufid.read'] }).has('rufid.read')).toBe(true)
  })
})

describe('API keys', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('are shown once, kept as a hash, and verified', async () => {
    const keys = service()
    const minted = await keys.mint(admin, { name: 'ci', scopes: ['functions:read'], expires_days: 7 })
    expect(minted.api_key).toMatch(/^svck_[0-9A-Za-z]{16}_[0-9A-Za-z]{43}$/)
    const listed = await keys.list(admin)
    expect(JSON.stringify(listed)).not.toContain(minted.api_key.split('_')[2])
    expect((await keys.verify(minted.api_key)).tenant_id).toBe('acme')
    const tampered = minted.api_key.slice(0, -1) + (minted.api_key.endsWith('A') ? 'B' : 'A')
    expect((await rejectionOf(keys.verify(tampered))).reason).toBe('unauthenticated')
  })

  it('expire after expires_days', async () => {
    vi.useFakeTimers({ now: new Date('2026-01-01T00:00:00Z') })
    const keys = service()
    const minted = await keys.mint(admin, { name: 'ci', scopes: ['functions:read'], expires_days: 2 })
    expect(minted.expires_at).toBe('2026-01-03T00:00:00.000Z')
    vi.setSystemTime(new Date('2026-01-02T23:59:59Z'))
    await expect(keys.verify(minted.api_key)).resolves.toBeTruthy()
    vi.setSystemTime(new Date('2026-01-03T00:00:01Z'))
    expect((await rejectionOf(keys.verify(minted.api_key))).message).toMatch(/expired/)
  })

  it('default to the configured lifetime and refuse bad requests with 1006', async () => {
    const keys = service()
    const minted = await keys.mint(admin, { name: 'ci', scopes: ['functions:read'] })
    expect(Date.parse(minted.expires_at!) - Date.now()).toBeGreaterThan(89 * 86_400_000)
    for (const bad of [{ name: '', scopes: ['admin'] }, { name: 'x', scopes: [] }, { name: 'x', scopes: ['admin'], expires_days: 0 }, { name: 'x', scopes: ['admin'], expires_days: 1.5 }, null]) {
      expect((await rejectionOf(keys.mint(admin, bad))).code).toBe(1006)
    }
  })

  it('are minted and revoked only by admins of the same tenant', async () => {
    const keys = service()
    expect((await rejectionOf(keys.mint(principal('acme', ['rufid.create']), { name: 'x', scopes: ['admin'] }))).code).toBe(1003)
    const minted = await keys.mint(admin, { name: 'x', scopes: ['functions:read'] })
    expect((await rejectionOf(keys.revoke(principal('globex', ['rufid.admin']), minted.key_id))).code).toBe(1011)
    await keys.revoke(admin, minted.key_id)
    expect((await rejectionOf(keys.verify(minted.api_key))).message).toMatch(/revoked/)
  })

  it('minted for an operator with expires_days null never expire; absent, the default applies', async () => {
    const keys = service()
    const forever = await keys.mintFor('default', 'system:bootstrap', { name: 'admin', scopes: ['admin'], expires_days: null })
    expect(forever.expires_at).toBeNull()
    const usual = await keys.mintFor('default', 'test', { name: 'x', scopes: ['admin'] })
    expect(Date.parse(usual.expires_at!) - Date.now()).toBeGreaterThan(89 * 86_400_000)
    vi.useFakeTimers({ now: Date.now() + 3650 * 86_400_000, toFake: ['Date'] })
    await expect(keys.verify(forever.api_key)).resolves.toMatchObject({ expires_at: null })
  })

  it('refuse expires_days null over the API while keys expire by default, accept it when they do not', async () => {
    const err = await rejectionOf(service().mint(admin, { name: 'x', scopes: ['functions:read'], expires_days: null }))
    expect(err.code).toBe(1006)
    expect(err.message).toMatch(/never expires/)
    const lenient = new ApiKeyService({ defaultExpiresDays: null, maxExpiresDays: 3650 }, createMemoryKeyStorage())
    expect((await lenient.mint(admin, { name: 'x', scopes: ['functions:read'], expires_days: null })).expires_at).toBeNull()
    expect((await lenient.mint(admin, { name: 'y', scopes: ['functions:read'] })).expires_at).toBeNull()
    expect((await rejectionOf(lenient.mint(admin, { name: 'z', scopes: ['functions:read'], expires_days: 3651 }))).code).toBe(1006)
  })

  it('are read from storage once, and a revocation is seen at once', async () => {
    const storage = createMemoryKeyStorage()
    let reads = 0
    const counting = { ...storage, get: async (id: string) => (reads++, storage.get(id)) }
    const keys = new ApiKeyService({ defaultExpiresDays: 90, maxExpiresDays: 3650 }, counting)
    const minted = await keys.mint(admin, { name: 'x', scopes: ['functions:read'] })
    for (let i = 0; i < 5; i++) await keys.verify(minted.api_key)
    expect(reads).toBe(0)
    // a lookup that overlaps the revocation must not cache the record it read before it
    const other = await keys.mint(admin, { name: 'y', scopes: ['functions:read'] })
    let slowRead = true
    const slow = {
      ...storage,
      // the first read takes its snapshot now and answers after the revocation below has finished
      get: async (id: string) => {
        const record = await storage.get(id)
        if (slowRead) {
          slowRead = false
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
        return record
      },
    }
    const cold = new ApiKeyService({ defaultExpiresDays: 90, maxExpiresDays: 3650 }, slow)
    const racing = cold.verify(other.api_key)
    await cold.revoke(admin, other.key_id)
    await expect(racing).resolves.toMatchObject({ key_id: other.key_id })
    expect((await rejectionOf(cold.verify(other.api_key))).message).toMatch(/revoked/)
    await keys.revoke(admin, minted.key_id)
    expect((await rejectionOf(keys.verify(minted.api_key))).message).toMatch(/revoked/)
  })

  it('accept an operator-chosen key (ADMIN_API_KEY) as given', async () => {
    const keys = service()
    await keys.mintFor('default', 'test', { name: 'admin', scopes: ['admin'], expires_days: null }, 'my-chosen-admin-key')
    expect((await keys.verify('my-chosen-admin-key')).scopes).toEqual(['admin'])
    expect((await rejectionOf(keys.verify('my-chosen-admin-kez'))).code).toBe(1003)
  })
})

describe('namespace narrowing', () => {
  it('narrows to a child namespace and never widens', () => {
    const p = principal('acme')
    expect(narrow(p, undefined).tenant_id).toBe('acme')
    expect(narrow(p, 'acme.team').tenant_id).toBe('acme.team')
    expect(() => narrow(p, 'globex')).toThrow(/outside/)
    expect(() => narrow(p, 'acmeco')).toThrow(/outside/)
    expect(() => narrow(p, 'bad ns')).toThrow(SvcError)
  })
})

describe('audit log', () => {
  it('filters by tenant, operation, rufid and time, paginates, and sweeps past retention', async () => {
    const { engine, db } = await createTestEngine()
    const log = engine.auditLog
    const base = { user: 'u', ip: '127.0.0.1', duration_ms: 1, result: 'success' }
    await log.record({ ...base, operation: 'rufid.create', rufid: 'rufid:AAAAAAAAAAAA:v1:acme', tenant: 'acme', timestamp: '2026-01-01T00:00:00.000Z' })
    for (let i = 0; i < 5; i++) await log.record({ ...base, operation: 'rufid.execute', rufid: 'rufid:AAAAAAAAAAAA:v1:acme', tenant: 'acme' })
    await log.record({ ...base, operation: 'rufid.execute', rufid: null, tenant: 'globex' })
    expect((await log.query({ tenant: 'acme' })).items).toHaveLength(6)
    expect((await log.query({ tenant: 'acme', operation: 'rufid.create' })).items).toHaveLength(1)
    expect((await log.query({ tenant: 'acme', rufid: 'AAAAAAAAAAAA' })).items).toHaveLength(6)
    expect((await log.query({ from: '2026-06-01T00:00:00Z' })).items).toHaveLength(6)
    expect((await log.query({ to: '2026-06-01T00:00:00Z' })).items).toHaveLength(1)
    const page1 = await log.query({ tenant: 'acme', limit: 4 })
    expect(page1.items).toHaveLength(4)
    const page2 = await log.query({ tenant: 'acme', limit: 4, cursor: page1.next_cursor! })
    expect(page2.items).toHaveLength(2)
    expect(page2.next_cursor).toBeNull()
    expect((await rejectionOf(log.query({ from: 'yesterday' }))).code).toBe(1006)
    const swept = await new AuditLog({ retentionDays: 30, sweepIntervalMs: 60_000 }, { db }).sweep()
    expect(swept).toBe(1)
    expect((await log.query({ tenant: 'acme' })).items).toHaveLength(5)
    await engine.stop()
  })
})
