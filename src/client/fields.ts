/**
 * The field names every client exposes the same way, whatever node version answers (issue 13,
 * the lead's decision on field names):
 *
 * - every body that names a function carries `rufid_short` (the 12-character hash) and
 *   `full_rufid` (`rufid:<short>:v<n>:<tenant>`); `rufid` keeps the meaning the spec gives it per
 *   body (metadata: short; create, resolution, execution record, events: full). A node that sends
 *   only one of them gets the other derived here;
 * - the execution record says `tenant_id`; older nodes say `tenant` (kept one release as a
 *   deprecated alias), which is read when `tenant_id` is absent.
 *
 * Nothing is invented: a form that cannot be derived (no version or tenant known) stays absent.
 */
import { FULL_RUFID, SHORT_RUFID, VERSION_LABEL, formatRufid } from '../core/rufid.js'

type Body = Record<string, unknown>

const isBody = (value: unknown): value is Body => value !== null && typeof value === 'object' && !Array.isArray(value)

/** Adds the missing one of `rufid_short` / `full_rufid` to a body that names a function (in place; returns it). */
export function withRufidForms<T>(body: T): T {
  if (!isBody(body)) return body
  const b = body as Body
  const candidates = [b.full_rufid, b.rufid].filter((v): v is string => typeof v === 'string')
  const full = candidates.find((v) => FULL_RUFID.test(v))
  if (b.full_rufid === undefined && full !== undefined) b.full_rufid = full
  if (b.rufid_short === undefined) {
    const m = full === undefined ? undefined : FULL_RUFID.exec(full)
    if (m) b.rufid_short = m[1]
    else if (typeof b.rufid === 'string' && SHORT_RUFID.test(b.rufid)) b.rufid_short = b.rufid
  }
  if (b.full_rufid === undefined && typeof b.rufid_short === 'string' && typeof b.version === 'string') {
    const v = VERSION_LABEL.exec(b.version)
    const tenant = typeof b.tenant_id === 'string' ? b.tenant_id : typeof b.tenant === 'string' ? b.tenant : undefined
    if (v && tenant !== undefined) b.full_rufid = formatRufid(b.rufid_short, Number(v[1]), tenant)
  }
  return body
}

/** An execution record: `tenant_id` (from `tenant` on older nodes) and both RUFID forms. */
export function executionRecordFields<T>(record: T): T {
  if (!isBody(record)) return record
  const r = record as Body
  if (r.tenant_id === undefined && typeof r.tenant === 'string') r.tenant_id = r.tenant
  return withRufidForms(record)
}

/** `withRufidForms` on every item of `body[key]` (lists and pages). */
export function withRufidFormsIn<T>(body: T, ...keys: string[]): T {
  if (!isBody(body)) return body
  for (const key of keys) {
    const list = (body as Body)[key]
    if (Array.isArray(list)) for (const item of list) withRufidForms(item)
    else if (isBody(list)) withRufidForms(list)
  }
  return body
}
