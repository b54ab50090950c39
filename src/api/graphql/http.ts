import type { ServerResponse } from 'node:http'
import type { GraphQLError } from 'graphql/index.js'
import { getGraphQLParameters, processRequest, type HelixRequest } from './helix.js'
import type Koa from 'koa'
import type { Logger } from 'pino'
import { SvcError, validationFailed } from '../../core/errors.js'
import type { Principal, StreamHold } from '../../engine/index.js'
import { httpCredentialsOf } from '../credentials.js'
import { readJsonBody } from '../json-body.js'
import { createGraphqlDoor, type GraphqlDoorComponents } from './door.js'
import { formatError, formatResult, graphqlErrorOf, httpStatusOf, internalFaultsOf, svcErrorOf } from './errors.js'
import { checkOperation, DocumentCache, isIntrospectionOnly, parseOperation, type GraphqlInit, type ParsedOperation } from './limits.js'
import type { GraphqlContext } from './schema.js'

export type { GraphqlInit } from './limits.js'

export type GraphqlHttpComponents = GraphqlDoorComponents

/** The Koa middleware of the GraphQL door; `close()` ends the open SSE subscription streams. */
export type GraphqlMiddleware = Koa.Middleware & { close(): Promise<void> }

/** The path the door answers; every other request goes to `next()`. */
export const GRAPHQL_PATH = '/graphql'
/** An SSE stream whose client lets this much output pile up is ended (a slow consumer). */
const SSE_MAX_BUFFERED_BYTES = 1 << 20
/** A comment line is sent this often on idle SSE streams so proxies keep them open. */
const SSE_KEEPALIVE_MS = 15_000
/** Request bodies above this are refused (413) unless `bodyLimitBytes` says otherwise. */
const DEFAULT_BODY_LIMIT_BYTES = 1 << 20

/**
 * GraphQL over HTTP at `/graphql` (graphql-helix): `POST` with a JSON body `{query, variables,
 * operationName}` or `GET` with the same as query parameters (queries only). Subscriptions stream
 * as server-sent events when the request has `Accept: text/event-stream` (frames `event: next`
 * with `data: <result>`, then `event: complete`).
 *
 * The door reads its own body, so every answer is GraphQL-shaped: a malformed JSON body is 400
 * `{errors: [{message, extensions: {code: 1006, name, details}}]}`, an oversized one 413. Each
 * request is admitted once (`Authorization`, `X-Svc-Namespace`, a verified client certificate);
 * each root field is one operation of the envelope (audited and metered). Refused requests answer
 * `{errors: [...]}` with an HTTP status (401 without valid credentials, 403, 429 with
 * Retry-After, 400 malformed or over the depth/cost limits, 413 an oversized document); errors of
 * executed fields answer 200 with `errors` beside `data`.
 *
 * A subscription stream lives as long as the credential that opened it: when that key is revoked
 * or the credential expires, the stream gets one last `event: next` whose `data` is
 * `{errors: [{message: "API key revoked", extensions: {code: 1003, name: "PERMISSION_DENIED",
 * details: {credential: "revoked", key_id}}}]}` (or `expired`), then `event: complete`, and ends;
 * no result is written after, and `graphql.end` is audited with the result `revoked` or `expired`.
 * The caller's address is Koa's `ctx.ip` (the REST app sets it, trusted proxies included).
 */
