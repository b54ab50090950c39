// Clients generated from the live /openapi.json by generators nobody here wrote compile and work:
// openapi-python-client (Python), oapi-codegen (Go) and openapi-typescript with openapi-fetch
// (TypeScript), each pinned and installed by scripts/setup.sh or package.json. For each one the
// test generates the client into a fresh temporary directory (nothing is cached between runs),
// compiles it, and runs a small driver (test/contract/generated/<language>/) that creates a
// function, resolves it, executes it, reads a typed Error and fetches the backup archive against a
// real daemon; the driver prints what it got as one JSON line, asserted here. datamodel-code-generator
// must find the named models without any flag. A generator or compiler that fails shows its output.
import { spawnSync, type SpawnSyncReturns } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { removeDir, startDaemonProcess, type DaemonProcess } from '../fixtures/daemon-process.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const DRIVERS = join(ROOT, 'test/contract/generated')
/** oapi-codegen, built by scripts/setup.sh (scripts/ensure-oapi-codegen.sh) into .tools/bin */
const OAPI_CODEGEN = join(ROOT, '.tools/bin/oapi-codegen')
const ADMIN = 'svck_generatedAdmin1_generatedSecretgeneratedSecretgeneratedSe'
/** Bound of one generator, compiler or driver run. */
const STEP_MS = 180_000

/** Runs a command to its end (bounded); fails the test with everything it printed unless it exits 0. */
function run(what: string, command: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): string {
  const r: SpawnSyncReturns<string> = spawnSync(command, args, {
    cwd: options.cwd ?? ROOT, encoding: 'utf8', timeout: STEP_MS, maxBuffer: 64 << 20,
    env: { ...process.env, ...options.env },
  })
  const output = `${r.stdout ?? ''}${r.stderr ?? ''}`
  if (r.error || r.status !== 0) {
    throw new Error(`${what} failed (${r.error?.message ?? `exit ${r.status ?? r.signal}`}): ${command} ${args.join(' ')}\n${output.slice(-8000)}`)
  }
  return r.stdout
}

/** What every driver prints: the answers it got, as the generated client typed them. */
interface DriverReport {
  created: { status: number; rufid: string }
  resolved: { rufid_short: string; function_name: string; language: string }
  executed: { result: unknown; status: string; rufid_short: string }
  missing: { code: number; name: string }
  backup_magic: number[]
}

/** The driver's last output line, checked: the function it created resolves and runs (2 + 3). */
function expectWorked(stdout: string): void {
  const line = stdout.trim().split('\n').at(-1) ?? ''
  let report: DriverReport
  try {
    report = JSON.parse(line) as DriverReport
  } catch {
    throw new Error(`the driver printed no report:\n${stdout.slice(-4000)}`)
  }
  expect([200, 201]).toContain(report.created.status)
  const short = /^rufid:([A-Za-z0-9]{12}):v1:[^:]+$/.exec(report.created.rufid)?.[1]
  expect(short, `created ${report.created.rufid}`).toBeDefined()
  expect(report.resolved).toEqual({ rufid_short: short, function_name: 'add', language: 'javascript' })
  expect(report.executed).toEqual({ result: 5, status: 'success', rufid_short: short })
  expect(report.missing).toEqual({ code: 1002, name: 'RUFID_NOT_FOUND' })
  expect(report.backup_magic, 'the backup is a gzip archive').toEqual([0x1f, 0x8b])
}

