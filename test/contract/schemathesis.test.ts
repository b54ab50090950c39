// schemathesis (pinned in scripts/setup.sh) against a real daemon (issue 28): the node's own
// /openapi.json, every check on, every phase (examples, coverage, fuzzing, stateful links), a
// bounded number of examples per operation and a fixed seed, so a run is reproducible and takes a
// minute or two. 0 failures. What is left out is listed below, each with its reason; nothing in
// the run names a schema, so it holds whatever the document's components are called.
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { removeDir, startDaemonProcess, tempDataDir, type DaemonProcess } from '../fixtures/daemon-process.js'

/** The version scripts/setup.sh installs. */
const SCHEMATHESIS_VERSION = '4.32.5'
/** test cases per operation and phase (schemathesis's --max-examples) */
const MAX_EXAMPLES = Number(process.env.SCHEMATHESIS_MAX_EXAMPLES ?? 10)
const SEED = Number(process.env.SCHEMATHESIS_SEED ?? 28)
/** the whole run's bound: schemathesis is killed after this (the test then fails) */
const RUN_TIMEOUT_MS = 8 * 60_000

/** Operations not run at all. */
const EXCLUDED_OPERATIONS: Array<{ method: string; path: string; reason: string }> = [
  {
    method: 'GET', path: '/ws',
    reason: 'a WebSocket upgrade, not an HTTP exchange: asked without an upgrade it answers 426 (test/api/http-semantics.test.ts); '
      + 'its frames are tested in test/api/ws/',
  },
]

/**
 * Checks turned off for some operations: every one a rule the node checks that a JSON Schema
 * cannot state (or does not yet), so a value the document allows is refused with 1001/1006.
 */
const EXCLUDED_CHECKS: Array<{ check: string; method: string; path: string; reason: string }> = [
  ...(['GET', 'POST'] as const).map((method) => ({
    check: 'positive_data_acceptance', method, path: '/graphql',
    reason: 'a GraphQL document has a grammar of its own: a non-blank string the schema allows may not parse (400 with a GraphQL error)',
  })),
  ...([['GET', '/api/v1/functions/{rufid}'], ['DELETE', '/api/v1/functions/{rufid}'], ['GET', '/api/v1/functions/{rufid}/export'],
    ['GET', '/api/v1/functions/{rufid}/source'], ['GET', '/v1/telemetry/functions/{rufid}/series']] as const).map(([method, path]) => ({
    check: 'positive_data_acceptance', method, path,
    reason: 'a full RUFID in the path names its version: a different ?version= contradicts it (1001), a rule between two parameters',
  })),
  ...([['POST', '/api/v1/functions/create'], ['POST', '/api/v1/functions/deploy'], ['POST', '/v1/functions'],
    ['POST', '/v1/functions/{rufid}/executions'], ['POST', '/api/v1/functions/branches/{branch}/invoke']] as const).map(([method, path]) => ({
    check: 'positive_data_acceptance', method, path,
    reason: 'names and tags are Unicode letters (\\p{L}), which the portable patterns widen to any non-ASCII character '
      + '(src/api/rest/portable-pattern.ts); manifest_text/lockfile_text need their manifest/lockfile and must be their JSON text, '
      + 'rules between fields; /v1 executions bind the body to the function\'s parameters (decisions.md), which the document cannot know',
  })),
  {
    check: 'positive_data_acceptance', method: 'POST', path: '/api/v1/functions/resolve',
    reason: 'a full RUFID names its version: a different version field contradicts it (1001), a rule between two fields',
  },
  {
    check: 'positive_data_acceptance', method: 'GET', path: '/api/v1/functions/branches',
    reason: 'function_name is an identifier of Unicode letters and digits (\\p{L}), which the portable pattern widens to any non-ASCII character '
      + '(src/api/rest/portable-pattern.ts): an unassigned code point passes the document and is refused (1006)',
  },
  {
    check: 'positive_data_acceptance', method: 'POST', path: '/api/v1/auth/v2/api-keys',
    reason: 'a key name is Unicode letters (\\p{L}), which the portable pattern widens to any non-ASCII character (src/api/rest/portable-pattern.ts)',
  },
  {
    check: 'positive_data_acceptance', method: 'POST', path: '/api/v1/functions/signature',
    reason: 'a signature is derived only for the languages with a derivation; for another language it must be given (a rule between fields)',
  },
  ...(['/api/v1/functions/{rufid}/execute', '/api/v1/execution/execute'] as const).map((path) => ({
    check: 'positive_data_acceptance', method: 'POST', path,
    reason: 'the function run is one the run stored with a schema-valid but random source: one that does not compile is refused when it runs '
      + '(400/1006 syntax error) and one that throws fails (422/1007), which no request schema can express. (A language the node cannot '
      + 'run no longer reaches execute: create refuses it, issue 28.)',
  })),
]

