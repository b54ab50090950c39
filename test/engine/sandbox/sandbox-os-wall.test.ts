// The sandbox workers' OS wall, tested from inside: "code that already escaped V8" is simulated by
// a check script (test/fixtures/wall-escape-check.mjs) that the very launcher of the sandbox starts,
// with the workers' wall, binds and node flags. Behind the wall it must not reach a socket on the
// host's 127.0.0.1, read the data directory or the federation key, write outside its /tmp, signal
// the node or see the node's environment; with the wall off, the same script can do all of it (so
// these tests can fail). Each mechanism this host offers is tried; which one `auto` picks is asserted.
import { createServer, type Server } from 'node:net'
import { createSocket, type Socket } from 'node:dgram'
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createSandbox, launchNodeScript, resolveOsIsolation, type OsIsolation, type OsIsolationInit,
} from '../../../src/engine/sandbox/index.js'
import { workerEntry } from '../../../src/engine/sandbox/worker-process.js'
import { request, sleep, waitFor } from './helpers.js'

const PACKAGE_ROOT = fileURLToPath(new URL('../../..', import.meta.url)).replace(/\/$/, '')
const CHECK = join(PACKAGE_ROOT, 'test/fixtures/wall-escape-check.mjs')
const isRoot = process.getuid?.() === 0

interface Attempt { ok: boolean; error?: string; value?: unknown }
interface Report {
  uid: number
  envKeys: string[]
  tcp: Attempt
  udp: Attempt
  readDataDir: Attempt
  readCatalog: Attempt
  readKey: Attempt
  readWheel: Attempt
  writeTmp: Attempt
  writeHostDir: Attempt
  writeDataDir: Attempt
  writePackageRoot: Attempt
  writeRoot: Attempt
  signalNode: Attempt
}

let tcpServer: Server
let tcpPort = 0
let tcpConnections = 0
let udpSocket: Socket
let udpPort = 0
let udpDatagrams = 0
// a data directory beneath the package root (bound into the wall, so it must be covered over), a
// federation key and a world-writable directory in the host's /tmp
let dataDir = ''
let hostDir = ''
let keyFile = ''
let wheel = ''
const SECRET_ENV = 'SVC_WALL_TEST_SECRET'

beforeAll(async () => {
  tcpServer = createServer((socket) => {
    tcpConnections++
    socket.destroy()
  })
  await new Promise<void>((resolve) => tcpServer.listen(0, '127.0.0.1', resolve))
  tcpPort = (tcpServer.address() as { port: number }).port
  udpSocket = createSocket('udp4')
  udpSocket.on('message', () => udpDatagrams++)
  await new Promise<void>((resolve) => udpSocket.bind(0, '127.0.0.1', resolve))
  udpPort = udpSocket.address().port

  dataDir = mkdtempSync(join(PACKAGE_ROOT, '.wall-test-data-'))
  chmodSync(dataDir, 0o700)
  mkdirSync(join(dataDir, 'catalog'))
  writeFileSync(join(dataDir, 'catalog', 'CURRENT'), 'MANIFEST-000001\n')
  mkdirSync(join(dataDir, 'wheels'))
  wheel = join(dataDir, 'wheels', 'demo-1.0-py3-none-any.whl')
  writeFileSync(wheel, 'wheel bytes')
  hostDir = mkdtempSync(join(tmpdir(), 'svc-wall-host-'))
  chmodSync(hostDir, 0o777)
  keyFile = join(hostDir, 'peer-key')
  writeFileSync(keyFile, 'federation private key', { mode: 0o600 })
  process.env[SECRET_ENV] = 'the node environment'
})

afterAll(async () => {
  delete process.env[SECRET_ENV]
  await new Promise<void>((resolve) => tcpServer?.close(() => resolve()))
  udpSocket?.close()
  if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  if (hostDir) rmSync(hostDir, { recursive: true, force: true })
})

const wallInit = (mode: OsIsolationInit['mode'], mechanism?: OsIsolationInit['mechanism']): OsIsolationInit => ({
  mode, ...(mechanism && { mechanism }),
  hiddenPaths: [dataDir, keyFile],
  readablePaths: [join(dataDir, 'wheels')],
})

