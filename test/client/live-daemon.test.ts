/**
 * Issue 8's scenario against a real daemon (started from dist/, native test mode): compute a RUFID
 * locally, create, compare, resolve, execute, read the execution, provoke 1001, 1002 and 1003, and
 * import the function through `svc://` in a separate Node process. Needs `npm run build`.
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  InvalidRufidError, PermissionDeniedError, RufidNotFoundError, SvcClient, SvcError, computeRufid,
} from '../../src/client/index.js'
import { openSubscription } from '../../src/client/subscriptions.js'
import { removeDir, startDaemonProcess, type DaemonProcess } from '../fixtures/daemon-process.js'

const ADMIN_KEY = 'svck_client-live-test_0123456789abcdefghijklmnop'
const DIST_CLIENT = fileURLToPath(new URL('../../dist/client/', import.meta.url))
const REGISTER = `${DIST_CLIENT}register.js`
const CLIENT_INDEX = new URL('../../dist/client/index.js', import.meta.url).href

const ADD = {
  function_name: 'add',
  signature: '(a, b)',
  language: 'javascript',
  source_code: '// adds two numbers\nfunction add(a, b) {\n  return a + b\n}\n',
}

let daemon: DaemonProcess
let admin: SvcClient

interface NodeRun {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs `node <args>` in a temporary directory (no package around it) and collects its output. */
function runNode(args: string[], env: Record<string, string | undefined>, timeoutMs = 20_000): Promise<NodeRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: tmpdir(),
      env: { ...process.env, SVC_URL: undefined, SVC_TOKEN: undefined, SVC_NAMESPACE: undefined, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`node ${args.join(' ')} did not finish within ${timeoutMs} ms\n${stdout}\n${stderr}`))
    }, timeoutMs)
    child.on('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

beforeAll(async () => {
  if (!existsSync(REGISTER)) throw new Error(`${REGISTER} is missing: run \`npm run build\` first`)
  daemon = await startDaemonProcess({
    env: { AUTH_PROVIDER: 'native', ENABLE_TEST_MODE: 'true', DEPLOYMENT_MODE: 'test', ADMIN_API_KEY: ADMIN_KEY },
  })
  admin = new SvcClient({ url: daemon.url, token: ADMIN_KEY, timeoutMs: 10_000 })
})

afterAll(async () => {
  await daemon?.stop()
  if (daemon) removeDir(daemon.dataDir)
})

describe('TypeScript client against a live daemon', () => {
  let short: string

  it('computes the RUFID locally, creates the function and gets the same RUFID back', async () => {
    const local = computeRufid(ADD)
    const created = await admin.create({ ...ADD, tags: ['math'] })
    short = created.rufid_short
    expect(created.rufid_short).toBe(local.rufid_short)
    expect(created.content_digest).toBe(local.content_digest)
    expect(created.rufid).toBe(`rufid:${local.rufid_short}:v1:default`)
    expect(created.created).toBe(true)
    expect(created.import_statement).toBe(`const add = (await import('svc://${local.rufid_short}')).default`)
    // the same content again: the same RUFID, nothing new
    expect(await admin.create(ADD)).toMatchObject({ rufid_short: local.rufid_short, created: false })
  })

  it('resolves, executes and reads the execution back', async () => {
    const resolved = await admin.resolve(short, 'v1')
    expect(resolved).toMatchObject({ rufid: `rufid:${short}:v1:default`, version: 'v1', accessible: true, function_name: 'add', signature: '(a, b)' })

    const run = await admin.execute<number>(short, { a: 2, b: 3 })
    expect(run).toMatchObject({ result: 5, status: 'success' })
    const record = await admin.getExecution(run.execution_id)
    expect(record).toMatchObject({ execution_id: run.execution_id, rufid: `rufid:${short}:v1:default`, status: 'success', result: 5 })
    expect((await admin.executionLogs(run.execution_id)).execution_id).toBe(run.execution_id)

    const add = admin.function<number>(short)
    expect(await add(2, 3)).toBe(5)
    expect(await add.named({ a: 20, b: 22 })).toBe(42)
  })

  it('runs an asynchronous execution and waits for it', async () => {
    const ref = await admin.executeAsync(short, { a: 2, b: 3 })
    expect(ref.execution_id).toMatch(/^ex_/)
    const record = await admin.waitExecution<number>(ref.execution_id, { timeoutMs: 10_000 })
    expect(record).toMatchObject({ status: 'success', result: 5 })
  })

  it('lists, searches and reads telemetry and metadata', async () => {
    expect((await admin.listFunctions({ search: 'add' })).items.map((f) => f.rufid)).toContain(short)
    const found = await admin.search('add', { language: 'javascript' })
    expect(found.items.map((f) => f.rufid)).toContain(short)
    expect(found.aggregations.language.javascript).toBeGreaterThanOrEqual(1)
    const telemetry = await admin.telemetry(short, '5m')
    expect(telemetry).toMatchObject({ rufid: short, window: '5m' })
    expect(telemetry.executions).toBeGreaterThanOrEqual(3)
    const meta = await admin.getFunction(short)
    expect(meta).toMatchObject({ rufid: short, function_name: 'add', tags: ['math'] })
    expect(meta.metrics?.usage_count).toBeGreaterThanOrEqual(3)
  })

  it('1001: the node refuses a malformed RUFID (sent past the client\'s own check)', async () => {
    const err = await admin.request('POST', '/api/v1/functions/resolve', { body: { rufid: 'bad-rufid!' } }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(InvalidRufidError)
    expect(err).toMatchObject({ code: 1001, name: 'INVALID_RUFID', httpStatus: 400 })
    // and the client refuses it before sending anything
    await expect(admin.resolve('bad-rufid!')).rejects.toMatchObject({ code: 1001, httpStatus: undefined })
  })

  it('1002: an unknown RUFID', async () => {
    const err = await admin.resolve('AAAAAAAAAAAA').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RufidNotFoundError)
    expect(err).toMatchObject({ code: 1002, name: 'RUFID_NOT_FOUND', httpStatus: 404, details: { rufid: 'AAAAAAAAAAAA' } })
    await expect(admin.function('AAAAAAAAAAAA')(1, 2)).rejects.toBeInstanceOf(RufidNotFoundError)
  })

  it('1003: a read-only key may resolve but not create (403); no token is 401', async () => {
    const minted = await admin.createApiKey({ name: 'read-only', scopes: ['functions:read'], expires_days: 1 })
    expect(minted.api_key).toBeTruthy()
    expect(minted.scopes).toEqual(['functions:read'])
    const reader = admin.with({ token: minted.api_key })
    expect((await reader.resolve(short)).rufid_short).toBe(short)
    const denied = await reader.create({ ...ADD, function_name: 'add2', source_code: 'function add2(a, b) { return a + b }' }).catch((e: unknown) => e)
    expect(denied).toBeInstanceOf(PermissionDeniedError)
    expect(denied).toMatchObject({ code: 1003, name: 'PERMISSION_DENIED', httpStatus: 403, unauthenticated: false })

    const anonymous = new SvcClient({ url: daemon.url, token: '', timeoutMs: 10_000 })
    const unauth = await anonymous.resolve(short).catch((e: unknown) => e)
    expect(unauth).toBeInstanceOf(PermissionDeniedError)
    expect(unauth).toMatchObject({ code: 1003, httpStatus: 401, unauthenticated: true })

    expect((await admin.listApiKeys()).map((k) => k.key_id)).toContain(minted.key_id)
    expect((await admin.revokeApiKey(minted.key_id)).key_id).toBe(minted.key_id)
    await expect(reader.resolve(short)).rejects.toMatchObject({ code: 1003, httpStatus: 401 })
  })

  it("svc:// import with `node --import …/register.js` (SVC_URL, SVC_TOKEN): add(2, 3) is 5", async () => {
    const script = `const add = (await import('svc://${short}')).default; console.log(await add(2, 3)); console.log(add.name, add.rufid)`
    const run = await runNode(['--import', REGISTER, '--input-type=module', '-e', script], { SVC_URL: daemon.url, SVC_TOKEN: ADMIN_KEY })
    expect(run.stderr).toBe('')
    expect(run.stdout.split('\n')).toEqual(['5', `add ${short}`, ''])
    expect(run.code).toBe(0)
  })

  it('svc:// import after registerSvcLoader({ url, token }) in the same process (register data, no environment)', async () => {
    const script = [
      `import { registerSvcLoader } from ${JSON.stringify(CLIENT_INDEX)}`,
      `registerSvcLoader({ url: ${JSON.stringify(daemon.url)}, token: ${JSON.stringify(ADMIN_KEY)} })`,
      `const add = (await import('svc://${short}')).default`,
      `const again = (await import('svc:${short}')).default`,
      'console.log(await add(2, 3), again === add)',
    ].join('\n')
    const run = await runNode(['--input-type=module', '-e', script], {})
    expect(run.stderr).toBe('')
    expect(run.stdout).toBe('5 true\n')
  })

  it('a static `import add from \'svc://…\'` works under `node --import …/register.js`', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-client-static-'))
    try {
      const file = join(dir, 'app.mjs')
      writeFileSync(file, `import add, { rufid, resolution } from 'svc://${short}'\nconsole.log(await add(2, 3), rufid, resolution.function_name)\n`)
      const run = await runNode(['--import', REGISTER, file], { SVC_URL: daemon.url, SVC_TOKEN: ADMIN_KEY })
      expect(run.stderr).toBe('')
      expect(run.stdout).toBe(`5 ${short} add\n`)
    } finally {
      removeDir(dir)
    }
  })

  it('an unknown svc:// import rejects with RUFID_NOT_FOUND naming the RUFID', async () => {
    const script = [
      "try { await import('svc://AAAAAAAAAAAA'); console.log('imported?!') }",
      'catch (e) { console.log(e.constructor.name, e.code, e.name); console.log(e.message) }',
    ].join('\n')
    const run = await runNode(['--import', REGISTER, '--input-type=module', '-e', script], { SVC_URL: daemon.url, SVC_TOKEN: ADMIN_KEY })
    const [kind, message] = run.stdout.split('\n')
    expect(kind).toBe('RufidNotFoundError 1002 RUFID_NOT_FOUND')
    expect(message).toContain('AAAAAAAAAAAA')
    expect(message).toContain(daemon.url)
    expect(run.code).toBe(0)
  })

  it('a malformed svc:// import rejects with INVALID_RUFID naming it, and no token is 401', async () => {
    const run = await runNode(['--import', REGISTER, '--input-type=module', '-e', "await import('svc://not-a-rufid')"], { SVC_URL: daemon.url, SVC_TOKEN: ADMIN_KEY })
    expect(run.code).not.toBe(0)
    expect(run.stderr).toContain('INVALID_RUFID')
    expect(run.stderr).toContain('"not-a-rufid" is not a RUFID')

    const script = `try { await import('svc://${short}') } catch (e) { console.log(e.code, e.httpStatus, e.unauthenticated) }`
    const anon = await runNode(['--import', REGISTER, '--input-type=module', '-e', script], { SVC_URL: daemon.url })
    expect(anon.stdout).toBe('1003 401 true\n')
  })

  it('the README example (src/client/README.md) runs as written and prints what its comments say', async () => {
    const readme = readFileSync(new URL('../../src/client/README.md', import.meta.url), 'utf8')
    const example = /```js\n(import [\s\S]*?)```/.exec(readme)?.[1]
    expect(example).toBeDefined()
    const program = example!
      .replaceAll("'svc-node/client'", JSON.stringify(CLIENT_INDEX))
      .replaceAll("'http://127.0.0.1:8080'", JSON.stringify(daemon.url))
      .replaceAll("'svck_...'", JSON.stringify(ADMIN_KEY))
    const stated = example!.split('\n').filter((l) => l.startsWith('console.log(') || l.startsWith('  console.log('))
      .map((l) => l.split(' // ')[1]!.trim())
    expect(stated).toHaveLength(8)
    const dir = mkdtempSync(join(tmpdir(), 'svc-client-readme-'))
    try {
      const file = join(dir, 'app.mjs')
      writeFileSync(file, program)
      const run = await runNode([file], {})
      expect(run.stderr).toBe('')
      expect(run.stdout.trimEnd().split('\n')).toEqual(stated)
    } finally {
      removeDir(dir)
    }
  })

  it('subscribeExecutions over /ws delivers the executions of that RUFID only', async () => {
    const other = await admin.create({ function_name: 'mul', signature: '(a, b)', language: 'javascript', source_code: 'function mul(a, b) { return a * b }' })
    const sub = await admin.subscribeExecutions(short)
    const all = await admin.subscribeExecutions()
    try {
      await admin.execute(other.rufid_short, [2, 3]) // another function: not on `sub`
      const run = await admin.execute(short, [2, 3])
      const event = await sub.nextEvent(10_000)
      expect(event).toMatchObject({
        execution_id: run.execution_id, rufid_short: short, rufid: `rufid:${short}:v1:default`, version: 'v1',
        tenant_id: 'default', function_name: 'add', status: 'success', error_code: null,
      })
      const seen = [(await all.nextEvent(10_000)).rufid_short, (await all.nextEvent(10_000)).rufid_short]
      expect(seen).toEqual([other.rufid_short, short])
    } finally {
      await sub.close()
      await all.close()
    }
    // events through `for await`, and a failed run's event carries its code
    const failing = await admin.create({ function_name: 'boom', signature: '()', language: 'javascript', source_code: 'function boom() { throw new Error("no") }' })
    const sub2 = await admin.subscribeExecutions(failing.rufid_short)
    await expect(admin.function(failing.rufid_short)()).rejects.toMatchObject({ code: 1007 })
    for await (const ev of sub2) {
      expect(ev).toMatchObject({ rufid_short: failing.rufid_short, status: 'error', error_code: 1007 })
      break
    }
    expect(sub2.done).toBe(true)
  })

  it('subscribeExecutions without credentials is refused with 401 (1003)', async () => {
    const err = await new SvcClient({ url: daemon.url, token: '', timeoutMs: 10_000 }).subscribeExecutions().catch((e: unknown) => e)
    expect(err).toBeInstanceOf(PermissionDeniedError)
    expect(err).toMatchObject({ code: 1003, httpStatus: 401, unauthenticated: true })
  })

  it('subscribeExecutions: a malformed RUFID is refused (by the client, and by the node with an error frame)', async () => {
    await expect(admin.subscribeExecutions('nope')).rejects.toBeInstanceOf(InvalidRufidError)
    // past the client's check: the node answers the subscribe with an error frame, 1001
    const init = { url: `${daemon.url.replace(/^http/, 'ws')}/ws`, headers: { authorization: `Bearer ${ADMIN_KEY}` }, timeoutMs: 10_000 }
    const err = await openSubscription(init, { channel: 'executions', rufid: 'nope' }, {}).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(InvalidRufidError)
    expect(err).toMatchObject({ code: 1001, name: 'INVALID_RUFID' })
    // a RUFID not created yet is a valid filter: the node accepts it
    const later = await admin.subscribeExecutions('AAAAAAAAAAAA')
    await later.close()
  })

  it('typed errors keep their class and fields through the public surface', () => {
    const e = new RufidNotFoundError({ message: 'x', httpStatus: 404 })
    expect(e).toBeInstanceOf(SvcError)
    expect(e.code).toBe(1002)
  })
})
