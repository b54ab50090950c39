import { SvcError, validationFailed } from '../../core/errors.js'
import { isValidTenantId } from '../../core/rufid.js'
import type { Principal } from '../types.js'
import type { ApiKeyService } from './api-keys.js'
import { unauthenticated } from './api-keys.js'
import type { Authenticator, CredentialInput } from './authenticator.js'
import type { JwtVerifier } from './jwt-verifier.js'
import type { OAuthIntrospector } from './oauth-introspection.js'
import { permissionsOf, type Role } from './permissions.js'

export interface CredentialAuthenticatorInit {
  /** callers without credentials get this principal; absent: they get 401 */
  anonymous?: { tenant: string; roles: Role[] } | undefined
  /** mutual TLS: how a verified client certificate becomes a principal */
  mtls?: { roles: Role[] } | undefined
}

export interface CredentialAuthenticatorComponents {
  apiKeys: ApiKeyService
  jwt?: JwtVerifier | undefined
  /** OAuth 2.0 token introspection (RFC 7662) for bearer tokens that are neither API keys nor JWTs (when jwt is off, JWTs too) */
  introspection?: OAuthIntrospector | undefined
}

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/

/** What every API key starts with (api-keys.ts): such a bearer token is never sent to an authorization server. */
const API_KEY_PREFIX = 'svck_'
/** api-keys.ts's refusal of a token no key has */
const INVALID_API_KEY = 'invalid API key'

/**
 * Bearer API keys, bearer JWTs (OAuth 2.0 access tokens in JWT form), opaque OAuth 2.0 access
 * tokens checked by introspection, and verified TLS client certificates. The tenant comes from
 * the credential (the gate applies `X-Svc-Namespace`).
 *
 * Which check a bearer token gets: `svck_…` is an API key; a JWT-shaped token is verified as a JWT
 * when auth.jwt is on, else introspected when auth.oauth_introspection is on; any other token is an
 * API key (an operator-chosen ADMIN_API_KEY has any form) and, when no key has it and
 * introspection is on, an opaque OAuth token.
 */
export function createCredentialAuthenticator(
  init: CredentialAuthenticatorInit,
  { apiKeys, jwt, introspection }: CredentialAuthenticatorComponents,
): Authenticator {
  async function fromCredentials(input: CredentialInput): Promise<Principal> {
    const header = input.authorization
    if (header === undefined || header === '') {
      if (input.clientCertificate) return fromCertificate(input.clientCertificate)
      if (init.anonymous) {
        return { tenant_id: init.anonymous.tenant, user: 'anonymous', permissions: permissionsOf({ roles: init.anonymous.roles }), method: 'anonymous' }
      }
      throw unauthenticated('credentials required: Authorization: Bearer <token>')
    }
    const m = /^Bearer[ \t]+(\S{1,4096})\s*$/i.exec(header)
    if (!m) throw unauthenticated('malformed Authorization header: expected "Bearer <token>"')
    const token = m[1]!
    if (JWT_SHAPE.test(token)) {
      if (jwt) return jwt.verify(token)
      if (introspection) return introspection.verify(token)
      throw unauthenticated('JWT bearer tokens are not accepted by this node')
    }
    const key = introspection !== undefined && !token.startsWith(API_KEY_PREFIX)
      ? await apiKeys.verify(token).catch((err: unknown) => {
          // no key has it: an opaque access token, for the authorization server to tell
          if (err instanceof SvcError && err.message === INVALID_API_KEY) return undefined
          throw err
        })
      : await apiKeys.verify(token)
    if (key === undefined) return introspection!.verify(token)
    return {
      tenant_id: key.tenant_id,
      user: `key:${key.name}`,
      permissions: permissionsOf({ scopes: key.scopes }),
      method: 'api_key',
      key_id: key.key_id,
      ...(key.expires_at === null ? {} : { expires_at: Date.parse(key.expires_at) }),
    }
  }

  function fromCertificate(cert: NonNullable<CredentialInput['clientCertificate']>): Principal {
    if (!init.mtls) throw unauthenticated('client certificates are not accepted by this node')
    const fields = parseSubject(cert.subject)
    const tenant = fields.O
    if (!isValidTenantId(tenant)) throw unauthenticated('client certificate has no valid O (tenant) in its subject')
    const roles = fields.OU && ['developer', 'consumer', 'admin'].includes(fields.OU) ? [fields.OU as Role] : init.mtls.roles
    const notAfter = cert.validTo === undefined ? Number.NaN : Date.parse(cert.validTo)
    return {
      tenant_id: tenant, user: fields.CN ?? cert.fingerprint256, permissions: permissionsOf({ roles }), method: 'mtls',
      // streams opened with the certificate end when it expires
      ...(Number.isFinite(notAfter) ? { expires_at: notAfter } : {}),
    }
  }

  return {
    authenticate: fromCredentials,
  }
}

/** Applies `X-Svc-Namespace`: the credential's tenant itself or one of its child namespaces. */
export function narrow(principal: Principal, namespace: string | undefined): Principal {
  if (namespace === undefined || namespace === '' || namespace === principal.tenant_id) return principal
  if (!isValidTenantId(namespace)) {
    throw validationFailed('X-Svc-Namespace must be 1–64 characters of A-Z a-z 0-9 _ . -', [
      { pointer: '/headers/x-svc-namespace', message: 'malformed namespace' },
    ])
  }
  if (!namespace.startsWith(`${principal.tenant_id}.`)) {
    throw new SvcError('PERMISSION_DENIED', `namespace ${namespace} is outside the credential's tenant`, {
      details: { namespace, tenant_id: principal.tenant_id },
    })
  }
  return { ...principal, tenant_id: namespace }
}

/** `CN=a,O=b` or Node's multi-line `CN=a\nO=b` into fields. */
function parseSubject(subject: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const part of subject.split(/\n|,(?=[A-Za-z]+=)/)) {
    const i = part.indexOf('=')
    if (i > 0) out[part.slice(0, i).trim()] = part.slice(i + 1).trim()
  }
  return out
}
