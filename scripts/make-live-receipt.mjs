#!/usr/bin/env node
// Writes test/vectors/receipt-live.json: a receipt signed by a real, federated svc-node daemon
// (issue 18), for the Python and Go suites to verify with their verify_receipt / VerifyReceipt —
// the receipts-v1 vectors are built by a script; this one comes from the daemon itself.
//
// It makes a federation CA and a node certificate (10 years, so the committed file keeps
// verifying), starts `svc-node start` as a process with federation enabled on loopback, publishes
// a function, executes it with arguments that exercise canonical JSON (non-ASCII text, a float,
// nesting), reads `GET /v1/executions/{id}/receipt`, checks it with the TypeScript verifier, and
// writes the receipt, the arguments, the result, the CA certificate and cases in the shape of
// receipts-v1.json: the live receipt against the CA, its arguments and its result (valid,
// certified), without a CA (valid, not certified), tampered copies (a field changed after signing:
// bad_signature; another signature: bad_signature), a wrong result or arguments (result_mismatch,
// arguments_mismatch) and another federation's CA (foreign_ca). `now` is the receipt's
// finished_at: every verdict is evaluated at that moment. No private key is written.
//
//   npm run build && node scripts/make-live-receipt.mjs   rewrite the file from a fresh live run
//   node scripts/make-live-receipt.mjs --check            exit 1 unless the committed file still
//       verifies with the TypeScript verifier as its cases say, and a fresh live receipt has the
//       same members, version and limits shape (the file is not stale) and verifies the same way
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const target = join(root, 'test/vectors/receipt-live.json')
const check = process.argv.includes('--check')

const dist = (p) => import(join(root, 'dist', p))
const { createFederationCa, issueNodeCertificate, writeCa, writeNodeCertificate } = await dist('federation/certificates.js')
const { loadOrCreatePeerIdentity } = await dist('federation/identity.js')
const { verifyReceipt, isReceiptError, resultDigest } = await dist('core/receipt.js')

const FUNCTION = {
  function_name: 'summarize',
  signature: '(name, values, options)',
  language: 'javascript',
  source_code: [
    'function summarize(name, values, options) {',
    '  const total = values.reduce((a, b) => a + b, 0)',
    '  return { greeting: `héllo ${name} ✓`, total, mean: total / values.length, scaled: values.map((v) => v * options.scale), empty: null, nested: { ok: true, tags: options.tags } }',
    '}',
  ].join('\n'),
}
const ARGS = { name: 'Zoë 😀', values: [1.5, 2, 1e21, -0.25], options: { scale: 0.1, tags: ['α', 'b\u0000c'] } }

