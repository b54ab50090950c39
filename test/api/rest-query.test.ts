// Every query parameter of every REST route is parsed the same strict way: a number that is not
// one, out of its range, or a parameter given twice is refused with 1006 naming it, before the
// engine is called. The routes and their parameters come from the routes' own query schemas.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRestApi, restRoutes } from '../../src/api/rest/app.js'
import { jsonSchemaOf } from '../../src/api/rest/openapi.js'
import type { z } from 'zod'
import type { Engine } from '../../src/engine/index.js'
import { createTestEngine } from '../fixtures/engine.js'

const SHORT = 'AAAAAAAAAAAA'

describe('REST query parameters', () => {
  let engine: Engine
  let server: http.Server
  let base: string

  beforeAll(async () => {
    ;({ engine } = await createTestEngine({ auth: { mode: 'none' } }))
    const app = createRestApi({ bodyLimitBytes: 1 << 20, metricsAccess: 'public' }, { engine, logger: pino({ level: 'silent' }) })
    server = http.createServer(app.callback())
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()))
    await engine.stop()
  })

  const get = async (path: string, method: string): Promise<{ status: number; body: { error?: { code: number; message: string; details: { problems?: Array<{ pointer: string }> } } } }> => {
    const res = await fetch(`${base}${path}`, { method })
    return { status: res.status, body: await res.json() as never }
  }

  it('refuses limit=abc on marketplace search with 1006 (it was silently ignored)', async () => {
    const res = await get('/v1/marketplace/functions/search?limit=abc', 'GET')
    expect(res.status).toBe(400)
    expect(res.body.error).toMatchObject({ code: 1006, details: { problems: [{ pointer: '/limit' }] } })
    expect(res.body.error!.message, res.body.error!.message).toMatch(/limit must be an integer/)
    expect((await get('/v1/marketplace/functions/search?limit=100', 'GET')).status).toBe(200)
  })

  it('refuses every malformed, out-of-range or repeated query parameter of every route with 1006 naming it', async () => {
    const routes = restRoutes({ bodyLimitBytes: 1 << 20, metricsAccess: 'public' }, { engine, logger: pino({ level: 'silent' }) }, () => ({}))
    const withQuery = routes.filter((r) => r.query !== undefined)
    expect(withQuery.length).toBeGreaterThanOrEqual(7)
    let checked = 0
    for (const route of withQuery) {
      const path = route.path.replace(':rufid', SHORT)
      const method = route.method.toUpperCase()
      for (const [name, field] of Object.entries(route.query!.shape)) {
        const schema = jsonSchemaOf(field as z.ZodType) as { type?: string; minimum?: number; maximum?: number }
        const bad = [`${name}=a&${name}=b`]
        if (schema.type === 'integer' || schema.type === 'number') {
          bad.push(`${name}=abc`, `${name}=1.5x`, `${name}=`.concat('0x10'))
          if (schema.type === 'integer') bad.push(`${name}=1.5`)
          if (schema.minimum !== undefined) bad.push(`${name}=${schema.minimum - 1}`)
          if (schema.maximum !== undefined && schema.maximum < Number.MAX_SAFE_INTEGER) bad.push(`${name}=${schema.maximum + 1}`)
        }
        for (const query of bad) {
          const res = await get(`${path}?${query}`, method)
          expect(res.status, `${method} ${path}?${query}`).toBe(400)
          expect(res.body.error?.code, `${method} ${path}?${query}`).toBe(1006)
          expect(res.body.error?.details.problems?.[0]?.pointer, `${method} ${path}?${query}`).toBe(`/${name}`)
          checked++
        }
      }
    }
    expect(checked).toBeGreaterThan(30)
  })

  it('accepts well-formed parameters and ignores ones a route does not declare', async () => {
    expect((await get('/api/v1/functions?limit=500&offset=0&tags=a,b&search=x&unknown=1', 'GET')).status).toBe(200)
    expect((await get('/api/v1/functions?limit=501', 'GET')).status).toBe(400)
    expect((await get('/v1/marketplace/functions/search?limit=100&offset=3', 'GET')).status).toBe(200)
  })
})
