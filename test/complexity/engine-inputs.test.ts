// Issue 27: every input path of the engine and core that reads caller (or federation member)
// input takes time linear in it. Each path gets hostile inputs of sizes n, 2n, 4n, 8n, 8n being
// its real limit (registry.max_source_bytes 524288 for sources, the 1 MiB body limit for what a
// body carries unbounded, …), and its time may grow by at most ~2.5x per doubling (growth.ts: how
// that is measured robustly on a busy machine, and the exact rule).
// Each call checks its own answer, so a path cannot pass by failing fast.
import { readFileSync } from 'node:fs'
import { Readable } from 'node:stream'
import type { IncomingMessage } from 'node:http'
import { describe, expect, it, vi } from 'vitest'
import { readJsonBody } from '../../src/api/json-body.js'
import { canonicalJson, canonicalJsonStrict } from '../../src/core/canonical-json.js'
import { SvcError } from '../../src/core/errors.js'
import { verifyReceipt } from '../../src/core/receipt.js'
import { computeRufid, normalizeSource, parseRufid, trimAsciiWhitespace } from '../../src/core/rufid.js'
import { deriveSignature } from '../../src/core/signature.js'
import { definesPythonFunction } from '../../src/engine/executions/native-execution.js'
import { checkManifest, MAX_DEPENDENCIES, MAX_VERSION_SPECIFIER_CHARS } from '../../src/engine/manifests/rules.js'
import { compileQuery, MAX_QUERY_CHARS } from '../../src/engine/search/analysis.js'
import { describeGrowth, growth, isLinear, type Call } from './growth.js'

// a path at 8n takes seconds; a super-linear one stops at its first doubling over the bound
vi.setConfig({ testTimeout: 300_000 })

const MAX_SOURCE_BYTES = 524288 // config/default.yaml registry.max_source_bytes
const BODY_LIMIT = 1024 * 1024 // server.body_limit_bytes

/** Fails with the figures unless the path is linear (growth.ts: isLinear); logs them either way. */
async function expectLinear<T>(label: string, n: number, make: (size: number) => T, call: Call<T>, unitBytes = 1, sorts = false): Promise<void> {
  const g = await growth(label, n, make, call, { unitBytes, sorts })
  console.log(describeGrowth(g))
  expect(isLinear(g), describeGrowth(g)).toBe(true)
}

/** `f` must throw an SvcError with `code` (a refusal is the expected answer). */
function refusedWith(code: number, f: () => unknown): void {
  try {
    f()
  } catch (err) {
    if (err instanceof SvcError && err.code === code) return
    throw err
  }
  throw new Error(`expected a refusal with ${code}`)
}

const N = MAX_SOURCE_BYTES / 8

describe('RUFID normalization is linear in the source, every family (sizes up to registry.max_source_bytes)', () => {
  const families: Array<[string, string, (n: number) => string]> = [
    ['plain: a blank run before the last character', 'ruby', (n) => 'puts 1' + ' \t'.repeat(n / 2) + 'x'],
    ['plain: blank lines before the last character', 'ruby', (n) => 'x' + ' \n'.repeat(n / 2) + 'x'],
    ['python: trailing blanks on every line', 'python', (n) => 'x = 1  \n'.repeat(n / 8)],
    ['python: a blank run before the last character', 'python', (n) => 'x' + ' '.repeat(n) + 'x'],
    ['python: unterminated strings', 'python', (n) => "'".repeat(n)],
    ['python: string prefixes', 'python', (n) => 'rb'.repeat(n / 2)],
    ['python: an unterminated triple-quoted string full of escapes', 'python', (n) => '"""' + '\\"'.repeat(n / 2)],
    ['python: comments', 'python', (n) => '#\n'.repeat(n / 2)],
    ['js: block comments on one line', 'js', (n) => '/**/'.repeat(n / 4) + 'x'],
    ['js: an unterminated block comment', 'js', (n) => '/*' + ' '.repeat(n)],
    ['js: an unterminated template literal', 'js', (n) => '`' + '\\`'.repeat(n / 2)],
    ['js: line comments', 'js', (n) => '//\n'.repeat(n / 3)],
    ['js: deep nesting', 'js', (n) => '('.repeat(n / 2) + ')'.repeat(n / 2)],
    ['go: block comments and raw strings', 'go', (n) => '/**/``'.repeat(n / 6) + 'x'],
    ['go: unterminated rune literals', 'go', (n) => "'".repeat(n)],
  ]
  for (const [label, language, make] of families) {
    it(label, async () => {
      await expectLinear(label, N, make, (source) => normalizeSource(source, language))
    })
  }

  it('the whole RUFID computation, name and signature trims included (a body carries them unbounded)', async () => {
    await expectLinear('computeRufid: blank runs in every field', BODY_LIMIT / 8, (size) => ({
      function_name: 'f' + ' '.repeat(size / 4) + 'x',
      signature: '(' + '\t'.repeat(size / 4) + ')',
      language: 'ruby',
      source_code: 'puts 1' + ' '.repeat(size / 2) + 'x',
    }), (input) => computeRufid(input))
    await expectLinear('trimAsciiWhitespace: blanks around and inside', BODY_LIMIT / 8, (size) => ' '.repeat(size / 4) + 'a' + ' '.repeat(size / 2) + 'b' + ' '.repeat(size / 4), trimAsciiWhitespace)
  })
})