export function createGraphqlMiddleware(init: GraphqlInit & { bodyLimitBytes?: number }, components: GraphqlHttpComponents): GraphqlMiddleware {
  const logger = components.logger.child({ component: 'graphql' })
  const door = createGraphqlDoor({ engine: components.engine, logger })
  const { schema } = door
  const streams = new Set<(reason?: SvcError) => void>()
  const bodyLimitBytes = init.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES
  const documents = new DocumentCache()

  const middleware = async (ctx: Koa.Context, next: Koa.Next): Promise<void> => {
    if (ctx.path !== GRAPHQL_PATH) return next()
    const ip = ctx.ip

    /** Answers a refused request: HTTP status, `{errors}`, one audited call per operation it asked for. */
    const refuse = async (failure: SvcError | readonly GraphQLError[], parsed: ParsedOperation | undefined, principal?: Principal): Promise<void> => {
      const list = failure instanceof SvcError ? [graphqlErrorOf(failure)] : failure
      const first = await door.refuse(parsed, ip, principal, svcErrorOf(list[0]))
      ctx.status = httpStatusOf(first)
      if (first.reason === 'unauthenticated') ctx.set('WWW-Authenticate', 'Bearer')
      if (first.retryAfterSeconds !== undefined) ctx.set('Retry-After', String(Math.ceil(first.retryAfterSeconds)))
      ctx.body = { errors: list.map(formatError) }
      ctx.type = responseTypeOf(ctx)
    }

    try {
      if (ctx.method !== 'GET' && ctx.method !== 'POST') {
        ctx.set('Allow', 'GET, POST')
        await refuse(validationFailed('GraphQL is served over GET and POST'), undefined)
        ctx.status = 405
        return
      }
      const contentType = ctx.get('content-type')
      if (ctx.method === 'POST' && contentType !== '' && !JSON_REQUEST.test(contentType)) {
        // GraphQL over HTTP: a POST body is application/json; any other type is not read as JSON
        await refuse(validationFailed(`GraphQL over POST reads application/json, not ${contentType.split(';')[0]!.trim()}`, [{ pointer: '', message: 'unsupported media type' }]), undefined)
        ctx.status = 415
        return
      }
      let body: unknown
      try {
        body = await readJsonBody(ctx.req, bodyLimitBytes)
      } catch (err) {
        return await refuse(svcErrorOf(err), undefined)
      }
      const request: HelixRequest = {
        body,
        headers: ctx.req.headers,
        method: ctx.method,
        query: ctx.query,
      }
      const blank = blankParameterOf(ctx.query)
      if (blank !== undefined) return await refuse(blank, undefined)
      const params = getGraphQLParameters(request)
      if (typeof params.query !== 'string' || !NOT_BLANK.test(params.query)) {
        return await refuse(validationFailed('a GraphQL request needs a query string', [{ pointer: '/query', message: 'must be a non-blank string' }]), undefined)
      }

      let parsed: ParsedOperation | undefined
      let malformed: SvcError | undefined
      try {
        parsed = parseOperation(params, init, documents)
      } catch (err) {
        malformed = svcErrorOf(err)
      }

      let principal: Principal | undefined
      const admission = door.envelope.open(ADMISSION, ip)
      try {
        principal = await door.envelope.admit(admission, httpCredentialsOf(ctx.req, ip))
      } catch (err) {
        const refused = svcErrorOf(err)
        const publicIntrospection = refused.reason === 'unauthenticated' && init.introspection === 'public'
          && parsed !== undefined && isIntrospectionOnly(parsed)
        // a caller refused for its rate limits is known: the refusal is audited under its tenant
        if (!publicIntrospection) return await refuse(refused, parsed, admission.principal)
      }
      if (malformed || !parsed) return await refuse(malformed ?? validationFailed('malformed GraphQL request'), parsed, principal)

      const invalid = checkOperation(schema, parsed, init, principal !== undefined)
      if (invalid.length > 0) return await refuse(invalid, parsed, principal)

      const kind = parsed.operation.operation
      if (kind === 'mutation' && ctx.method === 'GET') {
        ctx.set('Allow', 'POST')
        await refuse(validationFailed('mutations need POST'), parsed, principal)
        ctx.status = 405
        return
      }
      const wantsEventStream = /\btext\/event-stream\b/i.test(ctx.get('accept'))
      if (kind === 'subscription' && !wantsEventStream) {
        await refuse(validationFailed('subscriptions over HTTP need Accept: text/event-stream (or use graphql-ws on /graphql)'), parsed, principal)
        ctx.status = 406
        return
      }

      const context: GraphqlContext = { principal, ip }
      const result = await processRequest<GraphqlContext>({
        schema,
        query: parsed.document,
        operationName: parsed.operationName,
        variables: parsed.variables,
        request,
        contextFactory: () => context,
        // already validated above, with the limits
        validate: () => [],
      })

      if (isIntrospectionOnly(parsed)) await door.record('graphql.introspect', ip, principal)
      if (result.type === 'RESPONSE') {
        const errors = result.payload.errors ?? []
        const faults = internalFaultsOf(errors)
        if (faults.length > 0) logger.error({ err: faults[0] }, 'GraphQL resolver failed')
        // a request error (no `data`: e.g. variables that do not coerce): no field ran, so the
        // operations it asked for are refused here, and it answers its own status
        if (errors.length > 0 && result.payload.data === undefined) {
          return await refuse(errors, parsed, principal)
        }
        ctx.status = result.status
        ctx.body = formatResult(result.payload)
        ctx.type = responseTypeOf(ctx)
        return
      }
      if (result.type === 'PUSH') {
        ctx.status = 200
        ctx.respond = false
        // the stream lasts as long as its credential (a subscription always has a caller: the
        // resolvers refuse one without)
        const lifetime = door.envelope.open(STREAM_END, ip)
        lifetime.principal = principal
        const hold = principal === undefined ? undefined : (end: (reason: SvcError) => void) => door.envelope.hold(lifetime, end)
        streamEvents(ctx.res, result, streams, logger, hold)
        return
      }
      // @defer/@stream (multipart) does not exist in graphql 16
      await refuse(validationFailed('incremental delivery is not supported'), parsed, principal)
    } catch (err) {
      // a failure of the door itself (not of an operation: those are answered above)
      const e = door.envelope.finish(door.envelope.open(FAILED, ip), err)!
      ctx.status = httpStatusOf(e)
      ctx.body = { errors: [formatError(graphqlErrorOf(e))] }
      ctx.type = responseTypeOf(ctx)
    }
  }

  return Object.assign(middleware, {
    async close(): Promise<void> {
      for (const end of [...streams]) end()
    },
  })
}

