import type { IncomingMessage, Server as HttpServer } from 'node:http'
import type { Server as HttpsServer } from 'node:https'
import type { Duplex } from 'node:stream'
import type { TLSSocket } from 'node:tls'
import type { GraphQLError } from 'graphql/index.js'
import { useServer } from 'graphql-ws/use/ws'
import { WebSocketServer } from 'ws'
import type { Logger } from 'pino'
import type { CredentialInput, Engine, Principal } from '../../engine/index.js'
import { formatError, formatResult, graphqlErrorOf, internalFaultsOf, svcErrorOf, wsCloseCodeOf, wsCloseReasonOf } from './errors.js'
import { checkOperation, parseOperation, type GraphqlInit } from './limits.js'
import { createGraphqlSchema, type GraphqlContext } from './schema.js'

export interface GraphqlWsComponents {
  engine: Engine
  logger: Logger
}

/** What this door keeps per graphql-ws connection (beside graphql-ws's own `socket` and `request`). */
type ConnectionState = {
  credentials?: CredentialInput
  principal?: Principal
  /** `performance.now()` per operation id, for the duration metric */
  started?: Map<string, { at: number; label: string }>
}

const GRAPHQL_WS_PATH = '/graphql'

/**
 * GraphQL over WebSocket (the graphql-transport-ws protocol of graphql-ws) at `/graphql`, on the
 * node's HTTP(S) server. One `upgrade` listener that takes only `/graphql` and leaves other paths'
 * sockets alone (the `/ws` event socket shares the server).
 *
 * A connection authenticates at `connection_init`: `connectionParams.authorization` (e.g.
 * `"Bearer <key>"`), else the upgrade request's Authorization header; `connectionParams.namespace`
 * or the X-Svc-Namespace header. Refused connections close with 4401 (no/invalid credentials),
 * 4403, 4429 or 4500. Every operation re-checks the credentials (a revoked key stops working,
 * rate limits are charged per operation) and the same depth/cost/size/introspection limits as
 * HTTP. Subscriptions see only the caller's tenant; their listeners are removed on `complete` or
 * when the socket closes.
 */
