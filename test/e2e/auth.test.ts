// Authentication, tenancy, native test mode, rate limits and the audit log, through real daemons.
import { spawnSync } from 'node:child_process'
import { createHmac, generateKeyPairSync } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { request as httpsRequest } from 'node:https'
import { join, relative } from 'node:path'
import { SignJWT, importPKCS8 } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { computeRufid } from '../../src/core/rufid.js'
import { call, removeDir, startDaemonProcess, SVC_NODE_BIN, tempDataDir, type DaemonProcess } from '../fixtures/daemon-process.js'
import { addJs } from '../fixtures/functions.js'
import { createTestCa } from '../fixtures/test-ca.js'

const SVC_BIN = join(SVC_NODE_BIN, '..', 'svc.js')
const bearer = (key: string) => ({ authorization: `Bearer ${key}` })
const adminKeyIn = (output: string): string => {
  const m = /ADMIN_API_KEY=(\S+)/.exec(output)
  if (!m) throw new Error(`no admin key in the start-up output:\n${output}`)
  return m[1]!
}
interface ErrorBody {
  error: { code: number; name: string }
}
const codeOf = (body: unknown): number | undefined => (body as Partial<ErrorBody>).error?.code

/** Every file under `dir`, read as bytes. */
function filesUnder(dir: string): Array<{ path: string; bytes: Buffer }> {
  const out: Array<{ path: string; bytes: Buffer }> = []
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) out.push(...filesUnder(path))
    else out.push({ path, bytes: readFileSync(path) })
  }
  return out
}

