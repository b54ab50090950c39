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
  private readonly ipPoints: number

  constructor(init: RateLimitsInit) {
    const make = (r: RateLimitRule, keyPrefix: string) =>
      r.points > 0 ? new RateLimiterMemory({ points: r.points, duration: r.windowSeconds, keyPrefix }) : undefined
    this.perKey = make(init.perKey, 'key')
    this.perTenant = make(init.perTenant, 'tenant')
    this.perIp = make(init.perIpUnauthenticated, 'ip')
    this.ipPoints = init.perIpUnauthenticated.points
  }

  /**
   * 1005 when the address has used up its failed-authentication budget: until its window ends no
   * credential from it is checked at all, so a flood of guesses gets no answer that tells a right
   * guess from a wrong one (a valid credential from that address waits like the rest).
   */
  async admitAddress(ip: string): Promise<void> {
    if (!this.perIp) return
    const res = await this.perIp.get(ip)
    if (res !== null && res.consumedPoints >= this.ipPoints) throw rateLimited(res, 'address')
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
    throw rateLimited(res, what)
  }
}

function rateLimited(res: RateLimiterRes, what: string): SvcError {
  const retryAfterSeconds = Math.max(1, Math.ceil(res.msBeforeNext / 1000))
  return new SvcError('RATE_LIMITED', `rate limit of this ${what} exceeded; retry in ${retryAfterSeconds} s`, {
    retryAfterSeconds,
    details: { limit: what, retry_after_s: retryAfterSeconds },
  })
}
