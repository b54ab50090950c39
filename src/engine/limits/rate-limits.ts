import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible'
import { SvcError } from '../../core/errors.js'
import type { Principal } from '../types.js'

export interface RateLimitRule {
  /** requests allowed per window; 0 disables the rule */
  points: number
  windowSeconds: number
}

export interface RateLimitsInit {
  perKey: RateLimitRule
  perTenant: RateLimitRule
  /** callers without a valid credential, per IP address (slows credential guessing) */
  perIpUnauthenticated: RateLimitRule
}

/**
 * Request budgets per credential, per tenant and, before authentication succeeds, per IP. One
 * instance serves every protocol. Over budget: 1005 RATE_LIMITED with the seconds to wait.
 */
export class RateLimits {
  private readonly perKey: RateLimiterMemory | undefined
  private readonly perTenant: RateLimiterMemory | undefined
  private readonly perIp: RateLimiterMemory | undefined

  constructor(init: RateLimitsInit) {
    const make = (r: RateLimitRule, keyPrefix: string) =>
      r.points > 0 ? new RateLimiterMemory({ points: r.points, duration: r.windowSeconds, keyPrefix }) : undefined
    this.perKey = make(init.perKey, 'key')
    this.perTenant = make(init.perTenant, 'tenant')
    this.perIp = make(init.perIpUnauthenticated, 'ip')
  }

  /** Charges one request to the principal's credential and tenant. */
  async charge(principal: Principal, ip: string): Promise<void> {
    const credential = principal.key_id ?? `${principal.method}:${principal.user}:${principal.method === 'anonymous' ? ip : ''}`
    await consume(this.perKey, credential, 'credential')
    await consume(this.perTenant, principal.tenant_id, 'tenant')
  }

  /** Charges one failed authentication to the caller's address. */
  async chargeUnauthenticated(ip: string): Promise<void> {
    await consume(this.perIp, ip, 'address')
  }
}

async function consume(limiter: RateLimiterMemory | undefined, key: string, what: string): Promise<void> {
  if (!limiter) return
  try {
    await limiter.consume(key, 1)
  } catch (res) {
    if (!(res instanceof RateLimiterRes)) throw res
    const retryAfterSeconds = Math.max(1, Math.ceil(res.msBeforeNext / 1000))
    throw new SvcError('RATE_LIMITED', `rate limit of this ${what} exceeded; retry in ${retryAfterSeconds} s`, {
      retryAfterSeconds,
      details: { limit: what, retry_after_s: retryAfterSeconds },
    })
  }
}
