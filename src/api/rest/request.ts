import type { RestContext } from './operation.js'

export type Body = Record<string, unknown>

/** The parsed JSON body when it is an object, else an empty object (validation reports what is missing). */
export const bodyOf = (ctx: Pick<RestContext, 'request'>): Body => {
  const b = (ctx.request as { body?: unknown }).body
  return b !== null && typeof b === 'object' && !Array.isArray(b) ? (b as Body) : {}
}
