// Compiled code caches (V8 `cachedData`) are never accepted, from peers or anyone: V8 trusts a code
// cache it is given (a crafted one is machine code in all but name), so the sandbox compiles every
// function from its source text. Peers send source only (the federation's /svc/code answer is read
// for `source_code`, a string checked against the content digest; any other field is dropped), and
// no compile call anywhere passes a cache. This test keeps it that way: it fails when a source file
// names a code cache or passes a compile call any option but the file name.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const SRC = fileURLToPath(new URL('../../../src', import.meta.url))

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name)
    return e.isDirectory() ? sources(path) : /\.(ts|mts|js|mjs)$/.test(e.name) ? [path] : []
  })
}

describe('no compiled code cache is ever accepted', () => {
  const files = sources(SRC).map((path) => ({ path, text: readFileSync(path, 'utf8') }))

  it('no source file names a V8 code cache', () => {
    expect(files.length).toBeGreaterThan(50)
    const naming = files.filter((f) => /cachedData|produceCachedData|cached_data|createCachedData/i.test(f.text)).map((f) => f.path)
    expect(naming).toEqual([])
  })

  it('every isolated-vm and node:vm compile call passes nothing but a file name', () => {
    const calls = files.flatMap((f) => [...f.text.matchAll(/\.(compileScript|compileModule|compileFunction)(Sync)?\(([^)]*)\)|new (vm\.)?Script\(([^)]*)\)/g)]
      .map((m) => ({ path: f.path, call: m[0] })))
    expect(calls.length).toBeGreaterThan(0)
    for (const { path, call } of calls) {
      const options = /\{([^}]*)\}/.exec(call)?.[1]
      if (options === undefined) continue
      const keys = options.split(',').map((p) => p.split(':')[0]!.trim()).filter(Boolean)
      expect(keys, `${path}: ${call}`).toEqual(['filename'])
    }
  })
})
