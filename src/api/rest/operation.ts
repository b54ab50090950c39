import type { Router } from '@koa/router'
import type Koa from 'koa'
import type { z } from 'zod'
import type { SvcError } from '../../core/errors.js'
import {
  createOperationEnvelope, enveloped,
  type CallerOperation, type EnvelopeComponents, type PublicOperation, type OperationCall, type OperationEnvelope, type Principal,
} from '../../engine/index.js'
import { httpCredentialsOf } from '../credentials.js'
import { readJsonBody } from '../json-body.js'
import { errorBody, httpStatusOf } from './errors.js'
import { bodyOf } from './request.js'
import { parseQuery } from './routes/request-schemas.js'

/** What the REST door keeps per request. */
export interface RestState {
  /** the parsed query parameters of the route (its `query` schema) */
  query: Record<string, unknown>
  /** the route that took the request (the app's outer layer then leaves the answer alone) */
  route?: RestRoute
  /** answered outside the router (a console file, a 304): the outer layer leaves it alone too */
  served?: boolean
}

export type RestContext = Koa.ParameterizedContext<RestState, Koa.DefaultContext & { params: Record<string, string> }>

/**
 * A response declared for one status: a JSON body schema, or another content type (or several the
 * route chooses from by the request's Accept, each with the same schema).
 */
export type ResponseSpec = z.ZodType | { contentType: string | readonly string[]; schema: Record<string, unknown>; description?: string }

/**
 * One REST route: its path, its operation (name, access, audit), the schemas of what it reads and
 * answers, and its handler. The app registers these; `/openapi.json` is generated from the same
 * objects, so the document lists exactly what is served and with which bodies and statuses.
 */
export interface RestRoute<Q = Record<string, unknown>, B = unknown> {
  method: 'get' | 'post' | 'delete'
  /** a @koa/router path (`/api/v1/functions/:rufid`) */
  path: string
  /** the audited operation name (`rufid.create`); `system.*` ones are metered only */
  operation: string
  /** `public`: no credentials asked (the handler gets no principal) */
  access?: 'caller' | 'public'
  summary: string
  /** the request body (documentation; validated by the engine or `parseRequest` in the handler) */
  request?: z.ZodType | Record<string, unknown>
  /** the body may be left out (no body reads as no arguments): the document says it is not required */
  requestOptional?: boolean
  /** query parameters: parsed strictly before admission (1006 names the parameter) */
  query?: z.ZodObject<z.ZodRawShape>
  /** path parameters with a grammar beyond "a string" */
  params?: Record<string, z.ZodType>
  /** success answers by status */
  responses: Record<number, ResponseSpec>
  /** error statuses this route can answer besides the ones every route can (see ALWAYS_ERRORS) */
  errors: readonly number[]
  /** the RUFID the request names, for the audit entry of a refused call */
  rufidOf?(ctx: RestContext): string | null | undefined
  /** the namespace the request names in its body when the header is absent (native execute) */
  namespaceOf?(ctx: RestContext): string | undefined
  /**
   * Served straight from node:http, before Koa (see `direct.ts`): the hot routes (execute,
   * resolve). Their handler (and `rufidOf`) may read only `params`, the body (`bodyOf`) and
   * `state`, and set `status`; the route still runs through the same enveloped middleware.
   */
  direct?: boolean
  /** runs the engine call; the returned value is the body (typed against `responses`) */
  handle(principal: Principal | undefined, ctx: RestContext & { state: { query: Q } }, call: OperationCall): Promise<B>
}

/** The `{rufid}` path parameter, for the audit entry of a refused call. */
export const rufidOfPath = (ctx: { params: Record<string, string> }): string | undefined => ctx.params.rufid

/** The body's `rufid`, for the audit entry of a refused call. */
export const rufidOfBody = (ctx: Pick<RestContext, 'request'>): string | undefined => {
  const rufid = bodyOf(ctx).rufid
  return typeof rufid === 'string' ? rufid : undefined
}

/** Error statuses any route may answer: an internal fault, or a node that is draining or overloaded. */
export const ALWAYS_ERRORS = [500, 503] as const
/** ... of a caller operation: no or invalid credentials (1003), denied (1003), rate limited (1005) */
export const CALLER_ERRORS = [401, 403, 429] as const
/** ... of a route that reads a JSON body: malformed (1006, 1001 for a malformed RUFID), too large (1006) */
export const BODY_ERRORS = [400, 413] as const
/** ... of a route that names a function: malformed RUFID (1001), not found (1002), the losing side of a catalog conflict (2002), code on an unreachable peer (2001) */
export const FUNCTION_ERRORS = [400, 404, 409, 502] as const
/** ... of a route that runs a function: timeout (1004), the function failed (1007) */
export const EXECUTION_ERRORS = [408, 422] as const

