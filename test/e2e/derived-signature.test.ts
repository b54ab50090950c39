// Issue 13's first Done-when line, for the daemon and the command line: every case of
// test/vectors/signature-v1.json gets its one RUFID through `/v1` publish (base64 source, no
// signature) on a real daemon, through the real `svc functions create` and through
// `svc rufid compute` without `--signature`; a case that derives no signature is 1006 everywhere.
// A Go case is computed locally and refused by the node's create (1006: a language it cannot run).
// The Python and Go clients' compute run the same file in their own suites
// (clients/python/tests/test_signature_vectors.py, clients/go/signature_test.go).
// Needs `npm run build` (the CLI runs from dist/).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sandboxFamilyOf } from '../../src/engine/sandbox/languages.js'
import { languageFamily } from '../../src/core/rufid.js'
import { call, removeDir, startDaemonProcess, type DaemonProcess } from '../fixtures/daemon-process.js'
import { runSvc } from '../cli/run-svc.js'
import type { SignatureVector } from '../core/signature.test.js'

const { cases } = JSON.parse(readFileSync(new URL('../vectors/signature-v1.json', import.meta.url), 'utf8')) as { cases: SignatureVector[] }

/** A `/v1` runtime of the case's language; none for Go and plain languages (`/v1` runs JS/TS and Python only). */
function runtimeOf(language: string): string | undefined {
  const family = languageFamily(language)
  if (family === 'python') return 'python3.11'
  if (family !== 'js') return undefined
  return ['typescript', 'ts', 'tsx'].includes(language.toLowerCase()) ? 'typescript5' : 'node20'
}

const ERROR_LINE = /^error 1006 VALIDATION_FAILED: cannot derive the signature of function /

/** Whether this node runs the case's language: a create of another (Go) is refused with 1006 since issue 28, and nothing is stored. */
const runnable = (language: string): boolean => sandboxFamilyOf(language) !== undefined

/** Runs `work` when one of `slots` is free: the CLI processes of at most two cases at a time (other suites share the machine). */
function limiter(slots: number): <T>(work: () => Promise<T>) => Promise<T> {
  const waiting: Array<() => void> = []
  let free = slots
  return async (work) => {
    if (free === 0) await new Promise<void>((resolve) => waiting.push(resolve))
    else free--
    try {
      return await work()
    } finally {
      const next = waiting.shift()
      if (next) next()
      else free++
    }
  }
}
const inTurn = limiter(2)

