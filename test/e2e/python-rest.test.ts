// Python functions through real HTTP against a real `svc-node start` process (run `npm run build` first).
import { existsSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { call, removeDir, startDaemonProcess, type DaemonProcess } from '../fixtures/daemon-process.js'

interface ErrorBody {
  error: { code: number; name: string; message: string; details: Record<string, unknown> }
}

const addPy = {
  function_name: 'add',
  signature: '(a, b)',
  language: 'python',
  source_code: 'def add(a, b):\n    return a + b\n',
}

function pyFunction(name: string, body: string, limits?: Record<string, number>): Record<string, unknown> {
  const indented = body.split('\n').map((line) => `    ${line}`).join('\n')
  return { function_name: name, signature: '()', language: 'python', source_code: `def ${name}():\n${indented}\n`, ...(limits ? { limits } : {}) }
}

describe('Python functions over REST (one daemon process)', () => {
  let d: DaemonProcess
  let server: Server
  let connections = 0
  let port = 0
  const marker = join(tmpdir(), `svc-python-e2e-${process.pid}`)
  const api = (path: string): string => `${d.url}${path}`
  const create = async (def: object): Promise<string> => {
    const res = await call(api('/api/v1/functions/create'), 'POST', def)
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(300)
    return res.body.rufid_short as string
  }
  const execute = (rufid: string, args: unknown) => call(api(`/api/v1/functions/${rufid}/execute`), 'POST', { arguments: args })
  const daemonPid = async (): Promise<number> => (await call<{ pid: number }>(api('/healthz'), 'GET')).body.pid
  let add = ''

  beforeAll(async () => {
    server = createServer((socket) => {
      connections++
      socket.destroy()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as { port: number }).port
    d = await startDaemonProcess({ env: { AUTH_PROVIDER: 'none' } })
    add = await create(addPy)
  })

  afterAll(async () => {
    await d?.stop()
    if (d) removeDir(d.dataDir)
    server?.close()
    rmSync(marker, { force: true })
  })

  it('publishes def add(a, b) and executes it with {"a": 2, "b": 3} → 5, first call and warm', async () => {
    const first = await execute(add, { a: 2, b: 3 })
    expect(first.status, JSON.stringify(first.body)).toBe(200)
    expect(first.body).toMatchObject({ result: 5, status: 'success' })
    const warm = await execute(add, { a: 2, b: 3 })
    expect(warm.body).toMatchObject({ result: 5, status: 'success' })
    expect(warm.body.execution_time_ms).toBeTypeOf('number')
    const record = await call(api(`/v1/executions/${warm.body.execution_id as string}`), 'GET')
    expect(record.body).toMatchObject({ status: 'success', result: 5 })
  }, 60_000)

  it('records print() output in the execution logs', async () => {
    const rufid = await create(pyFunction('shout', 'print("hello from python")\nreturn "ok"'))
    const run = await execute(rufid, {})
    expect(run.body.result).toBe('ok')
    const logs = await call<{ logs: Array<{ message: string }> }>(api(`/v1/executions/${run.body.execution_id as string}/logs`), 'GET')
    expect(logs.body.logs.map((l) => l.message)).toContain('hello from python')
  })

  it('stops an infinite loop with 408 / 1004; the next call succeeds', async () => {
    const rufid = await create(pyFunction('spin', 'while True:\n    pass', { timeout_ms: 1000 }))
    const started = performance.now()
    const run = await execute(rufid, {})
    const elapsed = performance.now() - started
    expect(run.status).toBe(408)
    expect((run.body as unknown as ErrorBody).error).toMatchObject({ code: 1004, name: 'EXECUTION_TIMEOUT' })
    expect(elapsed).toBeLessThan(1000 + 250)
    const next = await execute(add, { a: 1, b: 1 })
    expect(next.body).toMatchObject({ result: 2, status: 'success' })
  })

  it('ends a memory bomb with 422 / 1007; the daemon keeps its pid', async () => {
    const pid = await daemonPid()
    const rufid = await create(pyFunction('hog', 'hoard = []\nwhile True:\n    hoard.append(" " * 1_000_000)', { memory_mb: 32, timeout_ms: 20_000 }))
    const run = await execute(rufid, {})
    expect(run.status).toBe(422)
    expect((run.body as unknown as ErrorBody).error.code).toBe(1007)
    const next = await execute(add, { a: 2, b: 2 })
    expect(next.body.result).toBe(4)
    expect(await daemonPid()).toBe(pid)
  }, 60_000)

  it('does not reach the host: files, network, processes', async () => {
    const probes = [
      pyFunction('readPasswd', "try:\n    return open('/etc/passwd').read()\nexcept OSError as e:\n    return 'refused ' + type(e).__name__"),
      pyFunction('connect', `import socket\ntry:\n    socket.create_connection(('127.0.0.1', ${port}), timeout=1)\n    return 'connected'\nexcept OSError as e:\n    return 'refused ' + type(e).__name__`),
      pyFunction('shell', `import os\ntry:\n    return os.system('touch ${marker}')\nexcept OSError as e:\n    return 'refused ' + type(e).__name__`),
      pyFunction('jsProcess', "try:\n    import js\n    return str(js.process)\nexcept ImportError as e:\n    return 'refused ' + type(e).__name__"),
    ]
    const results: unknown[] = []
    for (const probe of probes) {
      const run = await execute(await create(probe), {})
      expect(run.status, JSON.stringify(run.body)).toBe(200)
      results.push(run.body.result)
    }
    expect(results).toEqual(['refused FileNotFoundError', 'refused PermissionError', 'refused PermissionError', 'refused ImportError'])
    expect(connections).toBe(0)
    expect(existsSync(marker)).toBe(false)
  })

  it('reports unknown arguments as 1006 and an exception as 1007', async () => {
    const unknown = await execute(add, { a: 1, c: 2 })
    expect((unknown.body as unknown as ErrorBody).error.code).toBe(1006)
    expect((unknown.body as unknown as ErrorBody).error.message).toContain("'c'")
    const boom = await execute(await create(pyFunction('boom', 'raise ValueError("kaboom")')), {})
    expect(boom.status).toBe(422)
    expect((boom.body as unknown as ErrorBody).error).toMatchObject({ code: 1007 })
    expect((boom.body as unknown as ErrorBody).error.message).toMatch(/kaboom/)
  })
})
