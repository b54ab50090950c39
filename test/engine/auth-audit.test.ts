// The access gate, the audit log's read rule and its summaries of rate-limit refusals, in process.
import { MemoryLevel } from 'memory-level'
import { describe, expect, it } from 'vitest'
import { SvcError } from '../../src/core/errors.js'
import { AuditLog, createMetrics, type AuditEntry, type LevelDatabase } from '../../src/engine/index.js'
import { createTestEngine, principal, rejectionOf } from '../fixtures/engine.js'

const newDb = () => new MemoryLevel<string, unknown>({ valueEncoding: 'json' }) as unknown as LevelDatabase
const base = { user: 'u', ip: '127.0.0.1', duration_ms: 1, rufid: null }
const refusal = { ...base, operation: 'rufid.list', tenant: 'acme', result: 'rate_limited', code: 1005, key_id: 'k1', method: 'api_key' }
const counted = (items: AuditEntry[]): number => items.reduce((n, e) => n + (e.count ?? 1), 0)

describe('audit log: rate-limit refusals', () => {
  it('writes the first refusal at once and counts the rest into one summary entry', async () => {
    const log = new AuditLog({ retentionDays: 0, sweepIntervalMs: 60_000, refusalSummaryMs: 60_000 }, { db: newDb() })
    for (let i = 0; i < 50; i++) await log.recordRefusal(refusal)
    // another caller is summarised on its own
    for (let i = 0; i < 3; i++) await log.recordRefusal({ ...refusal, key_id: 'k2' })
    const before = (await log.query({})).items
    expect(before).toHaveLength(2)
    expect(before.every((e) => e.count === undefined)).toBe(true)

    await log.stop()
    const after = (await log.query({})).items
    expect(after).toHaveLength(4)
    expect(counted(after.filter((e) => e.key_id === 'k1'))).toBe(50)
    expect(counted(after.filter((e) => e.key_id === 'k2'))).toBe(3)
    expect(after.find((e) => e.count === 49)).toMatchObject({ operation: 'rufid.list', tenant: 'acme', result: 'rate_limited', code: 1005, ip: '127.0.0.1' })
  })

  it('starts a new period after each summary, and writes no summary for a lone refusal', async () => {
    const log = new AuditLog({ retentionDays: 0, sweepIntervalMs: 60_000, refusalSummaryMs: 60_000 }, { db: newDb() })
    await log.recordRefusal(refusal)
    await log.flushRefusals()
    expect((await log.query({})).items).toHaveLength(1)
    await log.recordRefusal(refusal)
    await log.recordRefusal(refusal)
    await log.flushRefusals()
    const items = (await log.query({})).items
    // entries of one millisecond have no order among themselves
    expect(items.map((e) => e.count ?? 0).sort()).toEqual([0, 0, 1])
    expect(counted(items)).toBe(3)
  })

  it('the access gate sends refusals to the summary and other outcomes straight to the log', async () => {
    const { engine } = await createTestEngine({ rateLimits: { perKey: { points: 1, windowSeconds: 60 } } })
    const minted = await engine.keys.mintFor('acme', 'test', { name: 'k', scopes: ['functions:read'], expires_days: 1 })
    const input = { authorization: `Bearer ${minted.api_key}`, ip: '10.0.0.1' }
    const startedAt = performance.now()
    for (let i = 0; i < 10; i++) {
      let admitted
      let error: unknown
      try {
        admitted = await engine.access.admit(input)
      } catch (err) {
        error = err
      }
      await engine.access.audit({ operation: 'rufid.list', principal: admitted, ip: input.ip, startedAt, error })
    }
    const live = (await engine.auditLog.query({})).items
    expect(live.map((e) => e.result).sort()).toEqual(['rate_limited', 'success'])
    await engine.stop()
  })
})

