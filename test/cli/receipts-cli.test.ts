import { privateKeyFromProtobuf } from '@libp2p/crypto/keys'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { argumentsDigest, lockfileDigest, resultDigest, signReceipt, type Receipt } from '../../src/core/receipt.js'
import { runSvc } from './run-svc.js'

interface Vectors {
  now: string
  certificates: Record<string, { pem: string; serial: string }>
  cases: Array<{ id: string; receipt: Receipt }>
}
const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const vectors = JSON.parse(readFileSync(join(ROOT, 'test/vectors/receipts-v1.json'), 'utf8')) as Vectors
const receiptOf = (id: string): Receipt => vectors.cases.find((c) => c.id === id)!.receipt

describe('svc receipts verify (the real bin/svc.js)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-receipts-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  const file = (name: string, content: unknown): string => {
    const path = join(dir, name)
    writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content))
    return path
  }
  const ca = file('ca.crt', vectors.certificates.ca!.pem)
  const at = ['--now', vectors.now]

  it('accepts a valid receipt with its CA, arguments and result (exit 0)', async () => {
    const r = await runSvc(['receipts', 'verify', file('valid.json', receiptOf('valid')), '--ca', ca, '--args', '{"b":3,"a":2}', '--result', '5', ...at])
    expect(r.stderr).toBe('')
    expect(r.status).toBe(0)
    expect(r.stdout).toMatch(/^valid receipt [0-9a-f]{64}\n/)
    expect(r.stdout).toContain('issued by the federation CA')
    expect(r.stdout).toMatch(/arguments +match/)
    expect(r.stdout).toMatch(/result +matches/)
  })

  it('refuses a tampered receipt, another CA\'s signer, an expired or revoked certificate (exit 1, the failure named)', async () => {
    const tampered = await runSvc(['receipts', 'verify', file('tampered.json', { ...receiptOf('valid'), status: 'error' }), '--ca', ca, ...at])
    expect(tampered.status).toBe(1)
    expect(tampered.stdout).toMatch(/^invalid receipt \(bad_signature\)/)

    const foreign = await runSvc(['receipts', 'verify', file('foreign.json', receiptOf('foreign-ca')), '--ca', ca, ...at])
    expect(foreign.status).toBe(1)
    expect(foreign.stdout).toContain('(foreign_ca)')

    const expired = await runSvc(['receipts', 'verify', file('expired.json', receiptOf('expired-certificate')), '--ca', ca, ...at])
    expect(expired.status).toBe(1)
    expect(expired.stdout).toContain('(expired)')

    const list = file('revoked.txt', `# revoked members\n00:11\n${vectors.certificates.node_a!.serial}\n`)
    const revoked = await runSvc(['receipts', 'verify', file('valid.json', receiptOf('valid')), '--ca', ca, '--revoked', `@${list}`, '--json', ...at])
    expect(revoked.status).toBe(1)
    expect(JSON.parse(revoked.stdout)).toMatchObject({ valid: false, failure: 'revoked' })

    const args = await runSvc(['receipts', 'verify', file('valid.json', receiptOf('valid')), '--ca', ca, '--args', `@${file('args.json', '[2,3]')}`, ...at])
    expect(args.status).toBe(1)
    expect(args.stdout).toContain('(arguments_mismatch)')
  })

  it('without --ca: valid, but says the signer was not checked', async () => {
    const r = await runSvc(['receipts', 'verify', file('valid.json', receiptOf('valid')), '--json', ...at])
    expect(r.status).toBe(0)
    expect(JSON.parse(r.stdout)).toMatchObject({ valid: true, certified: false, checked: { arguments: false, result: false } })
    expect(r.stderr).toContain('not checked against a federation CA')
  })

  it('reads the receipt out of an execution record', async () => {
    const record = { execution_id: 'ex_01JD8X9R6Q4M2N0P5S7T3V1W9Y', status: 'success', result: 5, cached: true, receipt: receiptOf('valid') }
    const r = await runSvc(['receipts', 'verify', file('record.json', record), '--ca', ca, '--result', '5', ...at])
    expect(r.status).toBe(0)
    expect(r.stdout).toMatch(/^valid receipt/)
  })

  it('inputs it cannot read are exit 2, not a verdict', async () => {
    const cases = [
      [join(dir, 'missing.json')],
      [file('notjson.json', '{')],
      [file('valid.json', receiptOf('valid')), '--args', '{nope'],
      [file('valid.json', receiptOf('valid')), '--ca', file('bad-ca.crt', 'not a certificate')],
      [file('valid.json', receiptOf('valid')), '--now', 'yesterday'],
    ]
    const runs = await Promise.all(cases.map((args) => runSvc(['receipts', 'verify', ...args])))
    runs.forEach((r, i) => {
      expect(r.status, cases[i]!.join(' ')).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr).toMatch(/^svc receipts verify: /)
    })
  })

  it('a receipt signed with a node identity and certificate made by `svc federation` verifies here and in the Python client', async () => {
    const caDir = join(dir, 'fed-ca')
    const nodeDir = join(dir, 'node')
    expect((await runSvc(['federation', 'ca', 'init', '--out', caDir])).status).toBe(0)
    const issued = await runSvc(['federation', 'cert', 'issue', '--ca', caDir, '--data-dir', nodeDir, '--out', join(nodeDir, 'certs')])
    expect(issued.status).toBe(0)
    const { peer_id: peerId, cert_file: certFile } = JSON.parse(issued.stdout) as { peer_id: string; cert_file: string }
    // the engine's port, filled with the node's libp2p key exactly as the daemon will
    const key = privateKeyFromProtobuf(new Uint8Array(readFileSync(join(nodeDir, 'peer-key'))))
    const template = receiptOf('valid')
    const args = { text: 'héllo 😀', n: [1e21, 0.1, -0] }
    const receipt = await signReceipt({
      execution_id: template.execution_id, rufid: template.rufid, content_digest: template.content_digest,
      lockfile_digest: lockfileDigest(null), arguments_digest: argumentsDigest(args), status: 'success',
      result_digest: resultDigest({ ok: true }), error_code: null, limits: { timeout_ms: 5000, cpu_ms: 5000, memory_mb: 64 },
      started_at: new Date(Date.now() - 3).toISOString(), finished_at: new Date().toISOString(),
    }, { peerId, certificatePem: readFileSync(certFile, 'utf8'), sign: (bytes) => key.sign(bytes) })
    const receiptFile = file('node-receipt.json', receipt)
    const caFile = join(caDir, 'ca.crt')

    const r = await runSvc(['receipts', 'verify', receiptFile, '--ca', caFile, '--args', JSON.stringify(args), '--result', '{"ok":true}', '--json'])
    expect(r.status).toBe(0)
    expect(JSON.parse(r.stdout)).toMatchObject({ valid: true, certified: true, peer_id: peerId })

    const py = spawnSync('python3', ['-c', [
      'import json, sys',
      'from svc.receipt import verify_receipt',
      'v = verify_receipt(open(sys.argv[1]).read(), ca_cert_pem=open(sys.argv[2]).read(), args=json.loads(sys.argv[3]), result={"ok": True})',
      'print(json.dumps({"peer_id": v.peer_id, "certified": v.certified, "digest": v.digest}))',
    ].join('\n'), receiptFile, caFile, JSON.stringify(args)], { cwd: join(ROOT, 'clients/python'), encoding: 'utf8' })
    expect(py.stderr).toBe('')
    expect(JSON.parse(py.stdout)).toEqual({ peer_id: peerId, certified: true, digest: JSON.parse(r.stdout).digest })
  })
})
