// OAuth 2.0 token introspection (RFC 7662) for opaque access tokens, against a real authorization
// server started by the suite (oidc-provider, oauth-server.ts): active tokens become principals
// from the configured claims, answers are cached (bounded in size and by the token's exp),
// inactive tokens are refused (1003/401), and a server that cannot answer never lets a token in
// (1010). A stream opened with such a token ends at its exp.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SvcError } from '../../../src/core/errors.js'
import { ApiKeyService, createMemoryKeyStorage, type Principal } from '../../../src/engine/index.js'
import { createCredentialAuthenticator } from '../../../src/engine/auth/credential-authenticator.js'
import { OAuthIntrospector, type OAuthIntrospectionInit } from '../../../src/engine/auth/oauth-introspection.js'
import { createTestEngine, principal } from '../../fixtures/engine.js'
import { INTROSPECTOR, startOAuthServer, type OAuthApp, type OAuthServer } from './oauth-server.js'

const acmeApp: OAuthApp = {
  client_id: 'acme-ci', client_secret: 'acme-ci-secret-0123456789',
  claims: { tenant_id: 'acme', roles: ['consumer'], email: 'ci@acme.example' }, scope: 'functions:read functions:execute functions:create',
}
const noTenantApp: OAuthApp = { client_id: 'stray', client_secret: 'stray-secret-0123456789', claims: { roles: ['admin'] } }

async function refusal(promise: Promise<unknown>): Promise<SvcError> {
  try {
    await promise
  } catch (err) {
    expect(err).toBeInstanceOf(SvcError)
    return err as SvcError
  }
  throw new Error('the token was accepted')
}