describe('native test mode (service-spec §4.3)', () => {
  let d: DaemonProcess
  let admin: string

  beforeAll(async () => {
    d = await startDaemonProcess({
      env: { AUTH_PROVIDER: 'native', ENABLE_TEST_MODE: 'true', DEPLOYMENT_MODE: 'test', WRITE_ADMIN_KEY_FILE: 'true' },
    })
    admin = adminKeyIn(d.output())
  })
  afterAll(async () => {
    await d?.stop()
    if (d) removeDir(d.dataDir)
  })

  it('removes the admin key file when the node stops (the key dies with it)', async () => {
    const other = await startDaemonProcess({
      env: { AUTH_PROVIDER: 'native', ENABLE_TEST_MODE: 'true', DEPLOYMENT_MODE: 'test', WRITE_ADMIN_KEY_FILE: 'true' },
    })
    const file = /admin API key file \(tenant default\): (\S+)/.exec(other.output())![1]!
    expect(existsSync(file)).toBe(true)
    await other.stop()
    const left = existsSync(file)
    removeDir(other.dataDir)
    expect(left).toBe(false)
  })

  it('prints the generated admin key once and writes it to a 0600 file whose path is printed', () => {
    expect(d.output().match(/ADMIN_API_KEY=/g)).toHaveLength(1)
    const m = /admin API key file \(tenant default\): (\S+)/.exec(d.output())
    expect(m).not.toBeNull()
    expect(readFileSync(m![1]!, 'utf8').trim()).toBe(admin)
    expect(statSync(m![1]!).mode & 0o777).toBe(0o600)
    // outside the data directory, which never holds a key in clear
    expect(relative(d.dataDir, m![1]!).startsWith('..')).toBe(true)
    for (const f of filesUnder(d.dataDir)) expect(f.bytes.includes(Buffer.from(admin)), f.path).toBe(false)
  })

  it('a key minted with functions:execute executes over both paths and cannot create', async () => {
    const created = await call(`${d.url}/api/v1/functions/create`, 'POST', addJs, bearer(admin))
    expect(created.status).toBe(201)
    const minted = await call(`${d.url}/api/v1/auth/v2/api-keys`, 'POST', { name: 'runner', scopes: ['functions:execute'], expires_days: 1 }, bearer(admin))
    expect(minted.status).toBe(201)
    expect(minted.body).toMatchObject({ name: 'runner', scopes: ['functions:execute'] })
    const key = minted.body.api_key as string
    expect(key).toMatch(/^svck_/)

    const native = await call(`${d.url}/api/v1/execution/execute`, 'POST', {
      rufid: `rufid:${created.body.rufid_short as string}`,
      function_name: 'add',
      namespace: 'default',
      source_code: addJs.source_code,
      input_data: { a: 2, b: 3 },
    }, bearer(key))
    expect(native.status).toBe(200)
    expect(native.body).toMatchObject({ result: 5, status: 'success' })
    expect(native.body.execution_id).toMatch(/^ex_/)
    expect(native.body.timing).toMatchObject({ execution_time_ms: expect.any(Number), total_time_ms: expect.any(Number) })

    const core = await call(`${d.url}/api/v1/functions/${created.body.rufid_short as string}/execute`, 'POST', { arguments: { a: 20, b: 22 } }, bearer(key))
    expect(core.body.result).toBe(42)

    const denied = await call(`${d.url}/api/v1/functions/create`, 'POST', { ...addJs, function_name: 'other', source_code: 'function other() { return 1 }' }, bearer(key))
    expect(denied.status).toBe(403)
    expect(codeOf(denied.body)).toBe(1003)
  })

  it('registers unknown source whose hash matches on native execute; a mismatch is 1001', async () => {
    const def = { function_name: 'mul', signature: '(a, b)', language: 'javascript', source_code: 'function mul(a, b) { return a * b }' }
    const id = computeRufid(def).rufid_short
    const ok = await call(`${d.url}/api/v1/execution/execute`, 'POST', { rufid: `rufid:${id}`, function_name: 'mul', source_code: def.source_code, input_data: { a: 6, b: 7 } }, bearer(admin))
    expect(ok.status).toBe(200)
    expect(ok.body).toMatchObject({ result: 42, registered: true })
    const other = computeRufid({ ...def, function_name: 'mul2', source_code: 'function mul2(a, b) { return a * b }' }).rufid_short
    const bad = await call(`${d.url}/api/v1/execution/execute`, 'POST', { rufid: `rufid:${other}`, function_name: 'mul', source_code: def.source_code, input_data: {} }, bearer(admin))
    expect(codeOf(bad.body)).toBe(1001)
  })

  it('the spec\'s flow: a functions:execute key runs source not yet registered, audited as a create by that key', async () => {
    const minted = await call(`${d.url}/api/v1/auth/v2/api-keys`, 'POST', { name: 'tester', scopes: ['functions:execute'], expires_days: 1 }, bearer(admin))
    const reader = await call(`${d.url}/api/v1/auth/v2/api-keys`, 'POST', { name: 'reader', scopes: ['functions:read'], expires_days: 1 }, bearer(admin))
    const key = minted.body.api_key as string
    const def = { function_name: 'triple', signature: '(n)', language: 'javascript', source_code: 'function triple(n) { return 3 * n }' }
    const id = computeRufid(def).rufid_short
    const body = { rufid: `rufid:${id}`, function_name: 'triple', namespace: 'default', source_code: def.source_code, input_data: { n: 14 } }
    // a key without rufid.execute registers nothing
    const refused = await call(`${d.url}/api/v1/execution/execute`, 'POST', body, bearer(reader.body.api_key as string))
    expect(refused.status).toBe(403)
    expect((await call(`${d.url}/api/v1/functions/${id}`, 'GET', undefined, bearer(admin))).status).toBe(404)

    const ok = await call(`${d.url}/api/v1/execution/execute`, 'POST', body, bearer(key))
    expect(ok.status, JSON.stringify(ok.body)).toBe(200)
    expect(ok.body).toMatchObject({ result: 42, status: 'success', registered: true })
    const stored = await call(`${d.url}/api/v1/functions/${id}`, 'GET', undefined, bearer(admin))
    expect(stored.body).toMatchObject({ function_name: 'triple', version: 'v1' })
    // a second call finds it: nothing registered again
    const again = await call(`${d.url}/api/v1/execution/execute`, 'POST', body, bearer(key))
    expect(again.body).toMatchObject({ result: 42, registered: false })

    // a registration whose run then fails is still audited as the create it was
    const boom = { function_name: 'boom', signature: '()', language: 'javascript', source_code: 'function boom() { throw new Error("no") }' }
    const boomId = computeRufid(boom).rufid_short
    const failed = await call(`${d.url}/api/v1/execution/execute`, 'POST', { rufid: `rufid:${boomId}`, function_name: 'boom', source_code: boom.source_code, input_data: {} }, bearer(key))
    expect(failed.status).toBe(422)

    type Entries = { items: Array<{ operation: string; rufid: string | null; key_id?: string; result: string; method?: string }> }
    const creates = await call<Entries>(`${d.url}/api/v1/audit?operation=rufid.create&limit=1000`, 'GET', undefined, bearer(admin))
    const byKey = creates.body.items.filter((e) => e.key_id === minted.body.key_id)
    expect(byKey.map((e) => [e.rufid, e.result, e.method]).sort()).toEqual([
      [`rufid:${boomId}:v1:default`, 'success', 'api_key'],
      [`rufid:${id}:v1:default`, 'success', 'api_key'],
    ])
    const executes = await call<Entries>(`${d.url}/api/v1/audit?operation=rufid.execute&limit=1000`, 'GET', undefined, bearer(admin))
    expect(executes.body.items.filter((e) => e.key_id === minted.body.key_id).map((e) => e.result).sort()).toEqual(['error', 'success', 'success'])
  })

  it('answers 401 without credentials, with a malformed token and with an unknown key', async () => {
    for (const headers of [{}, { authorization: 'Basic abc' }, bearer('not-a-key'), bearer('svck_AAAAAAAAAAAAAAAA_' + 'B'.repeat(43))]) {
      const res = await call(`${d.url}/api/v1/functions`, 'GET', undefined, headers)
      expect(res.status, JSON.stringify(headers)).toBe(401)
      expect(codeOf(res.body)).toBe(1003)
    }
  })

  it('refuses to start native mode without ENABLE_TEST_MODE and DEPLOYMENT_MODE', async () => {
    await expect(startDaemonProcess({ env: { AUTH_PROVIDER: 'native' }, startTimeoutMs: 10_000 })).rejects.toThrow(/ENABLE_TEST_MODE=true and DEPLOYMENT_MODE=test/)
  })
})