export function attachGraphqlWs(server: HttpServer | HttpsServer, init: GraphqlInit, components: GraphqlWsComponents): { close(): Promise<void> } {
  const { engine } = components
  const logger = components.logger.child({ component: 'graphql-ws' })
  const schema = createGraphqlSchema({ engine, logger })
  // a subscribe message carries the document plus variables
  const wss = new WebSocketServer({ noServer: true, maxPayload: Math.max(1 << 20, 2 * init.maxDocumentBytes) })

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    if (pathOf(req.url) !== GRAPHQL_WS_PATH) return
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req))
  }
  server.on('upgrade', onUpgrade)

  const metric = (label: string, startedAt: number, errors: readonly GraphQLError[] | undefined): void => {
    const list = errors ?? []
    engine.metrics.protocolRequests.inc({ protocol: 'graphql', operation: label, status: list.length > 0 ? 'error' : 'success' })
    engine.metrics.protocolRequestDuration.observe({ protocol: 'graphql', operation: label }, (performance.now() - startedAt) / 1000)
    for (const e of list) engine.metrics.protocolErrors.inc({ protocol: 'graphql', code: String(svcErrorOf(e).code) })
  }

  const disposable = useServer<Record<string, unknown> | undefined, ConnectionState>(
    {
      schema,
      async onConnect(ctx) {
        const startedAt = performance.now()
        const credentials = credentialsOf(ctx.extra.request, ctx.connectionParams)
        try {
          ctx.extra.principal = await engine.access.admit(credentials)
          ctx.extra.credentials = credentials
          ctx.extra.started = new Map()
          metric('graphql.connect', startedAt, undefined)
          return true
        } catch (err) {
          const e = svcErrorOf(err)
          metric('graphql.connect', startedAt, [graphqlErrorOf(e)])
          await engine.access.audit({ operation: 'graphql.connect', ip: credentials.ip, startedAt, error: e })
            .catch((auditErr: unknown) => logger.error({ err: auditErr }, 'audit write failed'))
          ctx.extra.socket.close(wsCloseCodeOf(e), wsCloseReasonOf(e))
          return false
        }
      },
      async onSubscribe(ctx, id, payload) {
        const startedAt = performance.now()
        const credentials = ctx.extra.credentials!
        let label = 'graphql.request'
        let auditOperations = ['graphql.request']
        let principal: Principal | undefined
        try {
          // per operation: a revoked key stops here, and the rate limits are charged
          principal = await engine.access.admit(credentials)
          ctx.extra.principal = principal
          const parsed = parseOperation(payload, init)
          label = parsed.label
          auditOperations = parsed.auditOperations.length ? parsed.auditOperations : auditOperations
          const invalid = checkOperation(schema, parsed, init, true)
          if (invalid.length > 0) throw invalid
          ctx.extra.started!.set(id, { at: startedAt, label })
          const contextValue: GraphqlContext = { principal, ip: credentials.ip }
          if (parsed.auditOperations.includes('graphql.introspect')) {
            await engine.access.audit({ operation: 'graphql.introspect', principal, ip: credentials.ip, rufid: null, startedAt })
              .catch((err: unknown) => logger.error({ err }, 'audit write failed'))
          }
          return {
            schema,
            document: parsed.document,
            operationName: parsed.operationName,
            variableValues: parsed.variables,
            contextValue,
          }
        } catch (err) {
          const errors: GraphQLError[] = Array.isArray(err) ? (err as GraphQLError[]) : [graphqlErrorOf(svcErrorOf(err))]
          metric(label, startedAt, errors)
          for (const operation of auditOperations) {
            await engine.access.audit({ operation, principal, ip: credentials.ip, rufid: null, startedAt, error: svcErrorOf(errors[0]) })
              .catch((auditErr: unknown) => logger.error({ err: auditErr }, 'audit write failed'))
          }
          return errors
        }
      },
      onOperation(ctx, id, _payload, _args, result) {
        const started = ctx.extra.started?.get(id)
        ctx.extra.started?.delete(id)
        if (!started) return
        const errors = Symbol.asyncIterator in result ? undefined : (result as { errors?: readonly GraphQLError[] }).errors
        const faults = internalFaultsOf(errors)
        if (faults.length > 0) logger.error({ err: faults[0] }, 'GraphQL resolver failed')
        metric(started.label, started.at, errors)
      },
      onNext(_ctx, _id, _payload, _args, result) {
        return formatResult(result)
      },
      onError(_ctx, _id, _payload, errors) {
        return errors.map(formatError)
      },
    },
    wss,
  )

  let closing: Promise<void> | undefined
  return {
    close() {
      closing ??= (async () => {
        server.off('upgrade', onUpgrade)
        await disposable.dispose()
      })()
      return closing
    },
  }
}

function pathOf(url: string | undefined): string {
  const q = (url ?? '/').indexOf('?')
  return q === -1 ? (url ?? '/') : (url ?? '/').slice(0, q)
}

function credentialsOf(req: IncomingMessage, params: Record<string, unknown> | undefined): CredentialInput {
  const param = (...names: string[]): string | undefined => {
    for (const n of names) {
      const v = params?.[n]
      if (typeof v === 'string' && v !== '') return v
    }
    return undefined
  }
  const header = (name: string): string | undefined => {
    const v = req.headers[name]
    return typeof v === 'string' && v !== '' ? v : undefined
  }
  const socket = req.socket as Partial<TLSSocket>
  const cert = socket.authorized && typeof socket.getPeerCertificate === 'function' ? socket.getPeerCertificate() : undefined
  return {
    authorization: param('authorization', 'Authorization') ?? header('authorization'),
    namespace: param('namespace', 'x-svc-namespace', 'X-Svc-Namespace') ?? header('x-svc-namespace'),
    ip: req.socket.remoteAddress ?? '',
    clientCertificate: cert && cert.subject
      ? { subject: Object.entries(cert.subject).map(([k, v]) => `${k}=${String(v)}`).join('\n'), fingerprint256: cert.fingerprint256 }
      : undefined,
  }
}
