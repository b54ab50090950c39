/**
 * The TypeScript client against the shared vocabulary `clients/operations.json`: every operation
 * is a method of `SvcClient` under its camelCase name, every error code has its class, and the
 * names of all three languages follow the one rule (so the Python and Go columns cannot drift
 * either). The same file is checked by pytest (tests/test_vocabulary.py) and go test
 * (vocabulary_test.go); test/client/behaviour-live.test.ts checks it against a node's /openapi.json.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import * as client from '../../src/client/index.js'
import { SvcClient } from '../../src/client/index.js'
import { ERROR_CODES } from '../../src/core/errors.js'
import { goNameOf, goSentinelOf, camelOf, loadVocabulary } from './vocabulary.js'

const vocabulary = loadVocabulary()

describe('clients/operations.json', () => {
  it('names every operation once, each name following the language rule', () => {
    const ids = vocabulary.operations.map((o) => o.id)
    expect(new Set(ids).size).toBe(ids.length)
    for (const op of vocabulary.operations) {
      expect(op.id, op.id).toMatch(/^[a-z]+(_[a-z]+)*$/)
      expect(op.ts, op.id).toBe(camelOf(op.id))
      expect(op.python, op.id).toBe(op.id)
      expect(op.go, op.id).toBe(goNameOf(op.id))
      expect(op.http !== undefined || op.client_side !== undefined, `${op.id}: an http route or client_side`).toBe(true)
    }
  })

  it('names the error class of every code the node can answer, in each language', () => {
    const codes = vocabulary.errors.map((e) => e.code).sort()
    expect(codes).toEqual(Object.values(ERROR_CODES).sort())
    for (const e of vocabulary.errors) {
      expect(ERROR_CODES[e.name as keyof typeof ERROR_CODES], e.name).toBe(e.code)
      expect(e.python, e.name).toBe(e.ts)
      expect(e.go, e.name).toBe(goSentinelOf(e.ts))
    }
    for (const e of vocabulary.client_errors) {
      expect(e.python).toBe(e.ts)
      expect(e.go).toBe(`Err${goNameOf(e.name.toLowerCase())}`)
    }
  })
})

describe('SvcClient speaks the vocabulary', () => {
  for (const op of vocabulary.operations) {
    it(`${op.id} → client.${op.ts}()`, () => {
      const method = (SvcClient.prototype as unknown as Record<string, unknown>)[op.ts]
      expect(typeof method, `SvcClient has no method ${op.ts} (operation ${op.id} of clients/operations.json)`).toBe('function')
    })
  }

  it('exports one error class per code, raised for that code', () => {
    for (const e of vocabulary.errors) {
      const cls = (client as unknown as Record<string, unknown>)[e.ts]
      expect(typeof cls, `the client exports no ${e.ts}`).toBe('function')
      const err = client.errorFromResponse(400, JSON.stringify({ error: { code: e.code, name: e.name, message: 'm' } }))
      expect(err).toBeInstanceOf(cls as new (...args: never[]) => unknown)
      expect(err).toMatchObject({ code: e.code, name: e.name })
    }
    for (const e of vocabulary.client_errors) {
      expect(typeof (client as unknown as Record<string, unknown>)[e.ts], `the client exports no ${e.ts}`).toBe('function')
    }
  })
})

describe('the READMEs carry the vocabulary', () => {
  const readme = (path: string): string => readFileSync(new URL(path, import.meta.url), 'utf8')
  it('src/client/README.md names every TypeScript method, clients/README.md every name of every language', () => {
    const ts = readme('../../src/client/README.md')
    const shared = readme('../../clients/README.md')
    for (const op of vocabulary.operations) {
      expect(ts, `src/client/README.md does not name ${op.ts}`).toContain(`| \`${op.id}\` | \`${op.ts}\` |`)
      expect(shared, `clients/README.md lacks the row of ${op.id}`).toContain(`| \`${op.id}\` | \`${op.ts}\` | \`${op.python}\` | \`${op.go}\` |`)
    }
    for (const e of vocabulary.errors) expect(shared).toContain(`| ${e.code} | \`${e.name}\` | \`${e.ts}\` | \`${e.go}\` |`)
  })
})