/** A route, with its query's parsed type and its body's type inferred from its schemas. */
export function defineRoute<S extends z.ZodObject<z.ZodRawShape>, B>(
  route: Omit<RestRoute<z.output<S>, B>, 'query'> & { query: S },
): RestRoute<z.output<S>, B>
export function defineRoute<B>(route: Omit<RestRoute<Record<string, never>, B>, 'query'>): RestRoute<Record<string, never>, B>
export function defineRoute(route: RestRoute<never, unknown>): RestRoute<never, unknown> {
  return route
}

const EMPTY_QUERY: Readonly<Record<string, unknown>> = Object.freeze({})

export interface RestDoorInit {
  /** request bodies above this get 413 and are not read further */
  bodyLimitBytes: number
}

/**
 * The REST door's envelope profile: credentials from the headers (or the route's body namespace),
 * the JSON body read before admission (413 too large, 400 malformed), statuses as HTTP statuses.
 */
export function createRestEnvelope(init: RestDoorInit, components: EnvelopeComponents): OperationEnvelope<RestContext> {
  const limit = init.bodyLimitBytes
  return createOperationEnvelope<RestContext>({
    protocol: 'rest',
    ipOf: (ctx) => ctx.ip,
    credentialsOf: (ctx) => {
      const namespaceOf = ctx.state.route?.namespaceOf
      // a namespace in the body counts only when the X-Svc-Namespace header is absent
      return httpCredentialsOf(ctx.req, ctx.ip, namespaceOf ? { namespace: namespaceOf(ctx), preferGiven: false } : undefined)
    },
    async decode(ctx) {
      (ctx.request as { body?: unknown }).body = await readJsonBody(ctx.req, limit)
    },
    statusOf: (error) => String(error === undefined ? 200 : httpStatusOf(error)),
  }, components)
}

/** Answers a request with an svc error: its HTTP status, headers and the REST error body. */
export function sendError(ctx: Koa.Context, err: SvcError): void {
  ctx.status = httpStatusOf(err)
  ctx.body = errorBody(err)
  if (err.reason === 'unauthenticated') ctx.set('WWW-Authenticate', 'Bearer')
  if (err.retryAfterSeconds !== undefined) ctx.set('Retry-After', String(Math.ceil(err.retryAfterSeconds)))
}

/** The middleware a route was registered with: its one way through the envelope, whichever way the request came. */
export type RouteMiddleware = (ctx: RestContext) => Promise<void>

/**
 * Registers routes on the router, each as one enveloped middleware named after its operation:
 * decode (body, query) → admit → handle → audit → meter, then the body or the error is encoded.
 * Returns each route with its middleware (the direct routes run the same one).
 */
export function registerRoutes(
  router: Router<RestState>, envelope: OperationEnvelope<RestContext>, routes: readonly RestRoute<never, unknown>[],
): Array<{ route: RestRoute; middleware: RouteMiddleware }> {
  const registered: Array<{ route: RestRoute; middleware: RouteMiddleware }> = []
  for (const route of routes) {
    const r = route as unknown as RestRoute
    const query = r.query
    const operation = {
      name: r.operation,
      access: r.access ?? 'caller',
      audited: !r.operation.startsWith('system.'),
      rufidOf: r.rufidOf,
      decode: query === undefined ? undefined : (ctx: RestContext) => {
        ctx.state.query = parseQuery(query, ctx.query)
      },
      async handle(principal: Principal | undefined, ctx: RestContext, call: OperationCall): Promise<void> {
        ctx.body = await r.handle(principal, ctx as never, call)
        call.status = String(ctx.status)
      },
    } satisfies CallerOperation<RestContext, void> | PublicOperation<RestContext, void>
    const middleware = enveloped(async (ctx: RestContext): Promise<void> => {
      ctx.state.route = r
      if (query === undefined) ctx.state.query = EMPTY_QUERY
      try {
        await envelope.run(operation, ctx)
      } catch (err) {
        // the envelope rejects with the public SvcError only
        sendError(ctx, err as SvcError)
      }
    }, operation)
    router.register(r.path, [r.method.toUpperCase()], middleware as never, { name: r.operation })
    registered.push({ route: r, middleware })
  }
  return registered
}