describe('access gate: rate limits', () => {
  it('charges the credential\'s own tenant whatever namespace it narrows to', async () => {
    const { engine } = await createTestEngine({ rateLimits: { perTenant: { points: 3, windowSeconds: 60 } } })
    const a = await engine.keys.mintFor('acme', 'test', { name: 'a', scopes: ['functions:read'], expires_days: 1 })
    const b = await engine.keys.mintFor('acme', 'test', { name: 'b', scopes: ['functions:read'], expires_days: 1 })
    const other = await engine.keys.mintFor('globex', 'test', { name: 'o', scopes: ['functions:read'], expires_days: 1 })
    const codes: Array<number | 'ok'> = []
    for (let i = 0; i < 5; i++) {
      const key = i % 2 === 0 ? a : b
      codes.push(await engine.access.admit({ authorization: `Bearer ${key.api_key}`, namespace: `acme.n${i}`, ip: '10.0.0.1' })
        .then((p) => {
          expect(p.tenant_id).toBe(`acme.n${i}`)
          return 'ok' as const
        }, (err: SvcError) => err.code))
    }
    expect(codes).toEqual(['ok', 'ok', 'ok', 1005, 1005])
    await expect(engine.access.admit({ authorization: `Bearer ${other.api_key}`, ip: '10.0.0.1' })).resolves.toMatchObject({ tenant_id: 'globex' })
    await engine.stop()
  })
})

describe('audit log: who reads what (GET /api/v1/audit)', () => {
  const seed = async (): Promise<AuditLog> => {
    const log = new AuditLog({ retentionDays: 0, sweepIntervalMs: 60_000, operatorTenant: 'default' }, { db: newDb() })
    for (const tenant of ['acme', 'acme.team1', 'acmeco', 'globex', null, 'default']) {
      await log.record({ ...base, operation: 'rufid.list', tenant, result: tenant === null ? 'unauthenticated' : 'success' })
    }
    return log
  }
  // entries of one millisecond have no order among themselves
  const tenantsOf = (r: { items: AuditEntry[] }) => r.items.map((e) => e.tenant ?? '(null)').sort()
  const operator = principal('default', ['rufid.admin'])
  const acmeAdmin = principal('acme', ['rufid.admin'])

  it('an operator reads every tenant, filters on any, and on ~none for entries without a tenant', async () => {
    const log = await seed()
    expect(tenantsOf(await log.readAs(operator, {}))).toEqual(['(null)', 'acme', 'acme.team1', 'acmeco', 'default', 'globex'])
    expect(tenantsOf(await log.readAs(operator, { tenant: 'globex' }))).toEqual(['globex'])
    expect(tenantsOf(await log.readAs(operator, { tenant: '~none' }))).toEqual(['(null)'])
  })

  it('another admin reads its tenant and child namespaces only, and is refused anything else', async () => {
    const log = await seed()
    expect(tenantsOf(await log.readAs(acmeAdmin, {}))).toEqual(['acme', 'acme.team1'])
    expect(tenantsOf(await log.readAs(acmeAdmin, { tenant: 'acme.team1' }))).toEqual(['acme.team1'])
    for (const tenant of ['globex', 'acmeco', '~none', 'default']) {
      expect((await rejectionOf(log.readAs(acmeAdmin, { tenant }))).code, tenant).toBe(1003)
    }
    // narrowed to a namespace, an operator is an admin of that namespace only
    expect((await rejectionOf(log.readAs(principal('default.team', ['rufid.admin']), { tenant: 'acme' }))).code).toBe(1003)
    expect((await rejectionOf(log.readAs(principal('acme', ['rufid.read']), {}))).code).toBe(1003)
    expect((await rejectionOf(log.readAs(operator, { tenant: 'bad tenant' }))).code).toBe(1006)
  })

  it('without an operator tenant, no admin reads another tenant', async () => {
    const log = new AuditLog({ retentionDays: 0, sweepIntervalMs: 60_000 }, { db: newDb() })
    expect((await rejectionOf(log.readAs(principal('default', ['rufid.admin']), { tenant: 'acme' }))).code).toBe(1003)
  })
})

describe('metrics', () => {
  it('svc_federation_discovery_requests_total has a 0 sample for each result before any discovery', async () => {
    const text = await createMetrics().registry.metrics()
    for (const result of ['found', 'not_found', 'error']) {
      expect(text).toContain(`svc_federation_discovery_requests_total{result="${result}"} 0`)
    }
  })
})
