import { createPublicKey, type KeyObject } from 'node:crypto'
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose'
import { isValidTenantId } from '../../core/rufid.js'
import type { Principal } from '../types.js'
import { unauthenticated } from './api-keys.js'
import { permissionsOf } from './permissions.js'

export interface JwtVerifierInit {
  /** a JWKS document URL (OAuth 2.0 / OIDC providers publish one) … */
  jwksUrl?: string | undefined
  /** … or one PEM public key (SPKI) */
  publicKeyPem?: string | undefined
  issuer: string
  audience: string
  /** asymmetric algorithms only: `none` and HMAC are never accepted */
  algorithms: string[]
  tenantClaim: string
  rolesClaim: string
  scopeClaim: string
  userClaim: string
  clockToleranceSeconds: number
}

const ASYMMETRIC = /^(RS|PS|ES)(256|384|512)$|^EdDSA$|^Ed25519$/

/**
 * Verifies JWT bearer tokens (OAuth 2.0 access tokens in JWT form use the same path): signature
 * against the configured key(s), issuer, audience, expiry; the tenant, roles and scopes come from
 * configured claims.
 */
export class JwtVerifier {
  private readonly key: KeyObject | ReturnType<typeof createRemoteJWKSet>

  constructor(private readonly init: JwtVerifierInit) {
    const bad = init.algorithms.filter((a) => !ASYMMETRIC.test(a))
    if (bad.length > 0) throw new Error(`JWT algorithms must be asymmetric, not ${bad.join(', ')}`)
    if (init.jwksUrl) this.key = createRemoteJWKSet(new URL(init.jwksUrl), { timeoutDuration: 5000 })
    else if (init.publicKeyPem) this.key = createPublicKey(init.publicKeyPem)
    else throw new Error('JWT verification needs a JWKS URL or a public key')
  }

  async verify(token: string): Promise<Principal> {
    let payload: JWTPayload
    try {
      const verified = await jwtVerify(token, this.key as Parameters<typeof jwtVerify>[1], {
        issuer: this.init.issuer,
        audience: this.init.audience,
        algorithms: this.init.algorithms,
        clockTolerance: this.init.clockToleranceSeconds,
        requiredClaims: ['exp'],
      })
      payload = verified.payload
    } catch (err) {
      throw unauthenticated(`invalid token: ${(err as { code?: string }).code ?? 'verification failed'}`)
    }
    const tenant = payload[this.init.tenantClaim]
    if (!isValidTenantId(tenant)) throw unauthenticated(`token has no valid ${this.init.tenantClaim} claim`)
    const roles = listClaim(payload[this.init.rolesClaim])
    const scopes = listClaim(payload[this.init.scopeClaim])
    const user = payload[this.init.userClaim] ?? payload.sub ?? 'unknown'
    return {
      tenant_id: tenant,
      user: String(user),
      permissions: permissionsOf({ roles, scopes }),
      method: 'jwt',
      // `exp` is required: the token is accepted until exp + the clock tolerance, and so are its streams
      ...(typeof payload.exp === 'number' ? { expires_at: (payload.exp + this.init.clockToleranceSeconds) * 1000 } : {}),
    }
  }
}

/** A claim holding a list: a JSON array, or a space-separated string (OAuth `scope`). */
function listClaim(value: unknown): string[] {
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string')
  if (typeof value === 'string') return value.split(/\s+/).filter(Boolean)
  return []
}