/** Starts a federated daemon in `dir`, runs FUNCTION(ARGS) and returns { receipt, result, caPem, foreignCaPem }. */
async function liveReceipt() {
  const dir = mkdtempSync(join(tmpdir(), 'svc-live-receipt-'))
  let proc
  try {
    const ca = createFederationCa({ name: 'svc live receipt CA', days: 3650 })
    const { certFile: caFile } = await writeCa(join(dir, 'ca'), ca)
    const dataDir = join(dir, 'node')
    const { peerId } = await loadOrCreatePeerIdentity(dataDir)
    await writeNodeCertificate(join(dataDir, 'cert'), issueNodeCertificate(ca, peerId, { days: 3650 }), ca.certPem)
    const configFile = join(dir, 'config.json')
    writeFileSync(configFile, JSON.stringify({
      federation: { enabled: true, listen: ['/ip4/127.0.0.1/tcp/0'], bootstrap: [], ca_file: caFile, cert_file: join(dataDir, 'cert', 'node.crt') },
    }))
    proc = spawn(process.execPath, [join(root, 'bin/svc-node.js'), 'start'], {
      cwd: root,
      env: {
        ...process.env, API_HOST: '127.0.0.1', API_PORT: '0', GRPC_PORT: '0', SVC_DATA_DIR: dataDir, SVC_CONFIG: configFile,
        LOG_FORMAT: 'json', LOG_LEVEL: 'info', SVC_SANDBOX_WORKERS: '1', AUTH_PROVIDER: 'none',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    const url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the daemon did not start within 60 s:\n${output}`)), 60_000)
      const onData = (chunk) => {
        output += chunk.toString('utf8')
        const line = output.split('\n').find((l) => l.includes('svc-node listening'))
        if (line === undefined) return
        try {
          clearTimeout(timer)
          resolve(JSON.parse(line).url)
        } catch (err) {
          reject(err)
        }
      }
      proc.stdout.on('data', onData)
      proc.stderr.on('data', onData)
      proc.once('exit', (code) => { clearTimeout(timer); reject(new Error(`the daemon exited (${code}):\n${output}`)) })
    })
    const call = async (method, path, body) => {
      const res = await fetch(url + path, { method, headers: { 'content-type': 'application/json', 'x-svc-namespace': 'live' }, ...(body ? { body: JSON.stringify(body) } : {}) })
      const json = await res.json()
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`)
      return json
    }
    const created = await call('POST', '/api/v1/functions/create', FUNCTION)
    const executed = await call('POST', `/api/v1/functions/${created.rufid_short}/execute`, { arguments: ARGS })
    const receipt = await call('GET', `/v1/executions/${executed.execution_id}/receipt`)
    if (receipt.peer_id !== peerId) throw new Error(`the receipt is signed by ${receipt.peer_id}, not the node ${peerId}`)
    const foreign = createFederationCa({ name: 'another federation CA', days: 3650 })
    return { receipt, result: executed.result, caPem: ca.certPem, foreignCaPem: foreign.certPem }
  } finally {
    if (proc && proc.exitCode === null) {
      const exited = new Promise((r) => proc.once('exit', r))
      proc.kill('SIGTERM')
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))])
      if (proc.exitCode === null) proc.kill('SIGKILL')
    }
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The vectors file for one live run (cases in the shape of receipts-v1.json). */
function vectorsOf({ receipt, result, caPem, foreignCaPem }) {
  const args_json = JSON.stringify(ARGS)
  const result_json = JSON.stringify(result)
  const wrongResult = JSON.stringify({ ...result, greeting: 'tampered' })
  const wrongArgs = JSON.stringify({ ...ARGS, name: 'Zoe' })
  const otherDigest = resultDigest({ ...result, greeting: 'tampered' })
  const sig = Buffer.from(receipt.signature, 'base64url')
  sig[0] ^= 1
  const digest = verifyReceipt(receipt, { caCertPem: caPem, args: ARGS, result, now: new Date(receipt.finished_at) }).digest
  const C = (id, description, r, verify, expect) => ({ id, description, receipt: r, verify, expect })
  return {
    description: 'An execution receipt signed by a live, federated svc-node daemon (docs/receipts.md), verified by the TypeScript, Python and Go suites. Cases have the shape of receipts-v1.json; every verdict is evaluated at `now` (the receipt\'s finished_at). Written by scripts/make-live-receipt.mjs (a fresh daemon run each time; `--check` verifies the committed file and that it is not stale).',
    now: receipt.finished_at,
    peer_id: receipt.peer_id,
    args: ARGS,
    result,
    certificates: { ca: { pem: caPem }, foreign_ca: { pem: foreignCaPem } },
    cases: [
      C('live-valid', 'the live receipt against the federation CA, its arguments and its result', receipt, { ca: 'ca', args_json, result_json }, { valid: true, certified: true, digest }),
      C('live-without-ca', 'the live receipt without a CA: the signature and the PeerId binding only', receipt, { args_json, result_json }, { valid: true, certified: false, digest }),
      C('live-tampered-result-digest', 'result_digest replaced (with the digest of the wrong result) after signing', { ...receipt, result_digest: otherDigest }, { ca: 'ca', result_json: wrongResult }, { valid: false, failure: 'bad_signature' }),
      C('live-tampered-status', 'status changed to timeout after signing', { ...receipt, status: 'timeout' }, { ca: 'ca' }, { valid: false, failure: 'bad_signature' }),
      C('live-tampered-signature', 'one bit of the signature flipped', { ...receipt, signature: sig.toString('base64url') }, { ca: 'ca' }, { valid: false, failure: 'bad_signature' }),
      C('live-wrong-result', 'the live receipt with a result it does not vouch for', receipt, { ca: 'ca', args_json, result_json: wrongResult }, { valid: false, failure: 'result_mismatch' }),
      C('live-wrong-arguments', 'the live receipt with arguments of another call', receipt, { ca: 'ca', args_json: wrongArgs, result_json }, { valid: false, failure: 'arguments_mismatch' }),
      C('live-foreign-ca', 'the live receipt against another federation\'s CA', receipt, { ca: 'foreign_ca', args_json, result_json }, { valid: false, failure: 'foreign_ca' }),
    ],
  }
}

