import { z } from 'zod'
import { validationFailed } from '../core/errors.js'

/** RFC 6901 JSON pointer of a zod issue path. */
export function jsonPointer(path: ReadonlyArray<PropertyKey>): string {
  return path.map((p) => '/' + String(p).replace(/~/g, '~0').replace(/\//g, '~1')).join('')
}

/** Parses `value` with `schema`, or throws 1006 listing the JSON pointer of every problem. */
export function parseOrThrow<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const parsed = schema.safeParse(value)
  if (parsed.success) return parsed.data
  const problems = parsed.error.issues.map((issue) => ({ pointer: jsonPointer(issue.path), message: issue.message }))
  const first = problems[0]
  throw validationFailed(`invalid ${what}: ${first ? `${first.pointer || '/'} ${first.message}` : 'rejected'}`, problems)
}
