// The /v1 group through a real daemon: publish, asynchronous executions, marketplace search, telemetry.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { percentile } from '../../src/engine/index.js'
import { call, removeDir, startDaemonProcess, type DaemonProcess } from '../fixtures/daemon-process.js'

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64')

describe('/v1 group', () => {
  let d: DaemonProcess
  const api = (p: string) => `${d.url}${p}`

  beforeAll(async () => {
    d = await startDaemonProcess()
  })
  afterAll(async () => {
    await d?.stop()
    if (d) removeDir(d.dataDir)
  })

  const waitFor = async (id: string): Promise<Record<string, unknown>> => {
    for (let i = 0; i < 100; i++) {
      const r = await call(api(`/v1/executions/${id}`), 'GET')
      if (r.body.status !== 'queued' && r.body.status !== 'running') return r.body
      await new Promise((res) => setTimeout(res, 50))
    }
    throw new Error(`execution ${id} did not finish in 5 s`)
  }

  it('publishes base64 source for a runtime and runs it asynchronously (202, then the record)', async () => {
    const pub = await call(api('/v1/functions'), 'POST', {
      name: 'scale', runtime: 'node20', source: b64('function scale(x, factor) {\n  console.log("scaling", x)\n  return x * factor\n}\n'),
      description: 'multiplies', tags: ['math', 'demo'],
    })
    expect(pub.status).toBe(201)
    expect(Object.keys(pub.body).sort()).toEqual(['full_rufid', 'import_statement', 'rufid', 'rufid_short', 'share_url', 'version'])
    expect(pub.body.version).toBe('v1')
    const meta = await call(api(`/api/v1/functions/${pub.body.rufid_short as string}`), 'GET')
    expect(meta.body).toMatchObject({ signature: '(x, factor)', language: 'javascript' })

    const started = await call(api(`/v1/functions/${pub.body.rufid_short as string}/executions`), 'POST', { x: 21, factor: 2 })
    expect(started.status).toBe(202)
    expect(started.body.status).toBe('queued')
    const record = await waitFor(started.body.execution_id as string)
    // tenant_id, and `tenant` kept one release as its deprecated alias
    expect(record).toMatchObject({ status: 'success', result: 42, version: 'v1', tenant_id: 'default', tenant: 'default', rufid_short: pub.body.rufid_short, full_rufid: pub.body.rufid })
    for (const field of ['started_at', 'finished_at', 'execution_time_ms', 'cpu_time_ms', 'memory_bytes']) expect(record[field], field).toBeDefined()
    const logs = await call<{ logs: Array<{ message: string }> }>(api(`/v1/executions/${started.body.execution_id as string}/logs`), 'GET')
    expect(logs.body.logs.map((l) => l.message)).toEqual(['scaling 21'])

    const failing = await call(api(`/v1/functions/${pub.body.rufid_short as string}/executions`), 'POST', { x: 1, nope: 2 })
    expect((await waitFor(failing.body.execution_id as string)).status).toBe('error')
    expect((await call(api('/v1/functions/AbCdEfGhIjKl/executions'), 'POST', {})).status).toBe(404)
    expect((await call(api('/v1/functions/bad/executions'), 'POST', {})).status).toBe(400)
    const badSource = await call(api('/v1/functions'), 'POST', { name: 'x', runtime: 'node20', source: '***' })
    expect(badSource.status).toBe(400)
    const badRuntime = await call(api('/v1/functions'), 'POST', { name: 'x', runtime: 'cobol85', source: b64('x') })
    expect(badRuntime.status).toBe(400)
  })

  it('passes the body to a one-parameter function as its input (handler(event) gets the whole object)', async () => {
    const pub = await call(api('/v1/functions'), 'POST', {
      name: 'handler', runtime: 'node20', source: b64('function handler(event) {\n  return { got: event, sum: event.x + event.y[0] }\n}\n'),
    })
    expect(pub.status).toBe(201)
    const short = pub.body.rufid_short as string
    const started = await call(api(`/v1/functions/${short}/executions`), 'POST', { x: 1, y: [2] })
    expect(started.status).toBe(202)
    expect(await waitFor(started.body.execution_id as string)).toMatchObject({ status: 'success', result: { got: { x: 1, y: [2] }, sum: 3 } })
    // no body is no input: refused with 1006 before anything is queued
    const res = await fetch(api(`/v1/functions/${short}/executions`), { method: 'POST' })
    expect(res.status).toBe(400)
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(1006)
  })

  it('searches name, description, tags and signature with facets that match the catalog, per tenant', async () => {
    const defs = [
      { name: 'parseCsv', runtime: 'node20', tags: ['text', 'csv'], description: 'reads comma separated values' },
      { name: 'parseJson', runtime: 'typescript5', tags: ['text'], description: 'reads json' },
      { name: 'sumAll', runtime: 'node20', tags: ['math'], description: 'adds numbers' },
    ]
    for (const def of defs) {
      const res = await call(api('/v1/functions'), 'POST', { ...def, source: b64(`function ${def.name}(input) { return input }`) })
      expect(res.status).toBe(201)
    }
    await call(api('/v1/functions'), 'POST', { name: 'hidden', runtime: 'node20', tags: ['math'], source: b64('function hidden() {}') }, { 'x-svc-namespace': 'other' })

    type Search = { items: Array<{ function_name: string }>; pagination: { total: number }; aggregations: { language: Record<string, number>; tags: Record<string, number>; author: Record<string, number> } }
    const all = await call<Search>(api('/v1/marketplace/functions/search?limit=100'), 'GET')
    const catalog = await call<{ items: Array<{ function_name: string; language: string; tags: string[]; author: string }> }>(api('/api/v1/functions?limit=500'), 'GET')
    expect(all.body.pagination.total).toBe(catalog.body.items.length)
    const count = (values: string[]) => values.reduce<Record<string, number>>((acc, v) => ({ ...acc, [v]: (acc[v] ?? 0) + 1 }), {})
    expect(all.body.aggregations.language).toEqual(count(catalog.body.items.map((f) => f.language.toLowerCase())))
    expect(all.body.aggregations.tags).toEqual(count(catalog.body.items.flatMap((f) => f.tags)))
    expect(all.body.aggregations.author).toEqual(count(catalog.body.items.map((f) => f.author)))
    expect(all.body.items.map((f) => f.function_name)).not.toContain('hidden')

    const reads = await call<Search>(api('/v1/marketplace/functions/search?q=reads'), 'GET')
    expect(reads.body.items.map((f) => f.function_name).sort()).toEqual(['parseCsv', 'parseJson'])
    expect(reads.body.aggregations.language).toEqual({ javascript: 1, typescript: 1 })
    const text = await call<Search>(api('/v1/marketplace/functions/search?tags=text,csv'), 'GET')
    expect(text.body.items.map((f) => f.function_name)).toEqual(['parseCsv'])
    const ts = await call<Search>(api('/v1/marketplace/functions/search?language=typescript'), 'GET')
    expect(ts.body.items.map((f) => f.function_name)).toEqual(['parseJson'])
    const page = await call<Search & { pagination: { next_offset: number | null } }>(api('/v1/marketplace/functions/search?limit=2&offset=0'), 'GET')
    expect(page.body.items).toHaveLength(2)
    expect(page.body.pagination.next_offset).toBe(2)
  })

  it('reports telemetry percentiles that match the recorded execution times of a scripted run', async () => {
    const pub = await call(api('/v1/functions'), 'POST', {
      name: 'work', runtime: 'node20',
      source: b64('function work(n) { if (n < 0) throw new Error("negative"); let s = 0; for (let i = 0; i < n; i++) s += i; return s }'),
    })
    const id = pub.body.rufid_short as string
    const inputs = [1, 10, 100, 1000, 10_000, 100_000, 1_000_000, 3_000_000, -1, -2]
    const times: number[] = []
    let cpu = 0
    for (const n of inputs) {
      const r = await call(api(`/api/v1/functions/${id}/execute`), 'POST', { arguments: { n } })
      const execId = (r.body.execution_id ?? (r.body as { error?: { details: { execution_id: string } } }).error?.details.execution_id) as string
      const record = await call(api(`/v1/executions/${execId}`), 'GET')
      times.push(record.body.execution_time_ms as number)
      cpu += record.body.cpu_time_ms as number
    }
    times.sort((a, b) => a - b)
    const t = await call(api(`/v1/telemetry/functions/${id}?window=15m`), 'GET')
    expect(t.status).toBe(200)
    expect(t.body).toMatchObject({
      rufid: id,
      window: '15m',
      executions: 10,
      latency_ms: { p50: percentile(times, 50), p95: percentile(times, 95), p99: percentile(times, 99), max: times[9] },
      error_rate: 0.2,
    })
    expect((t.body.cost as { cpu_ms_total: number }).cpu_ms_total).toBeCloseTo(cpu, 2)
    const empty = await call(api(`/v1/telemetry/functions/${id}?window=30s`), 'GET')
    expect(empty.body.executions).toBe(10)
    for (const bad of ['15', '0m', '15x', '31d']) {
      expect((await call(api(`/v1/telemetry/functions/${id}?window=${bad}`), 'GET')).status, bad).toBe(400)
    }
  })

  it('publishes with a manifest and lockfile validated as core create validates them; refuses unknown fields (1006) and stores nothing', async () => {
    type ErrorBody = { error: { code: number; message: string; details: { problems?: Array<{ pointer: string; message: string }> } } }
    const source = b64('function cube(x) {\n  return x * x * x\n}\n')
    // system packages only: the lockfile is generated without asking any package index
    const manifest = { schemaVersion: '1.0', name: 'cube', entrypoint: 'main:cube', runtime: { language: 'javascript', version: '20' }, dependencies: { system: ['zlib'] } }
    const stored = async (): Promise<string[]> =>
      (await call<{ items: Array<{ function_name: string }> }>(api('/api/v1/functions?search=cube&limit=500'), 'GET')).body.items.map((f) => f.function_name)

    const bogus = await call<ErrorBody>(api('/v1/functions'), 'POST', { name: 'cube', runtime: 'node20', source, manifest: { bogus: true } })
    expect(bogus.status).toBe(422)
    expect(bogus.body.error.code).toBe(1006)
    expect(bogus.body.error.details.problems!.map((p) => p.pointer)).toEqual(expect.arrayContaining(['/manifest/schemaVersion', '/manifest/name', '/manifest/bogus']))
    const misnamed = await call<ErrorBody>(api('/v1/functions'), 'POST', { name: 'cube', runtime: 'node20', source, manifest: { ...manifest, name: 'square' } })
    expect(misnamed.status).toBe(422)
    expect(misnamed.body.error.details.problems).toEqual([{ pointer: '/manifest/name', message: 'must equal the function name "cube"' }])
    const lockfile = {
      schemaVersion: '1.0', generated_at: '2025-01-01T00:00:00.000Z', generator: 'test', manifest_digest: '0'.repeat(64), dependencies: { system: ['zlib'] },
    }
    const mismatched = await call<ErrorBody>(api('/v1/functions'), 'POST', { name: 'cube', runtime: 'node20', source, manifest, lockfile })
    expect(mismatched.status).toBe(422)
    expect(mismatched.body.error.details.problems!.map((p) => p.pointer)).toEqual(['/lockfile/manifest_digest'])
    const unknown = await call<ErrorBody>(api('/v1/functions'), 'POST', { name: 'cube', runtime: 'node20', source, manifests: manifest, extra: 1 })
    expect(unknown.status).toBe(400)
    expect(unknown.body.error.code).toBe(1006)
    expect(unknown.body.error.message).toMatch(/^invalid publish request: \/manifests is not a known field/)
    expect(unknown.body.error.details.problems).toEqual([{ pointer: '/manifests', message: 'is not a known field' }, { pointer: '/extra', message: 'is not a known field' }])
    expect(await stored()).toEqual([])

    const manifestText = JSON.stringify(manifest, null, 4) + '\n'
    const pub = await call(api('/v1/functions'), 'POST', { name: 'cube', runtime: 'node20', source, manifest, manifest_text: manifestText })
    expect(pub.status).toBe(201)
    const resolved = await call(api('/api/v1/functions/resolve'), 'POST', { rufid: pub.body.rufid_short })
    expect(resolved.body.manifest).toEqual(manifest)
    expect(resolved.body.manifest_text).toBe(manifestText)
    expect(resolved.body.lockfile).toMatchObject({ schemaVersion: '1.0', dependencies: { system: ['zlib'] } })
    expect(await stored()).toEqual(['cube'])
  })
})
