// What the console stands on, over real HTTP and WebSocket against a daemon process: static serving
// (CSP, caching, no traversal, not audited), the reads added for it, and /ws credentials carried
// as a subprotocol so they stay out of URLs.
import { request as httpRequest } from 'node:http'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { createRestApi } from '../../src/api/rest/app.js'
import { ConfigError, loadConfig } from '../../src/daemon/config.js'
import { createTestEngine } from '../fixtures/engine.js'
import { removeDir, startDaemonProcess, type DaemonProcess } from '../fixtures/daemon-process.js'

/** A raw GET whose path is sent exactly as written (fetch and URL would normalize `..`). */
function rawGet(base: string, path: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(base)
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, path, method: 'GET' }, (res) => {
      let body = ''
      res.on('data', (c: Buffer) => (body += c.toString('utf8')))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

const b64url = (s: string): string => Buffer.from(s, 'utf8').toString('base64url')

describe('the console door', () => {
  let d: DaemonProcess
  let admin: string
  const call = async <T = Record<string, unknown>>(method: string, path: string, body?: unknown, key: string | null = admin): Promise<{ status: number; headers: Headers; body: T }> => {
    const res = await fetch(`${d.url}${path}`, {
      method, redirect: 'manual',
      headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    const text = await res.text()
    let parsed: unknown = text
    try {
      parsed = text ? JSON.parse(text) : {}
    } catch {
      // not JSON (HTML, JavaScript)
    }
    return { status: res.status, headers: res.headers, body: parsed as T }
  }

  beforeAll(async () => {
    d = await startDaemonProcess({ env: { AUTH_PROVIDER: 'standard' }, startTimeoutMs: 60_000 })
    admin = /ADMIN_API_KEY=(\S+)/.exec(d.output())![1]!
  }, 90_000)
  afterAll(async () => {
    await d?.stop()
    if (d) removeDir(d.dataDir)
  })

  it('GET / leads to /console/, served with a strict CSP, nosniff, no referrer and revalidation', async () => {
    for (const path of ['/', '/console']) {
      const r = await call('GET', path, undefined, null)
      expect(r.status).toBe(302)
      expect(r.headers.get('location')).toBe('/console/')
    }
    const page = await call<string>('GET', '/console/', undefined, null)
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8')
    const csp = page.headers.get('content-security-policy')!
    for (const directive of ["default-src 'self'", "script-src 'self'", "style-src 'self'", "object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'"]) {
      expect(csp).toContain(directive)
    }
    expect(csp).toMatch(new RegExp(`connect-src 'self' ws://${new URL(d.url).host} wss://${new URL(d.url).host}`))
    expect(csp).not.toContain('unsafe-inline')
    expect(page.headers.get('x-content-type-options')).toBe('nosniff')
    expect(page.headers.get('referrer-policy')).toBe('no-referrer')
    expect(page.headers.get('cache-control')).toBe('no-cache')
    // no inline script or style in the page
    expect(page.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/)
    expect(page.body).not.toMatch(/<style|style=/)
    const again = await fetch(`${d.url}/console/`, { headers: { 'if-none-match': page.headers.get('etag')! } })
    expect(again.status).toBe(304)

    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(page.body)![1]!
    const asset = await call<string>('GET', script, undefined, null)
    expect(asset.status).toBe(200)
    expect(asset.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
  })

  it('refuses every way out of the console directory, encoded or not', async () => {
    for (const path of [
      '/console/../package.json', '/console/%2e%2e/package.json', '/console/..%2fpackage.json', '/console/assets/../../package.json',
      '/console/assets/%2e%2e%2f%2e%2e%2fpackage.json', '/console/..%5c..%5cpackage.json', '/console/%00', '/console//etc/passwd',
      '/console/assets/..%252f..%252fpackage.json', '/console/index.html%00.js',
    ]) {
      const r = await rawGet(d.url, path)
      expect(r.status, path).toBe(404)
      expect(r.body, path).not.toContain('"dependencies"')
      expect(r.body, path).not.toContain('root:')
    }
  })

  it('console files are not audited; the API calls the console makes are', async () => {
    const before = await call<{ items: Array<{ operation: string }> }>('GET', '/api/v1/audit?limit=1000')
    for (let i = 0; i < 5; i++) await call('GET', '/console/', undefined, null)
    await call('GET', '/api/v1/node/info', undefined, null)
    await call('GET', '/api/v1/auth/whoami')
    const after = await call<{ items: Array<{ operation: string }> }>('GET', '/api/v1/audit?limit=1000')
    const added = after.body.items.slice(before.body.items.length).map((e) => e.operation)
    expect(added).not.toContain('system.console')
    expect(added).not.toContain('system.node_info')
    expect(added).toContain('auth.whoami')
  })

  it('server.console false (SVC_CONSOLE=false) serves neither / nor /console/', async () => {
    expect(loadConfig({ env: { SVC_CONSOLE: 'false' } }).server.console).toBe(false)
    expect(loadConfig({ env: {} }).server.console).toBe(true)
    expect(() => loadConfig({ env: { SVC_CONSOLE: 'maybe' } })).toThrow(ConfigError)
    const { engine } = await createTestEngine()
    try {
      const app = createRestApi({ bodyLimitBytes: 1 << 20, metricsAccess: 'public' }, { engine, logger: pino({ level: 'silent' }) })
      const server = app.listen(0, '127.0.0.1')
      await new Promise((r) => server.once('listening', r))
      const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`
      for (const path of ['/', '/console/', '/console/index.html']) expect((await rawGet(base, path)).status, path).toBe(404)
      await new Promise((r) => server.close(r))
    } finally {
      await engine.stop()
    }
  })

  it('node info is public; whoami names the credential and refuses a wrong one', async () => {
    const info = await call('GET', '/api/v1/node/info', undefined, null)
    expect(info.status).toBe(200)
    expect(info.body).toMatchObject({ name: 'svc-node', status: 'ready', ready: true, auth_mode: 'standard', sandbox: { workers: 2 }, federation: { enabled: false } })
    expect(typeof info.body.started_at).toBe('string')
    const me = await call('GET', '/api/v1/auth/whoami')
    expect(me.body).toMatchObject({ tenant_id: 'default', user: 'key:admin', method: 'api_key', admin: true })
    expect(me.body.permissions).toContain('rufid.admin')
    const wrong = await call<{ error: { code: number } }>('GET', '/api/v1/auth/whoami', undefined, 'svck_nope_nope')
    expect(wrong.status).toBe(401)
    expect(wrong.body.error.code).toBe(1003)
    expect((await call('GET', '/api/v1/auth/whoami', undefined, null)).status).toBe(401)
  })

  it('derives a signature from source and reads the parameters of one, storing nothing', async () => {
    const derived = await call('POST', '/api/v1/functions/signature', { function_name: 'add', language: 'javascript', source_code: 'function add(a, b = 2) { return a + b }' })
    expect(derived.status).toBe(200)
    expect(derived.body).toEqual({ signature: '(a, b = 2)', parameters: [{ name: 'a', optional: false, rest: false }, { name: 'b', optional: true, rest: false }] })
    const py = await call('POST', '/api/v1/functions/signature', { function_name: 'f', language: 'python', source_code: 'def f(x, *rest):\n  return x\n' })
    expect(py.body.signature).toBe('(x, *rest)')
    const given = await call('POST', '/api/v1/functions/signature', { signature: '(x, ...ys)' })
    expect(given.body.parameters).toEqual([{ name: 'x', optional: false, rest: false }, { name: 'ys', optional: false, rest: true }])
    const bad = await call<{ error: { code: number } }>('POST', '/api/v1/functions/signature', { source_code: 'x' })
    expect(bad.status).toBe(400)
    expect(bad.body.error.code).toBe(1006)
    expect((await call('GET', '/api/v1/functions?limit=1')).body.pagination).toMatchObject({ total: 0 })
  })

  it('function source, telemetry series and the marketplace author filter', async () => {
    const created = await call<{ rufid_short: string }>('POST', '/api/v1/functions/create', {
      function_name: 'half', signature: '(n)', language: 'javascript', source_code: 'function half(n) {\n  if (n < 0) throw new Error("negative")\n  return n / 2\n}\n',
    })
    const short = created.body.rufid_short
    const source = await call('GET', `/api/v1/functions/${short}/source`)
    expect(source.body).toMatchObject({ rufid: `rufid:${short}:v1:default`, function_name: 'half', language: 'javascript', signature: '(n)' })
    expect(source.body.source_code).toContain('return n / 2')
    expect(source.body.imports).toMatchObject({ typescript: `const half = (await import('svc://${short}')).default`, go: `half := client.Function("${short}")` })
    expect((await call('GET', '/api/v1/functions/AAAAAAAAAAAA/source')).status).toBe(404)

    for (const n of [4, 8, -1]) await call('POST', `/api/v1/functions/${short}/execute`, { arguments: [n] })
    const series = await call<{ bucket_ms: number; buckets: Array<{ executions: number; errors: number; error_rate: number; latency_ms: { p99: number } }> }>(
      'GET', `/v1/telemetry/functions/${short}/series?window=1h&buckets=12`)
    expect(series.status).toBe(200)
    expect(series.body.buckets).toHaveLength(12)
    expect(series.body.bucket_ms).toBe(300_000)
    expect(series.body.buckets.reduce((s, b) => s + b.executions, 0)).toBe(3)
    expect(series.body.buckets.reduce((s, b) => s + b.errors, 0)).toBe(1)
    expect(series.body.buckets[11]!.executions).toBe(3)
    expect(series.body.buckets[11]!.error_rate).toBeCloseTo(1 / 3)
    for (const q of ['buckets=0', 'buckets=241', 'buckets=x', 'window=2y']) {
      const r = await call<{ error: { code: number } }>('GET', `/v1/telemetry/functions/${short}/series?${q}`)
      expect(r.status, q).toBe(400)
      expect(r.body.error.code, q).toBe(1006)
    }

    const bob = await call<{ api_key: string }>('POST', '/api/v1/auth/v2/api-keys', { name: 'bob', scopes: ['functions:create', 'functions:read'] })
    await call('POST', '/api/v1/functions/create', { function_name: 'twice', signature: '(n)', language: 'javascript', source_code: 'function twice(n) { return 2 * n }' }, bob.body.api_key)
    const all = await call<{ items: Array<{ function_name: string }>; aggregations: { author: Record<string, number> } }>('GET', '/v1/marketplace/functions/search')
    expect(all.body.aggregations.author).toEqual({ 'key:admin': 1, 'key:bob': 1 })
    const byBob = await call<{ items: Array<{ function_name: string }>; pagination: { total: number } }>('GET', '/v1/marketplace/functions/search?author=key:bob')
    expect(byBob.body.items.map((i) => i.function_name)).toEqual(['twice'])
    expect(byBob.body.pagination.total).toBe(1)
    expect((await call<{ pagination: { total: number } }>('GET', '/v1/marketplace/functions/search?author=nobody')).body.pagination.total).toBe(0)
  })

  it('/ws takes the key as the svc.bearer subprotocol, answers svc.events and never echoes the key', async () => {
    const url = d.url.replace('http', 'ws') + '/ws'
    const ws = new WebSocket(url, ['svc.events', `svc.bearer.${b64url(admin)}`])
    const upgrade = new Promise<string | undefined>((resolve) => ws.once('upgrade', (res) => resolve(res.headers['sec-websocket-protocol'] as string | undefined)))
    await new Promise((resolve, reject) => {
      ws.once('open', resolve)
      ws.once('error', reject)
    })
    expect(ws.protocol).toBe('svc.events')
    expect(await upgrade).toBe('svc.events')
    const first = new Promise<{ type: string; payload?: { type: string } }>((resolve) => ws.on('message', (m) => {
      const frame = JSON.parse(m.toString()) as { type: string; payload?: { type: string } }
      if (frame.type === 'event') resolve(frame)
    }))
    ws.send(JSON.stringify({ type: 'subscribe', id: 's', channel: 'system' }))
    expect((await first).payload?.type).toBe('node.started')
    ws.close()

    for (const protocols of [['svc.events', `svc.bearer.${b64url('svck_wrong_wrong')}`], ['svc.events'], ['svc.events', 'svc.bearer.***']]) {
      const refused = new WebSocket(url, protocols)
      const status = await new Promise<number>((resolve) => {
        refused.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0))
        refused.once('open', () => resolve(101))
        refused.once('error', () => resolve(-1))
      })
      expect(status, protocols.join(',')).toBe(401)
      refused.terminate()
    }
  })
})
