// Disk full: the data directory on a small tmpfs that a ballast file fills. Writes answer 1010 with
// the reason, reads go on, the node resumes writing by itself when the ballast goes, and nothing
// acknowledged is lost (checked again after a restart). Needs root (mount).
import { randomBytes } from 'node:crypto'
import { closeSync, openSync, rmSync, statfsSync, writeFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { call, removeDir, startDaemonProcess, tempDataDir, type DaemonProcess } from '../fixtures/daemon-process.js'
import { recordFault } from './fault-record.js'
import { canMount, mountTmpfs, sleep, unmount } from './fault-fixtures.js'

const fnNamed = (name: string, body = '1', pad = '') => ({
  function_name: name, signature: '(a)', language: 'javascript',
  source_code: `function ${name}(a) {\n  // ${pad}\n  return a + ${body}\n}\n`,
})

/** Writes a ballast file until the file system has at most `leaveBytes` free (0: until ENOSPC). */
function fillUntil(dir: string, leaveBytes: number): string {
  const path = join(dir, 'ballast')
  const fd = openSync(path, 'w')
  const chunk = randomBytes(64 << 10)
  try {
    for (;;) {
      const st = statfsSync(dir)
      const free = st.bavail * st.bsize
      if (free <= leaveBytes) break
      const n = Math.min(chunk.length, Math.max(4096, free - leaveBytes))
      writeSync(fd, chunk, 0, n)
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err
  } finally {
    closeSync(fd)
  }
  return path
}

async function waitUntil<T>(probe: () => Promise<T | undefined>, timeoutMs: number, stepMs = 100): Promise<{ value: T; ms: number }> {
  const started = Date.now()
  for (;;) {
    const value = await probe()
    if (value !== undefined) return { value, ms: Date.now() - started }
    if (Date.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms`)
    await sleep(stepMs)
  }
}

describe('disk full (a tmpfs data directory, real daemon processes)', () => {
  const root = tempDataDir()
  const mounted = canMount(join(root, 'probe'))
  const mounts: string[] = []
  const running: DaemonProcess[] = []
  afterEach(async () => {
    for (const d of running.splice(0)) await d.stop('SIGKILL')
    for (const m of mounts.splice(0)) unmount(m)
  })
  afterAll(() => removeDir(root))

  const start = async (dataDir: string, env: Record<string, string>): Promise<DaemonProcess> => {
    const d = await startDaemonProcess({ dataDir, env: { SVC_SANDBOX_WORKERS: '1', ...env } })
    running.push(d)
    return d
  }

  /** Reads that must keep working while writes are refused. */
  const readsWork = async (url: string, short: string) => {
    const statuses = [
      (await call(`${url}/api/v1/functions/resolve`, 'POST', { rufid: short })).status,
      (await call(`${url}/api/v1/functions/${short}`, 'GET')).status,
      (await call(`${url}/api/v1/functions?limit=5`, 'GET')).status,
      (await call(`${url}/v1/marketplace/functions/search?q=acked`, 'GET')).status,
      (await call(`${url}/api/v1/functions/${short}/source`, 'GET')).status,
    ]
    return statuses
  }

  const scenario = async (name: 'watermark' | 'enospc') => {
    const mount = join(root, name)
    mountTmpfs(mount, name === 'watermark' ? 40 << 20 : 24 << 20)
    mounts.push(mount)
    const dataDir = join(mount, 'data')
    // watermark: writes refused below 8 MiB free; enospc: no threshold, LevelDB itself runs out of space
    const env = { SVC_STORAGE_MIN_FREE_MB: name === 'watermark' ? '8' : '0' }
    const storageConfig = join(root, `${name}.yaml`)
    writeFileSync(storageConfig, 'storage:\n  check_interval_ms: 200\n')
    let d = await start(dataDir, { ...env, SVC_CONFIG: storageConfig })
    const acked: string[] = []
    for (let i = 0; i < 5; i++) {
      const r = await call(`${d.url}/api/v1/functions/create`, 'POST', { ...fnNamed(`acked${i}`), description: 'acked before the disk filled' })
      expect(r.status).toBe(201)
      acked.push(r.body.rufid_short as string)
    }
    const ballast = fillUntil(mount, name === 'watermark' ? 4 << 20 : 0)
    // writes: refused with 1010 and the reason (the enospc case writes large sources until LevelDB fails)
    const filledAt = Date.now()
    let attempts = 0
    const refusal = await waitUntil(async () => {
      attempts++
      const r = await call(`${d.url}/api/v1/functions/create`, 'POST', fnNamed(`during${attempts}`, '2', name === 'enospc' ? randomBytes(150_000).toString('base64') : ''))
      if (r.status === 201) {
        acked.push(r.body.rufid_short as string)
        return undefined
      }
      return r
    }, 30_000, 50)
    const refusedAfterMs = Date.now() - filledAt
    expect(refusal.value.status, JSON.stringify(refusal.value.body)).toBe(503)
    const error = refusal.value.body.error as { code: number; details: { reason: string }; message: string }
    expect(error.code).toBe(1010)
    expect(error.details.reason).toBe('disk_full')
    expect(error.message).toMatch(/disk is full/)
    expect(refusal.value.headers.get('retry-after')).toMatch(/^\d+$/)
    // every kind of write is refused the same way, with nothing written
    const del = await call(`${d.url}/api/v1/functions/${acked[0]}`, 'DELETE')
    expect(del.status).toBe(503)
    expect((del.body.error as { code: number }).code).toBe(1010)
    const deploy = await call(`${d.url}/api/v1/functions/deploy`, 'POST', { ...fnNamed('acked0'), branch: 'main' })
    expect(deploy.status).toBe(503)
    // reads go on, repeatedly
    for (let i = 0; i < 5; i++) expect(await readsWork(d.url, acked[i % acked.length]!)).toEqual([200, 200, 200, 200, 200])
    // an execution stores its record first: refused like any write (no code runs unrecorded)
    const run = await call(`${d.url}/api/v1/functions/${acked[0]}/execute`, 'POST', { arguments: { a: 1 } })
    expect(run.status).toBe(503)
    expect((run.body.error as { code: number; details: { reason: string } }).details.reason).toBe('disk_full')
    const health = await call(`${d.url}/healthz`, 'GET')
    expect(health.status).toBe(200)
    expect(d.proc.exitCode).toBeNull()
    // space returns: writes resume by themselves
    rmSync(ballast)
    const resumed = await waitUntil(async () => {
      const r = await call(`${d.url}/api/v1/functions/create`, 'POST', fnNamed(`after${Date.now()}`, '3'))
      return r.status === 201 ? r : undefined
    }, 30_000, 100)
    acked.push(resumed.value.body.rufid_short as string)
    expect(d.output()).toMatch(/storage writable again/)
    // nothing acknowledged is lost, here and after a restart
    for (const short of acked) expect((await call(`${d.url}/api/v1/functions/resolve`, 'POST', { rufid: short })).status, short).toBe(200)
    await d.stop('SIGTERM')
    d = await start(dataDir, { ...env, SVC_CONFIG: storageConfig })
    for (const short of acked) expect((await call(`${d.url}/api/v1/functions/resolve`, 'POST', { rufid: short })).status, short).toBe(200)
    const restarted = await call(`${d.url}/api/v1/functions/create`, 'POST', fnNamed('afterRestart', '4'))
    expect(restarted.status).toBe(201)
    return { acked: acked.length, refusedAfterMs, resumedAfterMs: resumed.ms, attempts }
  }

  it.skipIf(!mounted)('below the free-space threshold: 1010 disk_full, reads go on, writes resume when space returns', async () => {
    const rec = recordFault('disk.watermark', {
      fault: 'data directory on a 40 MiB tmpfs filled by a ballast file to 4 MiB free (threshold storage.min_free_mb = 8)',
      expectation: 'writes (executions too: each stores its record) 503/1010 reason disk_full; resolve, read, list, search, source 200; writes resume without restart; every acknowledged write kept across a restart',
    })
    const f = await scenario('watermark')
    rec.figures({ acknowledged: f.acked, refused_after_ms: f.refusedAfterMs, resumed_after_ms: f.resumedAfterMs })
    rec.summary(`refused ${f.refusedAfterMs} ms after the fill, resumed ${f.resumedAfterMs} ms after the ballast went; ${f.acked} acknowledged writes all kept across a restart`)
  }, 120_000)

  it.skipIf(!mounted)('LevelDB itself out of space: 1010 disk_full, reads go on, writes resume when space returns', async () => {
    const rec = recordFault('disk.enospc', {
      fault: 'data directory on a 24 MiB tmpfs filled to the last byte (no threshold), then large creates until LevelDB fails',
      expectation: 'writes 503/1010 reason disk_full; reads 200; writes resume without restart (reopening LevelDB if its compaction failed); every acknowledged write kept',
    })
    const f = await scenario('enospc')
    rec.figures({ acknowledged: f.acked, refused_after_ms: f.refusedAfterMs, resumed_after_ms: f.resumedAfterMs, creates_tried: f.attempts })
    rec.summary(`refused ${f.refusedAfterMs} ms after the fill (${f.attempts} creates tried), resumed ${f.resumedAfterMs} ms after the ballast went; ${f.acked} acknowledged writes all kept across a restart`)
  }, 120_000)
})