describe('signature derivation and the language guess are linear in the source', () => {
  const shapes: Array<[string, string, string, (n: number) => string]> = [
    ['many candidate lines', 'js', 'add', (n) => 'const add2 = (a) => a\n'.repeat(n / 22)],
    ['binding type annotations on one line', 'js', 'add', (n) => 'add: b '.repeat(n / 7)],
    ['arrow return annotations on one line', 'js', 'add', (n) => 'add = (): b '.repeat(n / 12)],
    ['nested binding lists', 'js', 'add', (n) => 'add = ('.repeat(n / 14) + ')'.repeat(n / 14)],
    ['nested go receivers', 'go', 'F', (n) => 'func ('.repeat(n / 12) + ')'.repeat(n / 12)],
    ['python definitions of another name', 'python', 'f', (n) => 'def g('.repeat(n / 6)],
    ['blank runs after the name', 'js', 'add', (n) => ('add' + ' '.repeat(997)).repeat(n / 1000)],
  ]
  for (const [label, language, name, make] of shapes) {
    it(label, async () => {
      await expectLinear(`deriveSignature: ${label}`, N, make, (source) => {
        try {
          deriveSignature({ function_name: name, language, source_code: source })
        } catch (err) {
          if (!(err instanceof SvcError && err.code === 1006)) throw err
        }
      })
    })
  }

  it("native execute's language guess (def NAME( at a line start)", async () => {
    await expectLinear('definesPythonFunction: blank lines', N, (n) => '\n'.repeat(n) + 'x', (s) => expect(definesPythonFunction(s, 'f')).toBe(false))
    await expectLinear('definesPythonFunction: def without a name', N, (n) => 'def  \n'.repeat(n / 6), (s) => expect(definesPythonFunction(s, 'f')).toBe(false))
  })
})

describe('JSON bodies, canonical JSON and RUFID syntax are linear (sizes up to the 1 MiB body limit)', () => {
  const request = (body: string): IncomingMessage => {
    const buffer = Buffer.from(body)
    return Object.assign(Readable.from([buffer]), { method: 'POST', headers: { 'content-length': String(buffer.length) }, complete: true }) as unknown as IncomingMessage
  }
  const read = async (body: string): Promise<unknown> => readJsonBody(request(body), BODY_LIMIT)
  const n = BODY_LIMIT / 8

  it('a body of near-miss __proto__ keys, escapes, whitespace', async () => {
    const nearMiss = (size: number): string => '{' + Array.from({ length: size / 16 }, (_, i) => `"__proto_${i % 10}":[1]`).join(',').slice(0, size - 20).replace(/,[^,]*$/, '') + '}'
    await expectLinear('readJsonBody: near-miss __proto__ keys', n, nearMiss, async (body) => expect(typeof (await read(body))).toBe('object'))
    await expectLinear('readJsonBody: a string of escapes', n, (size) => `{"a":"${'\\u005f'.repeat(size / 6 - 2)}"}`, async (body) => expect(typeof (await read(body))).toBe('object'))
    await expectLinear('readJsonBody: whitespace after a suspect-looking key', n, (size) => `{"__proto_"${' '.repeat(size - 20)}:1}`, async (body) => expect(typeof (await read(body))).toBe('object'))
    // a __proto__ key is refused (1006) after the walk, whatever the size
    await expectLinear('readJsonBody: many objects, one __proto__ key at the end', n, (size) => `[${'{"a":1},'.repeat(size / 8 - 4)}{"__proto__":1}]`, async (body) => {
      await expect(read(body)).rejects.toMatchObject({ code: 1006 })
    })
  })

  it('deep nesting is refused before anything recursive walks it', async () => {
    await expectLinear('readJsonBody: nesting', n, (size) => '['.repeat(size / 2) + ']'.repeat(size / 2), async (body) => {
      await expect(read(body)).rejects.toMatchObject({ code: 1006 })
    })
  })

  it('canonical JSON of wide objects and long strings', async () => {
    // members are sorted (canonical JSON's order): n log n, judged with that allowance
    await expectLinear('canonicalJsonStrict: many members', n / 16, (size) => Object.fromEntries(Array.from({ length: size }, (_, i) => [`k${(i * 7919) % size}`, i])), (v) => canonicalJsonStrict(v), 16, true)
    await expectLinear('canonicalJson: a string of quotes and controls', n, (size) => '"\\\n\u0001'.repeat(size / 4), (v) => canonicalJson(v))
    await expectLinear('canonicalJsonStrict: a string of lone surrogates is refused', n, (size) => 'a\ud800'.repeat(size / 2), (v) => {
      expect(() => canonicalJsonStrict(v)).toThrow(TypeError)
    })
  })

  it('RUFID syntax checks', async () => {
    await expectLinear('parseRufid: a long almost-RUFID', n, (size) => 'rufid:AAAAAAAAAAAA:v' + '1'.repeat(size) + ':', (s) => refusedWith(1001, () => parseRufid(s)))
    await expectLinear('parseRufid: a long tenant', n, (size) => 'rufid:AAAAAAAAAAAA:v1:' + 'a'.repeat(size) + '!', (s) => refusedWith(1001, () => parseRufid(s)))
  })
})

