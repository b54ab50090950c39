import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const svc = (...args: string[]) => spawnSync(process.execPath, [join(ROOT, 'bin/svc.js'), ...args], { cwd: ROOT, encoding: 'utf8', input: '' })

describe('svc rufid (command line)', () => {
  it('prints the RUFID of every vector, matching the file', () => {
    const r = svc('rufid', 'vectors')
    expect(r.status).toBe(0)
    const { cases } = JSON.parse(readFileSync(join(ROOT, 'test/vectors/rufid-v1.json'), 'utf8')) as { cases: Array<{ rufid_short: string }> }
    expect(r.stdout).toContain(`${cases.length} of ${cases.length} vectors match`)
    for (const c of cases) expect(r.stdout).toContain(`ok        ${c.rufid_short}`)
  })

  it('fails when one expectation is changed', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-vectors-'))
    try {
      const file = join(dir, 'v.json')
      const data = JSON.parse(readFileSync(join(ROOT, 'test/vectors/rufid-v1.json'), 'utf8')) as { cases: Array<{ rufid_short: string }> }
      data.cases[3]!.rufid_short = 'AAAAAAAAAAAA'
      writeFileSync(file, JSON.stringify(data))
      const r = svc('rufid', 'vectors', file)
      expect(r.status).toBe(1)
      expect(r.stdout).toContain('MISMATCH')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('computes one RUFID from a file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-src-'))
    try {
      writeFileSync(join(dir, 'add.py'), 'def add(a, b):\n    return a + b\n')
      const r = svc('rufid', 'compute', '--name', 'add', '--signature', '(a, b)', '--language', 'python', '--file', join(dir, 'add.py'), '--tenant', 'acme', '--json')
      expect(r.status).toBe(0)
      const out = JSON.parse(r.stdout) as { rufid_short: string; rufid: string }
      const vector = (JSON.parse(readFileSync(join(ROOT, 'test/vectors/rufid-v1.json'), 'utf8')) as { cases: Array<{ id: string; rufid_short: string }> }).cases.find((c) => c.id === 'py-basic')!
      expect(out.rufid_short).toBe(vector.rufid_short)
      expect(out.rufid).toBe(`rufid:${vector.rufid_short}:v1:acme`)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
