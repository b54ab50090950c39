#!/usr/bin/env node
// Runs every test suite of the repository — lint and type checks, the TypeScript suites (vitest),
// the mutation score of src/core (Stryker, incremental), the Python client (pytest) and the Go
// client (go test) — and ends with one plain line
// `N passed, N failed[, N skipped]` computed from the runners' own machine-readable reports.
// Exits non-zero when anything failed or a runner could not report.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const out = join(root, '.test-results')
rmSync(out, { recursive: true, force: true })
mkdirSync(out, { recursive: true })

const totals = { passed: 0, failed: 0, skipped: 0 }
const problems = []

function run(label, cmd, args, options = {}) {
  console.log(`\n=== ${label}: ${cmd} ${args.join(' ')}`)
  const r = spawnSync(cmd, args, { cwd: options.cwd ?? root, stdio: 'inherit', env: { ...process.env, ...options.env } })
  if (r.error) console.error(`${label}: ${r.error.message}`)
  return r.status ?? 1
}

function step(label, cmd, args, options) {
  const status = run(label, cmd, args, options)
  if (status === 0) totals.passed++
  else {
    totals.failed++
    problems.push(`${label} exited ${status}`)
  }
}

// 1. build, lint, type-check, generated files up to date
step('build', 'npm', ['run', 'build', '--silent'])
step('lint', 'npm', ['run', 'lint', '--silent'])
step('vectors file is what scripts/make-vectors.mjs writes', 'node', ['scripts/make-vectors.mjs', '--check'])
step('receipt vectors file is what scripts/make-receipt-vectors.mjs writes', 'node', ['scripts/make-receipt-vectors.mjs', '--check'])
step('live receipt fixture verifies and is not stale (a daemon run: scripts/make-live-receipt.mjs)', 'node', ['scripts/make-live-receipt.mjs', '--check'])
step('signature vectors file is what scripts/make-signature-vectors.mjs writes', 'node', ['scripts/make-signature-vectors.mjs', '--check'])
step('generated gRPC types are what scripts/gen-proto-types.mjs writes', 'node', ['scripts/gen-proto-types.mjs', '--check'])
step('Python gRPC stubs (svc.v1) are what scripts/gen-python-grpc.py writes', 'python3', ['scripts/gen-python-grpc.py', '--check'])

// 2. TypeScript suites
{
  const report = join(out, 'vitest.json')
  const status = run('vitest', 'npx', ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`])
  if (existsSync(report)) {
    const r = JSON.parse(readFileSync(report, 'utf8'))
    totals.passed += r.numPassedTests
    totals.failed += r.numFailedTests
    totals.skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0)
    const brokenFiles = (r.testResults ?? []).filter((f) => f.status === 'failed' && (f.assertionResults ?? []).every((a) => a.status !== 'failed'))
    for (const f of brokenFiles) {
      totals.failed++
      problems.push(`vitest: ${f.name} failed outside any test: ${(f.message ?? '').split('\n')[0]}`)
    }
    if (status !== 0 && r.numFailedTests === 0 && brokenFiles.length === 0) {
      totals.failed++
      problems.push(`vitest exited ${status}`)
    }
  } else {
    totals.failed++
    problems.push('vitest wrote no report')
  }
}

// 2b. mutation score of src/core: Stryker, incremental from the committed
// reports/stryker-incremental.json, so only mutants whose code or covering tests changed are tested
// again; exits non-zero below stryker.config.mjs thresholds.break (83 % now; issue 28's goal is 90 %).
// See docs/mutation-testing.md.
step('mutation score of src/core >= thresholds.break (npm run mutation, incremental)', 'npm', ['run', 'mutation', '--silent'])

// 3. pytest suites: the Python client, and the sandbox's Python prelude under CPython
function pytestSuite(label, dir, reportName) {
  const report = join(out, reportName)
  const status = run(`pytest (${label})`, 'python3', ['-m', 'pytest', '-q', `--junitxml=${report}`], { cwd: join(root, dir) })
  if (existsSync(report)) {
    const xml = readFileSync(report, 'utf8')
    for (const m of xml.matchAll(/<testsuite\b([^>]*)>/g)) {
      const attr = (name) => Number((new RegExp(`\\b${name}="(\\d+)"`).exec(m[1]) ?? [])[1] ?? 0)
      const failed = attr('failures') + attr('errors')
      totals.failed += failed
      totals.skipped += attr('skipped')
      totals.passed += attr('tests') - failed - attr('skipped')
    }
    if (status !== 0 && !/failures="[1-9]|errors="[1-9]/.test(xml)) {
      totals.failed++
      problems.push(`pytest (${label}) exited ${status}`)
    }
  } else {
    totals.failed++
    problems.push(`pytest (${label}) wrote no report`)
  }
}
if (existsSync(join(root, 'clients/python'))) pytestSuite('clients/python', 'clients/python', 'pytest.xml')
pytestSuite('test/python', 'test/python', 'pytest-prelude.xml')

// 4. Go client
if (existsSync(join(root, 'clients/go'))) {
  step('go vet (clients/go)', 'go', ['vet', './...'], { cwd: join(root, 'clients/go') })
  console.log('\n=== go test (clients/go)')
  const r = spawnSync('go', ['test', '-json', '-count=1', './...'], { cwd: join(root, 'clients/go'), encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 })
  let counted = 0
  // each test's own output, printed in full when that test fails (so CI shows why, not only which)
  const outputOf = new Map()
  for (const line of (r.stdout ?? '').split('\n')) {
    if (!line.startsWith('{')) continue
    const ev = JSON.parse(line)
    if (ev.Action === 'output' && ev.Output) {
      if (ev.Test) outputOf.set(ev.Test, (outputOf.get(ev.Test) ?? '') + ev.Output)
      else if (ev.Output.startsWith('ok') || ev.Output.startsWith('FAIL')) process.stdout.write(ev.Output)
    }
    if (!ev.Test) continue
    if (ev.Action === 'pass') { totals.passed++; counted++ }
    if (ev.Action === 'fail') {
      totals.failed++
      counted++
      process.stdout.write(outputOf.get(ev.Test) ?? `--- FAIL: ${ev.Test}\n`)
    }
    if (ev.Action === 'skip') { totals.skipped++; counted++ }
  }
  if (r.stderr) process.stderr.write(r.stderr)
  if (r.status !== 0 && !(r.stdout ?? '').includes('"Action":"fail","Package"')) {
    if (counted === 0 || !(r.stdout ?? '').includes('"Action":"fail"')) {
      totals.failed++
      problems.push(`go test exited ${r.status}`)
    }
  }
}

console.log('')
for (const p of problems) console.log(`problem: ${p}`)
console.log(`${totals.passed} passed, ${totals.failed} failed${totals.skipped ? `, ${totals.skipped} skipped` : ''}`)
process.exit(totals.failed === 0 && problems.length === 0 ? 0 : 1)
