import type { IncomingMessage, Server as HttpServer } from 'node:http'
import type { Server as HttpsServer } from 'node:https'
import type { Duplex } from 'node:stream'
import type { GraphQLError } from 'graphql/index.js'
import { useServer } from 'graphql-ws/use/ws'
import { WebSocketServer } from 'ws'
import { PROTOCOL_VERSION } from '../../core/protocol-version.js'
import type { CredentialInput, Principal, StreamHold } from '../../engine/index.js'
import { CONNECTION_ADDRESSES, type ClientAddresses } from '../client-address.js'
import { httpCredentialsOf } from '../credentials.js'
import { createGraphqlDoor, type GraphqlDoorComponents } from './door.js'
import { formatError, formatResult, graphqlErrorOf, internalFaultsOf, svcErrorOf, wsCloseCodeOf, wsCloseReasonOf } from './errors.js'
import { checkOperation, DocumentCache, parseOperation, type GraphqlInit, type ParsedOperation } from './limits.js'
import type { GraphqlContext } from './schema.js'

export type GraphqlWsComponents = GraphqlDoorComponents & {
  /** the caller's address of an upgrade (trusted proxies); default: the connection's */
  addresses?: ClientAddresses
}

/** What this door keeps per graphql-ws connection (beside graphql-ws's own `socket` and `request`). */
type ConnectionState = {
  credentials?: CredentialInput
  principal?: Principal
  /** held while the connection's credential is valid: its revocation or expiry closes the socket */
  hold?: StreamHold
}

const GRAPHQL_WS_PATH = '/graphql'
/** Admitting a connection is an operation of its own (audited); admitting each operation is not. */
const CONNECT = 'graphql.connect'
const ADMISSION = { name: 'graphql.admission', audited: false } as const
/** A connection its credential's revocation or expiry closed (audited: result `revoked` or `expired`). */
const END = { name: 'graphql.end' } as const
/**
 * The close code of a connection whose credential was revoked or expired: graphql-ws's Forbidden,
 * which its clients retry (with `connectionParams` asked again, so a client that fetches a fresh
 * token reconnects; the same revoked key is then refused at `connection_init` with 4401).
 */
export const GRAPHQL_WS_CREDENTIAL_ENDED = 4403

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
 * HTTP; each root field is one operation of the envelope. Subscriptions see only the caller's
 * tenant; their listeners are removed on `complete` or when the socket closes.
 *
 * A connection lives as long as the credential it was admitted with: when that key is revoked or
 * the credential expires, the socket is closed at once with 4403 and the reason
 * `1003 PERMISSION_DENIED: API key revoked` (or `… expired`), no result is sent after, and
 * `graphql.end` is audited with the result `revoked` or `expired`.
 */
export function attachGraphqlWs(server: HttpServer | HttpsServer, init: GraphqlInit, components: GraphqlWsComponents): { close(): Promise<void> } {
  const logger = components.logger.child({ component: 'graphql-ws' })
  const addresses = components.addresses ?? CONNECTION_ADDRESSES
  const door = createGraphqlDoor({ engine: components.engine, logger })
  const documents = new DocumentCache()
  const { schema, envelope } = door
  // a subscribe message carries the document plus variables
  const wss = new WebSocketServer({ noServer: true, maxPayload: Math.max(1 << 20, 2 * init.maxDocumentBytes) })

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    if (pathOf(req.url) !== GRAPHQL_WS_PATH) return
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req))
  }
  server.on('upgrade', onUpgrade)

  const disposable = useServer<Record<string, unknown> | undefined, ConnectionState>(
    {
      schema,
      async onConnect(ctx) {
        const credentials = credentialsOf(ctx.extra.request, ctx.connectionParams, addresses.ofRequest(ctx.extra.request))
        const call = envelope.open({ name: CONNECT }, credentials.ip)
        try {
          const principal = await envelope.admit(call, credentials)
          ctx.extra.principal = principal
          ctx.extra.credentials = credentials
          await envelope.complete(call)
          const socket = ctx.extra.socket
          if (socket.readyState !== socket.OPEN) return false
          // the connection lasts as long as its credential: revoked or expired, it closes (4403)
          const lifetime = envelope.open(END, credentials.ip)
          lifetime.principal = principal
          ctx.extra.hold = envelope.hold(lifetime, (reason) => socket.close(GRAPHQL_WS_CREDENTIAL_ENDED, wsCloseReasonOf(reason)))
          // the connection_ack payload names the protocol version (service-spec §9)
          return { protocol_version: PROTOCOL_VERSION }
        } catch (err) {
          const e = (await envelope.complete(call, err))!
          ctx.extra.socket.close(wsCloseCodeOf(e), wsCloseReasonOf(e))
          return false
        }
      },
      async onSubscribe(ctx, _id, payload) {
        const credentials = ctx.extra.credentials!
        const admission = envelope.open(ADMISSION, credentials.ip)
        let parsed: ParsedOperation | undefined
        try {
          // per operation: a revoked key stops here, and the rate limits are charged
          const principal = await envelope.admit(admission, credentials)
          ctx.extra.principal = principal
          parsed = parseOperation(payload, init, documents)
          const invalid = checkOperation(schema, parsed, init, true)
          if (invalid.length > 0) throw invalid
          if (parsed.auditOperations.includes('graphql.introspect')) await door.record('graphql.introspect', credentials.ip, principal)
          const contextValue: GraphqlContext = { principal, ip: credentials.ip }
          return {
            schema,
            document: parsed.document,
            operationName: parsed.operationName,
            variableValues: parsed.variables,
            contextValue,
          }
        } catch (err) {
          const errors: GraphQLError[] = Array.isArray(err) ? (err as GraphQLError[]) : [graphqlErrorOf(svcErrorOf(err))]
          await door.refuse(parsed, credentials.ip, admission.principal, svcErrorOf(errors[0]))
          return errors
        }
      },
      onOperation(_ctx, _id, _payload, _args, result) {
        const errors = Symbol.asyncIterator in result ? undefined : (result as { errors?: readonly GraphQLError[] }).errors
        const faults = internalFaultsOf(errors)
        if (faults.length > 0) logger.error({ err: faults[0] }, 'GraphQL resolver failed')
      },
      onNext(ctx, _id, _payload, _args, result) {
        // the credential ended (revoked, expired): the socket closes here, and graphql-ws sends
        // nothing on a socket that is not open
        ctx.extra.hold?.check()
        return formatResult(result)
      },
      onClose(ctx) {
        ctx.extra.hold?.release()
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

/** `connectionParams.authorization` / `namespace` win over the upgrade request's headers. */
function credentialsOf(req: IncomingMessage, params: Record<string, unknown> | undefined, ip: string): CredentialInput {
  const param = (...names: string[]): string | undefined => {
    for (const n of names) {
      const v = params?.[n]
      if (typeof v === 'string' && v !== '') return v
    }
    return undefined
  }
  return httpCredentialsOf(req, ip, {
    authorization: param('authorization', 'Authorization'),
    namespace: param('namespace', 'x-svc-namespace', 'X-Svc-Namespace'),
  })
}
