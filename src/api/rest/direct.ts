import type { IncomingMessage, ServerResponse } from 'node:http'
import type { SvcError } from '../../core/errors.js'
import type { OperationEnvelope, OperationName } from '../../engine/index.js'
import { CONNECTION_ADDRESSES, type ClientAddresses } from '../client-address.js'
import { sendError, type RestContext, type RestRoute, type RouteMiddleware } from './operation.js'
import { jsonText } from './presenters.js'

/**
 * The direct routes of the REST door: the hot routes (`direct: true`: execute, resolve) answered
 * from node:http before Koa, by the same enveloped middleware the router registered for them (so
 * they are admitted, audited, metered and mapped exactly like every other route), with a lean
 * request context in place of Koa's (no context/request/response objects, no middleware chain, no
 * router scan over every route, no content-type negotiation per response). Everything else — an
 * encoded or case-different path, a query string, another method — goes to Koa, which serves
 * these routes too; a direct route shadowed by a route registered before it is refused at start.
 */
export interface DirectRoutes {
  /** Answers the request and returns true when it is a direct route's; false: hand it to Koa. */
  serve(req: IncomingMessage, res: ServerResponse): boolean
}

export interface DirectRoutesComponents {
  envelope: OperationEnvelope<RestContext>
  /** true while the daemon drains before shutdown (each response closes its connection) */
  isDraining?: (() => boolean) | undefined
  /** the caller's address of a request (trusted proxies); default: the connection's */
  addresses?: ClientAddresses | undefined
}

interface DirectRoute {
  method: string
  /** the path's segments; `null` where the route has a parameter */
  segments: Array<string | null>
  /** the parameter names by segment index */
  params: Array<[number, string]>
  route: RestRoute
  middleware: RouteMiddleware
}

/** A failure outside the route's envelope (a fault of this module): metered, never audited. */
const FAILED: OperationName = { name: 'request.failed', audited: false }

export function createDirectRoutes(
  registered: ReadonlyArray<{ route: RestRoute; middleware: RouteMiddleware }>,
  components: DirectRoutesComponents,
): DirectRoutes {
  const direct: DirectRoute[] = []
  registered.forEach(({ route, middleware }, index) => {
    if (!route.direct) return
    const parsed = parsePath(route.path)
    for (const earlier of registered.slice(0, index)) {
      if (earlier.route.method === route.method && overlaps(parsePath(earlier.route.path), parsed)) {
        throw new Error(`REST route ${route.method.toUpperCase()} ${route.path} is direct but ${earlier.route.path} is matched before it`)
      }
    }
    direct.push({ method: route.method.toUpperCase(), ...parsed, route, middleware })
  })
  const { envelope, isDraining } = components
  const addresses = components.addresses ?? CONNECTION_ADDRESSES

  return {
    serve(req, res) {
      const url = req.url
      if (url === undefined || url.includes('?') || url.includes('%') || url.includes('#')) return false
      const method = req.method
      let match: DirectRoute | undefined
      let parts: string[] | undefined
      for (const d of direct) {
        if (d.method !== method) continue
        parts ??= url.split('/')
        if (matches(d.segments, parts)) {
          match = d
          break
        }
      }
      if (match === undefined || parts === undefined) return false
      const params: Record<string, string> = {}
      for (const [i, name] of match.params) params[name] = parts[i]!
      const ctx = new DirectContext(req, res, url, params, addresses.ofRequest(req))
      if (isDraining?.()) ctx.set('Connection', 'close')
      match.middleware(ctx as unknown as RestContext).then(
        () => ctx.respond(),
        (thrown: unknown) => {
          sendError(ctx as never, envelope.finish(envelope.open(FAILED, ctx.ip), thrown) as SvcError)
          ctx.respond()
        },
      )
      return true
    },
  }
}

function parsePath(path: string): { segments: Array<string | null>; params: Array<[number, string]> } {
  const params: Array<[number, string]> = []
  const segments = path.split('/').map((s, i) => {
    if (!s.startsWith(':')) return s
    params.push([i, s.slice(1)])
    return null
  })
  return { segments, params }
}

/** Whether one URL could match both paths (a parameter matches any non-empty segment). */
function overlaps(a: { segments: Array<string | null> }, b: { segments: Array<string | null> }): boolean {
  if (a.segments.length !== b.segments.length) return false
  return a.segments.every((s, i) => {
    const t = b.segments[i]!
    return s === null ? t !== '' : t === null ? s !== '' : s.toLowerCase() === t.toLowerCase()
  })
}

function matches(segments: Array<string | null>, parts: string[]): boolean {
  if (segments.length !== parts.length) return false
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i]
    if (s === null ? parts[i] === '' : s !== parts[i]) return false
  }
  return true
}

/**
 * What a direct route's middleware, the REST envelope's profile and `sendError` use of a Koa
 * context, and nothing more; `respond` writes the answer as Koa would (JSON, its length, the
 * headers set).
 */
class DirectContext {
  readonly request: { body?: unknown } = {}
  readonly state: Record<string, unknown> = {}
  readonly query: Record<string, never> = {}
  readonly ip: string
  readonly method: string
  status = 200
  body: unknown = undefined
  private readonly headers: Record<string, string> = {}

  constructor(readonly req: IncomingMessage, readonly res: ServerResponse, readonly path: string, readonly params: Record<string, string>, ip: string) {
    this.ip = ip
    this.method = req.method ?? ''
  }

  set(name: string, value: string): void {
    this.headers[name] = value
  }

  get(name: string): string {
    const v = this.req.headers[name.toLowerCase()]
    return typeof v === 'string' ? v : ''
  }

  respond(): void {
    const res = this.res
    if (res.writableEnded || res.destroyed) return
    const body = this.body === undefined ? '' : jsonText(this.body)
    res.statusCode = this.status
    for (const name in this.headers) res.setHeader(name, this.headers[name]!)
    if (this.body !== undefined) res.setHeader('Content-Type', 'application/json; charset=utf-8')
    res.setHeader('Content-Length', Buffer.byteLength(body))
    res.end(body)
  }
}