describe('one RUFID for a source without a signature through /v1, svc functions create and svc rufid compute', () => {
  let d: DaemonProcess
  let work: string

  beforeAll(async () => {
    d = await startDaemonProcess()
    work = mkdtempSync(join(tmpdir(), 'svc-sigvec-'))
  })
  afterAll(async () => {
    // a daemon stuck in a derivation cannot run its SIGTERM handler: SIGKILL it after a while
    const killer = setTimeout(() => d?.proc.kill('SIGKILL'), 15_000)
    await d?.stop()
    clearTimeout(killer)
    if (d) removeDir(d.dataDir)
    if (work) rmSync(work, { recursive: true, force: true })
  })

  it('covers every family, with at least 30 cases /v1 can publish', () => {
    expect(new Set(cases.map((c) => languageFamily(c.language)))).toEqual(new Set(['python', 'js', 'go', 'plain']))
    expect(cases.filter((c) => runtimeOf(c.language) !== undefined).length).toBeGreaterThanOrEqual(30)
  })

  // Each case spawns the CLI twice: two cases run at a time.
  describe.concurrent('every vector', () => {
    for (const v of cases) {
      it(v.id, () => inTurn(async () => {
        const file = join(work, `${v.id}.src`)
        writeFileSync(file, v.source_code, 'utf8')
        const definition = ['--name', v.function_name, '--language', v.language, '--file', file]
        const runtime = runtimeOf(v.language)
        const published = runtime === undefined
          ? undefined
          : await call(`${d.url}/v1/functions`, 'POST', { name: v.function_name, runtime, source: Buffer.from(v.source_code, 'utf8').toString('base64') })
        const created = await runSvc(['functions', 'create', ...definition, '--url', d.url, '--json'])
        const computed = await runSvc(['rufid', 'compute', ...definition, '--json'])

        if (v.signature !== undefined && !runnable(v.language)) {
          // derived locally, then refused by the node: it cannot run the language (issue 28)
          expect(created.status, 'svc functions create').toBe(1)
          expect(created.stderr, 'svc functions create').toMatch(/^error 1006 VALIDATION_FAILED: invalid function definition: \/language this node cannot run "[^"]+": it runs javascript, typescript, python/)
          expect(created.stderr).toContain(JSON.stringify(v.language))
          expect(computed.stderr, 'svc rufid compute').toBe('')
          expect(JSON.parse(computed.stdout), 'svc rufid compute').toEqual({ rufid_short: v.rufid_short, content_digest: v.sha256_hex, signature: v.signature })
        } else if (v.signature !== undefined) {
          if (published) {
            expect(published.body, 'POST /v1/functions').toMatchObject({ rufid_short: v.rufid_short })
            expect([200, 201]).toContain(published.status)
          }
          expect(created.stderr, 'svc functions create').toBe('')
          expect(created.status).toBe(0)
          expect(JSON.parse(created.stdout), 'svc functions create').toMatchObject({ rufid_short: v.rufid_short })
          const stored = await call(`${d.url}/api/v1/functions/${v.rufid_short!}`, 'GET')
          expect(stored.body, 'stored').toMatchObject({ signature: v.signature, function_name: v.function_name })
          expect(computed.stderr, 'svc rufid compute').toBe('')
          expect(JSON.parse(computed.stdout), 'svc rufid compute').toEqual({ rufid_short: v.rufid_short, content_digest: v.sha256_hex, signature: v.signature })
        } else {
          if (published) {
            expect(published.status, 'POST /v1/functions').toBe(400)
            expect(published.body).toMatchObject({ error: { code: 1006, name: 'VALIDATION_FAILED', details: { reason: v.error!.reason, function_name: v.function_name } } })
          }
          for (const [door, run] of [['svc functions create', created], ['svc rufid compute', computed]] as const) {
            expect(run.status, door).toBe(1)
            expect(run.stdout, door).toBe('')
            expect(run.stderr, door).toMatch(ERROR_LINE)
            expect(run.stderr, door).toContain(JSON.stringify(v.function_name))
          }
        }
      }), 180_000)
    }
  })

  it('answers 1006 at once for a source shaped to make a naive derivation rescan it for each candidate, and keeps serving', async () => {
    // 490 kB: within registry.max_source_bytes (524288), which a publish now checks before it
    // derives anything (a longer source is refused for its size, unread)
    const source = 'add: b '.repeat(70_000)
    const published = await call(`${d.url}/v1/functions`, 'POST', { name: 'add', runtime: 'node20', source: Buffer.from(source).toString('base64') })
    expect(published.status).toBe(400)
    expect(published.body).toMatchObject({ error: { code: 1006, details: { reason: 'no_definition' } } })
    expect((await call(`${d.url}/healthz`, 'GET')).status).toBe(200)
  })

  it('stored exactly the RUFIDs of the vectors that derive a signature in a language the node runs, nothing for the others', async () => {
    const listed = await call<{ items: Array<{ rufid_short?: string; rufid: string }>; pagination: { total: number } }>(`${d.url}/api/v1/functions?limit=100`, 'GET')
    expect(listed.status).toBe(200)
    const stored = listed.body.items.map((f) => f.rufid_short ?? f.rufid)
    expect(listed.body.pagination.total).toBe(stored.length)
    expect(new Set(stored)).toEqual(new Set(cases.filter((c) => c.signature !== undefined && runnable(c.language)).map((c) => c.rufid_short)))
  })
})
