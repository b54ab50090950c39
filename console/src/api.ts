// The node's public API, called with the signed-in credential as a Bearer header. The credential
// lives in sessionStorage only (gone when the tab closes), never in a URL.

const TOKEN_KEY = 'svc-console.token'

/** An error answer of the node: `{"error": {code, name, message, details}}` (or a network failure). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: number | null,
    readonly errorName: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message)
  }
}

export const session = {
  get token(): string | null {
    return sessionStorage.getItem(TOKEN_KEY)
  },
  set(token: string): void {
    sessionStorage.setItem(TOKEN_KEY, token)
  },
  clear(): void {
    sessionStorage.removeItem(TOKEN_KEY)
  },
}

type UnauthorizedListener = (err: ApiError) => void
let onUnauthorized: UnauthorizedListener | undefined

/** Called when a signed-in request is refused with 401 (the key was revoked or has expired). */
export function setUnauthorizedListener(listener: UnauthorizedListener | undefined): void {
  onUnauthorized = listener
}

export interface RequestOptions {
  /** use this credential instead of the session's (sign-in checks a key before keeping it) */
  token?: string | null
  /** the answer is text, not JSON (`/metrics`) */
  text?: boolean
}

export async function api<T = Record<string, unknown>>(method: string, path: string, body?: unknown, options: RequestOptions = {}): Promise<T> {
  const token = options.token === undefined ? session.token : options.token
  const headers: Record<string, string> = { accept: options.text ? 'text/plain' : 'application/json' }
  if (token) headers.authorization = `Bearer ${token}`
  if (body !== undefined) headers['content-type'] = 'application/json'
  let res: Response
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store', credentials: 'omit' })
  } catch (err) {
    throw new ApiError(0, null, 'NETWORK_ERROR', `the node could not be reached (${(err as Error).message})`)
  }
  const text = await res.text()
  if (res.ok) return (options.text ? text : text ? JSON.parse(text) : {}) as T
  let error: ApiError
  try {
    const e = (JSON.parse(text) as { error?: { code?: number; name?: string; message?: string; details?: Record<string, unknown> } }).error
    error = new ApiError(res.status, e?.code ?? null, e?.name ?? `HTTP_${res.status}`, e?.message ?? res.statusText, e?.details ?? {})
  } catch {
    error = new ApiError(res.status, null, `HTTP_${res.status}`, text.slice(0, 200) || res.statusText)
  }
  if (res.status === 401 && options.token === undefined && session.token) onUnauthorized?.(error)
  return Promise.reject(error)
}

/** `?a=1&b=2` of the defined, non-empty values. */
export function queryOf(values: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(values)) {
    // an empty or blank value is left out (the node refuses one with 400: it never means "all")
    const text = v === undefined || v === null ? '' : String(v).trim()
    if (text !== '') q.set(k, text)
  }
  const s = q.toString()
  return s ? `?${s}` : ''
}

// ---- answers of the node (the fields the console reads) ------------------------------------------

export interface NodeInfo {
  name: string
  version: string
  status: 'ready' | 'starting' | 'draining'
  ready: boolean
  started_at: string | null
  uptime_s: number
  auth_mode: 'standard' | 'native' | 'none'
  sandbox: { workers: number | null }
  federation: { enabled: boolean }
}

export interface Identity {
  tenant_id: string
  user: string
  method: string
  key_id: string | null
  permissions: string[]
  admin: boolean
}

// the client SDK's wire types (type-only: nothing of it is bundled)
import type { FunctionMetadata } from '../../src/client/types.js'
export type { FunctionMetadata }

export interface Pagination {
  total: number
  limit: number
  offset: number
  next_offset: number | null
}

export interface SearchAnswer {
  items: FunctionMetadata[]
  pagination: Pagination
  aggregations: { language: Record<string, number>; tags: Record<string, number>; author: Record<string, number> }
}

export interface ExecutionRecord {
  execution_id: string
  rufid: string
  version: string
  function_name: string
  language: string
  status: string
  started_at: string
  finished_at: string | null
  execution_time_ms: number | null
  cpu_time_ms: number | null
  memory_bytes: number | null
  result?: unknown
  error?: { code: number; name: string; message: string; details: Record<string, unknown> }
  logs: Array<{ level: string; message: string; at: string }>
}