describe('manifests, search queries and receipts are linear (or bounded first)', () => {
  const n = BODY_LIMIT / 8

  it('a manifest with an over-long version specifier (the PEP 440 and semver parsers never see it)', async () => {
    for (const [ecosystem, unit] of [['pip', '>=1,'], ['npm', '1 || ']] as const) {
      await expectLinear(`checkManifest: a ${ecosystem} specifier`, n, (size) => ({
        schemaVersion: '1.0', name: 'f', version: '1.0.0',
        dependencies: { [ecosystem]: [{ name: 'requests', version: unit.repeat(size / unit.length) + 'x' }] },
      }), (m) => refusedWith(1006, () => checkManifest(m)))
    }
  })

  it('the bounds checked before the parsers are the schema\'s own', () => {
    const schema = JSON.parse(readFileSync(new URL('../../schemas/function_manifest.schema.json', import.meta.url), 'utf8')) as {
      properties: { dependencies: { properties: Record<'pip' | 'npm', { maxItems: number; items: { properties: { version: { maxLength: number } } } }> } }
    }
    for (const list of [schema.properties.dependencies.properties.pip, schema.properties.dependencies.properties.npm]) {
      expect(list.maxItems).toBe(MAX_DEPENDENCIES)
      expect(list.items.properties.version.maxLength).toBe(MAX_VERSION_SPECIFIER_CHARS)
    }
  })

  it('a manifest with many dependencies', async () => {
    await expectLinear('checkManifest: many pip dependencies', 4096, (size) => ({
      schemaVersion: '1.0', name: 'f', version: '1.0.0',
      dependencies: { pip: Array.from({ length: size }, (_, i) => ({ name: `p${i}`, version: `>=1.${i},<2` })) },
    }), (m) => refusedWith(1006, () => checkManifest(m)), 200) // ~200 bytes of heap per dependency
  })

  it('search queries: words are counted in linear time, and a query past MAX_QUERY_CHARS is refused unread', async () => {
    await expectLinear('compileQuery: separators', MAX_QUERY_CHARS / 8, (size) => 'a' + ' ,;'.repeat(size / 3), (q) => expect(compileQuery({ q }).words).toEqual(['a']))
    await expectLinear('compileQuery: too many words', MAX_QUERY_CHARS / 8, (size) => Array.from({ length: size / 4 }, (_, i) => `w${i}`).join(' '), (q) => refusedWith(1006, () => compileQuery({ q })))
    await expectLinear('compileQuery: over the limit', n, (size) => 'a'.repeat(size), (q) => refusedWith(1006, () => compileQuery({ q })))
  })

  it('receipts from a federation member: over-long members are refused as fast as short ones', async () => {
    const vectors = JSON.parse(readFileSync(new URL('../vectors/receipts-v1.json', import.meta.url), 'utf8')) as { cases: Array<{ id: string; receipt: Record<string, unknown> }> }
    const valid = vectors.cases.find((c) => c.id === 'valid')!.receipt
    const refused = (r: unknown): void => {
      expect(() => verifyReceipt(r)).toThrow()
    }
    await expectLinear('verifyReceipt: a long peer_id', n, (size) => ({ ...valid, peer_id: '12D3KooW' + 'z'.repeat(size) }), refused)
    await expectLinear('verifyReceipt: a long certificate', n, (size) => ({ ...valid, certificate: '-----BEGIN CERTIFICATE-----\n' + 'A'.repeat(size) + '\n-----END CERTIFICATE-----\n' }), refused)
    await expectLinear('verifyReceipt: a certificate of blanks', n, (size) => ({ ...valid, certificate: ' \r\n'.repeat(size / 3) }), refused)
    await expectLinear('verifyReceipt: a long execution id', n, (size) => ({ ...valid, execution_id: 'ex_' + '0'.repeat(size) }), refused)
  })
})
