// The foundation's behaviour through real HTTP against a real `svc-node start` process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { computeRufid } from '../../src/core/rufid.js'
import { call, removeDir, startDaemonProcess, type DaemonProcess } from '../fixtures/daemon-process.js'
import { addJs, addTs, escapeProbes, greetJs, hogJs, spinJs, throwsJs } from '../fixtures/functions.js'

interface ErrorBody {
  error: { code: number; name: string; message: string; details: Record<string, unknown> }
}

describe('svc-node over REST (one daemon process)', () => {
  let d: DaemonProcess
  const api = (path: string): string => `${d.url}${path}`
  const create = (def: object) => call(api('/api/v1/functions/create'), 'POST', def)
  const execute = (rufid: string, args: unknown) => call(api(`/api/v1/functions/${rufid}/execute`), 'POST', { arguments: args })
  const daemonPid = async (): Promise<number> => (await call<{ pid: number }>(api('/healthz'), 'GET')).body.pid

  beforeAll(async () => {
    d = await startDaemonProcess()
  })
  afterAll(async () => {
    await d?.stop()
    if (d) removeDir(d.dataDir)
  })

  it('create → resolve → execute, with every field of §4.1 and §2.7', async () => {
    const created = await create(addJs)
    const expected = computeRufid(addJs)
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({
      rufid: `rufid:${expected.rufid_short}:v1:default`,
      rufid_short: expected.rufid_short,
      version: 'v1',
      content_digest: expected.content_digest,
      import_statement: `const add = (await import('svc://${expected.rufid_short}')).default`,
      share_url: `${d.url}/api/v1/functions/${expected.rufid_short}`,
      api_endpoint: `/api/v1/functions/${expected.rufid_short}/execute`,
    })

    const resolved = await call(api('/api/v1/functions/resolve'), 'POST', { rufid: expected.rufid_short, version: 'v1' })
    expect(resolved.status).toBe(200)
    expect(resolved.body).toMatchObject({
      rufid: `rufid:${expected.rufid_short}:v1:default`,
      version: 'v1',
      accessible: true,
      cached: false,
      content_digest: expected.content_digest,
    })
    expect(resolved.body.function_id).toMatch(/^[0-9a-f-]{36}$/)
    expect(resolved.body.resolution_time_ms).toBeTypeOf('number')
    const again = await call(api('/api/v1/functions/resolve'), 'POST', { rufid: expected.rufid_short, version: 'v1' })
    expect(again.body.cached).toBe(true)

    const run = await execute(expected.rufid_short, { a: 2, b: 3 })
    expect(run.status).toBe(200)
    expect(run.body).toMatchObject({ result: 5, status: 'success' })
    expect(run.body.execution_time_ms).toBeTypeOf('number')
    const positional = await execute(`rufid:${expected.rufid_short}:v1:default`, [40, 2])
    expect(positional.body.result).toBe(42)

    const record = await call(api(`/v1/executions/${run.body.execution_id as string}`), 'GET')
    expect(record.body).toMatchObject({ status: 'success', result: 5, rufid: `rufid:${expected.rufid_short}:v1:default`, version: 'v1', tenant: 'default' })

    const meta = await call(api(`/api/v1/functions/${expected.rufid_short}`), 'GET')
    expect(meta.body).toMatchObject({ rufid: expected.rufid_short, function_name: 'add', version: 'v1', tags: ['math'] })
    expect(meta.body.metrics).toMatchObject({ usage_count: 2, success_rate: 1 })
  })

  it('answers identical content idempotently (200, same RUFID)', async () => {
    const a = await create(addTs)
    const b = await create(addTs)
    expect(a.status).toBe(201)
    expect(b.status).toBe(200)
    expect(b.body.rufid).toBe(a.body.rufid)
    expect((await execute(a.body.rufid_short as string, { a: 1.5, b: 2 })).body.result).toBe(3.5)
  })

  it('captures console output into the execution record', async () => {
    const c = await create(greetJs)
    const run = await execute(c.body.rufid_short as string, { name: 'Ada' })
    expect(run.body.result).toBe('hello Ada!')
    const logs = await call<{ logs: Array<{ message: string }> }>(api(`/v1/executions/${run.body.execution_id as string}/logs`), 'GET')
    expect(logs.body.logs.map((l) => l.message)).toContain('greeting Ada')
  })

  it('stops an endless loop with 1004 within the timeout plus 250 ms; the daemon keeps serving', async () => {
    const pid = await daemonPid()
    const c = await create({ ...spinJs, limits: { timeout_ms: 1000 } })
    const started = performance.now()
    const run = await execute(c.body.rufid_short as string, {})
    const elapsed = performance.now() - started
    expect(run.status).toBe(408)
    expect((run.body as unknown as ErrorBody).error).toMatchObject({ code: 1004, name: 'EXECUTION_TIMEOUT' })
    expect(elapsed).toBeLessThan(1000 + 250)
    const next = await execute(computeRufid(addJs).rufid_short, { a: 1, b: 1 })
    expect(next.body.result).toBe(2)
    expect(await daemonPid()).toBe(pid)
  })

  it('ends unbounded allocation with 1007; the daemon keeps serving with the same pid', async () => {
    const pid = await daemonPid()
    const c = await create({ ...hogJs, limits: { memory_mb: 32, timeout_ms: 20_000 } })
    const run = await execute(c.body.rufid_short as string, {})
    expect(run.status).toBe(422)
    expect((run.body as unknown as ErrorBody).error.code).toBe(1007)
    const next = await execute(computeRufid(addJs).rufid_short, { a: 2, b: 2 })
    expect(next.body.result).toBe(4)
    expect(await daemonPid()).toBe(pid)
  })

  it('gives function code nothing of the host', async () => {
    const pid = await daemonPid()
    for (const probe of escapeProbes) {
      const c = await create(probe)
      const run = await execute(c.body.rufid_short as string, {})
      expect(run.status, probe.function_name).toBe(200)
      const expected = Array.isArray(probe.expected) ? probe.expected : [probe.expected]
      expect(expected, probe.function_name).toContain(run.body.result)
      const next = await execute(computeRufid(addJs).rufid_short, { a: 3, b: 4 })
      expect(next.body.result).toBe(7)
    }
    expect(await daemonPid()).toBe(pid)
  })

  it('reports a throwing function as 1007 with its message, recorded', async () => {
    const c = await create(throwsJs)
    const run = await execute(c.body.rufid_short as string, {})
    const err = (run.body as unknown as ErrorBody).error
    expect(run.status).toBe(422)
    expect(err.code).toBe(1007)
    expect(err.message).toMatch(/kaboom/)
    const record = await call(api(`/v1/executions/${err.details.execution_id as string}`), 'GET')
    expect(record.body.status).toBe('error')
  })

  it('rejects malformed RUFIDs with 1001 and unknown ones with 1002 on every endpoint that takes one', async () => {
    const malformed = ['short', 'AbCdEfGhIjK!', 'rufid:AbCdEfGhIjKl:v0:default', 'rufid:AbCdEfGhIjKl']
    const unknown = ['AbCdEfGhIjKl', 'rufid:AbCdEfGhIjKl:v1:default']
    const endpoints = (r: string) => [
      call(api('/api/v1/functions/resolve'), 'POST', { rufid: r }),
      call(api(`/api/v1/functions/${encodeURIComponent(r)}/execute`), 'POST', { arguments: {} }),
      call(api(`/api/v1/functions/${encodeURIComponent(r)}`), 'GET'),
      call(api(`/api/v1/functions/${encodeURIComponent(r)}`), 'DELETE'),
    ]
    for (const r of malformed) {
      for (const res of await Promise.all(endpoints(r))) {
        expect(res.status, r).toBe(400)
        expect((res.body as unknown as ErrorBody).error).toMatchObject({ code: 1001, name: 'INVALID_RUFID' })
      }
    }
    for (const r of unknown) {
      for (const res of await Promise.all(endpoints(r))) {
        expect(res.status, r).toBe(404)
        expect((res.body as unknown as ErrorBody).error).toMatchObject({ code: 1002, name: 'RUFID_NOT_FOUND' })
      }
    }
    const noRufid = await call(api('/api/v1/functions/resolve'), 'POST', {})
    expect((noRufid.body as unknown as ErrorBody).error.code).toBe(1001)
  })

  it('refuses bad input with 1006 and stores nothing', async () => {
    const before = (await call<{ pagination: { total: number } }>(api('/api/v1/functions'), 'GET')).body.pagination.total
    const bad = await create({ function_name: 'x y', source_code: 'x', signature: '()', language: 'js' })
    expect(bad.status).toBe(400)
    expect((bad.body as unknown as ErrorBody).error.details.problems).toEqual([{ pointer: '/function_name', message: expect.any(String) }])
    const notJson = await call(api('/api/v1/functions/create'), 'POST', '{"function_name": ')
    expect(notJson.status).toBe(400)
    expect((notJson.body as unknown as ErrorBody).error.code).toBe(1006)
    const big = await create({ ...addJs, function_name: 'big', source_code: `function big() { return "${'x'.repeat(1_100_000)}" }` })
    expect(big.status).toBe(413)
    expect((big.body as unknown as ErrorBody).error.code).toBe(1006)
    const badArgs = await execute(computeRufid(addJs).rufid_short, 'two and three')
    expect(badArgs.status).toBe(400)
    const unknownArg = await execute(computeRufid(addJs).rufid_short, { a: 1, c: 2 })
    expect((unknownArg.body as unknown as ErrorBody).error.code).toBe(1006)
    const after = (await call<{ pagination: { total: number } }>(api('/api/v1/functions'), 'GET')).body.pagination.total
    expect(after).toBe(before)
  })

  it('keeps namespaces apart (local mode: tenant from X-Svc-Namespace)', async () => {
    const id = computeRufid(addJs).rufid_short
    const other = await call(api(`/api/v1/functions/${id}/execute`), 'POST', { arguments: { a: 1, b: 2 } }, { 'x-svc-namespace': 'globex' })
    expect(other.status).toBe(404)
    const badNs = await call(api('/api/v1/functions'), 'GET', undefined, { 'x-svc-namespace': 'no spaces allowed' })
    expect(badNs.status).toBe(400)
  })

  it('serves health, readiness and every metric name of §8', async () => {
    expect((await call(api('/healthz'), 'GET')).body.status).toBe('ok')
    expect((await call(api('/readyz'), 'GET')).status).toBe(200)
    const text = await (await fetch(api('/metrics'))).text()
    for (const name of [
      'svc_protocol_requests_total', 'svc_protocol_request_duration_seconds', 'svc_protocol_errors_total',
      'svc_rufid_creations_total', 'svc_rufid_resolutions_total', 'svc_rufid_cache_hits_ratio',
      'svc_function_executions_total', 'svc_function_execution_duration_seconds', 'svc_function_errors_total',
      'svc_federation_nodes_active', 'svc_federation_sync_duration_seconds', 'svc_federation_discovery_requests_total',
      'process_cpu_seconds_total', 'nodejs_heap_size_used_bytes',
    ]) expect(text, name).toContain(`# TYPE ${name} `)
    expect(text).toMatch(/svc_function_executions_total\{language="javascript",status="success"\} [1-9]/)
    expect(text).toMatch(/svc_protocol_errors_total\{protocol="rest",code="1001"\} [1-9]/)
  })
})
