// The REST direct routes write bodies with `jsonText`, which keeps a cached answer's receipt text
// per receipt object: its output must be JSON.stringify's, byte for byte, whatever the body.
import { describe, expect, it } from 'vitest'
import { jsonText } from '../../src/api/rest/presenters.js'

const receipt = () => ({
  receipt_version: 1, execution_id: 'ex_01M893Y0PGGV9VSJ6VQBVX7DA7', status: 'success', error_code: null,
  limits: { timeout_ms: 5000, cpu_ms: 5000, memory_mb: 64 },
  certificate: '-----BEGIN CERTIFICATE-----\nMIIBvjCCAXCgAwIBAgIQH1nkkNAaQMALEONGQ7Z+/TAF\n"quoted"\\ \u2028\n-----END CERTIFICATE-----\n',
  signature: 'RNmhmGIY0X7InzClsRzv60o1teTfVAaHEIz5OFku',
})
const hit = (r: unknown) => ({
  result: { sum: 5, note: 'a\nb', list: [1, null, 'x'] }, execution_time_ms: 0.21, status: 'success', execution_id: 'ex_01M893Y0R9REZZQ3HY755Z548E',
  rufid_short: 'U0muCVj82BcK', full_rufid: 'rufid:U0muCVj82BcK:v1:default', cached: true, receipt: r,
})

describe('jsonText (REST direct responses)', () => {
  it('writes what JSON.stringify writes: cached answers (first and later hits of one receipt), other bodies', () => {
    const r = receipt()
    const bodies: unknown[] = [
      hit(r), hit(r), hit(r), // the same receipt object: its text is kept after the first
      { ...hit(r), result: undefined }, // a member left out before the receipt
      { cached: true, receipt: r }, // the receipt alone
      { cached: true, receipt: r, after: 1 }, // not the last member
      Object.assign(Object.create({ inherited: 1 }), { cached: true, receipt: r }),
      { ...hit(receipt()), cached: false },
      { ...hit(null) },
      { ...hit(undefined) },
      { cached: true, receipt: 'not an object' },
      [1, 2, { cached: true }],
      { error: { code: 1002, message: 'no' } },
      null, 'text', 42,
    ]
    for (const body of bodies) expect(jsonText(body)).toBe(JSON.stringify(body))
  })

  it('leaves the body as it found it', () => {
    const r = receipt()
    const body = hit(r)
    jsonText(body)
    jsonText(body)
    expect(body.receipt).toBe(r)
    expect(Object.keys(body)).toEqual(['result', 'execution_time_ms', 'status', 'execution_id', 'rufid_short', 'full_rufid', 'cached', 'receipt'])
  })
})