describe('clients generated from /openapi.json compile and work against a live daemon', () => {
  let d: DaemonProcess
  let work: string
  let spec: string

  beforeAll(async () => {
    d = await startDaemonProcess({
      env: { AUTH_PROVIDER: 'native', ENABLE_TEST_MODE: 'true', DEPLOYMENT_MODE: 'test', ADMIN_API_KEY: ADMIN, SVC_SANDBOX_WORKERS: '1' },
    })
    work = mkdtempSync(join(tmpdir(), 'svc-generated-clients-'))
    spec = join(work, 'openapi.json')
    const res = await fetch(`${d.url}/openapi.json`)
    expect(res.status).toBe(200)
    writeFileSync(spec, await res.text())
  })
  afterAll(async () => {
    await d?.stop()
    if (d) removeDir(d.dataDir)
    if (work) removeDir(work)
  })

  it('openapi-python-client 0.29: the package imports, and creates, resolves and executes', () => {
    const out = join(work, 'python')
    mkdirSync(out)
    run('openapi-python-client', 'python3', ['-m', 'openapi_python_client', 'generate', '--path', spec, '--output-path', join(out, 'svc_generated'), '--meta', 'none'])
    // every generated module compiles, then the driver imports the package and calls the daemon
    run('python3 -m compileall', 'python3', ['-m', 'compileall', '-q', out])
    expectWorked(run('the Python driver', 'python3', [join(DRIVERS, 'python/drive.py'), d.url, ADMIN], { env: { PYTHONPATH: out } }))
  }, 2 * STEP_MS)

  it('oapi-codegen 2.8: the Go client builds, and creates, resolves and executes', () => {
    expect(existsSync(OAPI_CODEGEN), `oapi-codegen not found at ${OAPI_CODEGEN}: run scripts/setup.sh (needs Go)`).toBe(true)
    const out = join(work, 'go')
    // the driver module (go.mod pins the runtime the generated code imports; setup.sh downloads it)
    cpSync(join(DRIVERS, 'go'), out, { recursive: true })
    writeFileSync(join(out, 'oapi-codegen.yaml'), 'package: svcclient\noutput: svcclient/client.gen.go\ngenerate:\n  models: true\n  client: true\n')
    run('oapi-codegen', OAPI_CODEGEN, ['-config', 'oapi-codegen.yaml', spec], { cwd: out })
    run('go build', 'go', ['build', '-o', 'drive', '.'], { cwd: out, env: { GOFLAGS: '-mod=mod' } })
    expectWorked(run('the Go driver', join(out, 'drive'), [d.url, ADMIN], { cwd: out }))
  }, 3 * STEP_MS)

  it('openapi-typescript 7.13 with openapi-fetch: tsc --noEmit passes, and creates, resolves and executes', () => {
    const out = join(work, 'typescript')
    cpSync(join(DRIVERS, 'typescript'), out, { recursive: true })
    // the repository's node_modules (openapi-fetch, @types/node), where the driver's imports resolve
    symlinkSync(join(ROOT, 'node_modules'), join(out, 'node_modules'), 'dir')
    writeFileSync(join(out, 'package.json'), '{ "type": "module", "private": true }\n')
    writeFileSync(join(out, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, types: ['node'] },
      files: ['drive.ts', 'schema.d.ts'],
    }))
    run('openapi-typescript', process.execPath, [join(ROOT, 'node_modules/openapi-typescript/bin/cli.js'), spec, '-o', join(out, 'schema.d.ts')])
    expect(readFileSync(join(out, 'schema.d.ts'), 'utf8')).toContain('ExecutionRecord:')
    run('tsc --noEmit', process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(out, 'tsconfig.json')])
    expectWorked(run('the TypeScript driver', process.execPath, [join(ROOT, 'node_modules/tsx/dist/cli.mjs'), join(out, 'drive.ts'), d.url, ADMIN], { cwd: out }))
  }, 3 * STEP_MS)

  it('datamodel-code-generator 0.89 finds the named models without any flag', () => {
    const out = join(work, 'models.py')
    run('datamodel-codegen', 'python3', ['-m', 'datamodel_code_generator', '--input', spec, '--output', out])
    const classes = new Set([...readFileSync(out, 'utf8').matchAll(/^class (\w+)\(/gm)].map((m) => m[1]))
    for (const name of ['Error', 'Function', 'FunctionList', 'Pagination', 'ExecutionRecord', 'Receipt', 'ApiKey', 'AuditEntry', 'Resolution', 'CreateResult']) {
      expect(classes, `model ${name}`).toContain(name)
    }
  }, STEP_MS)
})
