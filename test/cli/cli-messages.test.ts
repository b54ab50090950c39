// What a newcomer meets on the command line: `svc node backup --help` names its archive truthfully,
// and `svc … | head` ends quietly instead of crashing on EPIPE. Runs the built bin/svc.js.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { SVC_BIN, runSvc } from './run-svc.js'

/** Runs svc with its standard output's reader already gone (as `svc … | head` once head has exited). */
function runWithClosedStdout(args: string[]): Promise<{ status: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = {}
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SVC_')) env[k] = v
    const child = spawn(process.execPath, [SVC_BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    // close our end before the child (a fresh node process) can write: every write it makes gets EPIPE
    child.stdout.destroy()
    let stderr = ''
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')))
    child.once('error', reject)
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
    child.once('close', (status, signal) => {
      clearTimeout(timer)
      resolve({ status, signal, stderr })
    })
  })
}

describe('svc command-line messages', () => {
  it('svc node backup --help describes the archive: --out <archive>, gzip-compressed JSON lines, .jsonl.gz', async () => {
    const r = await runSvc(['node', 'backup', '--help'])
    expect(r.status).toBe(0)
    expect(r.stdout).toMatch(/--out <archive>/)
    expect(r.stdout).toMatch(/gzip-compressed JSON lines/)
    expect(r.stdout).toMatch(/\.jsonl\.gz/)
    expect(r.stdout).not.toMatch(/\bFILE\b/)
  })

  it('svc node restore --help names the same archive', async () => {
    const r = await runSvc(['node', 'restore', '--help'])
    expect(r.stdout).toMatch(/<archive>/)
    expect(r.stdout).toMatch(/\.jsonl\.gz/)
  })

  it('a reader that has gone away ends svc quietly (no EPIPE stack trace), keeping the exit code', async () => {
    // 43 lines, written after the command's work: the write fails with EPIPE
    const r = await runWithClosedStdout(['rufid', 'vectors', 'test/vectors/rufid-v1.json'])
    expect(r.stderr).not.toMatch(/EPIPE|Unhandled|node:events/)
    expect(r.stderr).toBe('')
    expect(r.signal).toBeNull()
    expect(r.status).toBe(0)
  })

  it('the same with --json output', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-epipe-'))
    const file = join(dir, 'add.py')
    writeFileSync(file, 'def add(a, b):\n    return a + b\n')
    const r = await runWithClosedStdout(['rufid', 'compute', '--name', 'add', '--language', 'python', '--file', file, '--json'])
    rmSync(dir, { recursive: true, force: true })
    expect(r.stderr).toBe('')
    expect(r.status).toBe(0)
  })
})
