import type { ServerResponse } from 'node:http'
import type { TLSSocket } from 'node:tls'
import type { GraphQLError } from 'graphql/index.js'
import { getGraphQLParameters, processRequest, type HelixRequest } from './helix.js'
import type Koa from 'koa'
import type { Logger } from 'pino'
import { SvcError, validationFailed } from '../../core/errors.js'
import type { CredentialInput, Engine, Principal } from '../../engine/index.js'
import { formatError, formatResult, graphqlErrorOf, httpStatusOf, internalFaultsOf, svcErrorOf } from './errors.js'
import { checkOperation, isIntrospectionOnly, parseOperation, type GraphqlInit, type ParsedOperation } from './limits.js'
import { createGraphqlSchema, type GraphqlContext } from './schema.js'

export type { GraphqlInit } from './limits.js'

export interface GraphqlHttpComponents {
  engine: Engine
  logger: Logger
}

/** The Koa middleware of the GraphQL door; `close()` ends the open SSE subscription streams. */
export type GraphqlMiddleware = Koa.Middleware & { close(): Promise<void> }

/** The path the door answers; every other request goes to `next()`. */
export const GRAPHQL_PATH = '/graphql'
/** An SSE stream whose client lets this much output pile up is ended (a slow consumer). */
const SSE_MAX_BUFFERED_BYTES = 1 << 20
/** A comment line is sent this often on idle SSE streams so proxies keep them open. */
const SSE_KEEPALIVE_MS = 15_000

/**
 * GraphQL over HTTP at `/graphql` (graphql-helix): `POST` with a JSON body `{query, variables,
 * operationName}` (the REST app's body parser has already read it) or `GET` with the same as query
 * parameters (queries only). Subscriptions stream as server-sent events when the request has
 * `Accept: text/event-stream` (frames `event: next` with `data: <result>`, then `event: complete`).
 *
 * Each request is authenticated once (`Authorization`, `X-Svc-Namespace`, a verified client
 * certificate). Refused requests answer `{errors: [...]}` with an HTTP status (401 without valid
 * credentials, 403, 429 with Retry-After, 400 malformed or over the depth/cost limits, 413 an
 * oversized document); errors of executed fields answer 200 with `errors` beside `data`. Every
 * error has `extensions: {code, name, details}`.
 */
