// Acknowledged data survives restarts and kill -9; shutdown lets in-flight requests finish.
import { afterEach, describe, expect, it } from 'vitest'
import { computeRufid } from '../../src/core/rufid.js'
import { call, restartableDaemons, startDaemonProcess } from '../fixtures/daemon-process.js'
import { addJs } from '../fixtures/functions.js'

const slowJs = {
  function_name: 'slow',
  signature: '(ms)',
  language: 'javascript',
  source_code: 'function slow(ms) { const end = Date.now() + ms; while (Date.now() < end) {} return "done" }',
}

describe('durability and shutdown (real daemon processes)', () => {
  const daemons = restartableDaemons()
  afterEach(() => daemons.cleanup())
  const start = daemons.start

  it('keeps functions and ledger entries across a graceful restart and after kill -9', async () => {
    const dir = daemons.dataDir()
    const first = await start(dir)
    const created = await call(`${first.url}/api/v1/functions/create`, 'POST', addJs)
    expect(created.status).toBe(201)
    const v2 = await call(`${first.url}/api/v1/functions/create`, 'POST', { ...addJs, source_code: 'function add(a, b) { return a + b + 0 }' })
    expect(v2.body.version).toBe('v2')
    expect((await first.stop('SIGTERM')).code).toBe(0)

    const second = await start(dir)
    const resolved = await call(`${second.url}/api/v1/functions/resolve`, 'POST', { rufid: created.body.rufid })
    expect(resolved.status).toBe(200)
    expect(resolved.body.content_digest).toBe(computeRufid(addJs).content_digest)
    // a third version, acknowledged, then the process is killed without any chance to flush
    const v3 = await call(`${second.url}/api/v1/functions/create`, 'POST', { ...addJs, source_code: 'function add(a, b) { return a + b + 1 }' })
    expect(v3.status).toBe(201)
    await second.stop('SIGKILL')

    const third = await start(dir)
    for (const r of [created.body.rufid, v2.body.rufid, v3.body.rufid]) {
      const res = await call(`${third.url}/api/v1/functions/resolve`, 'POST', { rufid: r })
      expect(res.status, String(r)).toBe(200)
    }
    const run = await call(`${third.url}/api/v1/functions/${v3.body.rufid_short as string}/execute`, 'POST', { arguments: { a: 1, b: 1 } })
    expect(run.body.result).toBe(3)
    const v4 = await call(`${third.url}/api/v1/functions/create`, 'POST', { ...addJs, source_code: 'function add(a, b) { return a + b + 2 }' })
    expect(v4.body.version).toBe('v4')
  })

  it('lets an in-flight execution finish on SIGTERM, then exits 0', async () => {
    const dir = daemons.dataDir()
    const d = await start(dir)
    const c = await call(`${d.url}/api/v1/functions/create`, 'POST', slowJs)
    const inflight = call(`${d.url}/api/v1/functions/${c.body.rufid_short as string}/execute`, 'POST', { arguments: { ms: 700 } })
    await new Promise((r) => setTimeout(r, 200))
    d.proc.kill('SIGTERM')
    const res = await inflight
    expect(res.status).toBe(200)
    expect(res.body.result).toBe('done')
    expect((await d.exited).code).toBe(0)
    expect(d.output()).toContain('svc-node stopped')
  })

  it('refuses to open a data directory written in another data format', async () => {
    const dir = daemons.dataDir()
    const d = await start(dir)
    await d.stop('SIGTERM')
    const { ClassicLevel } = await import('classic-level')
    const db = new ClassicLevel<string, unknown>(`${dir}/catalog`, { valueEncoding: 'json' })
    await db.sublevel<string, unknown>('meta', { valueEncoding: 'json' }).put('data_format_version', 999)
    await db.close()
    await expect(startDaemonProcess({ dataDir: dir, startTimeoutMs: 15_000 })).rejects.toThrow(/data format 999/)
  })
})
