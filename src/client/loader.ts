/**
 * The direct-import convention for JavaScript (decisions.md "Import statements"):
 *
 *   import { registerSvcLoader } from 'svc-node/client'
 *   registerSvcLoader({ url: 'http://127.0.0.1:8080', token: process.env.SVC_TOKEN })
 *   const add = (await import('svc://<rufid_short>')).default
 *   await add(2, 3)   // 5, executed on the node
 *
 * This module is both the registration helper (main thread) and the Node module customization
 * hooks (`module.register()`, Node ≥ 20.6; they run on the loader thread):
 * - `resolve` maps `svc://<rufid_short>` (or `svc:<rufid_short>`) to the URL `svc://<rufid_short>`;
 * - `load` answers that URL with a generated ES module that imports this package's client, resolves
 *   the RUFID on the configured node while it is imported (an unknown RUFID rejects the import with
 *   `RufidNotFoundError` naming it; a malformed one with `InvalidRufidError`) and exports the
 *   function's async callable as `default` (plus `rufid` and `resolution`).
 * The node is the one given to `registerSvcLoader` (register `data`); what it leaves out comes
 * from `SVC_URL`, `SVC_TOKEN` and `SVC_NAMESPACE` when the module is imported.
 */
import { register } from 'node:module'

export interface SvcLoaderOptions {
  /** the node's base URL; default `SVC_URL` (else http://127.0.0.1:8080) at import time */
  url?: string
  /** default `SVC_TOKEN` at import time */
  token?: string
  /** default `SVC_NAMESPACE` at import time */
  namespace?: string
  /** per-request bound in ms (default 30 000) */
  timeoutMs?: number
}

/** The specifier scheme of direct imports. */
export const SVC_SCHEME = 'svc:'

const HOOKS_URL = import.meta.url
/** The client module the generated modules import (resolved next to this file). */
const CLIENT_URL = new URL('./client.js', import.meta.url).href

let registered = false

/**
 * Registers the `svc://` hooks for this process (idempotent: later calls are ignored and return
 * false). Dynamic `import('svc://…')` calls made after it resolve through these hooks; static
 * `import … from 'svc://…'` needs the hooks registered before the importing module is loaded
 * (`node --import svc-node/client/register app.js`, which reads the environment).
 */
export function registerSvcLoader(options: SvcLoaderOptions = {}): boolean {
  if (registered) return false
  const data: SvcLoaderOptions = {}
  if (options.url !== undefined) data.url = options.url
  if (options.token !== undefined) data.token = options.token
  if (options.namespace !== undefined) data.namespace = options.namespace
  if (options.timeoutMs !== undefined) data.timeoutMs = options.timeoutMs
  register(HOOKS_URL, { data })
  registered = true
  return true
}

// ---- hooks (loader thread) ------------------------------------------------------------------

let config: SvcLoaderOptions = {}

/** `module.register` hook: receives the `data` of `registerSvcLoader`. */
export function initialize(data: SvcLoaderOptions | undefined): void {
  config = data && typeof data === 'object' ? { ...data } : {}
}

interface ResolveContext {
  conditions: string[]
  importAttributes?: Record<string, string>
  parentURL?: string
}
interface ResolveResult {
  url: string
  format?: string | null
  shortCircuit?: boolean
}
type NextResolve = (specifier: string, context?: ResolveContext) => ResolveResult | Promise<ResolveResult>

interface LoadContext {
  conditions: string[]
  format?: string | null
  importAttributes?: Record<string, string>
}
interface LoadResult {
  format: string
  source?: string | ArrayBuffer | Uint8Array
  shortCircuit?: boolean
}
type NextLoad = (url: string, context?: LoadContext) => LoadResult | Promise<LoadResult>

/** The RUFID text of an `svc:` specifier or URL (`svc://X`, `svc:X`), or undefined for others. */
export function svcSpecifierTarget(specifier: string): string | undefined {
  if (!specifier.toLowerCase().startsWith(SVC_SCHEME)) return undefined
  const rest = specifier.slice(SVC_SCHEME.length)
  const target = rest.startsWith('//') ? rest.slice(2) : rest
  try {
    return decodeURIComponent(target)
  } catch {
    return target
  }
}

export function resolve(specifier: string, context: ResolveContext, nextResolve: NextResolve): ResolveResult | Promise<ResolveResult> {
  const target = svcSpecifierTarget(specifier)
  if (target === undefined) return nextResolve(specifier, context)
  // the text is carried as is (percent-encoded) so that a malformed RUFID is reported by the
  // generated module, as a typed error, rather than by the loader thread
  return { url: `svc://${encodeURIComponent(target)}`, format: 'module', shortCircuit: true }
}

export function load(url: string, context: LoadContext, nextLoad: NextLoad): LoadResult | Promise<LoadResult> {
  const target = svcSpecifierTarget(url)
  if (target === undefined) return nextLoad(url, context)
  return { format: 'module', source: moduleSource(target, config), shortCircuit: true }
}

/** The ES module an `svc://<target>` import evaluates to. */
export function moduleSource(target: string, options: SvcLoaderOptions, clientUrl = CLIENT_URL): string {
  const settings: SvcLoaderOptions = {}
  for (const key of ['url', 'token', 'namespace', 'timeoutMs'] as const) {
    if (options[key] !== undefined) Object.assign(settings, { [key]: options[key] })
  }
  return [
    `import { SvcClient } from ${JSON.stringify(clientUrl)};`,
    `const fn = await new SvcClient(${JSON.stringify(settings)}).importFunction(${JSON.stringify(target)});`,
    'export default fn;',
    'export const rufid = fn.rufid;',
    'export const resolution = fn.resolution;',
    '',
  ].join('\n')
}
