// The REST door's direct routes (execute, resolve) are answered from node:http before Koa, by the
// same enveloped middleware the router registered. Each request here is sent twice: once in the
// form the direct route takes, and once in a form only Koa takes (a query string: the direct
// matcher leaves every URL with one to Koa, and these routes read no query). Both answers must be
// the same — status, headers that matter, body — and both must be metered and audited; a Koa
// middleware counts what went through Koa, so the test also proves which path was taken.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { gzipSync } from 'node:zlib'
import { pino } from 'pino'
import { Router } from '@koa/router'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRestApi } from '../../src/api/rest/app.js'
import { createDirectRoutes } from '../../src/api/rest/direct.js'
import { createRestEnvelope, registerRoutes, type RestRoute } from '../../src/api/rest/operation.js'
import type { Engine } from '../../src/engine/index.js'
import { createTestEngine, realSandbox } from '../fixtures/engine.js'
import { addJs } from '../fixtures/functions.js'

const silent = pino({ level: 'silent' })

interface Answer {
  status: number
  contentType: string | null
  headers: Record<string, string | null>
  body: Record<string, unknown>
}

describe('REST direct routes', () => {
  let engine: Engine
  let server: http.Server
  let base: string
  let key: string
  let short: string
  let draining = false
  let throughKoa = 0

  beforeAll(async () => {
    const t = await createTestEngine({ sandbox: await realSandbox(1), auth: { mode: 'standard' } })
    engine = t.engine
    const app = createRestApi({ bodyLimitBytes: 4096, metricsAccess: 'public' }, { engine, logger: silent, isDraining: () => draining })
    app.middleware.unshift(async (_ctx, next) => {
      throughKoa++
      await next()
    })
    server = http.createServer(app.callback())
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    key = (await engine.keys.mintFor('acme', 'test', { name: 'k', scopes: ['admin'] })).api_key
    const created = await fetch(`${base}/api/v1/functions/create`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(addJs),
    })
    expect(created.status).toBe(201)
    short = ((await created.json()) as { rufid_short: string }).rufid_short
  })
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve))
    await engine?.stop()
  })

  /** Sends one request; `viaKoa` appends a query string, which only Koa takes. */
  async function send(path: string, init: { body?: string | Buffer; headers?: Record<string, string>; token?: string | null }, viaKoa: boolean): Promise<Answer & { koa: boolean }> {
    const before = throughKoa
    const token = init.token === undefined ? key : init.token
    const res = await fetch(`${base}${path}${viaKoa ? '?via=koa' : ''}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...init.headers },
      body: init.body,
    })
    const text = await res.text()
    const pick = (name: string): string | null => res.headers.get(name)
    return {
      status: res.status,
      contentType: pick('content-type'),
      headers: { 'www-authenticate': pick('www-authenticate'), 'retry-after': pick('retry-after'), connection: pick('connection'), 'content-length': pick('content-length') === null ? null : 'set' },
      body: JSON.parse(text) as Record<string, unknown>,
      koa: throughKoa > before,
    }
  }

  /** Volatile fields of an answer (ids, timings) out of the comparison. */
  const stable = (a: Answer): Answer => ({
    ...a,
    body: JSON.parse(JSON.stringify(a.body, (k, v: unknown) => (['execution_id', 'execution_time_ms', 'resolution_time_ms', 'cached'].includes(k) ? '…' : v))) as Record<string, unknown>,
  })

  async function both(path: string, init: Parameters<typeof send>[1]): Promise<Answer> {
    const direct = await send(path, init, false)
    const koa = await send(path, init, true)
    expect(direct.koa, `${path} answered without Koa`).toBe(false)
    expect(koa.koa, `${path}?… answered by Koa`).toBe(true)
    const { koa: _a, ...d } = direct
    const { koa: _b, ...k } = koa
    expect(stable(d), `${path}: direct and Koa answers`).toEqual(stable(k))
    return d
  }

  const executePath = (): string => `/api/v1/functions/${short}/execute`
  const args = JSON.stringify({ arguments: { a: 2, b: 3 } })

  it('answers execute and resolve exactly as Koa does: success, refusals and malformed bodies', async () => {
    const ok = await both(executePath(), { body: args })
    expect(ok).toMatchObject({ status: 200, contentType: 'application/json; charset=utf-8', body: { result: 5, status: 'success' } })
    expect((await both('/api/v1/functions/resolve', { body: JSON.stringify({ rufid: short }) })).status).toBe(200)

    expect((await both(executePath(), { body: args, token: null })).headers['www-authenticate']).toBe('Bearer')
    expect((await both(executePath(), { body: args, token: 'svc_not_a_key' })).status).toBe(401)
    expect((await both('/api/v1/functions/AAAAAAAAAAAA/execute', { body: args })).status).toBe(404)
    expect((await both('/api/v1/functions/not-a-rufid!/execute', { body: args })).status).toBe(400)
    expect((await both(executePath(), { body: '{"arguments": ' })).body).toMatchObject({ error: { code: 1006 } })
    expect((await both(executePath(), { body: JSON.stringify({ arguments: { a: 'x'.repeat(5000) } }) })).status).toBe(413)
    expect((await both(executePath(), { body: '{"arguments": {"__proto__": {"admin": true}}}' })).status).toBe(400)
    expect((await both(executePath(), { body: '{"arguments": {"a": 1, "b": 2}, "version": 7}' })).status).toBe(400)
    // a gzip body is read like a plain one
    expect((await both(executePath(), { body: gzipSync(args), headers: { 'content-encoding': 'gzip' } })).body).toMatchObject({ result: 5 })
    expect((await both(executePath(), { body: args, headers: { 'content-encoding': 'compress' } })).status).toBe(400)
    // the limit counts decompressed bytes: a small gzip body that inflates past it is 413
    const bomb = gzipSync(JSON.stringify({ arguments: { a: 'x'.repeat(200_000) } }))
    expect(bomb.length).toBeLessThan(4096)
    expect((await both(executePath(), { body: bomb, headers: { 'content-encoding': 'gzip' } })).status).toBe(413)
  })

  it('leaves encoded, case-different and trailing-slash paths to Koa, and closes connections while draining', async () => {
    for (const path of [`/api/v1/functions/${short}/execute/`, `/API/v1/functions/${short}/execute`, `/api/v1/functions/${encodeURIComponent(short)}%20/execute`]) {
      const before = throughKoa
      const res = await fetch(`${base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: args })
      await res.arrayBuffer()
      expect(throughKoa, path).toBe(before + 1)
    }
    draining = true
    try {
      const res = await send(executePath(), { body: args }, false)
      expect(res).toMatchObject({ status: 200, koa: false, headers: { connection: 'close' } })
    } finally {
      draining = false
    }
  })

  it('meters and audits every direct request once, with the status label Koa would give', async () => {
    const count = async (status: string): Promise<number> =>
      (await engine.metrics.protocolRequests.get()).values.filter((v) => v.labels.operation === 'rufid.execute' && v.labels.status === status).reduce((n, v) => n + v.value, 0)
    const audited = async (): Promise<number> => (await engine.auditLog.query({ operation: 'rufid.execute', limit: 1000 })).items.length
    const [ok, unauthenticated, entries] = [await count('200'), await count('401'), await audited()]
    await send(executePath(), { body: args }, false)
    await send(executePath(), { body: args, token: null }, false)
    expect(await count('200')).toBe(ok + 1)
    expect(await count('401')).toBe(unauthenticated + 1)
    await engine.auditLog.flush()
    expect(await audited()).toBe(entries + 2)
  })

  it('refuses at start a direct route that an earlier route would take first', () => {
    const envelope = createRestEnvelope({ bodyLimitBytes: 1024 }, { engine, logger: silent })
    const route = (path: string, direct: boolean): RestRoute<never, unknown> => ({
      method: 'post', path, operation: 'rufid.execute', summary: '', responses: {}, errors: [], direct, handle: async () => ({}),
    })
    expect(() => createDirectRoutes(registerRoutes(new Router(), envelope, [route('/f/:name/run', false), route('/f/x/run', true)]), { envelope }))
      .toThrow(/is direct but \/f\/:name\/run is matched before it/)
    expect(() => createDirectRoutes(registerRoutes(new Router(), envelope, [route('/f/x/run', true), route('/f/:name/run', false)]), { envelope }))
      .not.toThrow()
  })
})
