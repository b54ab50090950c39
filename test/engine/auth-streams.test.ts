// Open streams by credential (engine/auth/credential-streams.ts): a revoked key's streams end at
// once, an expiring credential's when it expires (one timer, earliest expiry first), each exactly
// once, and the credential each authenticator reports carries its expiry.
import { generateKeyPair, exportSPKI, SignJWT } from 'jose'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { SvcError } from '../../src/core/errors.js'
import {
  ApiKeyService, createMemoryKeyStorage, CredentialStreams, type Principal,
} from '../../src/engine/index.js'
import { createCredentialAuthenticator } from '../../src/engine/auth/credential-authenticator.js'
import { JwtVerifier } from '../../src/engine/auth/jwt-verifier.js'
import { createTestEngine, principal } from '../fixtures/engine.js'

const keyed = (keyId: string, expiresAt?: number): Principal => ({
  ...principal('acme'), method: 'api_key', key_id: keyId, ...(expiresAt === undefined ? {} : { expires_at: expiresAt }),
})

/** A hold whose ends are recorded. */
function held(streams: CredentialStreams, p: Principal): { ends: SvcError[]; hold: ReturnType<CredentialStreams['hold']> } {
  const ends: SvcError[] = []
  return { ends, hold: streams.hold(p, (reason) => ends.push(reason)) }
}

describe('credential streams', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it("ends every stream of a revoked key at once, once, with 1003 naming the revocation; other keys' streams stay", () => {
    const streams = new CredentialStreams()
    const a1 = held(streams, keyed('kA'))
    const a2 = held(streams, keyed('kA'))
    const b = held(streams, keyed('kB'))
    expect(streams.size).toBe(3)
    streams.revokeKey('kA')
    for (const a of [a1, a2]) {
      expect(a.ends).toHaveLength(1)
      expect(a.ends[0]).toMatchObject({ code: 1003, reason: 'unauthenticated', message: 'API key revoked', details: { credential: 'revoked', key_id: 'kA' } })
      expect(a.hold.check()).toMatchObject({ details: { credential: 'revoked' } })
    }
    streams.revokeKey('kA')
    expect(a1.ends).toHaveLength(1)
    expect(b.ends).toEqual([])
    expect(b.hold.check()).toBeUndefined()
    expect(streams.size).toBe(1)
  })

  it('a released stream is forgotten: its revocation calls nothing', () => {
    const streams = new CredentialStreams()
    const a = held(streams, keyed('kA'))
    a.hold.release()
    a.hold.release()
    expect(streams.size).toBe(0)
    streams.revokeKey('kA')
    expect(a.ends).toEqual([])
  })

  it('a key revoked before the stream was held (between admission and hold) ends it on the next turn', async () => {
    const streams = new CredentialStreams()
    streams.revokeKey('kA')
    const a = held(streams, keyed('kA'))
    expect(a.ends).toEqual([])
    await Promise.resolve()
    expect(a.ends.map((e) => e.details.credential)).toEqual(['revoked'])
    expect(streams.size).toBe(0)
  })

  it('ends streams when their credential expires, earliest first, by a timer; check() ends a stream past its expiry before the timer does', () => {
    vi.useFakeTimers({ now: 1_000_000 })
    const streams = new CredentialStreams()
    const order: string[] = []
    const hold = (name: string, at: number) => streams.hold(keyed(name, at), (r) => order.push(`${name}:${String(r.details.credential)}`))
    hold('late', 1_000_000 + 30_000)
    hold('early', 1_000_000 + 10_000)
    const never = streams.hold(keyed('never'), () => order.push('never'))
    const mid = hold('mid', 1_000_000 + 20_000)
    hold('gone', 1_000_000 + 15_000).release()
    vi.advanceTimersByTime(9_999)
    expect(order).toEqual([])
    vi.advanceTimersByTime(1)
    expect(order).toEqual(['early:expired'])
    // past mid's expiry, before its timer runs: the delivery check ends it
    vi.setSystemTime(1_000_000 + 20_000)
    expect(mid.check()).toMatchObject({ code: 1003, message: 'API key expired', details: { credential: 'expired' } })
    expect(order).toEqual(['early:expired', 'mid:expired'])
    vi.advanceTimersByTime(10_000)
    expect(order).toEqual(['early:expired', 'mid:expired', 'late:expired'])
    expect(never.check()).toBeUndefined()
    expect(streams.size).toBe(1)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('an expiry beyond the longest timer re-arms until it is due', () => {
    vi.useFakeTimers({ now: 0 })
    const streams = new CredentialStreams()
    const far = 40 * 86_400_000
    const a = held(streams, keyed('far', far))
    vi.advanceTimersByTime(far - 1)
    expect(a.ends).toEqual([])
    vi.advanceTimersByTime(1)
    expect(a.ends.map((e) => e.details.credential)).toEqual(['expired'])
  })

  it('thousands of holds released in any order keep the expiry order (the heap stays consistent)', () => {
    vi.useFakeTimers({ now: 0 })
    const streams = new CredentialStreams()
    const ended: number[] = []
    const holds = Array.from({ length: 2000 }, (_, i) => {
      const at = 1 + ((i * 7919) % 5000)
      return { at, hold: streams.hold(keyed(`k${i}`, at), () => ended.push(at)) }
    })
    holds.filter((_, i) => i % 3 === 0).forEach((h) => h.hold.release())
    vi.advanceTimersByTime(5001)
    const expected = holds.filter((_, i) => i % 3 !== 0).map((h) => h.at).sort((x, y) => x - y)
    expect(ended).toEqual(expected)
    expect(streams.size).toBe(0)
  })

  it("one stream's end callback that throws does not keep the others open", () => {
    const streams = new CredentialStreams()
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined)
    try {
      streams.hold(keyed('kA'), () => {
        throw new Error('door bug')
      })
      const other = held(streams, keyed('kA'))
      streams.revokeKey('kA')
      expect(other.ends).toHaveLength(1)
      expect(warn).toHaveBeenCalledOnce()
    } finally {
      warn.mockRestore()
    }
  })
})

