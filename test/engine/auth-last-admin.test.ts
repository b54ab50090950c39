// The last active administrator key of a tenant cannot be revoked (issue 28): schemathesis revoked
// a node's only admin key in its first run, and every call was refused until the node stopped. The
// key service refuses with 1003 (details.reason `last_admin_key`) and names the rotation; expired
// and revoked keys do not count; two concurrent revocations of the last two admin keys cannot both
// succeed. The REST door (the only one that revokes keys) is checked in process at the end.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { pino } from 'pino'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createRestApi } from '../../src/api/rest/app.js'
import { ApiKeyService, createMemoryKeyStorage, type ApiKeyRecord, type ApiKeyStorage } from '../../src/engine/index.js'
import type { Permission, Principal } from '../../src/engine/types.js'
import { createTestEngine, rejectionOf } from '../fixtures/engine.js'

const service = (storage: ApiKeyStorage = createMemoryKeyStorage()) => new ApiKeyService({ defaultExpiresDays: 90, maxExpiresDays: 3650 }, storage)

/** The principal an API key admits (what the credential authenticator builds). */
const keyCaller = (tenant: string, keyId: string, permissions: Permission[] = ['rufid.admin']): Principal =>
  ({ tenant_id: tenant, user: 'key:admin', permissions: new Set(permissions), method: 'api_key', key_id: keyId })

/** An admin key of `tenant` minted at bootstrap (no caller), and the principal it admits. */
async function adminKey(keys: ApiKeyService, tenant: string, expiresDays: number | null = null) {
  const minted = await keys.mintFor(tenant, 'test', { name: 'admin', scopes: ['admin'], expires_days: expiresDays })
  return { ...minted, caller: keyCaller(tenant, minted.key_id) }
}

describe('the last active administrator key of a tenant', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('cannot be revoked, by itself or another admin; the error names the rotation and the key keeps working', async () => {
    const keys = service()
    const only = await adminKey(keys, 'default')
    const refused = await rejectionOf(keys.revoke(only.caller, only.key_id))
    expect(refused.code).toBe(1003)
    expect(refused.reason).toBeUndefined() // 403, not 401: the caller is who it says
    expect(refused.details).toEqual({ reason: 'last_admin_key', key_id: only.key_id, tenant_id: 'default' })
    expect(refused.message).toMatch(/last active administrator key of tenant default/)
    expect(refused.message).toMatch(/mint the new administrator key first .*then revoke this one/)
    await expect(keys.verify(only.api_key)).resolves.toMatchObject({ key_id: only.key_id })
    expect((await keys.list(only.caller))[0]!.revoked_at).toBeUndefined()
  })

  it('is replaced by a rotation: mint the new one, revoke the old; then the new one is the last', async () => {
    const keys = service()
    const old = await adminKey(keys, 'default')
    const next = await keys.mint(old.caller, { name: 'admin 2', scopes: ['admin'], expires_days: 30 })
    await expect(keys.revoke(old.caller, old.key_id)).resolves.toMatchObject({ key_id: old.key_id })
    expect((await rejectionOf(keys.verify(old.api_key))).message).toBe('API key revoked')
    const refused = await rejectionOf(keys.revoke(keyCaller('default', next.key_id), next.key_id))
    expect(refused.details.reason).toBe('last_admin_key')
  })

  it('counts only active admin keys: expired and revoked ones do not keep the tenant reachable', async () => {
    vi.useFakeTimers({ now: new Date('2026-01-01T00:00:00Z') })
    const keys = service()
    const lasting = await adminKey(keys, 'acme')
    const shortLived = await adminKey(keys, 'acme', 1)
    const revokedOne = await adminKey(keys, 'acme')
    await keys.revoke(lasting.caller, revokedOne.key_id)
    // a reader key is no administrator either
    await keys.mint(lasting.caller, { name: 'reader', scopes: ['functions:read', 'functions:execute', 'functions:create', 'functions:delete'] })
    vi.setSystemTime(new Date('2026-01-02T00:00:01Z')) // shortLived has expired
    expect((await rejectionOf(keys.revoke(lasting.caller, lasting.key_id))).details.reason).toBe('last_admin_key')
    // an expired admin key is not active: revoking it is allowed
    await expect(keys.revoke(lasting.caller, shortLived.key_id)).resolves.toMatchObject({ key_id: shortLived.key_id })
  })

  it('other keys revoke as before; revoking a revoked key again is allowed', async () => {
    const keys = service()
    const admin = await adminKey(keys, 'acme')
    const reader = await keys.mint(admin.caller, { name: 'reader', scopes: ['functions:read'] })
    await expect(keys.revoke(admin.caller, reader.key_id)).resolves.toMatchObject({ key_id: reader.key_id })
    const again = await keys.revoke(admin.caller, reader.key_id)
    expect(again.revoked_at).toBeDefined()
  })

  it("is a tenant's own: another tenant's admin keys do not count; an admin key of the parent tenant does", async () => {
    const keys = service()
    const acme = await adminKey(keys, 'acme')
    const globex = await adminKey(keys, 'globex')
    const team = await adminKey(keys, 'acme.team1')
    // acme.team1 stays reachable through acme's admin key (X-Svc-Namespace: acme.team1)
    const asAcmeInTeam = { ...acme.caller, tenant_id: 'acme.team1' }
    await expect(keys.revoke(asAcmeInTeam, team.key_id)).resolves.toMatchObject({ key_id: team.key_id })
    // acme's own last admin key: globex's and a child namespace's admin keys do not reach acme
    const team2 = await adminKey(keys, 'acme.team2')
    expect(team2.key_id).not.toBe(acme.key_id)
    expect((await rejectionOf(keys.revoke(acme.caller, acme.key_id))).details).toMatchObject({ reason: 'last_admin_key', tenant_id: 'acme' })
    expect((await rejectionOf(keys.revoke(globex.caller, globex.key_id))).details).toMatchObject({ reason: 'last_admin_key', tenant_id: 'globex' })
  })

  it('may be revoked by a caller that did not authenticate with an API key (a JWT admin keeps its own way in)', async () => {
    const keys = service()
    const only = await adminKey(keys, 'acme')
    const jwtAdmin: Principal = { tenant_id: 'acme', user: 'ops@acme.test', permissions: new Set(['rufid.admin']), method: 'jwt', expires_at: Date.now() + 60_000 }
    await expect(keys.revoke(jwtAdmin, only.key_id)).resolves.toMatchObject({ key_id: only.key_id })
  })

  it('two concurrent revocations of the last two admin keys: exactly one succeeds', async () => {
    // a storage whose list() waits (bounded) for a second list() in flight: were the two
    // revocations not serialized, both would read the two admin keys as active and both succeed
    const inner = createMemoryKeyStorage()
    let waiting: Array<() => void> = []
    const racing: ApiKeyStorage = {
      get: (id) => inner.get(id),
      put: (r: ApiKeyRecord) => inner.put(r),
      async list(tenant) {
        const read = await inner.list(tenant)
        await new Promise<void>((resolve) => {
          waiting.push(resolve)
          if (waiting.length >= 2) {
            for (const w of waiting) w()
            waiting = []
          }
          setTimeout(resolve, 150)
        })
        return read
      },
    }
    const keys = service(racing)
    const a = await adminKey(keys, 'default')
    const b = await adminKey(keys, 'default')
    const results = await Promise.allSettled([keys.revoke(a.caller, a.key_id), keys.revoke(b.caller, b.key_id)])
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected'])
    const refusal = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')!.reason as { code: number; details: Record<string, unknown> }
    expect(refusal).toMatchObject({ code: 1003, details: { reason: 'last_admin_key' } })
    const active = (await inner.list('default')).filter((r) => r.revoked_at === undefined)
    expect(active).toHaveLength(1)
  })
})