describe('standard mode: persistent keys, tenants, JWT, rate limits, audit', () => {
  let d: DaemonProcess
  let dataDir: string
  let acmeAdmin: string
  let globexAdmin: string
  let signingKey: Awaited<ReturnType<typeof importPKCS8>>
  let publicPem: string
  const mintedKeys: string[] = []

  beforeAll(async () => {
    dataDir = tempDataDir()
    // the first admin keys of a data directory, from the command line while the node is stopped
    const mint = (tenant: string): string => {
      const r = spawnSync(process.execPath, [SVC_BIN, 'keys', 'create', '--admin', '--init', '--tenant', tenant, '--json'], {
        env: { ...process.env, SVC_DATA_DIR: dataDir }, encoding: 'utf8',
      })
      expect(r.status, r.stderr).toBe(0)
      return (JSON.parse(r.stdout) as { api_key: string }).api_key
    }
    acmeAdmin = mint('acme')
    globexAdmin = mint('globex')
    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 })
    publicPem = pair.publicKey.export({ type: 'spki', format: 'pem' }).toString()
    signingKey = await importPKCS8(pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), 'RS256')
    writeFileSync(join(dataDir, 'jwt.pem'), publicPem)
    writeFileSync(join(dataDir, 'svc.yaml'), [
      'rate_limits:',
      '  per_key: { points: 30, window_s: 60 }',
      '  per_tenant: { points: 1000, window_s: 60 }',
      '  per_ip_unauthenticated: { points: 1000, window_s: 60 }',
    ].join('\n'))
    d = await startDaemonProcess({
      dataDir,
      env: {
        AUTH_PROVIDER: 'standard',
        SVC_CONFIG: join(dataDir, 'svc.yaml'),
        SVC_JWT_PUBLIC_KEY_FILE: join(dataDir, 'jwt.pem'),
        SVC_JWT_ISSUER: 'https://issuer.test',
        SVC_JWT_AUDIENCE: 'svc-node',
      },
    })
  })
  afterAll(async () => {
    await d?.stop()
    if (dataDir) removeDir(dataDir)
  })

  const mintKey = async (admin: string, scopes: string[], name = 'k'): Promise<{ api_key: string; key_id: string }> => {
    const res = await call<{ api_key: string; key_id: string }>(`${d.url}/api/v1/auth/v2/api-keys`, 'POST', { name, scopes, expires_days: 30 }, bearer(admin))
    expect(res.status).toBe(201)
    mintedKeys.push(res.body.api_key)
    return res.body
  }

  it('prints no bootstrap key when keys already exist', () => {
    expect(d.output()).not.toContain('ADMIN_API_KEY=')
  })

  it('keeps tenants apart on every endpoint (1002, never the data), and audits each attempt', async () => {
    const dev = await mintKey(acmeAdmin, ['functions:create', 'functions:read', 'functions:execute', 'functions:delete'], 'acme-dev')
    const created = await call(`${d.url}/api/v1/functions/create`, 'POST', addJs, bearer(dev.api_key))
    expect(created.status).toBe(201)
    expect(created.body.rufid).toBe(`rufid:${computeRufid(addJs).rufid_short}:v1:acme`)
    const short = created.body.rufid_short as string
    const full = created.body.rufid as string

    const spy = await mintKey(globexAdmin, ['admin'], 'globex-admin-2')
    const attempts = [
      call(`${d.url}/api/v1/functions/resolve`, 'POST', { rufid: short }, bearer(spy.api_key)),
      call(`${d.url}/api/v1/functions/resolve`, 'POST', { rufid: full }, bearer(spy.api_key)),
      call(`${d.url}/api/v1/functions/${short}/execute`, 'POST', { arguments: { a: 1, b: 2 } }, bearer(spy.api_key)),
      call(`${d.url}/api/v1/functions/${encodeURIComponent(full)}/execute`, 'POST', { arguments: [1, 2] }, bearer(spy.api_key)),
      call(`${d.url}/api/v1/functions/${short}`, 'GET', undefined, bearer(spy.api_key)),
      call(`${d.url}/api/v1/functions/${short}`, 'DELETE', undefined, bearer(spy.api_key)),
      call(`${d.url}/api/v1/execution/execute`, 'POST', { rufid: `rufid:${short}`, function_name: 'add', input_data: { a: 1, b: 2 } }, bearer(spy.api_key)),
    ]
    for (const res of await Promise.all(attempts)) {
      expect(res.status).toBe(404)
      expect(codeOf(res.body)).toBe(1002)
      expect(JSON.stringify(res.body)).not.toContain(addJs.source_code.slice(0, 20))
    }
    const list = await call<{ items: unknown[] }>(`${d.url}/api/v1/functions`, 'GET', undefined, bearer(spy.api_key))
    expect(list.body.items).toHaveLength(0)
    // X-Svc-Namespace narrows, never widens
    const widen = await call(`${d.url}/api/v1/functions`, 'GET', undefined, { ...bearer(spy.api_key), 'x-svc-namespace': 'acme' })
    expect(widen.status).toBe(403)
    const narrow = await call(`${d.url}/api/v1/functions`, 'GET', undefined, { ...bearer(dev.api_key), 'x-svc-namespace': 'acme.team1' })
    expect(narrow.status).toBe(200)

    // the owner still sees its function, untouched
    expect((await call(`${d.url}/api/v1/functions/${short}/execute`, 'POST', { arguments: { a: 2, b: 3 } }, bearer(dev.api_key))).body.result).toBe(5)

    const audit = await call<{ items: Array<{ operation: string; tenant: string; result: string; code?: number; rufid: string | null; ip: string; duration_ms: number; user: string; timestamp: string }> }>(
      `${d.url}/api/v1/audit?limit=1000`, 'GET', undefined, bearer(globexAdmin),
    )
    const denied = audit.body.items.filter((e) => e.code === 1002)
    expect(denied.map((e) => e.operation).sort()).toEqual(['rufid.delete', 'rufid.execute', 'rufid.execute', 'rufid.execute', 'rufid.read', 'rufid.resolve', 'rufid.resolve'])
    for (const e of denied) {
      expect(e).toMatchObject({ tenant: 'globex', result: 'error', ip: expect.any(String), duration_ms: expect.any(Number), user: 'key:globex-admin-2' })
      expect(Date.parse(e.timestamp)).not.toBeNaN()
    }
    expect(audit.body.items.some((e) => e.operation === 'rufid.list' && e.result === 'denied')).toBe(true)
    // acme's audit holds the create and execute, globex never sees acme's entries
    const acmeAudit = await call<{ items: Array<{ operation: string; tenant: string; result: string }> }>(`${d.url}/api/v1/audit?operation=rufid.create`, 'GET', undefined, bearer(acmeAdmin))
    expect(acmeAudit.body.items.map((e) => [e.operation, e.tenant, e.result])).toEqual([['rufid.create', 'acme', 'success']])
    expect(audit.body.items.every((e) => e.tenant === 'globex')).toBe(true)
  })

  it('gives 401 to a revoked key, and keeps revocation across the audit', async () => {
    const k = await mintKey(acmeAdmin, ['functions:read'], 'short-lived')
    expect((await call(`${d.url}/api/v1/functions`, 'GET', undefined, bearer(k.api_key))).status).toBe(200)
    const revoked = await call(`${d.url}/api/v1/auth/v2/api-keys/${k.key_id}`, 'DELETE', undefined, bearer(acmeAdmin))
    expect(revoked.status).toBe(200)
    const after = await call(`${d.url}/api/v1/functions`, 'GET', undefined, bearer(k.api_key))
    expect(after.status).toBe(401)
    expect(codeOf(after.body)).toBe(1003)
  })

  it('answers 403 (1003) to a key lacking the permission and to a non-admin minting keys', async () => {
    const reader = await mintKey(acmeAdmin, ['functions:read'], 'reader')
    const exec = await call(`${d.url}/api/v1/functions/${computeRufid(addJs).rufid_short}/execute`, 'POST', { arguments: [1, 1] }, bearer(reader.api_key))
    expect(exec.status).toBe(403)
    expect(codeOf(exec.body)).toBe(1003)
    const mint = await call(`${d.url}/api/v1/auth/v2/api-keys`, 'POST', { name: 'x', scopes: ['admin'] }, bearer(reader.api_key))
    expect(mint.status).toBe(403)
    const badReq = await call(`${d.url}/api/v1/auth/v2/api-keys`, 'POST', { name: 'x', scopes: ['root'] }, bearer(acmeAdmin))
    expect(badReq.status).toBe(400)
    expect(codeOf(badReq.body)).toBe(1006)
  })

  it('accepts a JWT signed by the configured key; refuses alg none, a wrong audience, expiry and HMAC confusion', async () => {
    const base = () => new SignJWT({ tenant_id: 'acme', roles: ['consumer'], email: 'ada@acme.test' })
      .setIssuer('https://issuer.test').setAudience('svc-node').setIssuedAt()
    const good = await base().setProtectedHeader({ alg: 'RS256' }).setExpirationTime('5m').sign(signingKey)
    const ok = await call(`${d.url}/api/v1/functions/${computeRufid(addJs).rufid_short}/execute`, 'POST', { arguments: [2, 2] }, bearer(good))
    expect(ok.status).toBe(200)
    expect(ok.body.result).toBe(4)
    const consumerCreate = await call(`${d.url}/api/v1/functions/create`, 'POST', { ...addJs, function_name: 'z', source_code: 'function z() {}' }, bearer(good))
    expect(consumerCreate.status).toBe(403)

    const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url')
    const now = Math.floor(Date.now() / 1000)
    const claims = { tenant_id: 'acme', roles: ['admin'], iss: 'https://issuer.test', aud: 'svc-node', iat: now, exp: now + 300 }
    const none = `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`
    const wrongAud = await base().setAudience('someone-else').setProtectedHeader({ alg: 'RS256' }).setExpirationTime('5m').sign(signingKey)
    const expired = await base().setProtectedHeader({ alg: 'RS256' }).setIssuedAt(now - 7200).setExpirationTime(now - 3600).sign(signingKey)
    const hsInput = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims)}`
    const confused = `${hsInput}.${createHmac('sha256', publicPem).update(hsInput).digest('base64url')}`
    for (const [label, token] of [['none', none], ['audience', wrongAud], ['expired', expired], ['hs256', confused]] as const) {
      const res = await call(`${d.url}/api/v1/functions`, 'GET', undefined, bearer(token))
      expect(res.status, label).toBe(401)
      expect(codeOf(res.body), label).toBe(1003)
    }
  })

  it('limits a burst with 1005 and Retry-After while another tenant is still served', async () => {
    const hammer = await mintKey(acmeAdmin, ['functions:read'], 'hammer')
    const other = await mintKey(globexAdmin, ['functions:read'], 'other')
    const burst = await Promise.all(Array.from({ length: 45 }, () => call(`${d.url}/api/v1/functions`, 'GET', undefined, bearer(hammer.api_key))))
    const limited = burst.filter((r) => r.status === 429)
    expect(burst.filter((r) => r.status === 200)).toHaveLength(30)
    expect(limited).toHaveLength(15)
    expect(codeOf(limited[0]!.body)).toBe(1005)
    expect(Number(limited[0]!.headers.get('retry-after'))).toBeGreaterThan(0)
    const served = await call(`${d.url}/api/v1/functions`, 'GET', undefined, bearer(other.api_key))
    expect(served.status).toBe(200)
  })

  it('never writes a minted key to the data directory, the logs or the audit log', async () => {
    expect(mintedKeys.length).toBeGreaterThan(3)
    const audit = JSON.stringify((await call(`${d.url}/api/v1/audit?limit=1000`, 'GET', undefined, bearer(acmeAdmin))).body)
      + JSON.stringify((await call(`${d.url}/api/v1/audit?limit=1000`, 'GET', undefined, bearer(globexAdmin))).body)
    const files = filesUnder(dataDir)
    expect(files.length).toBeGreaterThan(3)
    for (const key of [...mintedKeys, acmeAdmin, globexAdmin]) {
      const secret = key.split('_')[2]!
      expect(d.output()).not.toContain(secret)
      expect(audit).not.toContain(secret)
      for (const f of files) expect(f.bytes.includes(Buffer.from(secret)), f.path).toBe(false)
    }
  })
})

describe('mutual TLS', () => {
  let d: DaemonProcess
  const ca = createTestCa()

  beforeAll(async () => {
    const dir = tempDataDir()
    const server = ca.issue({ CN: 'localhost' }, { serverNames: ['localhost'], ips: ['127.0.0.1'] })
    writeFileSync(join(dir, 'ca.pem'), ca.certPem)
    writeFileSync(join(dir, 'server.pem'), server.certPem)
    writeFileSync(join(dir, 'server.key'), server.keyPem)
    writeFileSync(join(dir, 'svc.yaml'), [
      'server:',
      '  tls:',
      '    enabled: true',
      `    cert_file: ${join(dir, 'server.pem')}`,
      `    key_file: ${join(dir, 'server.key')}`,
      `    client_ca_file: ${join(dir, 'ca.pem')}`,
      'auth:',
      '  bootstrap_admin_key: false',
      '  mtls: { enabled: true, roles: [consumer] }',
    ].join('\n'))
    d = await startDaemonProcess({ dataDir: dir, env: { AUTH_PROVIDER: 'standard', SVC_CONFIG: join(dir, 'svc.yaml') } })
  })
  afterAll(async () => {
    await d?.stop()
    if (d) removeDir(d.dataDir)
  })

  const tlsCall = (path: string, method: string, body: unknown, cert?: { certPem: string; keyPem: string }) =>
    new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
      const req = httpsRequest(`${d.url}${path}`, {
        method, ca: ca.certPem, cert: cert?.certPem, key: cert?.keyPem, headers: { 'content-type': 'application/json' },
      }, (res) => {
        let text = ''
        res.on('data', (c: Buffer) => (text += c.toString()))
        res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : {} }))
      })
      req.on('error', reject)
      req.end(body === undefined ? undefined : JSON.stringify(body))
    })

  it('identifies a principal by a client certificate signed by the configured CA', async () => {
    const alice = ca.issue({ CN: 'alice@acme.test', O: 'acme', OU: 'developer' })
    const created = await tlsCall('/api/v1/functions/create', 'POST', addJs, alice)
    expect(created.status).toBe(201)
    expect(created.body.rufid).toBe(`rufid:${computeRufid(addJs).rufid_short}:v1:acme`)
    const bob = ca.issue({ CN: 'bob@acme.test', O: 'acme' })
    const run = await tlsCall(`/api/v1/functions/${computeRufid(addJs).rufid_short}/execute`, 'POST', { arguments: [1, 2] }, bob)
    expect(run.body.result).toBe(3)
    const bobCreate = await tlsCall('/api/v1/functions/create', 'POST', { ...addJs, function_name: 'q', source_code: 'function q() {}' }, bob)
    expect(bobCreate.status).toBe(403)
  })

  it('answers 401 without a certificate and to a certificate of another CA', async () => {
    expect((await tlsCall('/api/v1/functions', 'GET', undefined)).status).toBe(401)
    const stranger = createTestCa('stranger CA').issue({ CN: 'mallory', O: 'acme', OU: 'admin' })
    expect((await tlsCall('/api/v1/functions', 'GET', undefined, stranger)).status).toBe(401)
  })
})
