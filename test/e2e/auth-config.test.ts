// Authentication as configured, through real daemons over HTTP: keys across a restart and past
// their expiry, the bootstrap admin key, JWT through a JWKS URL, anonymous access, /metrics
// access, and native test mode with a fixed ADMIN_API_KEY / ADMIN_TENANT_ID.
import { createServer, type Server } from 'node:http'
import { writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { ClassicLevel } from 'classic-level'
import { exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ApiKeyService, createLevelKeyStorage, type LevelDatabase } from '../../src/engine/index.js'
import { call, removeDir, startDaemonProcess, tempDataDir, type DaemonProcess } from '../fixtures/daemon-process.js'
import { addJs } from '../fixtures/functions.js'

const bearer = (key: string) => ({ authorization: `Bearer ${key}` })
const codeOf = (body: unknown): number | undefined => (body as { error?: { code?: number } }).error?.code
const adminKeyIn = (output: string): string => {
  const m = /ADMIN_API_KEY=(\S+)/.exec(output)
  if (!m) throw new Error(`no admin key in the start-up output:\n${output}`)
  return m[1]!
}
const metricsText = async (url: string, headers: Record<string, string> = {}) => {
  const res = await fetch(`${url}/metrics`, { headers })
  return { status: res.status, text: await res.text() }
}

/** Writes a key record straight into a stopped node's key store, with its expiry already past. */
async function writeExpiredKey(dataDir: string): Promise<string> {
  const db = new ClassicLevel<string, unknown>(join(dataDir, 'catalog'), { valueEncoding: 'json' })
  await db.open()
  try {
    const storage = createLevelKeyStorage(db as unknown as LevelDatabase)
    const minted = await new ApiKeyService({ defaultExpiresDays: 90, maxExpiresDays: 3650 }, storage)
      .mintFor('default', 'test', { name: 'expired', scopes: ['functions:read'], expires_days: 1 })
    const record = (await storage.get(minted.key_id))!
    await storage.put({ ...record, expires_at: new Date(Date.now() - 60_000).toISOString() })
    return minted.api_key
  } finally {
    await db.close()
  }
}

describe('standard mode: the bootstrap admin key, persistence across a restart, expiry', () => {
  let dataDir: string
  let d: DaemonProcess | undefined
  let admin: string

  beforeAll(async () => {
    dataDir = tempDataDir()
    d = await startDaemonProcess({ dataDir, env: { AUTH_PROVIDER: 'standard' } })
    admin = adminKeyIn(d.output())
  })
  afterAll(async () => {
    await d?.stop()
    if (dataDir) removeDir(dataDir)
  })

  it('prints a bootstrap admin key that never expires; credentials are required, /metrics is open by default', async () => {
    const listed = await call<{ items: Array<{ name: string; expires_at: string | null; scopes: string[] }> }>(
      `${d!.url}/api/v1/auth/v2/api-keys`, 'GET', undefined, bearer(admin),
    )
    expect(listed.status).toBe(200)
    expect(listed.body.items).toEqual([expect.objectContaining({ name: 'admin', scopes: ['admin'], expires_at: null })])

    const anonymous = await call(`${d!.url}/api/v1/functions`, 'GET')
    expect(anonymous.status).toBe(401)
    expect(codeOf(anonymous.body)).toBe(1003)

    const metrics = await metricsText(d!.url)
    expect(metrics.status).toBe(200)
    for (const result of ['found', 'not_found', 'error']) {
      expect(metrics.text).toContain(`svc_federation_discovery_requests_total{result="${result}"} 0`)
    }
  })

  it('keeps minted keys and revocations across a restart, and answers 401 to a key past its expiry', async () => {
    const mint = async (name: string) => {
      const res = await call<{ api_key: string; key_id: string }>(`${d!.url}/api/v1/auth/v2/api-keys`, 'POST', { name, scopes: ['functions:read'], expires_days: 30 }, bearer(admin))
      expect(res.status).toBe(201)
      return res.body
    }
    const kept = await mint('kept')
    const revoked = await mint('revoked')
    expect((await call(`${d!.url}/api/v1/auth/v2/api-keys/${revoked.key_id}`, 'DELETE', undefined, bearer(admin))).status).toBe(200)
    await d!.stop()
    d = undefined

    const expired = await writeExpiredKey(dataDir)
    d = await startDaemonProcess({ dataDir, env: { AUTH_PROVIDER: 'standard', SVC_METRICS_ACCESS: 'disabled' } })
    expect(d.output()).not.toContain('ADMIN_API_KEY=')

    for (const key of [admin, kept.api_key]) expect((await call(`${d.url}/api/v1/functions`, 'GET', undefined, bearer(key))).status).toBe(200)
    const afterRevoke = await call(`${d.url}/api/v1/functions`, 'GET', undefined, bearer(revoked.api_key))
    expect(afterRevoke.status).toBe(401)
    const afterExpiry = await call<{ error: { code: number; message: string } }>(`${d.url}/api/v1/functions`, 'GET', undefined, bearer(expired))
    expect(afterExpiry.status).toBe(401)
    expect(afterExpiry.body.error).toMatchObject({ code: 1003, message: expect.stringMatching(/expired/) })

    // server.metrics_access: disabled
    expect((await metricsText(d.url)).status).toBe(404)
  })
})

describe('JWT through a JWKS URL, anonymous access when configured, /metrics for admins only', () => {
  let d: DaemonProcess
  let jwks: Server
  let jwksRequests = 0
  let sign: (claims: JWTPayload, kid?: string) => Promise<string>
  let signWithStranger: (claims: JWTPayload) => Promise<string>

  beforeAll(async () => {
    const { publicKey, privateKey } = await generateKeyPair('RS256')
    const stranger = await generateKeyPair('RS256')
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }
    jwks = createServer((req, res) => {
      jwksRequests++
      if (req.url !== '/.well-known/jwks.json') {
        res.writeHead(404).end()
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }))
    })
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve))
    const base = (claims: JWTPayload) => new SignJWT(claims).setIssuer('https://issuer.test').setAudience('svc-node').setIssuedAt().setExpirationTime('5m')
    sign = (claims, kid = 'k1') => base(claims).setProtectedHeader({ alg: 'RS256', kid }).sign(privateKey)
    signWithStranger = (claims) => base(claims).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).sign(stranger.privateKey)

    const dataDir = tempDataDir()
    writeFileSync(join(dataDir, 'svc.yaml'), [
      'server:',
      '  metrics_access: admin',
      'auth:',
      '  bootstrap_admin_key: false',
      '  anonymous: { enabled: true, tenant: public, roles: [consumer] }',
    ].join('\n'))
    d = await startDaemonProcess({
      dataDir,
      env: {
        AUTH_PROVIDER: 'standard',
        SVC_CONFIG: join(dataDir, 'svc.yaml'),
        SVC_JWT_JWKS_URL: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/.well-known/jwks.json`,
        SVC_JWT_ISSUER: 'https://issuer.test',
        SVC_JWT_AUDIENCE: 'svc-node',
      },
    })
  })
  afterAll(async () => {
    await d?.stop()
    if (d) removeDir(d.dataDir)
    await new Promise((resolve) => jwks?.close(resolve))
  })

  it('accepts a JWT signed by a key of the JWKS, and refuses one signed by any other key', async () => {
    const developer = await sign({ tenant_id: 'acme', roles: ['developer'], email: 'dev@acme.test' })
    const created = await call(`${d.url}/api/v1/functions/create`, 'POST', addJs, bearer(developer))
    expect(created.status).toBe(201)
    expect(created.body.rufid).toMatch(/:v1:acme$/)
    expect(jwksRequests).toBeGreaterThan(0)

    for (const [label, token] of [
      ['same kid, another key', await signWithStranger({ tenant_id: 'acme', roles: ['admin'] })],
      ['unknown kid', await sign({ tenant_id: 'acme', roles: ['admin'] }, 'k2')],
    ] as const) {
      const res = await call(`${d.url}/api/v1/functions`, 'GET', undefined, bearer(token))
      expect(res.status, label).toBe(401)
      expect(codeOf(res.body), label).toBe(1003)
    }
  })

  it('serves a caller without credentials as the configured anonymous principal, and only that', async () => {
    const publisher = await sign({ tenant_id: 'public', roles: ['developer'], email: 'pub@public.test' })
    const created = await call(`${d.url}/api/v1/functions/create`, 'POST', addJs, bearer(publisher))
    expect(created.body.rufid).toMatch(/:v1:public$/)

    const listed = await call<{ items: Array<{ rufid: string }> }>(`${d.url}/api/v1/functions`, 'GET')
    expect(listed.status).toBe(200)
    expect(listed.body.items.map((f) => f.rufid)).toEqual([created.body.rufid_short])
    const run = await call(`${d.url}/api/v1/functions/${created.body.rufid_short as string}/execute`, 'POST', { arguments: [2, 5] })
    expect(run.status).toBe(200)
    expect(run.body.result).toBe(7)
    // a consumer: no create
    const create = await call(`${d.url}/api/v1/functions/create`, 'POST', { ...addJs, function_name: 'a2', source_code: 'function a2() { return 2 }' })
    expect(create.status).toBe(403)
    expect(codeOf(create.body)).toBe(1003)
    // credentials that do not verify are refused, never served as anonymous
    expect((await call(`${d.url}/api/v1/functions`, 'GET', undefined, bearer('not-a-key'))).status).toBe(401)
  })

  it('serves /metrics to admin credentials only when server.metrics_access is admin', async () => {
    expect((await metricsText(d.url)).status).toBe(403)
    expect((await metricsText(d.url, bearer(await sign({ tenant_id: 'acme', roles: ['consumer'] })))).status).toBe(403)
    const admin = await metricsText(d.url, bearer(await sign({ tenant_id: 'acme', roles: ['admin'] })))
    expect(admin.status).toBe(200)
    expect(admin.text).toContain('svc_protocol_requests_total')
  })
})

describe('native test mode with ADMIN_API_KEY and ADMIN_TENANT_ID', () => {
  const FIXED = 'operator-chosen-admin-key-7Hq2'
  let d: DaemonProcess

  beforeAll(async () => {
    d = await startDaemonProcess({
      env: { AUTH_PROVIDER: 'native', ENABLE_TEST_MODE: 'true', DEPLOYMENT_MODE: 'test', ADMIN_API_KEY: FIXED, ADMIN_TENANT_ID: 'ops' },
    })
  })
  afterAll(async () => {
    await d?.stop()
    if (d) removeDir(d.dataDir)
  })

  it('uses the fixed key, for the fixed tenant, never printed, never expiring, as the node operator', async () => {
    expect(d.output()).not.toContain('ADMIN_API_KEY=')
    expect(d.output()).not.toContain(FIXED)

    const created = await call(`${d.url}/api/v1/functions/create`, 'POST', addJs, bearer(FIXED))
    expect(created.status).toBe(201)
    expect(created.body.rufid).toMatch(/:v1:ops$/)
    const minted = await call(`${d.url}/api/v1/auth/v2/api-keys`, 'POST', { name: 'runner', scopes: ['functions:execute'], expires_days: 1 }, bearer(FIXED))
    expect(minted.body).toMatchObject({ tenant_id: 'ops' })
    const keys = await call<{ items: Array<{ name: string; expires_at: string | null }> }>(`${d.url}/api/v1/auth/v2/api-keys`, 'GET', undefined, bearer(FIXED))
    expect(keys.body.items.find((k) => k.name === 'admin')).toMatchObject({ expires_at: null })

    // an admin of ADMIN_TENANT_ID operates the node: it reads the audit of unauthenticated calls
    expect((await call(`${d.url}/api/v1/functions`, 'GET', undefined, bearer('wrong'))).status).toBe(401)
    const audit = await call<{ items: Array<{ result: string; tenant: string | null }> }>(`${d.url}/api/v1/audit?tenant=~none`, 'GET', undefined, bearer(FIXED))
    expect(audit.status).toBe(200)
    expect(audit.body.items.some((e) => e.result === 'unauthenticated' && e.tenant === null)).toBe(true)
  })
})
