// The sandbox workers' OS wall on a real daemon (execution.os_isolation): on by default where the
// host allows it (CI installs bubblewrap), reported by GET /api/v1/node/info, visible from outside
// (the worker's node process runs in other network and mount namespaces, as nobody when the daemon
// is root); `required` on a host without any wall refuses to start with exit code 8; a bad value
// is a configuration error (2). The escape checks from inside a worker are in
// test/engine/sandbox/sandbox-os-wall.test.ts.
import { readFileSync, readlinkSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { EXIT_CODES } from '../../src/daemon/exit-codes.js'
import { call, removeDir, startDaemonProcess, tempDataDir } from '../fixtures/daemon-process.js'
import { addJs } from '../fixtures/functions.js'
import { recordFault } from './fault-record.js'
import { childPids, runDaemonToExit, workerNodePid } from './fault-fixtures.js'

const uidOf = (pid: number): number => Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1])

describe('the sandbox workers\' OS wall (real daemon processes)', () => {
  const dirs: string[] = []
  afterAll(() => {
    for (const dir of dirs) removeDir(dir)
  })
  const dataDir = (): string => {
    const dir = tempDataDir()
    dirs.push(dir)
    return dir
  }

  it('on by default: reported by node/info, workers in their own namespaces, calls run', async () => {
    const rec = recordFault('sandbox.os-wall', {
      fault: 'a default node (execution.os_isolation auto); then os_isolation required on a host with no wall (no bwrap/unshare on PATH); then a bad value',
      expectation: 'workers run behind bubblewrap or unshare (own network and mount namespaces, nobody as root), calls succeed; required without a wall exits 8; a bad value exits 2',
    })
    let layer = ''
    const d = await startDaemonProcess({ dataDir: dataDir(), env: { SVC_SANDBOX_WORKERS: '1' } })
    try {
      const info = (await call(`${d.url}/api/v1/node/info`, 'GET')).body as { sandbox: { os_isolation: { mode: string; layer: string; uid: number | null; network: string } } }
      const wall = info.sandbox.os_isolation
      expect(wall.mode).toBe('auto')
      expect(['bubblewrap', 'unshare'], JSON.stringify(wall)).toContain(wall.layer)
      expect(wall.network).toBe('none')
      layer = wall.layer
      const created = await call(`${d.url}/api/v1/functions/create`, 'POST', addJs)
      expect(created.status).toBe(201)
      const run = await call(`${d.url}/api/v1/functions/${created.body.rufid_short as string}/execute`, 'POST', { arguments: { a: 2, b: 3 } })
      expect(run.status, JSON.stringify(run.body)).toBe(200)
      expect(run.body.result).toBe(5)
      const worker = workerNodePid(childPids(d.pid)[0]!)
      expect(worker).not.toBe(d.pid)
      for (const ns of ['net', 'mnt', 'pid']) expect(readlinkSync(`/proc/${worker}/ns/${ns}`), ns).not.toBe(readlinkSync(`/proc/${d.pid}/ns/${ns}`))
      if (process.getuid?.() === 0) expect(uidOf(worker)).toBe(65534)
      expect(d.output()).toMatch(/sandbox workers run behind an OS wall/)
      rec.figures({ layer: wall.layer, worker_uid: uidOf(worker) })
    } finally {
      await d.stop()
    }

    // no wall anywhere on this PATH (bwrap, unshare and setpriv are looked up in the node's PATH)
    const refused = await runDaemonToExit(dataDir(), { env: { SVC_SANDBOX_OS_ISOLATION: 'required', PATH: '/nonexistent' }, timeoutMs: 30_000 })
    expect(refused.code, refused.output).toBe(EXIT_CODES.sandbox_isolation_unavailable)
    expect(refused.output).toMatch(/os_isolation is required but no OS wall works on this host/)
    expect(refused.output).toMatch(/bwrap is not installed/)

    const bad = await runDaemonToExit(dataDir(), { env: { SVC_SANDBOX_OS_ISOLATION: 'sometimes' }, timeoutMs: 30_000 })
    expect(bad.code, bad.output).toBe(EXIT_CODES.config_invalid)
    expect(bad.output).toMatch(/execution\.os_isolation/)
    rec.figures({ required_without_wall_exit: refused.code, bad_value_exit: bad.code })
    rec.summary(`workers behind ${layer}: own net/mnt/pid namespaces${process.getuid?.() === 0 ? ', uid 65534' : ''}; required without a wall → exit ${refused.code}; bad value → exit ${bad.code}`)
  }, 120_000)

  it('auto on a host without a wall starts, warns once and says why in node/info', async () => {
    const d = await startDaemonProcess({ dataDir: dataDir(), env: { SVC_SANDBOX_WORKERS: '1', PATH: '/nonexistent' } })
    try {
      const info = (await call(`${d.url}/api/v1/node/info`, 'GET')).body as { sandbox: { os_isolation: { layer: string; reason: string } } }
      expect(info.sandbox.os_isolation.layer).toBe('none')
      expect(info.sandbox.os_isolation.reason).toMatch(/bwrap is not installed/)
      expect(d.output().match(/sandbox workers run WITHOUT an OS wall/g)).toHaveLength(1)
    } finally {
      await d.stop()
    }
  }, 60_000)
})
