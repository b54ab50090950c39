// The memory bounds of the sandbox workers' Python interpreters in the daemon configuration and the sandbox's settings.
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src/daemon/config.js'
import { createSandbox } from '../../../src/engine/sandbox/index.js'

const python = (values: Record<string, unknown>) => loadConfig({ env: {}, overrides: { execution: { python: values } } }).execution.python

describe('Python interpreter memory bounds', () => {
  it('default to 768 MB per worker and 384 MB per tenant', () => {
    expect(python({})).toMatchObject({ interpreters_per_worker: 4, max_interpreter_mb_per_worker: 768, max_interpreter_mb_per_tenant: 384 })
  })

  it("must leave room, with the warm isolates' bound, under the worker's own memory bound", () => {
    const execution = (values: Record<string, unknown>) => loadConfig({ env: {}, overrides: { execution: values } }).execution
    expect(execution({ worker_memory_mb: 2048 })).toMatchObject({ max_warm_mb_per_worker: 768 })
    expect(() => execution({ worker_memory_mb: 1024, max_warm_mb_per_worker: 768, python: { max_interpreter_mb_per_worker: 768 } })).toThrow(/leave no room under execution\.worker_memory_mb/)
    // no bound on one of them: the worker's own bound is what holds
    expect(execution({ worker_memory_mb: 1024, max_warm_mb_per_worker: 0, python: { max_interpreter_mb_per_worker: 768 } })).toMatchObject({ worker_memory_mb: 1024 })
  })

  it('accept 0 for no bound and refuse a tenant bound above the worker bound, bounds below 64 MB, negatives and fractions', () => {
    expect(python({ max_interpreter_mb_per_worker: 0, max_interpreter_mb_per_tenant: 0 })).toMatchObject({ max_interpreter_mb_per_worker: 0 })
    expect(python({ max_interpreter_mb_per_worker: 0, max_interpreter_mb_per_tenant: 4096 })).toMatchObject({ max_interpreter_mb_per_tenant: 4096 })
    expect(() => python({ max_interpreter_mb_per_worker: 512, max_interpreter_mb_per_tenant: 1024 })).toThrow(/max_interpreter_mb_per_tenant exceeds/)
    expect(() => python({ max_interpreter_mb_per_worker: -1 })).toThrow(/execution\.python\.max_interpreter_mb_per_worker/)
    expect(() => python({ max_interpreter_mb_per_tenant: 1.5 })).toThrow(/execution\.python\.max_interpreter_mb_per_tenant/)
    // a bound too small for one interpreter would reload one for every call
    expect(() => python({ max_interpreter_mb_per_tenant: 32 })).toThrow(/at least 64/)
  })

  it('are checked by the sandbox too', () => {
    const base = { workers: 1, maxWarmIsolatesPerWorker: 1, maxLogBytes: 1, queueLimit: 1 }
    expect(() => createSandbox({ ...base, pythonInterpreterMbPerWorker: -5 })).toThrow(/pythonInterpreterMbPerWorker/)
    expect(() => createSandbox({ ...base, pythonInterpreterMbPerTenant: 0.5 })).toThrow(/pythonInterpreterMbPerTenant/)
    expect(() => createSandbox({ ...base, pythonInterpreterMbPerWorker: 0, pythonInterpreterMbPerTenant: 0 })).not.toThrow()
  })
})