/** schemathesis's configuration file: the exclusions above. */
function configToml(): string {
  const lines: string[] = []
  for (const { method, path } of EXCLUDED_OPERATIONS) {
    // one name ("GET /ws"): separate include-path and include-method keys would match either
    lines.push('[[operations]]', `include-name = ${JSON.stringify(`${method} ${path}`)}`, 'enabled = false', '')
  }
  for (const { check, method, path } of EXCLUDED_CHECKS) {
    lines.push('[[operations]]', `include-name = ${JSON.stringify(`${method} ${path}`)}`, `checks.${check}.enabled = false`, '')
  }
  return lines.join('\n')
}

function run(command: string, args: string[], cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, NO_COLOR: '1', SCHEMATHESIS_TELEMETRY: 'false' }, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (c: Buffer) => (output += String(c)))
    child.stderr.on('data', (c: Buffer) => (output += String(c)))
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, output })
    })
  })
}

describe('schemathesis against a live daemon', () => {
  let d: DaemonProcess
  let admin: string
  const work = mkdtempSync(join(tmpdir(), 'svc-schemathesis-'))

  beforeAll(async () => {
    // one client on loopback: without credentials it would meet the per-address limit (20/s) and
    // test 429s instead of the routes (the limits are tested in test/e2e/auth-limits.test.ts)
    const dataDir = tempDataDir()
    writeFileSync(join(dataDir, 'svc.yaml'), [
      'rate_limits:',
      '  per_key: { points: 200, window_s: 1 }',
      '  per_tenant: { points: 1000, window_s: 1 }',
      '  per_ip_unauthenticated: { points: 0, window_s: 1 }',
    ].join('\n'))
    d = await startDaemonProcess({ dataDir, env: { AUTH_PROVIDER: 'standard', SVC_CONFIG: join(dataDir, 'svc.yaml') } })
    const m = /ADMIN_API_KEY=(\S+)/.exec(d.output())
    if (!m) throw new Error(`no admin key in the start-up output:\n${d.output()}`)
    admin = m[1]!
  })
  afterAll(async () => {
    await d?.stop()
    if (d) removeDir(d.dataDir)
    removeDir(work)
  })

  it(`finds nothing (${MAX_EXAMPLES} examples per operation, seed ${SEED})`, async () => {
    const version = await run('python3', ['-c', 'import importlib.metadata as m; print(m.version("schemathesis"))'], work)
    expect(version.output.trim(), 'schemathesis must be installed (scripts/setup.sh)').toBe(SCHEMATHESIS_VERSION)
    writeFileSync(join(work, 'schemathesis.toml'), configToml())
    const started = Date.now()
    const result = await run('python3', [
      '-m', 'schemathesis.cli', '--config-file', join(work, 'schemathesis.toml'), 'run', `${d.url}/openapi.json`,
      '--header', `Authorization: Bearer ${admin}`,
      '--phases', 'examples,coverage,fuzzing,stateful',
      '--max-examples', String(MAX_EXAMPLES), '--seed', String(SEED), '--workers', '1', '--request-timeout', '30',
      '--report', 'junit', '--report-junit-path', join(work, 'junit.xml'),
    ], work)
    const seconds = Math.round((Date.now() - started) / 1000)
    const summary = result.output.split('\n').filter((l) => /failures?|passed|generated|Tested:|Selected:/.test(l)).join('\n')
    console.info(`schemathesis ${SCHEMATHESIS_VERSION}: ${seconds} s\n${summary}`)
    expect(result.code, result.output.slice(-20_000)).toBe(0)
    // the run tested every operation it was given, and did not stop early
    const junit = readFileSync(join(work, 'junit.xml'), 'utf8')
    expect(junit).toMatch(/<testsuite /)
    expect(result.output).toMatch(/Tested: *\d+/)
  }, RUN_TIMEOUT_MS + 60_000)
})
