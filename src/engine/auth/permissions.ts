import { ALL_PERMISSIONS, type Permission } from '../types.js'

export type Role = 'developer' | 'consumer' | 'admin'
export const ROLES: readonly Role[] = ['developer', 'consumer', 'admin']

/** service-spec §5 roles. */
export const ROLE_PERMISSIONS: Record<Role, readonly Permission[]> = {
  developer: ['rufid.create', 'rufid.read', 'rufid.execute'],
  consumer: ['rufid.read', 'rufid.execute'],
  admin: ALL_PERMISSIONS,
}

/** decisions.md: API key scopes and the permissions they grant. */
export const SCOPE_PERMISSIONS: Record<string, readonly Permission[]> = {
  'functions:create': ['rufid.create'],
  'functions:read': ['rufid.read'],
  'functions:execute': ['rufid.execute'],
  'functions:delete': ['rufid.delete'],
  admin: ALL_PERMISSIONS,
}
export const SCOPES = Object.keys(SCOPE_PERMISSIONS)

const PERMISSION_NAMES = new Set<string>(ALL_PERMISSIONS)

/**
 * Permissions granted by roles, scopes and permission names (`rufid.*` included). Unknown names
 * grant nothing.
 */
export function permissionsOf(grants: { roles?: readonly string[]; scopes?: readonly string[] }): Set<Permission> {
  const out = new Set<Permission>()
  for (const role of grants.roles ?? []) for (const p of ROLE_PERMISSIONS[role as Role] ?? []) out.add(p)
  for (const scope of grants.scopes ?? []) {
    if (scope === 'rufid.*') ALL_PERMISSIONS.forEach((p) => out.add(p))
    else if (PERMISSION_NAMES.has(scope)) out.add(scope as Permission)
    else for (const p of SCOPE_PERMISSIONS[scope] ?? []) out.add(p)
  }
  return out
}