export function createGraphqlMiddleware(init: GraphqlInit, components: GraphqlHttpComponents): GraphqlMiddleware {
  const { engine } = components
  const logger = components.logger.child({ component: 'graphql' })
  const schema = createGraphqlSchema({ engine, logger })
  const streams = new Set<() => void>()

  const middleware = async (ctx: Koa.Context, next: Koa.Next): Promise<void> => {
    if (ctx.path !== GRAPHQL_PATH) return next()
    // the REST envelope around this middleware neither audits nor routes `system.*` requests
    ctx.state.operation = 'system.graphql'
    const startedAt = performance.now()
    const ip = ctx.ip
    let label = 'graphql.request'
    let errors: readonly GraphQLError[] = []

    /** Answers a refused request: HTTP status, `{errors}`, and an audit entry per operation it asked for. */
    const refuse = async (failure: SvcError | readonly GraphQLError[], parsed: ParsedOperation | undefined, principal?: Principal): Promise<void> => {
      const list = failure instanceof SvcError ? [graphqlErrorOf(failure)] : failure
      const first = svcErrorOf(list[0])
      errors = list
      ctx.status = httpStatusOf(first)
      if (first.reason === 'unauthenticated') ctx.set('WWW-Authenticate', 'Bearer')
      if (first.retryAfterSeconds !== undefined) ctx.set('Retry-After', String(Math.ceil(first.retryAfterSeconds)))
      ctx.body = { errors: list.map(formatError) }
      for (const operation of parsed?.auditOperations.length ? parsed.auditOperations : ['graphql.request']) {
        await engine.access.audit({ operation, principal, ip, rufid: null, startedAt, error: first })
          .catch((err: unknown) => logger.error({ err }, 'audit write failed'))
      }
    }

    try {
      if (ctx.method !== 'GET' && ctx.method !== 'POST') {
        ctx.set('Allow', 'GET, POST')
        await refuse(validationFailed('GraphQL is served over GET and POST'), undefined)
        ctx.status = 405
        return
      }
      const request: HelixRequest = {
        body: (ctx.request as { body?: unknown }).body,
        headers: ctx.req.headers,
        method: ctx.method,
        query: ctx.query,
      }
      const params = getGraphQLParameters(request)

      let parsed: ParsedOperation | undefined
      let malformed: SvcError | undefined
      try {
        parsed = parseOperation(params, init)
        label = parsed.label
      } catch (err) {
        malformed = svcErrorOf(err)
      }

      let principal: Principal | undefined
      try {
        principal = await engine.access.admit(credentialsOf(ctx))
      } catch (err) {
        const refused = svcErrorOf(err)
        const publicIntrospection = refused.reason === 'unauthenticated' && init.introspection === 'public'
          && parsed !== undefined && isIntrospectionOnly(parsed)
        if (!publicIntrospection) return await refuse(refused, parsed)
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

      if (isIntrospectionOnly(parsed)) {
        await engine.access.audit({ operation: 'graphql.introspect', principal, ip, rufid: null, startedAt })
          .catch((err: unknown) => logger.error({ err }, 'audit write failed'))
      }
      if (result.type === 'RESPONSE') {
        errors = result.payload.errors ?? []
        const faults = internalFaultsOf(errors)
        if (faults.length > 0) logger.error({ err: faults[0] }, 'GraphQL resolver failed')
        // a request error (no `data`: e.g. variables that do not coerce) answers its own status
        ctx.status = result.status === 200 && errors.length > 0 && result.payload.data === undefined
          ? httpStatusOf(svcErrorOf(errors[0]))
          : result.status
        ctx.type = 'application/json'
        ctx.body = formatResult(result.payload)
        return
      }
      if (result.type === 'PUSH') {
        ctx.status = 200
        ctx.respond = false
        streamEvents(ctx.res, result, streams, logger)
        return
      }
      // @defer/@stream (multipart) does not exist in graphql 16
      await refuse(validationFailed('incremental delivery is not supported'), parsed, principal)
    } catch (err) {
      const e = svcErrorOf(err)
      if (e.code === 1009) logger.error({ err: e.cause ?? e }, 'GraphQL request failed')
      errors = [graphqlErrorOf(e)]
      ctx.status = httpStatusOf(e)
      ctx.body = { errors: errors.map(formatError) }
    } finally {
      const failed = errors.length > 0 || ctx.status >= 400
      engine.metrics.protocolRequests.inc({ protocol: 'graphql', operation: label, status: failed ? 'error' : 'success' })
      engine.metrics.protocolRequestDuration.observe({ protocol: 'graphql', operation: label }, (performance.now() - startedAt) / 1000)
      for (const e of errors) engine.metrics.protocolErrors.inc({ protocol: 'graphql', code: String(svcErrorOf(e).code) })
    }
  }

  return Object.assign(middleware, {
    async close(): Promise<void> {
      for (const end of [...streams]) end()
    },
  })
}

function credentialsOf(ctx: Koa.Context): CredentialInput {
  const socket = ctx.req.socket as Partial<TLSSocket>
  const cert = socket.authorized && typeof socket.getPeerCertificate === 'function' ? socket.getPeerCertificate() : undefined
  return {
    authorization: ctx.get('authorization') || undefined,
    namespace: ctx.get('x-svc-namespace') || undefined,
    ip: ctx.ip,
    clientCertificate: cert && cert.subject
      ? { subject: Object.entries(cert.subject).map(([k, v]) => `${k}=${String(v)}`).join('\n'), fingerprint256: cert.fingerprint256 }
      : undefined,
  }
}

/**
 * Writes a subscription as server-sent events (the "distinct connections" mode of GraphQL over
 * SSE): `event: next` per result, `event: complete` at the end. The stream ends when the client
 * disconnects, when the door closes, or when the client stops reading (more than
 * SSE_MAX_BUFFERED_BYTES pending).
 */
function streamEvents(
  res: ServerResponse,
  push: { subscribe(onResult: (r: { errors?: readonly GraphQLError[] }) => void): Promise<void>; unsubscribe(): void },
  streams: Set<() => void>,
  logger: Logger,
): void {
  res.writeHead(200, {
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
  })
  res.write(': subscribed\n\n')
  let ended = false
  const end = (): void => {
    if (ended) return
    ended = true
    streams.delete(end)
    clearInterval(keepalive)
    push.unsubscribe()
    if (!res.writableEnded && !res.destroyed) res.end('event: complete\ndata:\n\n')
  }
  const keepalive = setInterval(() => res.write(': keepalive\n\n'), SSE_KEEPALIVE_MS)
  keepalive.unref()
  streams.add(end)
  res.once('close', end)
  push
    .subscribe((result) => {
      if (ended) return
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
    .finally(end)
}
