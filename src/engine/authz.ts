import { SvcError } from '../core/errors.js'
import type { Permission, Principal } from './types.js'

export function hasPermission(principal: Principal, permission: Permission): boolean {
  return principal.permissions.has('rufid.admin') || principal.permissions.has(permission)
}

/** Throws 1003 PERMISSION_DENIED unless the principal holds `permission` (or rufid.admin). */
export function requirePermission(principal: Principal, permission: Permission): void {
  if (!hasPermission(principal, permission)) {
    throw new SvcError('PERMISSION_DENIED', `missing permission ${permission}`, {
      details: { required: permission, tenant_id: principal.tenant_id },
    })
  }
}
