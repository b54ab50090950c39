import { createHash } from 'node:crypto'
import { SvcError } from '../../core/errors.js'
import { isValidTenantId } from '../../core/rufid.js'
import type { Principal } from '../types.js'
import { unauthenticated } from './api-keys.js'
import { permissionsOf } from './permissions.js'

export interface OAuthIntrospectionInit {
  /** the authorization server's introspection endpoint (RFC 7662 §2) */
  endpoint: string
  /** this node's client credentials at the authorization server (HTTP Basic, RFC 6749 §2.3.1) */
  clientId: string
  clientSecret: string
  /** an active token's answer is reused this long at most (ms), and never past the token's `exp`; 0: every call asks */
  cacheTtlMs: number
  /** at most this many answers are kept (the least recently used go first) */
  cacheMaxEntries: number
  /** one introspection request may take this long (ms) before the call fails with 1010 */
  timeoutMs: number
  /** the introspection response members that give the tenant, roles, scopes and user */
  tenantClaim: string
  rolesClaim: string
  scopeClaim: string
  userClaim: string
  /** seconds of clock skew allowed on `exp` and `nbf`, as for JWTs */
  clockToleranceSeconds: number
}

export interface OAuthIntrospectionComponents {
  /** the HTTP client (tests and proxies); default: the global fetch */
  fetch?: typeof fetch
  /** the clock, in ms (tests) */
  now?: () => number
}

/** The largest introspection response read (a token's claims, not a document). */
const MAX_RESPONSE_BYTES = 64 * 1024

interface Cached {
  principal: Principal
  /** when this answer stops being reused (ms): min(asked + TTL, the token's expiry) */
  until: number
}

/**
 * OAuth 2.0 token introspection (RFC 7662) for opaque bearer tokens: the node asks the
 * authorization server whether a token is active, authenticating with its own client credentials,
 * and makes the principal from the answer's claims (tenant, roles, scope, user, `exp`). It fails
 * closed: an inactive, expired or not-yet-valid token, one without a valid tenant claim, or one
 * whose kind the server declines to introspect (400 `unsupported_token_type`) is refused with 1003
 * (401); a server that cannot be reached, answers late, answers an error or
 * something that is not an introspection response fails the call with 1010 (503): it is never
 * taken as an acceptance.
 *
 * Active answers are cached by the token's SHA-256 for at most `cacheTtlMs` and never past the
 * token's `exp`; the cache holds at most `cacheMaxEntries` (least recently used evicted). Negative
 * answers are not cached. Concurrent calls with one token share one request. A revocation at the
 * server is therefore seen within `cacheTtlMs`. The principal carries `expires_at` (exp plus the
 * clock tolerance), so a stream opened with the token ends then (credential-streams.ts).
 */
export class OAuthIntrospector {
  private readonly cache = new Map<string, Cached>()
  private readonly inFlight = new Map<string, Promise<Principal>>()
  private readonly fetch: typeof fetch
  private readonly now: () => number
  private readonly authorization: string

  constructor(
    private readonly init: OAuthIntrospectionInit,
    components: OAuthIntrospectionComponents = {},
  ) {
    const url = new URL(init.endpoint)
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error('auth.oauth_introspection.endpoint must be an http(s) URL')
    this.fetch = components.fetch ?? globalThis.fetch
    this.now = components.now ?? Date.now
    // RFC 6749 §2.3.1: each part form-urlencoded before the Basic encoding
    const part = (s: string) => encodeURIComponent(s).replace(/%20/g, '+')
    this.authorization = `Basic ${Buffer.from(`${part(init.clientId)}:${part(init.clientSecret)}`).toString('base64')}`
  }

  /** Answers kept now (for tests and metrics). */
  get cacheSize(): number {
    return this.cache.size
  }

  /** The principal of an active token; throws 1003 for a token refused, 1010 when the server cannot tell. */
  async verify(token: string): Promise<Principal> {
    const id = createHash('sha256').update(token).digest('base64url')
    const now = this.now()
    const cached = this.cache.get(id)
    if (cached !== undefined) {
      this.cache.delete(id)
      if (cached.until > now) {
        this.cache.set(id, cached)
        return cached.principal
      }
    }
    let pending = this.inFlight.get(id)
    if (pending === undefined) {
      pending = this.ask(token, id).finally(() => this.inFlight.delete(id))
      this.inFlight.set(id, pending)
    }
    return pending
  }

