// 10,000 random credentials against one endpoint from one address: none accepted, the flood limited
// (credentials past the address's budget are not even checked), no 5xx; meanwhile a valid client from
// another loopback address (127.0.0.2) is served throughout. Real daemon process, real sockets.
import { randomBytes } from 'node:crypto'
import { Agent, request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { call, removeDir, startDaemonProcess, type DaemonProcess } from '../fixtures/daemon-process.js'
import { recordFault } from './fault-record.js'
import { adminKeyOf, sleep } from './fault-fixtures.js'

const ATTEMPTS = 10_000
const CONCURRENCY = 50

interface Answer { status: number; code?: number; retryAfter?: string | undefined }

/** GET with a bearer token from a chosen local address (keep-alive sockets per address). */
function getFrom(url: string, path: string, token: string, agent: Agent): Promise<Answer> {
  const u = new URL(path, url)
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: 'GET', agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (text += c))
      res.on('end', () => {
        let code: number | undefined
        try {
          code = (JSON.parse(text) as { error?: { code?: number } }).error?.code
        } catch {
          // not JSON
        }
        resolve({ status: res.statusCode ?? 0, code, retryAfter: res.headers['retry-after'] as string | undefined })
      })
    })
    req.on('error', reject)
    req.end()
  })
}

/** A random credential of one of several shapes an attacker would try. */
function randomToken(i: number): string {
  const alnum = (n: number) => randomBytes(n * 2).toString('base64').replace(/[^A-Za-z0-9]/g, '').slice(0, n).padEnd(n, 'x')
  switch (i % 6) {
    case 0:
    case 1:
    case 2: return `svck_${alnum(16)}_${alnum(43)}` // well-formed keys with random ids
    case 3: return `${randomBytes(12).toString('base64url')}.${randomBytes(40).toString('base64url')}.${randomBytes(32).toString('base64url')}` // JWT-shaped
    case 4: return randomBytes(1 + (i % 300)).toString('base64url') // arbitrary
    default: return `svck_${alnum(16)}_${alnum(43)}${'A'.repeat(i % 4000)}` // long
  }
}

describe('a flood of random credentials (real daemon process)', () => {
  let d: DaemonProcess
  let adminKey = ''
  beforeAll(async () => {
    d = await startDaemonProcess({ env: { AUTH_PROVIDER: 'standard', SVC_SANDBOX_WORKERS: '1' } })
    adminKey = adminKeyOf(d.output())
  }, 60_000)
  afterAll(async () => {
    await d?.stop('SIGKILL')
    if (d) removeDir(d.dataDir)
  })

  it(`${ATTEMPTS} random keys from 127.0.0.1: none accepted, limited, no 5xx; a valid client on 127.0.0.2 served throughout`, async () => {
    const rec = recordFault('credentials.flood', {
      fault: `${ATTEMPTS} random credentials (well-formed keys, JWT-shaped, arbitrary, long) against GET /api/v1/auth/whoami from 127.0.0.1, ${CONCURRENCY} at a time; a valid key from 127.0.0.2 meanwhile`,
      expectation: 'none accepted; only 401/1003 or 429/1005 with Retry-After; at most the per-address budget (20/s) checked; no 5xx; the valid client from the other address always 200; a valid key from the flooded address waits like the flood',
    })
    const flooder = new Agent({ keepAlive: true, maxSockets: CONCURRENCY, localAddress: '127.0.0.1' })
    const legit = new Agent({ keepAlive: true, maxSockets: 1, localAddress: '127.0.0.2' })
    const counts = new Map<string, number>()
    let next = 0
    let done = false
    const started = Date.now()
    const attacker = async (): Promise<void> => {
      while (next < ATTEMPTS) {
        const i = next++
        const a = await getFrom(d.url, '/api/v1/auth/whoami', randomToken(i), flooder)
        const key = `${a.status}/${a.code ?? '-'}`
        counts.set(key, (counts.get(key) ?? 0) + 1)
        if (a.status === 429) expect(a.retryAfter).toMatch(/^\d+$/)
      }
    }
    const served: number[] = []
    const sameAddress: number[] = []
    const client = async (): Promise<void> => {
      while (!done) {
        served.push((await getFrom(d.url, '/api/v1/auth/whoami', adminKey, legit)).status)
        sameAddress.push((await getFrom(d.url, '/api/v1/auth/whoami', adminKey, flooder)).status)
        await sleep(100)
      }
    }
    const legitimate = client()
    await Promise.all(Array.from({ length: CONCURRENCY }, attacker))
    const seconds = (Date.now() - started) / 1000
    done = true
    await legitimate
    flooder.destroy()
    legit.destroy()

    const table = Object.fromEntries([...counts].sort())
    expect(Object.keys(table).every((k) => k === '401/1003' || k === '429/1005'), JSON.stringify(table)).toBe(true)
    const checked = table['401/1003'] ?? 0
    // the budget is 20 failed authentications a second per address: allow one extra window of slack
    expect(checked, JSON.stringify(table)).toBeLessThanOrEqual(20 * (Math.ceil(seconds) + 1))
    expect(served.length).toBeGreaterThan(3)
    expect(served.every((s) => s === 200), `other address: ${served.join(',')}`).toBe(true)
    // a valid key from the flooded address is not checked while the address is over budget: were it
    // checked, a right guess among the flood would be answered 200
    expect(sameAddress.filter((s) => s !== 429 && s !== 200)).toEqual([])
    const waited = sameAddress.filter((s) => s === 429).length
    expect(waited, `valid key from the flooded address: ${sameAddress.join(',')}`).toBeGreaterThanOrEqual(Math.ceil(sameAddress.length * 0.8))
    const health = await call(`${d.url}/healthz`, 'GET')
    expect(health.status).toBe(200)
    expect(d.proc.exitCode).toBeNull()
    rec.figures({
      attempts: ATTEMPTS, seconds: Math.round(seconds * 10) / 10, checked_and_refused_401: checked, limited_429: table['429/1005'] ?? 0, accepted: 0,
      other_address_served: served.filter((s) => s === 200).length, other_address_requests: served.length, valid_key_same_address_429: waited, valid_key_same_address_requests: sameAddress.length,
    })
    rec.summary(`${ATTEMPTS} in ${seconds.toFixed(1)} s: ${checked} checked and refused (401), ${table['429/1005'] ?? 0} refused unchecked (429), 0 accepted, 0 5xx; 127.0.0.2 served ${served.length}/${served.length}; a valid key from the flooded address refused unchecked ${waited}/${sameAddress.length}`)
  }, 180_000)
})
