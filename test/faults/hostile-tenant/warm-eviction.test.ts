// Warm-state eviction: tenant A churns through many functions spread over child namespaces (free to
// pick with X-Svc-Namespace), calling each once, with deterministic functions filling the result
// cache too; tenant B's warm JavaScript isolate (module state: a counter) and its cached results
// must survive. The node's warm capacity is made small (8 isolates per worker, 40 cached results)
// so the churn is cheap to make; the rule is the same at any size. Real daemon process.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { recordFault } from '../fault-record.js'
import { startTwoTenantNode, type TwoTenantNode } from './two-tenants.js'

const CHURN_FUNCTIONS = 40
const CHURN_RESULTS = 120

describe("hostile tenant: churn that would evict another tenant's warm state (real daemon process)", () => {
  let node: TwoTenantNode
  const configDir = mkdtempSync(join(tmpdir(), 'svc-warm-eviction-'))
  let counterB = ''
  let detB = ''

  beforeAll(async () => {
    const config = join(configDir, 'config.yaml')
    writeFileSync(config, [
      'execution:',
      '  workers: 1',
      '  max_warm_isolates_per_worker: 8',
      '  result_cache: { max_entries: 40, max_bytes: 67108864, max_result_bytes: 1048576, max_bytes_per_tenant: 16777216 }',
      'rate_limits:',
      '  per_key: { points: 0, window_s: 1 }',
      '  per_tenant: { points: 0, window_s: 1 }',
      '',
    ].join('\n'))
    node = await startTwoTenantNode({ env: { SVC_CONFIG: config, SVC_SANDBOX_WORKERS: '1' } })
    counterB = await node.create('B', { function_name: 'count', signature: '()', language: 'javascript', source_code: 'let n = 0\nfunction count() { return ++n }' })
    detB = await node.create('B', {
      function_name: 'square', signature: '(x)', language: 'javascript', source_code: 'function square(x) { return x * x }',
      manifest: { schemaVersion: '1.0', name: 'square', deterministic: true },
    })
  }, 120_000)

  afterAll(async () => {
    await node?.stop()
    rmSync(configDir, { recursive: true, force: true })
  })

  it("A's churn over functions, namespaces and arguments leaves B's warm isolate and cached results in place", async () => {
    const fault = recordFault('isolation.warm-eviction', {
      fault: `tenant A creates and calls ${CHURN_FUNCTIONS} functions spread over ${CHURN_FUNCTIONS / 2} child namespaces and a deterministic function with ${CHURN_RESULTS} arguments, on a node keeping 8 warm isolates and 40 cached results`,
      expectation: "B's warm isolate keeps its module state (its counter goes on) and B's cached results still answer cached: A's churn evicts A's own entries",
    })
    const runB = async (): Promise<number> => {
      const r = await node.asB<{ result: number }>('POST', `/api/v1/functions/${counterB}/execute`, { arguments: {} })
      expect(r.status).toBe(200)
      return r.body.result
    }
    expect(await runB()).toBe(1)
    expect(await runB()).toBe(2)
    for (let x = 0; x < 3; x++) {
      const r = await node.asB<{ result: number; cached: boolean }>('POST', `/api/v1/functions/${detB}/execute`, { arguments: { x } })
      expect(r.body).toMatchObject({ result: x * x, cached: false })
    }

    let aCalls = 0
    for (let i = 0; i < CHURN_FUNCTIONS; i++) {
      const namespace = `acme.ns${i % (CHURN_FUNCTIONS / 2)}`
      const headers = { 'x-svc-namespace': namespace }
      const created = await node.asA('POST', '/api/v1/functions/create', {
        function_name: `f${i}`, signature: '()', language: 'javascript', source_code: `let s${i} = []\nfunction f${i}() { s${i}.push(${i}); return s${i}.length }`,
      }, headers)
      expect(created.status).toBe(201)
      const r = await node.asA('POST', `/api/v1/functions/${created.body.rufid_short as string}/execute`, { arguments: {} }, headers)
      expect(r.status).toBe(200)
      aCalls++
    }
    const detA = await node.asA('POST', '/api/v1/functions/create', {
      function_name: 'cube', signature: '(x)', language: 'javascript', source_code: 'function cube(x) { return x * x * x }',
      manifest: { schemaVersion: '1.0', name: 'cube', deterministic: true },
    })
    for (let x = 0; x < CHURN_RESULTS; x++) {
      const r = await node.asA('POST', `/api/v1/functions/${detA.body.rufid_short as string}/execute`, { arguments: { x } })
      expect(r.status).toBe(200)
      aCalls++
    }

    const started = performance.now()
    const after = await runB()
    const warmCallMs = performance.now() - started
    const cached: boolean[] = []
    for (let x = 0; x < 3; x++) {
      const r = await node.asB<{ result: number; cached: boolean }>('POST', `/api/v1/functions/${detB}/execute`, { arguments: { x } })
      expect(r.body.result).toBe(x * x)
      cached.push(r.body.cached)
    }
    fault.figures({ a_calls: aCalls, b_counter_after: after, b_next_call_ms: Math.round(warmCallMs * 100) / 100, b_results_still_cached: cached.filter(Boolean).length })
    fault.summary(`after ${aCalls} calls of A over ${CHURN_FUNCTIONS} functions: B's counter went on to ${after} (warm), its next call ${Math.round(warmCallMs * 10) / 10} ms; ${cached.filter(Boolean).length} of 3 of B's results still cached`)
    // 3: the same isolate (an evicted one would start again at 1)
    expect(after).toBe(3)
    expect(cached).toEqual([true, true, true])
  }, 240_000)
})
