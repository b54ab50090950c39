import { validationFailed } from '../../core/errors.js'
import { isValidTenantId } from '../../core/rufid.js'
import type { Permission, Principal } from '../types.js'
import type { Authenticator, CredentialInput } from './authenticator.js'

const LOCAL_PERMISSIONS: ReadonlySet<Permission> = new Set(['rufid.create', 'rufid.read', 'rufid.execute', 'rufid.delete'])

/**
 * Local mode (`auth.provider: none`): no credentials; the tenant is the `X-Svc-Namespace` header
 * (default `default`). For a node on a developer's machine only; the README says so.
 */
export function createLocalAuthenticator(init: { defaultTenant: string }): Authenticator {
  return {
    async authenticate(input: CredentialInput): Promise<Principal> {
      const tenant = input.namespace === undefined || input.namespace === '' ? init.defaultTenant : input.namespace
      if (!isValidTenantId(tenant)) {
        throw validationFailed('X-Svc-Namespace must be 1–64 characters of A-Z a-z 0-9 _ . -', [
          { pointer: '/headers/x-svc-namespace', message: 'malformed namespace' },
        ])
      }
      return { tenant_id: tenant, user: `local@${tenant}`, permissions: LOCAL_PERMISSIONS, method: 'anonymous' }
    },
  }
}
