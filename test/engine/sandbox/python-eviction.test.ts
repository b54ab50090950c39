/**
 * A worker's Python interpreters are shared out between accounts (issue 27, items 4 and 6): bounded
 * by count, by their memory and by each account's memory, and evicted from the account that holds
 * the most, so a tenant spreading calls over child namespaces (free to pick) evicts its own
 * interpreters, never another tenant's. Whether a call found its interpreter warm is read from the
 * interpreter itself: a stdlib class attribute that lives as long as the interpreter counts its
 * calls (python-prelude.py), so 1 means a fresh interpreter.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createSandbox, type Sandbox, type SandboxInit } from '../../../src/engine/sandbox/index.js'
import { py, PYTHON_HOOK_TIMEOUT_MS } from './fixtures/python.js'

const MARK = 'def f(grow_mb=0):\n    import string\n    hold = bytearray(grow_mb * 1048576)\n    string.Template._mark = getattr(string.Template, "_mark", 0) + 1\n    return string.Template._mark\n'

let sandbox: Sandbox | undefined

afterEach(async () => {
  await sandbox?.stop()
  sandbox = undefined
})

async function start(init: Partial<SandboxInit>): Promise<Sandbox> {
  sandbox = createSandbox({ workers: 1, maxWarmIsolatesPerWorker: 32, maxLogBytes: 4096, queueLimit: 20, ...init })
  await sandbox.start()
  return sandbox
}

/** A call of the marking function in `namespace` of `account`; `growMb` makes the interpreter's memory grow that much. */
async function mark(s: Sandbox, account: string, namespace: string, growMb = 0): Promise<number> {
  const out = await s.execute(py(`${namespace}/mark`, MARK, {
    tenant: namespace, account, signature: '(grow_mb=0)', args: { grow_mb: growMb },
    limits: { timeoutMs: 20_000, memoryMb: growMb + 32, cpuMs: 20_000 },
  }))
  expect(out.error?.message).toBeUndefined()
  return out.result as number
}

describe('interpreters shared out between accounts', () => {
  it("a tenant cycling through its child namespaces evicts its own interpreters, never another tenant's", async () => {
    const s = await start({ pythonInterpretersPerWorker: 3, pythonInterpreterMbPerWorker: 0, pythonInterpreterMbPerTenant: 0 })
    expect(await mark(s, 'globex', 'globex')).toBe(1)
    for (let i = 1; i <= 5; i++) expect(await mark(s, 'acme', `acme.n${i}`)).toBe(1)
    // B's interpreter served its second call: it was never evicted
    expect(await mark(s, 'globex', 'globex')).toBe(2)
    // A kept its most recent namespaces (the bound is 3: B's and two of A's) and lost its oldest
    expect(await mark(s, 'acme', 'acme.n5')).toBe(2)
    expect(await mark(s, 'acme', 'acme.n1')).toBe(1)
  }, PYTHON_HOOK_TIMEOUT_MS * 2)

  it("a tenant past its memory bound loses its own least recently used interpreter, not another tenant's", async () => {
    const s = await start({ pythonInterpretersPerWorker: 8, pythonInterpreterMbPerWorker: 0, pythonInterpreterMbPerTenant: 150 })
    expect(await mark(s, 'globex', 'globex')).toBe(1)
    expect(await mark(s, 'acme', 'acme.n1')).toBe(1)
    // n2's interpreter grows past what the tenant may hold with n1: n1 goes after the call
    expect(await mark(s, 'acme', 'acme.n2', 140)).toBe(1)
    expect(await mark(s, 'acme', 'acme.n1')).toBe(1)
    // and a new namespace of the tenant needs room: n2 (the least recently used, holding ~160 MB) goes
    expect(await mark(s, 'acme', 'acme.n3')).toBe(1)
    expect(await mark(s, 'acme', 'acme.n2')).toBe(1)
    expect(await mark(s, 'globex', 'globex')).toBe(2)
  }, PYTHON_HOOK_TIMEOUT_MS * 2)

  it('a worker past its memory bound evicts from the account that holds the most', async () => {
    const s = await start({ pythonInterpretersPerWorker: 8, pythonInterpreterMbPerWorker: 200, pythonInterpreterMbPerTenant: 0 })
    expect(await mark(s, 'globex', 'globex')).toBe(1)
    // a fresh interpreter holds 20 MB: B's and n1 grown to ~170 MB fit in 200, a third does not
    expect(await mark(s, 'acme', 'acme.n1', 150)).toBe(1)
    // another namespace of A does not fit beside both: A holds more (two with the new one), so A's n1 goes
    expect(await mark(s, 'acme', 'acme.n2')).toBe(1)
    expect(await mark(s, 'globex', 'globex')).toBe(2)
    expect(await mark(s, 'acme', 'acme.n1')).toBe(1)
  }, PYTHON_HOOK_TIMEOUT_MS * 2)
})