/** The TypeScript verdicts of every case (as the Python and Go suites compute theirs). */
function verdicts(vectors) {
  const problems = []
  for (const c of vectors.cases) {
    const options = { now: new Date(vectors.now) }
    if (c.verify.ca) options.caCertPem = vectors.certificates[c.verify.ca].pem
    if (c.verify.args_json !== undefined) options.args = JSON.parse(c.verify.args_json)
    if (c.verify.result_json !== undefined) options.result = JSON.parse(c.verify.result_json)
    let got
    try {
      const v = verifyReceipt(c.receipt, options)
      got = { valid: true, certified: v.certified, digest: v.digest }
    } catch (err) {
      if (!isReceiptError(err)) throw err
      got = { valid: false, failure: err.failure }
    }
    if (JSON.stringify(got) !== JSON.stringify(c.expect)) problems.push(`${c.id}: ${JSON.stringify(got)}, expected ${JSON.stringify(c.expect)}`)
  }
  return problems
}

const shapeOf = (r) => JSON.stringify({ members: Object.keys(r).sort(), version: r.receipt_version, limits: Object.keys(r.limits ?? {}).sort(), status: r.status })

const fresh = vectorsOf(await liveReceipt())
const problems = verdicts(fresh).map((p) => `fresh live run: ${p}`)
if (check) {
  const committed = JSON.parse(readFileSync(target, 'utf8'))
  problems.push(...verdicts(committed).map((p) => `committed file: ${p}`))
  if (JSON.stringify(committed.args) !== JSON.stringify(ARGS)) problems.push('committed file: its arguments are not the ones this script calls with')
  if (shapeOf(committed.cases[0].receipt) !== shapeOf(fresh.cases[0].receipt)) {
    problems.push(`committed file is stale: its receipt ${shapeOf(committed.cases[0].receipt)}, a live one ${shapeOf(fresh.cases[0].receipt)}`)
  }
  if (JSON.stringify(committed.result) !== JSON.stringify(fresh.result)) problems.push(`committed file is stale: result ${JSON.stringify(committed.result)}, live ${JSON.stringify(fresh.result)}`)
  if (committed.cases.map((c) => c.id).join() !== fresh.cases.map((c) => c.id).join()) problems.push('committed file is stale: its cases are not the ones this script writes')
}
if (problems.length > 0) {
  console.error(problems.join('\n'))
  if (check) console.error('run `npm run build && node scripts/make-live-receipt.mjs` to rewrite it')
  process.exit(1)
}
if (check) {
  console.log(`${target}: verifies as its ${fresh.cases.length} cases say, and matches a fresh live receipt's shape`)
} else {
  writeFileSync(target, JSON.stringify(fresh, null, 2) + '\n')
  console.log(`wrote ${target} (${fresh.cases.length} cases, signed by ${fresh.peer_id})`)
}
