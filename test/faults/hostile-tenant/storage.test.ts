// Hostile tenant, storage (issue 27 item 5), against real daemon processes: tenant A (acme) floods
// the node with large results and records until its quota refuses it, while tenant B (globex)
// creates and executes as usual; an 8 MB result is refused and not stored; and a node whose data
// directory is full stops within its shutdown grace on SIGTERM, says what it could not write and
// exits with code 9 (it used to run on until a supervisor SIGKILLed it).
import { randomBytes } from 'node:crypto'
import { closeSync, openSync, statfsSync, writeFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { removeDir, tempDataDir } from '../../fixtures/daemon-process.js'
import { recordFault } from '../fault-record.js'
import { canMount, mountTmpfs, unmount } from '../fault-fixtures.js'
import { startTwoTenantNode, TENANT_A, TENANT_B, type TwoTenantNode } from './two-tenants.js'

const MiB = 2 ** 20
const QUOTA_MB = 4
const GRACE_MS = 3000
/** how long past the grace a stop may end (process exit, a loaded machine) */
const EXIT_MARGIN_MS = 1500

/**
 * A function returning a string of `n` characters (its result's JSON is n + 2 bytes). Two
 * parameters: `/v1` executions give a one-parameter function the whole input object.
 */
const sized = (name: string) => ({
  function_name: name, signature: '(n, fill)', language: 'javascript',
  source_code: `function ${name}(n, fill) {\n  return (fill ?? 'x').repeat(n)\n}\n`,
})

interface Whoami { storage: { account: string; used_bytes: number; quota_bytes: number | null; execution_records: number } }
interface ErrorBody { error: { code: number; details: Record<string, unknown> } }

const root = tempDataDir()
const nodes: TwoTenantNode[] = []
afterEach(async () => {
  for (const n of nodes.splice(0)) await n.stop()
})
afterAll(() => removeDir(root))

/** A node config file (YAML) in the test's directory. */
function configFile(name: string, yaml: string): string {
  const path = join(root, `${name}.yaml`)
  writeFileSync(path, yaml)
  return path
}

/** `svc_tenant_storage_bytes` of a tenant in /metrics, or undefined. */
async function meteredBytes(url: string, tenant: string): Promise<number | undefined> {
  const text = await (await fetch(`${url}/metrics`)).text()
  const line = text.split('\n').find((l) => l.startsWith(`svc_tenant_storage_bytes{tenant="${tenant}"}`))
  return line === undefined ? undefined : Number(line.split(' ').at(-1))
}

describe('hostile tenant: storage (real daemon processes)', () => {
  it('A floods large results until its quota refuses it; B creates and executes throughout with no error', async () => {
    const rec = recordFault('isolation.storage-quota', {
      fault: `tenant A executes a function returning 200 KB results in a loop (its records would grow without bound) on a node with storage.tenant_quota_mb ${QUOTA_MB}; tenant B creates functions and executes its own meanwhile`,
      expectation: 'A refused with 429 / 1005 details.reason tenant_quota once its records reach the quota, its usage within the quota (+ a few small refusal records); B: every create and execute succeeds; usage in GET /api/v1/auth/whoami and svc_tenant_storage_bytes',
    })
    const node = await startTwoTenantNode({ env: { SVC_CONFIG: configFile('quota', `storage:\n  tenant_quota_mb: ${QUOTA_MB}\n`) } })
    nodes.push(node)
    const fa = await node.create('A', sized('flood'))
    const fb = await node.create('B', sized('steady'))
    let aOk = 0
    let aRefused = 0
    let firstRefusal: ErrorBody | undefined
    let retryAfter: string | null = null
    let bOk = 0
    const bErrors: string[] = []
    let bCreates = 0
    // A's flood and B's work interleave; A keeps trying past its first refusal (bounded)
    for (let i = 0; i < 120 && aRefused < 20; i++) {
      const a = await node.asA('POST', `/api/v1/functions/${fa}/execute`, { arguments: { n: 200_000 } })
      if (a.status === 200) aOk++
      else {
        expect(a.status, JSON.stringify(a.body)).toBe(429)
        const body = a.body as unknown as ErrorBody
        expect(body.error.code).toBe(1005)
        expect(body.error.details.reason).toBe('tenant_quota')
        aRefused++
        firstRefusal ??= body
        retryAfter ??= a.headers.get('retry-after')
      }
      const b = await node.asB('POST', `/api/v1/functions/${fb}/execute`, { arguments: { n: 2_000 } })
      if (b.status === 200) bOk++
      else bErrors.push(`execute ${b.status} ${JSON.stringify(b.body)}`)
      if (i % 10 === 0) {
        const c = await node.asB('POST', '/api/v1/functions/create', sized(`steady${i}`))
        if (c.status === 201) bCreates++
        else bErrors.push(`create ${c.status} ${JSON.stringify(c.body)}`)
      }
    }
    expect(aRefused).toBeGreaterThan(0)
    expect(firstRefusal!.error.details).toMatchObject({ tenant: TENANT_A, quota_bytes: QUOTA_MB * MiB })
    expect(retryAfter).toMatch(/^\d+$/)
    expect(bErrors).toEqual([])
    // a child namespace of A is A's account: its large records are refused too (a small create may still fit)
    const inChild = { 'x-svc-namespace': `${TENANT_A}.team1` }
    const created = await node.asA('POST', '/api/v1/functions/create', sized('inChild'), inChild)
    expect([201, 429]).toContain(created.status)
    if (created.status === 201) {
      const child = await node.asA('POST', `/api/v1/functions/${(created.body as { rufid_short: string }).rufid_short}/execute`, { arguments: { n: 200_000 } }, inChild)
      expect(child.status).toBe(429)
      expect((child.body as unknown as ErrorBody).error.details).toMatchObject({ reason: 'tenant_quota', tenant: TENANT_A })
    }
    const usageA = (await node.asA<Whoami>('GET', '/api/v1/auth/whoami')).body.storage
    const usageB = (await node.asB<Whoami>('GET', '/api/v1/auth/whoami')).body.storage
    expect(usageA).toMatchObject({ account: TENANT_A, quota_bytes: QUOTA_MB * MiB })
    expect(usageA.used_bytes).toBeLessThanOrEqual(QUOTA_MB * MiB + 32 * 1024)
    expect(usageA.used_bytes).toBeGreaterThan(QUOTA_MB * MiB - 250_000)
    expect(usageB.account).toBe(TENANT_B)
    expect(await meteredBytes(node.url, TENANT_A)).toBe(usageA.used_bytes)
    expect(await meteredBytes(node.url, TENANT_B)).toBe(usageB.used_bytes)
    rec.figures({
      quota_bytes: QUOTA_MB * MiB, a_used_bytes: usageA.used_bytes, a_records: usageA.execution_records, a_executes_ok: aOk, a_refusals: aRefused,
      b_used_bytes: usageB.used_bytes, b_executes_ok: bOk, b_creates_ok: bCreates, b_errors: bErrors.length,
    })
    rec.summary(`A: ${aOk} executes of 200 KB stored, then refused ${aRefused}× (1005 tenant_quota) at ${usageA.used_bytes} of ${QUOTA_MB * MiB} bytes; B: ${bOk} executes and ${bCreates} creates, 0 errors`)
  }, 180_000)

  it('an 8 MB result is refused (1007 result_size) and nothing of it is stored', async () => {
    const rec = recordFault('isolation.result-size', {
      fault: 'tenant A executes a function that returns an 8 MB string, synchronously and through POST /v1/functions/{rufid}/executions (async), on a default node (execution.max_result_bytes 1 MiB)',
      expectation: '422 / 1007 details.limit result_size with the size and the limit; the record holds the error and no result; A\'s stored usage grows by less than 10 KB per call',
    })
    const node = await startTwoTenantNode()
    nodes.push(node)
    const fa = await node.create('A', sized('huge'))
    const before = (await node.asA<Whoami>('GET', '/api/v1/auth/whoami')).body.storage.used_bytes
    const started = Date.now()
    const r = await node.asA('POST', `/api/v1/functions/${fa}/execute`, { arguments: { n: 8_000_000 } })
    const ms = Date.now() - started
    expect(r.status, JSON.stringify(r.body)).toBe(422)
    const error = (r.body as unknown as ErrorBody).error
    expect(error.code).toBe(1007)
    expect(error.details).toMatchObject({ limit: 'result_size', resultBytes: 8_000_002, maxResultBytes: MiB })
    const id = error.details.execution_id as string
    const record = await node.asA<Record<string, unknown>>('GET', `/v1/executions/${id}`)
    expect(record.status).toBe(200)
    expect(record.body).toMatchObject({ status: 'error', error: { code: 1007 } })
    expect(record.body.result ?? null).toBeNull()
    // the asynchronous path behaves the same
    const submitted = await node.asA<{ execution_id: string }>('POST', `/v1/functions/${fa}/executions`, { n: 8_000_000 })
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(202)
    let asyncRecord: Record<string, unknown> | undefined
    for (let i = 0; i < 100; i++) {
      const read = await node.asA<Record<string, unknown>>('GET', `/v1/executions/${submitted.body.execution_id}`)
      if (read.body.status === 'error' || read.body.status === 'success') {
        asyncRecord = read.body
        break
      }
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(asyncRecord).toMatchObject({ status: 'error', error: { code: 1007, details: { limit: 'result_size' } } })
    expect(asyncRecord!.result ?? null).toBeNull()
    const after = (await node.asA<Whoami>('GET', '/api/v1/auth/whoami')).body.storage.used_bytes
    expect(after - before).toBeLessThan(2 * 10_000)
    rec.figures({ result_bytes: 8_000_002, max_result_bytes: MiB, stored_bytes_for_two_calls: after - before, refused_in_ms: ms })
    rec.summary(`8,000,002-byte result refused in ${ms} ms (1007 result_size), sync and async; ${after - before} bytes stored for both records`)
  }, 120_000)

  const mounted = canMount(join(root, 'probe'))
  const mounts: string[] = []
  afterEach(() => {
    for (const m of mounts.splice(0)) unmount(m)
  })

  it.skipIf(!mounted)('a node whose data directory is full stops within its grace on SIGTERM, names what it lost, and exits with 9', async () => {
    const rec = recordFault('isolation.full-disk-shutdown', {
      fault: `data directory on a 24 MiB tmpfs (no free-space threshold) filled by a ballast file, then tenant A's executes until LevelDB fails; SIGTERM with server.shutdown_grace_ms ${GRACE_MS}`,
      expectation: `the process exits within the grace + ${EXIT_MARGIN_MS} ms with code 9 (stop_incomplete), its log naming how many execution records, audit entries and statistics it could not write; before the fix it ran on (30 s and more)`,
    })
    const mount = join(root, 'full')
    mountTmpfs(mount, 24 * MiB)
    mounts.push(mount)
    const config = configFile('full', `storage:\n  min_free_mb: 0\n  check_interval_ms: 200\nserver:\n  shutdown_grace_ms: ${GRACE_MS}\n`)
    const node = await startTwoTenantNode({ dataDir: join(mount, 'data'), env: { SVC_CONFIG: config } })
    nodes.push(node)
    const fa = await node.create('A', sized('filler'))
    const fb = await node.create('B', sized('bystander'))
    // the disk fills (all but a little), then A's records fill the rest until a write fails
    const fd = openSync(join(mount, 'ballast'), 'w')
    const chunk = randomBytes(64 << 10)
    try {
      for (let i = 0; i < 1000; i++) {
        const st = statfsSync(mount)
        if (st.bavail * st.bsize <= 2 * MiB) break
        writeSync(fd, chunk)
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err
    } finally {
      closeSync(fd)
    }
    let full = false
    for (let i = 0; i < 200 && !full; i++) {
      const r = await node.asA('POST', `/api/v1/functions/${fa}/execute`, { arguments: { n: 200_000 } })
      full = r.status === 503 && (r.body as unknown as ErrorBody).error.details.reason === 'disk_full'
    }
    expect(full).toBe(true)
    // B's call now: refused (the node cannot write for anyone), and its audit entry waits in memory
    await node.asB('POST', `/api/v1/functions/${fb}/execute`, { arguments: { n: 10 } })
    const sent = Date.now()
    node.daemon.proc.kill('SIGTERM')
    const exit = await Promise.race([
      node.daemon.exited,
      new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), GRACE_MS + 20_000)),
    ])
    const ms = Date.now() - sent
    expect(exit).not.toBe('running')
    const { code } = exit as { code: number | null }
    const log = node.daemon.output()
    const lost = /stop incomplete: (\d+) execution records, (\d+) audit entries and (\d+) usage statistics could not be written within the shutdown grace/.exec(log)
    rec.figures({ grace_ms: GRACE_MS, exit_ms: ms, exit_code: code, lost_records: lost ? Number(lost[1]) : null, lost_audit_entries: lost ? Number(lost[2]) : null, lost_statistics: lost ? Number(lost[3]) : null })
    expect(code).toBe(9)
    expect(ms).toBeLessThanOrEqual(GRACE_MS + EXIT_MARGIN_MS)
    expect(lost, log.slice(-3000)).not.toBeNull()
    expect(Number(lost![2])).toBeGreaterThan(0)
    expect(log).not.toMatch(/the stop did not end within the shutdown grace/)
    rec.summary(`SIGTERM on a full disk: exited in ${ms} ms (grace ${GRACE_MS}) with code ${code}; lost ${lost![1]} execution records, ${lost![2]} audit entries, ${lost![3]} statistics, as logged`)
  }, 180_000)
})
