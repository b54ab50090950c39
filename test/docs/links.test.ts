// The documentation's links: every relative link of the README and the reference pages names a file
// that exists and, with a #fragment, a heading of that file (GitHub's anchors). The reference moved
// from the README into docs/ (one page per subject); a page moved or a heading renamed later must not
// leave a reader on a dead link.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** GitHub's anchor of a heading: lower case, letters, digits, spaces, '-' and '_' kept, spaces to '-'. */
function anchorOf(heading: string): string {
  let out = ''
  for (const ch of heading.trim().toLowerCase()) if (/[\p{L}\p{N} _-]/u.test(ch)) out += ch
  return out.replaceAll(' ', '-')
}

/** The lines of a markdown file outside fenced code blocks. */
function proseLines(text: string): Array<[number, string]> {
  const out: Array<[number, string]> = []
  let code = false
  text.split('\n').forEach((line, i) => {
    if (line.startsWith('```')) code = !code
    else if (!code) out.push([i + 1, line])
  })
  return out
}

const anchors = new Map<string, Set<string>>()
function anchorsOf(file: string): Set<string> {
  let set = anchors.get(file)
  if (set === undefined) {
    set = new Set(proseLines(readFileSync(file, 'utf8')).flatMap(([, l]) => {
      const m = /^#{1,6} (.*)$/.exec(l)
      return m ? [anchorOf(m[1]!)] : []
    }))
    anchors.set(file, set)
  }
  return set
}

function markdownUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(ROOT, dir, name)
    if (statSync(path).isDirectory()) return markdownUnder(join(dir, name))
    return name.endsWith('.md') ? [path] : []
  })
}

const FILES = [
  'README.md', 'RELIABILITY.md', 'bench/README.md', 'clients/README.md', 'clients/python/README.md', 'clients/go/README.md', 'src/client/README.md',
].map((f) => join(ROOT, f)).concat(markdownUnder('docs'))

describe('documentation links', () => {
  it('every relative link of the README and the reference pages resolves, fragments included', () => {
    const dead: string[] = []
    for (const file of FILES) {
      for (const [n, line] of proseLines(readFileSync(file, 'utf8'))) {
        for (const m of line.matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)) {
          const target = m[1]!
          if (/^[a-z]+:/.test(target)) continue
          const [path = '', fragment] = target.split('#', 2)
          const to = path === '' ? file : normalize(join(dirname(file), path))
          const where = `${relative(ROOT, file)}:${n} → ${target}`
          if (!existsSync(to)) dead.push(`${where} (no such file)`)
          else if (fragment !== undefined && to.endsWith('.md') && !anchorsOf(to).has(fragment)) dead.push(`${where} (no such heading)`)
        }
      }
    }
    expect(dead).toEqual([])
  })

  it('a newcomer reads the README in ten minutes: it stays short and links the reference', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
    expect(readme.split('\n').length).toBeLessThan(300)
    for (const page of ['docs/rest.md', 'docs/configuration.md', 'docs/operations.md', 'docs/federation.md', 'docs/sandbox.md', 'docs/benchmarks.md']) {
      expect(readme, `the README links ${page}`).toContain(`](${page})`)
    }
  })
})