describe('the engine: the key service reports revocations, the authenticators report expiries', () => {
  it('revoking a key through the key service ends the streams the gate holds for it', async () => {
    const { engine } = await createTestEngine()
    try {
      const admin = { ...principal('acme'), permissions: new Set(['rufid.admin'] as const) } as Principal
      const minted = await engine.keys.mint(admin, { name: 'reader', scopes: ['functions:read'], expires_days: 5 })
      const caller = await engine.access.admit({ authorization: `Bearer ${minted.api_key}`, ip: '127.0.0.1' })
      expect(caller).toMatchObject({ key_id: minted.key_id, expires_at: Date.parse(minted.expires_at!) })
      const ends: SvcError[] = []
      engine.access.hold(caller, (reason) => ends.push(reason))
      await engine.keys.revoke(admin, minted.key_id)
      expect(ends.map((e) => [e.code, e.message])).toEqual([[1003, 'API key revoked']])
      expect(engine.access.streams.size).toBe(0)
    } finally {
      await engine.stop()
    }
  })

  it('the revocation listener runs once the revoked record is written, not for mints', async () => {
    const keys = new ApiKeyService({ defaultExpiresDays: 90, maxExpiresDays: 3650 }, createMemoryKeyStorage())
    const admin = { ...principal('acme'), permissions: new Set(['rufid.admin'] as const) } as Principal
    const revoked: string[] = []
    const off = keys.onRevoked((id) => revoked.push(id))
    const minted = await keys.mint(admin, { name: 'x', scopes: ['functions:read'] })
    expect(revoked).toEqual([])
    await keys.revoke(admin, minted.key_id)
    expect(revoked).toEqual([minted.key_id])
    off()
    await keys.revoke(admin, minted.key_id)
    expect(revoked).toEqual([minted.key_id])
  })

  it("a JWT's principal expires at exp plus the clock tolerance; a client certificate's at its notAfter", async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256')
    const jwt = new JwtVerifier({
      publicKeyPem: await exportSPKI(publicKey), issuer: 'iss', audience: 'aud', algorithms: ['ES256'],
      tenantClaim: 'tenant', rolesClaim: 'roles', scopeClaim: 'scope', userClaim: 'sub', clockToleranceSeconds: 7,
    })
    const exp = Math.floor(Date.now() / 1000) + 600
    const token = await new SignJWT({ tenant: 'acme', roles: ['consumer'] }).setProtectedHeader({ alg: 'ES256' })
      .setIssuer('iss').setAudience('aud').setSubject('u').setExpirationTime(exp).sign(privateKey)
    expect((await jwt.verify(token)).expires_at).toBe((exp + 7) * 1000)

    const authenticator = createCredentialAuthenticator({ mtls: { roles: ['consumer'] } }, {
      apiKeys: new ApiKeyService({ defaultExpiresDays: 90, maxExpiresDays: 3650 }, createMemoryKeyStorage()),
    })
    const fromCert = await authenticator.authenticate({
      ip: '127.0.0.1', clientCertificate: { subject: 'CN=c\nO=acme', fingerprint256: 'AA', validTo: 'Sep  3 20:33:31 2027 GMT' },
    })
    expect(fromCert.expires_at).toBe(Date.parse('2027-09-03T20:33:31Z'))
  })
})