  private async ask(token: string, id: string): Promise<Principal> {
    const asked = this.now()
    const claims = await this.introspect(token)
    const principal = this.principalOf(claims, this.now())
    const until = Math.min(asked + this.init.cacheTtlMs, principal.expires_at ?? Number.POSITIVE_INFINITY)
    if (until > this.now() && this.init.cacheMaxEntries > 0) {
      this.cache.set(id, { principal, until })
      while (this.cache.size > this.init.cacheMaxEntries) this.cache.delete(this.cache.keys().next().value!)
    }
    return principal
  }

  private async introspect(token: string): Promise<Record<string, unknown>> {
    let res: Response
    try {
      res = await this.fetch(this.init.endpoint, {
        method: 'POST',
        headers: { authorization: this.authorization, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
        redirect: 'error',
        signal: AbortSignal.timeout(this.init.timeoutMs),
      })
    } catch (err) {
      const e = err as Error
      throw unavailable(e.name === 'TimeoutError' ? `no answer within ${this.init.timeoutMs} ms` : `unreachable (${(e.cause as Error | undefined)?.message ?? e.message})`)
    }
    let text: string
    try {
      text = await readBounded(res)
    } catch (err) {
      throw unavailable(`its answer could not be read: ${(err as Error).message}`)
    }
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      throw unavailable(`its answer is not JSON (HTTP ${res.status})`)
    }
    if (res.status !== 200) {
      // a server that declines this token's kind (RFC 7009's `unsupported_token_type`, e.g. a JWT
      // it will not introspect) has answered about the token: refused, not an outage
      const error = (body as { error?: unknown } | null)?.error
      if (res.status === 400 && error === 'unsupported_token_type') throw unauthenticated('invalid token: the authorization server does not introspect this kind of token (unsupported_token_type)')
      throw unavailable(`it answered HTTP ${res.status}${typeof error === 'string' ? ` (${error.slice(0, 64)})` : ''}`)
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body) || typeof (body as { active?: unknown }).active !== 'boolean') {
      throw unavailable('its answer is not an introspection response (no boolean "active")')
    }
    return body as Record<string, unknown>
  }

  private principalOf(claims: Record<string, unknown>, now: number): Principal {
    if (claims.active !== true) throw unauthenticated('invalid token: inactive (revoked, expired or unknown to the authorization server)')
    const tolerance = this.init.clockToleranceSeconds
    const exp = typeof claims.exp === 'number' && Number.isFinite(claims.exp) ? claims.exp : undefined
    if (exp !== undefined && (exp + tolerance) * 1000 <= now) throw unauthenticated('invalid token: expired')
    if (typeof claims.nbf === 'number' && (claims.nbf - tolerance) * 1000 > now) throw unauthenticated('invalid token: not valid yet')
    const tenant = claims[this.init.tenantClaim]
    if (!isValidTenantId(tenant)) throw unauthenticated(`token has no valid ${this.init.tenantClaim} claim`)
    const user = claims[this.init.userClaim] ?? claims.sub ?? claims.client_id ?? 'unknown'
    return {
      tenant_id: tenant,
      user: String(user),
      permissions: permissionsOf({ roles: listClaim(claims[this.init.rolesClaim]), scopes: listClaim(claims[this.init.scopeClaim]) }),
      method: 'oauth',
      // the token is accepted until exp + the clock tolerance, and so are its streams
      ...(exp === undefined ? {} : { expires_at: (exp + tolerance) * 1000 }),
    }
  }
}

function unavailable(why: string): SvcError {
  return new SvcError('SERVICE_UNAVAILABLE', `the token could not be checked: the authorization server's introspection endpoint ${why}`, {
    details: { credential: 'introspection_failed' },
  })
}

async function readBounded(res: Response): Promise<string> {
  if (res.body === null) return ''
  const chunks: Uint8Array[] = []
  let size = 0
  const reader = res.body.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      size += value.byteLength
      if (size > MAX_RESPONSE_BYTES) throw new Error(`larger than ${MAX_RESPONSE_BYTES} bytes`)
      chunks.push(value)
    }
  } finally {
    reader.cancel().catch(() => undefined)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** A claim holding a list: a JSON array, or a space-separated string (OAuth `scope`). */
function listClaim(value: unknown): string[] {
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string')
  if (typeof value === 'string') return value.split(/\s+/).filter(Boolean)
  return []
}
