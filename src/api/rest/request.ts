import type { RestContext } from './app.js'

export type Body = Record<string, unknown>

/** The parsed JSON body when it is an object, else an empty object (validation reports what is missing). */
export const bodyOf = (ctx: RestContext): Body => {
  const b = (ctx.request as { body?: unknown }).body
  return b !== null && typeof b === 'object' && !Array.isArray(b) ? (b as Body) : {}
}

export const queryString = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v)

export const queryInt = (v: string | string[] | undefined): number | undefined => {
  const s = queryString(v)
  return s === undefined || s === '' ? undefined : Number(s)
}
