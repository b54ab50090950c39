// The derived signature's time is linear in the source (issue 27). In its own file: the mutation
// run (stryker.config.mjs) leaves it out, as its child process never runs an active mutant.
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

describe('deriveSignature', () => {
  // A node derives signatures of untrusted sources of up to 1 MiB. In a child process killed at a
  // generous deadline (a slow synchronous derivation cannot be interrupted in-process): a
  // derivation that rescans the text for each candidate takes hours on these, this one well under
  // a second each.
  it('derives in linear time, whatever the source holds', async () => {
    const fixture = fileURLToPath(new URL('./fixtures/derive-adversarial.ts', import.meta.url))
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', fixture], { timeout: 60_000, killSignal: 'SIGKILL' })
    const { sizes, codes } = JSON.parse(stdout) as { sizes: number[]; codes: Record<string, unknown> }
    expect(Math.min(...sizes)).toBeGreaterThan(700_000)
    expect(Object.keys(codes).length).toBe(sizes.length)
    for (const [id, code] of Object.entries(codes)) expect(code, id).toBe(1006)
  }, 90_000)
})
