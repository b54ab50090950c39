import type { ExecutionLimits, SandboxRequest } from '../../../src/engine/sandbox/index.js'

export const LIMITS: ExecutionLimits = { timeoutMs: 2_000, memoryMb: 32, cpuMs: 2_000 }

/** A request for `add` (override any field). */
export function request(overrides: Partial<SandboxRequest> = {}): SandboxRequest {
  return {
    key: 'tenant-a/add/v1',
    language: 'javascript',
    source: 'function add(a, b) { return a + b }',
    functionName: 'add',
    signature: '(a, b)',
    args: { a: 2, b: 3 },
    limits: LIMITS,
    ...overrides,
  }
}

/** A request whose function `f` is the given body (as a script). */
export function fn(key: string, body: string, overrides: Partial<SandboxRequest> = {}): SandboxRequest {
  return request({ key, source: `function f() { ${body} }`, functionName: 'f', signature: '()', args: [], ...overrides })
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls `check` every 20 ms until it returns a value other than undefined/false, for at most `timeoutMs`. */
export async function waitFor<T>(check: () => T | undefined | false, timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs
  for (;;) {
    const value = check()
    if (value !== undefined && value !== false) return value
    if (Date.now() > until) throw new Error(`condition not met within ${timeoutMs} ms`)
    await sleep(20)
  }
}