/** Runs the check through the sandbox's launcher and waits for its report and its exit. */
async function check(wall: OsIsolation): Promise<Report> {
  const entry = workerEntry()
  const child = launchNodeScript(wall, {
    path: CHECK,
    execArgv: entry.execArgv,
    args: [JSON.stringify({ tcpPort, udpPort, dataDir, keyFile, readableFile: wheel, hostWritableDir: hostDir, packageRoot: PACKAGE_ROOT, nodePid: process.pid })],
  })
  let stderr = ''
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()))
  child.stdout?.resume()
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const report = await new Promise<Report>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no report within 30 s: ${stderr}`)), 30_000)
    child.once('message', (m) => {
      clearTimeout(timer)
      resolve(m as Report)
    })
    void exited.then((code) => reject(new Error(`the check exited (${code}) without a report: ${stderr}`)))
  })
  expect(await exited).toBe(0)
  return report
}

function expectWalled(report: Report, wall: OsIsolation): void {
  expect(wall.status.network).toBe('none')
  // network: nothing on the host's loopback is reachable (its own namespace has only its own lo)
  expect(report.tcp.ok, 'TCP connect to the host 127.0.0.1').toBe(false)
  // the data directory is absent, or an empty cover holding only the wheel cache's mount point
  expect(report.readDataDir.ok ? report.readDataDir.value : [], 'list the data directory').toEqual(report.readDataDir.ok ? ['wheels'] : [])
  expect(report.readCatalog.ok, 'read a catalog file').toBe(false)
  expect(report.readKey.ok, 'read the federation key').toBe(false)
  expect(report.writeHostDir.ok, 'write into a world-writable host directory').toBe(false)
  expect(report.writeDataDir.ok, 'write into the data directory').toBe(false)
  expect(report.writePackageRoot.ok, 'write into the package').toBe(false)
  expect(report.writeRoot.ok, 'write into /').toBe(false)
  expect(report.signalNode.ok, 'signal the node process').toBe(false)
  expect(report.envKeys).not.toContain(SECRET_ENV)
  // what it needs still works: its private /tmp, the wheel cache inside the hidden data directory
  expect(report.writeTmp).toEqual({ ok: true })
  expect(report.readWheel).toEqual({ ok: true, value: 'wheel bytes' })
  if (isRoot) expect(report.uid).toBe(65534)
  if (isRoot) expect(wall.status.uid).toBe(65534)
}

describe('the sandbox workers\' OS wall', () => {
  it('with the wall off, the same check reaches everything (so the walled checks can fail)', async () => {
    const wall = resolveOsIsolation(wallInit('off'))
    expect(wall.status).toMatchObject({ mode: 'off', layer: 'none', network: 'host' })
    const before = { tcp: tcpConnections, udp: udpDatagrams }
    const report = await check(wall)
    expect(report.tcp).toEqual({ ok: true })
    expect(report.udp).toEqual({ ok: true })
    expect(report.readDataDir.ok).toBe(true)
    expect(report.readCatalog).toEqual({ ok: true, value: 'MANIFEST-000001\n' })
    expect(report.readKey).toEqual({ ok: true, value: 'federation private key' })
    expect(report.writeHostDir).toEqual({ ok: true })
    expect(report.writeDataDir).toEqual({ ok: true })
    expect(report.signalNode).toEqual({ ok: true })
    expect(report.envKeys).toContain(SECRET_ENV)
    await waitFor(() => tcpConnections > before.tcp && udpDatagrams > before.udp)
  })

  it('auto puts a wall up on this host (CI installs bubblewrap; root falls back to unshare) and says which', () => {
    const wall = resolveOsIsolation(wallInit('auto'))
    expect(wall.status.reason ?? '', 'no OS wall: ' + (wall.status.reason ?? '')).toBe('')
    expect(['bubblewrap', 'unshare']).toContain(wall.status.layer)
    expect(wall.status.mode).toBe('auto')
  })

  for (const mechanism of ['bubblewrap', 'unshare'] as const) {
    it(`${mechanism}: code that escaped V8 reaches no socket, data directory, key, host file or the node`, async () => {
      const wall = resolveOsIsolation(wallInit('required', mechanism))
      if (wall.status.layer === 'none') {
        // refused with a reason, and then auto must have picked the other mechanism
        expect(wall.status.reason).toMatch(new RegExp(mechanism))
        if (mechanism === 'unshare' && !isRoot) expect(wall.status.reason).toMatch(/needs root/)
        expect(resolveOsIsolation(wallInit('auto')).status.layer).not.toBe('none')
        return
      }
      expect(wall.status.layer).toBe(mechanism)
      const udpBefore = udpDatagrams
      const report = await check(wall)
      expectWalled(report, wall)
      // a datagram sent to 127.0.0.1 stays in the wall's own network namespace
      await sleep(300)
      expect(udpDatagrams).toBe(udpBefore)
    }, 60_000)
  }

  it('a walled sandbox runs JavaScript and Python calls (IPC through the wall) and reports its layer', async () => {
    const wall = resolveOsIsolation(wallInit('required'))
    expect(wall.status.layer).not.toBe('none')
    const sandbox = createSandbox({
      workers: 1, maxWarmIsolatesPerWorker: 4, maxLogBytes: 1000, queueLimit: 4,
      pythonWheelCache: join(dataDir, 'wheels'), osIsolation: wall,
    })
    try {
      await sandbox.start()
      expect(sandbox.stats().osIsolation).toEqual(wall.status)
      expect(await sandbox.execute(request())).toMatchObject({ status: 'success', result: 5 })
      const py = await sandbox.execute(request({
        key: 't/py/v1', tenant: 't', language: 'python', source: 'def add(a, b):\n    return a + b\n', args: [20, 22],
        limits: { timeoutMs: 30_000, memoryMb: 128, cpuMs: 30_000 },
      }))
      expect(py).toMatchObject({ status: 'success', result: 42 })
    } finally {
      await sandbox.stop()
    }
  }, 90_000)
})

