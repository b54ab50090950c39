import { SvcError, toSvcError } from '../../core/errors.js'
import type { AuditLog } from '../audit/audit-log.js'
import type { RateLimits } from '../limits/rate-limits.js'
import type { Principal } from '../types.js'
import type { Authenticator, CredentialInput } from './authenticator.js'
import { narrow } from './credential-authenticator.js'
import { CredentialStreams, type StreamHold } from './credential-streams.js'

/** What an adapter tells the gate about one finished operation. */
export interface OperationOutcome {
  /** e.g. `rufid.execute`, `rufid.create`, `auth.key_mint` */
  operation: string
  principal?: Principal | undefined
  ip: string
  rufid?: string | null | undefined
  /** `performance.now()` when the request arrived */
  startedAt: number
  error?: unknown
}

/**
 * The one way into the engine for every protocol: authenticate, charge the rate limits, and
 * audit each operation (success, failure, authentication failure, permission denial) before the
 * answer leaves the node.
 */
export class AccessGate {
  /** the streams open on this node by credential: the key service reports revocations to it */
  readonly streams: CredentialStreams

  constructor(private readonly c: { authenticator: Authenticator; rateLimits: RateLimits; audit: AuditLog; streams?: CredentialStreams }) {
    this.streams = c.streams ?? new CredentialStreams()
  }

  /**
   * A Principal for these credentials, narrowed to `X-Svc-Namespace` (a child namespace of the
   * credential's tenant, never another tenant), or 1003 (401/403) or 1005. An address that used up
   * its failed-authentication budget is refused (1005) before its credential is looked at. Rate limits are charged
   * to the credential and its own tenant before narrowing, so namespaces share the tenant's
   * budget. `caller.principal` is set as soon as the caller is known (before the rate limits are
   * charged), so a later refusal is audited under its tenant.
   */
  async admit(input: CredentialInput, caller?: { principal: Principal | undefined }): Promise<Principal> {
    // an address over its failed-authentication budget gets no credential checked (1005)
    await this.c.rateLimits.admitAddress(input.ip)
    let principal: Principal
    try {
      principal = await this.c.authenticator.authenticate(input)
    } catch (err) {
      if (err instanceof SvcError && err.reason === 'unauthenticated') await this.c.rateLimits.chargeUnauthenticated(input.ip)
      throw err
    }
    if (caller) caller.principal = principal
    // the budgets belong to the credential and its own tenant: charging the narrowed principal
    // would give every child namespace (acme.n1, acme.n2, …) a tenant budget of its own
    await this.c.rateLimits.charge(principal, input.ip)
    return narrow(principal, input.namespace)
  }

  /**
   * Holds a stream an admitted principal opened, until its key is revoked or its credential
   * expires: then `end` gets the 1003 it ends with (see `CredentialStreams.hold`).
   */
  hold(principal: Principal, end: (reason: SvcError) => void): StreamHold {
    return this.streams.hold(principal, end)
  }

  /**
   * Writes the audit entry of one operation. A rate-limit refusal is cheap on purpose (a flood is
   * mostly refusals): the audit log writes the first of a caller's refusals at once and counts the
   * rest into one summary entry per period.
   */
  async audit(outcome: OperationOutcome): Promise<void> {
    const err = outcome.error === undefined ? undefined : toSvcError(outcome.error)
    const p = outcome.principal
    const result = resultOf(err)
    await this.c.audit[result === 'rate_limited' ? 'recordRefusal' : 'record']({
      operation: outcome.operation,
      rufid: outcome.rufid ?? null,
      user: p?.user ?? null,
      tenant: p?.tenant_id ?? null,
      ip: outcome.ip,
      result,
      duration_ms: Math.round((performance.now() - outcome.startedAt) * 1000) / 1000,
      ...(err ? { code: err.code } : {}),
      ...(p?.key_id ? { key_id: p.key_id } : {}),
      ...(p ? { method: p.method } : {}),
    })
  }
}

function resultOf(err: SvcError | undefined): string {
  if (!err) return 'success'
  // a stream its credential's revocation or expiry ended says which (`revoked`, `expired`)
  if (err.code === 1003 && err.reason === 'unauthenticated' && (err.details.credential === 'revoked' || err.details.credential === 'expired')) return err.details.credential
  if (err.code === 1003) return err.reason === 'unauthenticated' ? 'unauthenticated' : 'denied'
  if (err.code === 1005) return 'rate_limited'
  return 'error'
}