describe('OAuth 2.0 token introspection against oidc-provider', () => {
  let server: OAuthServer
  const settings = (over: Partial<OAuthIntrospectionInit> = {}): OAuthIntrospectionInit => ({
    endpoint: server.introspectionEndpoint, clientId: INTROSPECTOR.client_id, clientSecret: INTROSPECTOR.client_secret,
    cacheTtlMs: 60_000, cacheMaxEntries: 100, timeoutMs: 5_000,
    tenantClaim: 'tenant_id', rolesClaim: 'roles', scopeClaim: 'scope', userClaim: 'email', clockToleranceSeconds: 0, ...over,
  })

  beforeAll(async () => {
    server = await startOAuthServer([acmeApp, noTenantApp])
  })
  afterAll(() => server?.close())

  it('an active opaque token becomes a principal: tenant, user, roles and scopes from its claims, expiring at exp', async () => {
    const introspector = new OAuthIntrospector(settings({ clockToleranceSeconds: 5 }))
    const before = Math.floor(Date.now() / 1000)
    const { access_token, expires_in } = await server.token(acmeApp, 'functions:read')
    const p = await introspector.verify(access_token)
    expect(p).toMatchObject({ tenant_id: 'acme', user: 'ci@acme.example', method: 'oauth' })
    // consumer: read and execute; the read scope adds nothing beyond
    expect([...p.permissions].sort()).toEqual(['rufid.execute', 'rufid.read'])
    expect(p.expires_at).toBeGreaterThanOrEqual((before + expires_in + 5) * 1000)
    expect(p.expires_at).toBeLessThanOrEqual((Math.ceil(Date.now() / 1000) + expires_in + 5) * 1000)
  })

  it('inactive tokens are refused with 1003 unauthenticated: unknown, revoked, expired, and one without a tenant claim', async () => {
    const introspector = new OAuthIntrospector(settings({ cacheTtlMs: 0 }))
    for (const token of ['not-a-token-the-server-issued', 'a', 'x'.repeat(4096)]) {
      const err = await refusal(introspector.verify(token))
      expect(err).toMatchObject({ code: 1003, reason: 'unauthenticated' })
      expect(err.message).toContain('inactive')
    }
    // oidc-provider declines to introspect a JWT (400 unsupported_token_type): refused too
    const jwt = await refusal(introspector.verify('eyJhbGciOiJub25lIn0.e30.'))
    expect(jwt).toMatchObject({ code: 1003, reason: 'unauthenticated' })
    expect(jwt.message).toContain('unsupported_token_type')
    const { access_token } = await server.token(acmeApp)
    await introspector.verify(access_token)
    await server.revoke(acmeApp, access_token)
    expect(await refusal(introspector.verify(access_token))).toMatchObject({ code: 1003, reason: 'unauthenticated' })
    const stray = await server.token(noTenantApp)
    expect(await refusal(introspector.verify(stray.access_token))).toMatchObject({ code: 1003, message: 'token has no valid tenant_id claim' })
  })

  it('answers are cached: one request per token within the TTL, the cache bounded in size (least recently used go) and by the token exp', async () => {
    const introspector = new OAuthIntrospector(settings({ cacheMaxEntries: 2 }))
    const [t1, t2, t3] = await Promise.all([server.token(acmeApp), server.token(acmeApp), server.token(acmeApp)])
    server.introspections = 0
    // concurrent calls with one token share one request
    await Promise.all([introspector.verify(t1!.access_token), introspector.verify(t1!.access_token), introspector.verify(t1!.access_token)])
    await introspector.verify(t1!.access_token)
    expect(server.introspections).toBe(1)
    await introspector.verify(t2!.access_token)
    await introspector.verify(t1!.access_token) // t1 most recently used now
    await introspector.verify(t3!.access_token) // evicts t2
    expect(introspector.cacheSize).toBe(2)
    expect(server.introspections).toBe(3)
    await introspector.verify(t1!.access_token)
    expect(server.introspections).toBe(3)
    await introspector.verify(t2!.access_token)
    expect(server.introspections).toBe(4)
    // within the TTL a revocation at the server is not seen (the documented price of the cache) …
    await server.revoke(acmeApp, t1!.access_token)
    await introspector.verify(t1!.access_token)

    // … and never past the token's exp: a token that lives 2 s (1–2 s: exp is in whole seconds) is
    // asked about again once it has expired
    server.tokenTtlSeconds = 2
    try {
      const short = await server.token(acmeApp)
      const p = await introspector.verify(short.access_token)
      const asked = server.introspections
      expect(p.expires_at! - Date.now()).toBeLessThanOrEqual(2_000)
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, p.expires_at! - Date.now()) + 50))
      expect(await refusal(introspector.verify(short.access_token))).toMatchObject({ code: 1003, reason: 'unauthenticated' })
      expect(server.introspections).toBe(asked + 1)
    } finally {
      server.tokenTtlSeconds = 600
    }
  })

  it('fails closed with 1010 when the server cannot tell: an error answer, wrong node credentials, no answer in time, unreachable, not an introspection response', async () => {
    const { access_token } = await server.token(acmeApp)
    server.failing = true
    try {
      const err = await refusal(new OAuthIntrospector(settings({ cacheTtlMs: 0 })).verify(access_token))
      expect(err).toMatchObject({ code: 1010, details: { credential: 'introspection_failed' } })
      expect(err.message).toContain('HTTP 503')
    } finally {
      server.failing = false
    }
    expect(await refusal(new OAuthIntrospector(settings({ clientSecret: 'wrong' })).verify(access_token))).toMatchObject({ code: 1010 })

    // a server that accepts and never answers, one that answers something else, and a closed port
    const sockets = new Set<import('node:net').Socket>()
    const silent: Server = createServer((req, res) => {
      if (req.url === '/other') res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')
      if (req.url === '/huge') res.writeHead(200, { 'content-type': 'application/json' }).end(`{"active":true,"tenant_id":"acme","pad":"${'x'.repeat(100_000)}"}`)
    })
    silent.on('connection', (s) => sockets.add(s))
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const base = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`
    try {
      const late = await refusal(new OAuthIntrospector(settings({ endpoint: `${base}/slow`, timeoutMs: 300 })).verify(access_token))
      expect(late).toMatchObject({ code: 1010 })
      expect(late.message).toContain('no answer within 300 ms')
      expect(await refusal(new OAuthIntrospector(settings({ endpoint: `${base}/other` })).verify(access_token))).toMatchObject({ code: 1010 })
      const huge = await refusal(new OAuthIntrospector(settings({ endpoint: `${base}/huge` })).verify(access_token))
      expect(huge).toMatchObject({ code: 1010 })
      expect(huge.message).toContain('larger than 65536 bytes')
    } finally {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => silent.close(() => resolve()))
    }
    expect(await refusal(new OAuthIntrospector(settings({ endpoint: `${base}/gone` })).verify(access_token))).toMatchObject({ code: 1010 })
  })

  it('the authenticator sends opaque tokens (and JWTs when auth.jwt is off) to introspection; API keys, the operator key included, stay keys', async () => {
    const keys = new ApiKeyService({ defaultExpiresDays: 90, maxExpiresDays: 3650 }, createMemoryKeyStorage())
    const admin = { ...principal('acme'), permissions: new Set(['rufid.admin'] as const) } as Principal
    const minted = await keys.mint(admin, { name: 'reader', scopes: ['functions:read'] })
    const operator = await keys.mintFor('default', 'operator', { name: 'admin', scopes: ['admin'], expires_days: null }, 'operator-chosen-admin-key-0123456789')
    const authenticator = createCredentialAuthenticator({}, { apiKeys: keys, introspection: new OAuthIntrospector(settings()) })
    const { access_token } = await server.token(acmeApp)
    server.introspections = 0
    expect(await authenticator.authenticate({ ip: '127.0.0.1', authorization: `Bearer ${access_token}` })).toMatchObject({ tenant_id: 'acme', method: 'oauth' })
    expect(await authenticator.authenticate({ ip: '127.0.0.1', authorization: `Bearer ${minted.api_key}` })).toMatchObject({ method: 'api_key', key_id: minted.key_id })
    expect(await authenticator.authenticate({ ip: '127.0.0.1', authorization: `Bearer ${operator.api_key}` })).toMatchObject({ method: 'api_key', tenant_id: 'default' })
    expect(server.introspections).toBe(1)
    await keys.revoke(admin, minted.key_id)
    // a revoked key stays a revoked key (not asked about at the server)
    expect(await refusal(authenticator.authenticate({ ip: '127.0.0.1', authorization: `Bearer ${minted.api_key}` }))).toMatchObject({ message: 'API key revoked' })
    const jwtShaped = await refusal(authenticator.authenticate({ ip: '127.0.0.1', authorization: 'Bearer eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln' }))
    expect(jwtShaped).toMatchObject({ code: 1003, reason: 'unauthenticated' })
    expect(jwtShaped.message).toContain('unsupported_token_type')
    expect(server.introspections).toBe(2)
  })

  it('a stream opened with an introspected token ends at the token exp, with 1003 token expired', async () => {
    const { engine } = await createTestEngine({ auth: { oauthIntrospection: settings() } })
    // 1–2 s left when issued (exp is in whole seconds)
    server.tokenTtlSeconds = 2
    try {
      const { access_token } = await server.token(acmeApp)
      const caller = await engine.access.admit({ authorization: `Bearer ${access_token}`, ip: '127.0.0.1' })
      expect(caller).toMatchObject({ tenant_id: 'acme', method: 'oauth' })
      const ends: SvcError[] = []
      engine.access.hold(caller, (reason) => ends.push(reason))
      const deadline = Date.now() + 5_000
      while (ends.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
      expect(ends.map((e) => [e.code, e.message, e.details])).toEqual([[1003, 'token expired', { credential: 'expired' }]])
      expect(Date.now()).toBeGreaterThanOrEqual(caller.expires_at!)
    } finally {
      server.tokenTtlSeconds = 600
      await engine.stop()
    }
  })
})