/** The request media type of a GraphQL POST: application/json (parameters such as charset allowed). */
const JSON_REQUEST = /^application\/json\s*(;|$)/i
/** GraphQL over HTTP's own response media type (with it, a request error is never 200). */
export const GRAPHQL_RESPONSE_TYPE = 'application/graphql-response+json'

/**
 * The media type of a GraphQL answer: `application/graphql-response+json` when the request's
 * Accept prefers it to `application/json` (GraphQL over HTTP), else `application/json` (no
 * Accept, `*\/*`, or a legacy client). The statuses follow that media type's rules either way:
 * a document that does not parse or validate, or a request no field ran for, is 4xx; a result
 * with `data` is 200.
 */
function responseTypeOf(ctx: Koa.Context): string {
  if (ctx.get('accept') === '') return 'application/json'
  return ctx.accepts('application/json', GRAPHQL_RESPONSE_TYPE) === GRAPHQL_RESPONSE_TYPE ? `${GRAPHQL_RESPONSE_TYPE}; charset=utf-8` : 'application/json'
}

/** A value with something in it: not empty, not only ASCII whitespace (the REST door's rule for query values). */
const NOT_BLANK = /[^\t\n\v\f\r ]/
const QUERY_PARAMETERS = ['query', 'variables', 'operationName'] as const

/**
 * 1006 for a GraphQL parameter of the query string that is empty, blank or given twice (`?query=`,
 * `?operationName=%20`): never read as absent, as on every route of the node.
 */
function blankParameterOf(query: Record<string, string | string[] | undefined>): SvcError | undefined {
  for (const name of QUERY_PARAMETERS) {
    const value = query[name]
    if (value === undefined) continue
    if (Array.isArray(value)) return validationFailed(`query parameter ${name} is given ${value.length} times; give it once`, [{ pointer: `/${name}`, message: 'given more than once' }])
    if (!NOT_BLANK.test(value)) {
      return validationFailed(`query parameter ${name} is ${value === '' ? 'empty' : 'blank'}: give a value, or leave the parameter out`, [{ pointer: `/${name}`, message: 'empty or blank' }])
    }
  }
  return undefined
}

/** Admission of a request is not an operation itself (its fields are): never completed. */
const ADMISSION = { name: 'graphql.admission', audited: false } as const
const FAILED = { name: 'graphql.failed', audited: false } as const
/** An SSE stream its credential's revocation or expiry ended (audited: result `revoked` or `expired`). */
const STREAM_END = { name: 'graphql.end' } as const

/**
 * Writes a subscription as server-sent events (the "distinct connections" mode of GraphQL over
 * SSE): `event: next` per result, `event: complete` at the end. The stream ends when the client
 * disconnects, when the door closes, when the client stops reading (more than
 * SSE_MAX_BUFFERED_BYTES pending), or when its credential ends (`hold`: revoked or expired; an
 * `event: next` carrying the error comes before `event: complete`).
 */
function streamEvents(
  res: ServerResponse,
  push: { subscribe(onResult: (r: { errors?: readonly GraphQLError[] }) => void): Promise<void>; unsubscribe(): void },
  streams: Set<(reason?: SvcError) => void>,
  logger: Logger,
  hold?: (end: (reason: SvcError) => void) => StreamHold,
): void {
  res.writeHead(200, {
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
  })
  res.write(': subscribed\n\n')
  let ended = false
  const end = (reason?: SvcError): void => {
    if (ended) return
    ended = true
    streams.delete(end)
    clearInterval(keepalive)
    lifetime?.release()
    push.unsubscribe()
    if (res.writableEnded || res.destroyed) return
    if (reason !== undefined) res.write(`event: next\ndata: ${JSON.stringify({ errors: [formatError(graphqlErrorOf(reason))] })}\n\n`)
    res.end('event: complete\ndata:\n\n')
  }
  const keepalive = setInterval(() => res.write(': keepalive\n\n'), SSE_KEEPALIVE_MS)
  keepalive.unref()
  streams.add(end)
  res.once('close', () => end())
  const lifetime = hold?.((reason) => end(reason))
  push
    .subscribe((result) => {
      if (ended || lifetime?.check() !== undefined) return
      if (res.writableLength > SSE_MAX_BUFFERED_BYTES) {
        logger.warn('SSE subscriber too slow; ending its stream')
        end()
        return
      }
      const faults = internalFaultsOf(result.errors)
      if (faults.length > 0) logger.error({ err: faults[0] }, 'GraphQL subscription failed')
      res.write(`event: next\ndata: ${JSON.stringify(formatResult(result))}\n\n`)
    })
    .catch((err: unknown) => logger.error({ err }, 'GraphQL subscription stream failed'))
    .finally(() => end())
}
