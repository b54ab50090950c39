// The engine's two doors without a signature — /v1 publish and native test mode's registration —
// derive it with core's deriveSignature: every case of test/vectors/signature-v1.json is stored
// under the case's RUFID and signature, or refused with 1006 and nothing stored. In-process; the
// daemon and the CLI run the same cases in test/e2e/derived-signature.test.ts.
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { languageFamily } from '../../src/core/rufid.js'
import type { Engine } from '../../src/engine/index.js'
import { createTestEngine, principal, rejectionOf } from '../fixtures/engine.js'
import type { SignatureVector } from '../core/signature.test.js'

const { cases } = JSON.parse(readFileSync(new URL('../vectors/signature-v1.json', import.meta.url), 'utf8')) as { cases: SignatureVector[] }
const runtimeOf = (language: string): string => (languageFamily(language) === 'python' ? 'python3.12' : 'node20')

describe('engine doors without a signature', () => {
  let engine: Engine
  beforeAll(async () => {
    ;({ engine } = await createTestEngine())
  })
  afterAll(async () => {
    await engine?.stop()
  })

  // /v1 runs JavaScript/TypeScript and Python only
  for (const v of cases.filter((c) => ['python', 'js'].includes(languageFamily(c.language)))) {
    it(`/v1 publish: ${v.id}`, async () => {
      const tenant = principal('v1door')
      const body = { name: v.function_name, runtime: runtimeOf(v.language), source: Buffer.from(v.source_code).toString('base64') }
      if (v.signature !== undefined) {
        const created = await engine.publish(tenant, body)
        expect(created.rufid_short).toBe(v.rufid_short)
        expect(created.fn.signature).toBe(v.signature)
      } else {
        const err = await rejectionOf(engine.publish(tenant, body))
        expect([err.code, err.details.reason]).toEqual([1006, v.error!.reason])
      }
    })

    it(`native test mode registration: ${v.id}`, async () => {
      const tenant = principal('nativedoor')
      const body = { rufid: `rufid:${v.rufid_short ?? 'AAAAAAAAAAAA'}`, function_name: v.function_name, language: v.language, source_code: v.source_code, input_data: {} }
      // this engine has no sandbox: registration happens, then running fails
      const failure = await engine.nativeExecute(tenant, body).then(() => undefined, (err: unknown) => err as { code?: number; details?: Record<string, unknown> })
      if (v.signature !== undefined) {
        const stored = await engine.functions.resolve(tenant, { short: v.rufid_short! })
        expect(stored.fn.signature).toBe(v.signature)
      } else {
        expect([failure?.code, failure?.details?.reason]).toEqual([1006, v.error!.reason])
      }
    })
  }

  it('stored nothing for the cases that derive no signature', async () => {
    for (const tenant of ['v1door', 'nativedoor']) {
      const page = await engine.functions.list(principal(tenant), { limit: 500 })
      expect(new Set(page.items.map((f) => f.rufid_short)), tenant)
        .toEqual(new Set(cases.filter((c) => c.signature !== undefined && ['python', 'js'].includes(languageFamily(c.language))).map((c) => c.rufid_short)))
    }
  })
})
