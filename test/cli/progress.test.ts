// Progress on standard error: on a terminal by default; SVC_PROGRESS forces it (plain lines) or turns it off.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { progressMode } from '../../src/cli/connection.js'
import { startPackageIndex, unreachableUrl, type PackageIndexServer } from '../fixtures/package-index.js'
import { runSvc } from './run-svc.js'

describe('progress output', () => {
  let index: PackageIndexServer
  let dir: string

  beforeAll(async () => {
    index = await startPackageIndex()
    dir = mkdtempSync(join(tmpdir(), 'svc-progress-'))
    writeFileSync(join(dir, 'function.svc.json'), JSON.stringify({
      schemaVersion: '1.0',
      name: 'fetchJson',
      dependencies: { pip: [{ name: 'requests', version: '>=2.28,<3' }, { name: 'numpy' }], npm: [{ name: 'lodash', version: '^4.17.0' }] },
    }))
  })
  afterAll(async () => {
    await index?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('chooses the mode from the terminal and SVC_PROGRESS', () => {
    expect(progressMode({ isTTY: true }, {})).toBe('tty')
    expect(progressMode({ isTTY: false }, {})).toBe('off')
    expect(progressMode({ isTTY: false }, { SVC_PROGRESS: '1' })).toBe('lines')
    expect(progressMode({ isTTY: false }, { SVC_PROGRESS: 'always' })).toBe('lines')
    expect(progressMode({ isTTY: true }, { SVC_PROGRESS: '1' })).toBe('tty')
    expect(progressMode({ isTTY: true }, { SVC_PROGRESS: '0' })).toBe('off')
    expect(progressMode({ isTTY: true }, { SVC_PROGRESS: 'never' })).toBe('off')
  })

  it('manifest install reports each resolved dependency when forced, and nothing otherwise', async () => {
    const flags = ['functions', 'manifest', 'install', '--path', dir, '--pip-index-url', index.pipIndexUrl, '--npm-registry-url', index.npmRegistryUrl]
    const quiet = await runSvc(flags)
    expect(quiet.status).toBe(0)
    expect(quiet.stderr).toBe('')

    rmSync(join(dir, 'function.lock.json'))
    const shown = await runSvc(flags, { env: { SVC_PROGRESS: '1' } })
    expect(shown.status).toBe(0)
    const lines = shown.stderr.trimEnd().split('\n')
    expect(lines).toHaveLength(3)
    for (const line of lines) expect(line).toMatch(/^resolving [1-3]\/3 (pip|npm) \S+ \d+\.\d+\.\d+$/)
    expect(lines.map((l) => l.split(' ')[1])).toEqual(['1/3', '2/3', '3/3'])
    expect(shown.stderr).toMatch(/resolving \d\/3 pip requests 2\.32\.3\n/)
    expect(shown.stderr).toMatch(/resolving \d\/3 npm lodash 4\.17\.21\n/)
    expect(shown.stdout).toContain(`wrote ${join(dir, 'function.lock.json')}`) // stdout is what it always is

    const json = await runSvc([...flags, '--json'], { env: { SVC_PROGRESS: '1' } })
    expect(json.stderr).toBe('') // --json output stays machine-readable on both streams
  })

  it('shows what a command waits for when forced, before its error', async () => {
    const url = await unreachableUrl()
    const r = await runSvc(['functions', 'execute', 'AbCdEfGhIjKl', '--url', url], { env: { SVC_PROGRESS: '1' } })
    expect(r.status).toBe(1)
    expect(r.stderr).toMatch(/^running AbCdEfGhIjKl …\nerror 1010 SERVICE_UNAVAILABLE: /)
    const quiet = await runSvc(['functions', 'execute', 'AbCdEfGhIjKl', '--url', url])
    expect(quiet.stderr).toMatch(/^error 1010 SERVICE_UNAVAILABLE: /)
  })
})
