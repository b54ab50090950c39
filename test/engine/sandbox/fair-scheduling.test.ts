// The sandbox pool's scheduling between tenants, with real worker processes: a tenant flooding the
// node with slow calls holds at most all workers but one, so another tenant's call never waits for
// them; a tenant past its share of the queue is refused itself; child namespaces count against
// their root tenant. Behaviour only: orders and counts, no timing thresholds.
import { afterEach, describe, expect, it } from 'vitest'
import { createSandbox, type Sandbox, type SandboxOutcome, type SandboxRequest } from '../../../src/engine/sandbox/index.js'
import { fn, request, waitFor } from './helpers.js'

let sandbox: Sandbox | undefined
afterEach(async () => {
  await sandbox?.stop()
  sandbox = undefined
})

async function pool(overrides: Partial<Parameters<typeof createSandbox>[0]> = {}): Promise<Sandbox> {
  sandbox = createSandbox({ workers: 2, maxWarmIsolatesPerWorker: 16, maxLogBytes: 4096, queueLimit: 256, ...overrides })
  await sandbox.start()
  return sandbox
}

/** a call of tenant `account` that keeps its worker busy for `ms` of wall time */
const busy = (account: string, ms: number, key = `${account}/busy/v1`): SandboxRequest =>
  fn(key, `const end = Date.now() + ${ms}; while (Date.now() < end) {} return 1`, { tenant: account, account, limits: { timeoutMs: 10_000, memoryMb: 32, cpuMs: 10_000 } })

describe('sandbox scheduling between tenants (real workers)', () => {
  it("a tenant flooding slow calls never holds every worker: another tenant's call runs while all of the flood waits", async () => {
    const s = await pool()
    // the first call teaches the scheduler that the function is slow
    expect((await s.execute(busy('acme', 80))).status).toBe('success')
    const finished: string[] = []
    const flood = Array.from({ length: 8 }, (_, i) => s.execute(busy('acme', 300)).then((o) => {
      finished.push(`acme-${i}`)
      return o
    }))
    await waitFor(() => s.stats().tenants.find((t) => t.tenant === 'acme')?.running === 1)
    // acme holds one worker; the other is free although acme has seven calls waiting
    expect(s.stats().tenants.find((t) => t.tenant === 'acme')).toMatchObject({ running: 1, queued: 7 })
    expect(s.stats().busyWorkers).toBe(1)
    const b = await s.execute(request({ key: 'globex/add/v1', tenant: 'globex', account: 'globex' }))
    finished.push('globex')
    expect(b.status).toBe('success')
    expect(b.result).toBe(5)
    // globex's call did not wait for any of acme's: at most the one running when it came had ended
    expect(finished.indexOf('globex')).toBeLessThanOrEqual(1)
    const outcomes: SandboxOutcome[] = await Promise.all(flood)
    expect(outcomes.every((o) => o.status === 'success')).toBe(true)
  }, 30_000)

  it('child namespaces count against their root tenant: spreading a flood over namespaces does not take the last worker', async () => {
    const s = await pool()
    expect((await s.execute(busy('acme', 80, 'acme.n0/busy/v1'))).status).toBe('success')
    const flood = Array.from({ length: 6 }, (_, i) => s.execute(busy('acme', 300, `acme.n${i}/busy/v1`)))
    await waitFor(() => s.stats().tenants.find((t) => t.tenant === 'acme')?.running === 1)
    expect(s.stats().busyWorkers).toBe(1)
    expect(s.stats().tenants.map((t) => t.tenant)).toEqual(['acme'])
    await Promise.all(flood)
  }, 30_000)

  it("a tenant past its own queue limit is refused with 1005, and another tenant's calls are not", async () => {
    const s = await pool({ queueLimitPerTenant: 3 })
    expect((await s.execute(busy('acme', 50))).status).toBe('success')
    const accepted = Array.from({ length: 4 }, () => s.execute(busy('acme', 200)))
    await waitFor(() => s.stats().tenants.find((t) => t.tenant === 'acme')?.running === 1)
    const refused = await s.execute(busy('acme', 200)).then(() => undefined, (err: unknown) => err as { code: number; details: Record<string, unknown> })
    expect(refused?.code).toBe(1005)
    expect(refused?.details).toMatchObject({ reason: 'tenant_queue_full', tenant: 'acme' })
    const b = await s.execute(request({ key: 'globex/add/v1', tenant: 'globex', account: 'globex' }))
    expect(b.status).toBe('success')
    await Promise.all(accepted)
    expect(s.stats().tenants.find((t) => t.tenant === 'acme')?.refused).toEqual({ tenant_queue_full: 1 })
  }, 30_000)

  it('a tenant alone with short calls uses every worker', async () => {
    const s = await pool()
    const quick = () => fn('acme/quick/v1', 'const end = Date.now() + 2; while (Date.now() < end) {} return 1', { tenant: 'acme', account: 'acme' })
    // teach the scheduler the function is short (and warm it)
    for (let i = 0; i < 4; i++) expect((await s.execute(quick())).status).toBe('success')
    const outcomes = await Promise.all(Array.from({ length: 6 }, () => s.execute(quick())))
    expect(outcomes.every((o) => o.status === 'success')).toBe(true)
    // dispatched while both workers were idle: they ran on both
    expect(new Set(outcomes.map((o) => o.workerPid)).size).toBe(2)
  }, 30_000)
})