describe('DELETE /api/v1/auth/v2/api-keys/{keyId} (REST, in process)', () => {
  it("answers 403 with 1003 and the rotation for the node's only admin key, and revokes it once a successor exists", async () => {
    const { engine } = await createTestEngine()
    const app = createRestApi({ bodyLimitBytes: 1 << 20, metricsAccess: 'public' }, { engine, logger: pino({ level: 'silent' }) })
    const server = http.createServer(app.callback())
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const rest = async (path: string, method: string, token: string, body?: unknown) => {
      const res = await fetch(`${url}${path}`, {
        method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
      return { status: res.status, body: (await res.json()) as { error: { message: string }; api_key: string; key_id: string } }
    }
    try {
      const only = await engine.keys.mintFor('default', 'system:bootstrap', { name: 'admin', scopes: ['admin'], expires_days: null })
      const refused = await rest(`/api/v1/auth/v2/api-keys/${only.key_id}`, 'DELETE', only.api_key)
      expect(refused.status).toBe(403)
      expect(refused.body.error).toMatchObject({ code: 1003, name: 'PERMISSION_DENIED', details: { reason: 'last_admin_key', key_id: only.key_id, tenant_id: 'default' } })
      expect(refused.body.error.message).toMatch(/mint the new administrator key first/)
      // the node still answers its operator
      expect((await rest('/api/v1/auth/v2/api-keys', 'GET', only.api_key)).status).toBe(200)

      const next = await rest('/api/v1/auth/v2/api-keys', 'POST', only.api_key, { name: 'admin 2', scopes: ['admin'], expires_days: 30 })
      expect(next.status).toBe(201)
      expect((await rest(`/api/v1/auth/v2/api-keys/${only.key_id}`, 'DELETE', next.body.api_key)).status).toBe(200)
      expect((await rest('/api/v1/auth/v2/api-keys', 'GET', only.api_key)).status).toBe(401)
      expect((await rest(`/api/v1/auth/v2/api-keys/${next.body.key_id}`, 'DELETE', next.body.api_key)).status).toBe(403)
    } finally {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await engine.stop()
    }
  })
})
