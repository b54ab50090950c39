import type { GraphQLSchema } from 'graphql/index.js'
import type { Logger } from 'pino'
import type { SvcError } from '../../core/errors.js'
import {
  createOperationEnvelope, type CredentialInput, type Engine, type OperationEnvelope, type Principal,
} from '../../engine/index.js'
import type { ParsedOperation } from './limits.js'
import { createGraphqlSchema } from './schema.js'

export interface GraphqlDoorComponents {
  engine: Engine
  logger: Logger
}

/** What GraphQL over HTTP, SSE and WebSocket share: the envelope and the schema bound to it. */
export interface GraphqlDoor {
  engine: Engine
  logger: Logger
  envelope: OperationEnvelope<CredentialInput>
  schema: GraphQLSchema
  /**
   * Records a request refused before any field ran (credentials, limits, a malformed document):
   * one audited, metered call per operation it asked for (`graphql.request` when it named none).
   * Returns the error a client may see.
   */
  refuse(parsed: ParsedOperation | undefined, ip: string, principal: Principal | undefined, error: unknown): Promise<SvcError>
  /** Records a call that is not a root field: `graphql.connect`, `graphql.introspect`. */
  record(name: string, ip: string, principal: Principal | undefined, error?: unknown): Promise<SvcError | undefined>
}

const REQUEST = { name: 'graphql.request' } as const

/**
 * The GraphQL door's envelope profile: metered with protocol `graphql`, statuses `success` and
 * `error` (a request's HTTP status is the transport's; a field's outcome is what is counted).
 */
export function createGraphqlDoor({ engine, logger }: GraphqlDoorComponents): GraphqlDoor {
  const envelope = createOperationEnvelope<CredentialInput>({
    protocol: 'graphql',
    credentialsOf: (credentials) => credentials,
    ipOf: (credentials) => credentials.ip,
    statusOf: (error) => (error === undefined ? 'success' : 'error'),
  }, { engine, logger })
  const names = new Map<string, { name: string }>()
  const nameOf = (name: string): { name: string } => {
    let op = names.get(name)
    if (op === undefined) names.set(name, (op = { name }))
    return op
  }
  const schema = createGraphqlSchema({ engine, envelope })
  return {
    engine,
    logger,
    envelope,
    schema,
    async refuse(parsed, ip, principal, error) {
      const operations = parsed?.auditOperations.length ? parsed.auditOperations : [REQUEST.name]
      let shown: SvcError | undefined
      for (const name of operations) {
        const call = envelope.open(nameOf(name), ip)
        call.principal = principal
        shown = (await envelope.complete(call, error))!
      }
      return shown!
    },
    async record(name, ip, principal, error) {
      const call = envelope.open(nameOf(name), ip)
      call.principal = principal
      return envelope.complete(call, error)
    },
  }
}
