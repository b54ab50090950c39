// Per-tenant rate limits, the audit of refusals and oversized bodies, and who reads the audit log,
// through a real daemon over HTTP.
import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { call, removeDir, startDaemonProcess, SVC_NODE_BIN, tempDataDir, type DaemonProcess } from '../fixtures/daemon-process.js'

const SVC_BIN = join(SVC_NODE_BIN, '..', 'svc.js')
const bearer = (key: string) => ({ authorization: `Bearer ${key}` })
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i)
const statusCount = (rs: Array<{ status: number }>, status: number): number => rs.filter((r) => r.status === status).length

interface Entry {
  operation: string
  tenant: string | null
  result: string
  code?: number
  count?: number
  key_id?: string
  user: string | null
}
interface AuditPage {
  items: Entry[]
  next_cursor: string | null
}
const codeOf = (body: unknown): number | undefined => (body as { error?: { code?: number } }).error?.code

// every tenant gets 20 requests a minute; each test spends the budget of tenants of its own
const PER_TENANT = 20

describe('per-tenant rate limits and the audit log', () => {
  let d: DaemonProcess
  let dataDir: string
  const admin: Record<string, string> = {}

  beforeAll(async () => {
    dataDir = tempDataDir()
    // admin keys minted offline cost no request, so every tenant starts with its whole budget
    for (const tenant of ['default', 'acme', 'initech', 'globex', 'umbrella']) {
      const r = spawnSync(process.execPath, [SVC_BIN, 'keys', 'create', '--admin', '--init', '--tenant', tenant, '--json'], {
        env: { ...process.env, SVC_DATA_DIR: dataDir }, encoding: 'utf8',
      })
      expect(r.status, r.stderr).toBe(0)
      admin[tenant] = (JSON.parse(r.stdout) as { api_key: string }).api_key
    }
    writeFileSync(join(dataDir, 'svc.yaml'), [
      'rate_limits:',
      '  per_key: { points: 1000, window_s: 60 }',
      `  per_tenant: { points: ${PER_TENANT}, window_s: 60 }`,
      '  per_ip_unauthenticated: { points: 1000, window_s: 60 }',
    ].join('\n'))
    d = await startDaemonProcess({
      dataDir,
      env: { AUTH_PROVIDER: 'standard', SVC_CONFIG: join(dataDir, 'svc.yaml'), SVC_BODY_LIMIT_BYTES: '2048' },
    })
  })
  afterAll(async () => {
    await d?.stop()
    if (dataDir) removeDir(dataDir)
  })

  const list = (key: string, namespace?: string) =>
    call(`${d.url}/api/v1/functions`, 'GET', undefined, { ...bearer(key), ...(namespace ? { 'x-svc-namespace': namespace } : {}) })
  const audit = (key: string, query: string) => call<AuditPage>(`${d.url}/api/v1/audit?limit=1000&${query}`, 'GET', undefined, bearer(key))

  it('charges the per-tenant limit to the credential\'s tenant, with or without X-Svc-Namespace, and serves another tenant', async () => {
    const plain = await Promise.all(range(PER_TENANT + 5).map(() => list(admin.acme!)))
    expect(statusCount(plain, 200)).toBe(PER_TENANT)
    expect(statusCount(plain, 429)).toBe(5)
    const limited = plain.find((r) => r.status === 429)!
    expect(codeOf(limited.body)).toBe(1005)
    expect(limited.body).toMatchObject({ error: { details: { limit: 'tenant' } } })
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)

    // a child namespace per request must not get a budget of its own
    const narrowed = await Promise.all(range(PER_TENANT + 5).map((i) => list(admin.initech!, `initech.n${i + 1}`)))
    expect(statusCount(narrowed, 200)).toBe(PER_TENANT)
    expect(statusCount(narrowed, 429)).toBe(5)

    expect((await list(admin.globex!)).status).toBe(200)
  })

  it('lets the operator (an admin of the node\'s admin tenant) read every tenant and unauthenticated entries; other admins only their own', async () => {
    const stranger = await list('svck_AAAAAAAAAAAAAAAA_' + 'B'.repeat(43))
    expect(stranger.status).toBe(401)
    expect((await list(admin.globex!, 'globex.team')).status).toBe(200)

    const none = await audit(admin.default!, 'tenant=~none')
    expect(none.status).toBe(200)
    expect(none.body.items.length).toBeGreaterThan(0)
    expect(none.body.items.every((e) => e.tenant === null)).toBe(true)
    expect(none.body.items.some((e) => e.operation === 'rufid.list' && e.result === 'unauthenticated' && e.code === 1003)).toBe(true)

    const acme = await audit(admin.default!, 'tenant=acme&operation=rufid.list')
    expect(acme.body.items.every((e) => e.tenant === 'acme')).toBe(true)
    expect(acme.body.items.filter((e) => e.result === 'success')).toHaveLength(PER_TENANT)

    const everything = await audit(admin.default!, 'operation=rufid.list')
    const tenants = new Set(everything.body.items.map((e) => e.tenant))
    for (const t of ['acme', 'initech.n1', 'globex', 'globex.team', null]) expect(tenants.has(t), String(t)).toBe(true)

    // globex's admin: its tenant and its child namespaces, nothing else
    const own = await audit(admin.globex!, '')
    expect(own.status).toBe(200)
    expect(new Set(own.body.items.map((e) => e.tenant))).toEqual(new Set(['globex', 'globex.team']))
    for (const tenant of ['acme', '~none', 'default']) {
      const refused = await audit(admin.globex!, `tenant=${tenant}`)
      expect(refused.status, tenant).toBe(403)
      expect(codeOf(refused.body), tenant).toBe(1003)
    }
    const malformed = await audit(admin.default!, 'tenant=no%20such')
    expect(malformed.status).toBe(400)
  })

  it('audits a request refused for its body size (413) or malformed JSON (400)', async () => {
    const big = await call(`${d.url}/api/v1/functions/create`, 'POST', { function_name: 'big', source_code: 'x'.repeat(4096) }, bearer(admin.globex!))
    expect(big.status).toBe(413)
    expect(codeOf(big.body)).toBe(1006)
    const broken = await call(`${d.url}/api/v1/functions/create`, 'POST', '{"function_name":', bearer(admin.globex!))
    expect(broken.status).toBe(400)

    // refused while decoding, before the credentials were read: audited under the operation asked for, without a tenant
    const entries = (await audit(admin.default!, 'tenant=~none&operation=rufid.create')).body.items
    expect(entries).toEqual([
      expect.objectContaining({ operation: 'rufid.create', tenant: null, result: 'error', code: 1006 }),
      expect.objectContaining({ operation: 'rufid.create', tenant: null, result: 'error', code: 1006 }),
    ])
  })

  it('accounts for every refusal of a flood in a few audit entries, and serves another tenant meanwhile', async () => {
    const flood = Promise.all(range(60).map(() => list(admin.umbrella!)))
    const other = await list(admin.globex!)
    const answers = await flood
    expect(other.status).toBe(200)
    const refused = statusCount(answers, 429)
    expect(refused).toBe(60 - PER_TENANT)

    // the first refusal is written at once, the others are counted into a summary entry written
    // when the summary period (1 s) ends: wait for it, a bounded number of times
    let entries: Entry[] = []
    for (let attempt = 0; attempt < 8; attempt++) {
      await sleep(400)
      entries = (await audit(admin.default!, 'tenant=umbrella&operation=rufid.list')).body.items.filter((e) => e.result === 'rate_limited')
      if (entries.reduce((n, e) => n + (e.count ?? 1), 0) >= refused) break
    }
    expect(entries.reduce((n, e) => n + (e.count ?? 1), 0)).toBe(refused)
    // not one write per refusal
    expect(entries.length).toBeLessThan(refused)
    for (const e of entries) expect(e).toMatchObject({ tenant: 'umbrella', code: 1005, user: 'key:admin', key_id: expect.any(String) })
  })
})
