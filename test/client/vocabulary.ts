/** Reads the shared client vocabulary `clients/operations.json` and the naming rules of its columns. */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

export interface Operation {
  id: string
  http?: [string, string]
  client_side?: string
  channel?: string
  ts: string
  python: string
  go: string
}

export interface Vocabulary {
  operations: Operation[]
  not_client_operations: Array<{ http: [string, string]; reason: string }>
  errors: Array<{ code: number; name: string; ts: string; python: string; go: string }>
  client_errors: Array<{ name: string; ts: string; python: string; go: string }>
}

export const OPERATIONS_FILE = fileURLToPath(new URL('../../clients/operations.json', import.meta.url))
export const BEHAVIOUR_FILE = fileURLToPath(new URL('../../clients/behaviour.json', import.meta.url))

export function loadVocabulary(): Vocabulary {
  return JSON.parse(readFileSync(OPERATIONS_FILE, 'utf8')) as Vocabulary
}

export function loadBehaviour(): { scenarios: Array<{ id: string; steps: string }> } {
  return JSON.parse(readFileSync(BEHAVIOUR_FILE, 'utf8')) as { scenarios: Array<{ id: string; steps: string }> }
}

const GO_INITIALISMS: Record<string, string> = { api: 'API', id: 'ID', rufid: 'RUFID', url: 'URL' }

export const camelOf = (id: string): string => id.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())

export const goNameOf = (id: string): string =>
  id.split('_').map((w) => GO_INITIALISMS[w] ?? w[0]!.toUpperCase() + w.slice(1)).join('')

/** `RufidNotFoundError` → `ErrRUFIDNotFound`: Err + the class name without Error, initialisms upper-cased. */
export const goSentinelOf = (className: string): string =>
  'Err' + goNameOf(className.replace(/Error$/, '').replace(/([a-z])([A-Z])/g, '$1_$2').toLowerCase())

/** A route as `METHOD /path/{}` (parameter names dropped: `{keyId}` and `{key_id}` are one route). */
export const routeKey = (method: string, path: string): string => `${method.toUpperCase()} ${path.replace(/\{[^}]+\}/g, '{}')}`
