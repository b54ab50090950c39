// A worker's warm isolates are shared fairly between tenants (real worker process): one tenant's
// churn — many functions, or calls spread over child namespaces — evicts its own warm isolates,
// never another tenant's that holds less; a tenant past its own memory bound loses its own.
// "Warm" is observed through module state: a warm isolate keeps its counter between calls.
import { afterEach, describe, expect, it } from 'vitest'
import { createSandbox, type Sandbox, type SandboxRequest } from '../../../src/engine/sandbox/index.js'
import { request } from './helpers.js'

let sandbox: Sandbox | undefined
afterEach(async () => {
  await sandbox?.stop()
  sandbox = undefined
})

/** a function of `tenant` whose module keeps a counter (and, optionally, `mb` of heap) */
const counter = (tenant: string, key: string, mb = 0, account = tenant): SandboxRequest =>
  request({
    key,
    tenant,
    account,
    source: `let n = 0\nconst ballast = ${mb > 0 ? `new Array(${mb * 1024 * 128}).fill(1.5)` : 'null'}\nfunction count() { return ++n }`,
    functionName: 'count',
    signature: '()',
    args: [],
    limits: { timeoutMs: 5_000, memoryMb: 64, cpuMs: 5_000 },
  })

describe('warm isolates shared fairly between tenants (real worker)', () => {
  it("one tenant's churn over many functions and namespaces does not evict another tenant's warm isolate", async () => {
    sandbox = createSandbox({ workers: 1, maxWarmIsolatesPerWorker: 4, maxLogBytes: 4096, queueLimit: 64 })
    await sandbox.start()
    expect((await sandbox.execute(counter('globex', 'globex/count/v1'))).result).toBe(1)
    for (let i = 0; i < 12; i++) {
      const tenant = i % 2 === 0 ? 'acme' : `acme.n${i}`
      expect((await sandbox.execute(counter(tenant, `${tenant}/count${i}/v1`, 0, 'acme'))).status).toBe('success')
    }
    // still warm: the counter went on (a plain LRU of 4 would have evicted it: 12 newer keys)
    expect((await sandbox.execute(counter('globex', 'globex/count/v1'))).result).toBe(2)
    expect(sandbox.stats().perWorker[0]?.warmIsolates).toBe(4)
  }, 60_000)

  it('a tenant past its memory bound in a worker loses its own least recently used isolates', async () => {
    sandbox = createSandbox({ workers: 1, maxWarmIsolatesPerWorker: 64, maxWarmMbPerTenant: 12, maxLogBytes: 4096, queueLimit: 64 })
    await sandbox.start()
    expect((await sandbox.execute(counter('globex', 'globex/count/v1'))).result).toBe(1)
    // each of acme's isolates holds about 4 MB of heap: at most two or three fit in 12 MB
    for (let i = 0; i < 6; i++) expect((await sandbox.execute(counter('acme', `acme/big${i}/v1`, 4))).status).toBe('success')
    const warm = sandbox.stats().perWorker[0]?.warmIsolates ?? 0
    expect(warm).toBeLessThanOrEqual(1 + 3)
    expect(warm).toBeGreaterThanOrEqual(2)
    // acme's most recent isolate is still warm, its oldest is not, globex's is
    expect((await sandbox.execute(counter('acme', 'acme/big5/v1', 4))).result).toBe(2)
    expect((await sandbox.execute(counter('acme', 'acme/big0/v1', 4))).result).toBe(1)
    expect((await sandbox.execute(counter('globex', 'globex/count/v1'))).result).toBe(2)
  }, 60_000)
})
