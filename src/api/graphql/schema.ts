import {
  buildSchema, GraphQLError, Kind, valueFromASTUntyped,
  type GraphQLFieldResolver, type GraphQLObjectType, type GraphQLScalarType, type GraphQLSchema, type ValueNode,
} from 'graphql/index.js'
import { parseRufid } from '../../core/rufid.js'
import {
  enveloped, executionEventMatches, fullRufidOf, requirePermission, systemEventVisibleTo, unauthenticated,
  type CallerOperation, type ExecutionEvent, type ExecutionRecord, type FunctionVersion, type Principal,
  type Resolution, type SystemEvent,
} from '../../engine/index.js'
import type { GraphqlDoor } from './door.js'
import { EventStream } from './event-stream.js'

/**
 * The GraphQL schema of service-spec §4.4. `Function` starts with exactly the fields of §2.2
 * (`rufid` is the full RUFID, `shortRufid` its 12-character hash); the fields after `metrics` are
 * this node's additions. Field names are camelCase; event payloads mirror `engine/events.ts`.
 */
export const SDL = /* GraphQL */ `
"""Any JSON value (object, array, string, number, boolean or null)."""
scalar JSON

"""An ISO 8601 UTC timestamp, e.g. 2024-01-31T12:00:00.000Z."""
scalar DateTime

type Query {
  """Resolves a RUFID (short hash, or full form rufid:<hash>:v<n>:<tenant>) in the caller's tenant."""
  resolveRUFID(rufid: String!): RUFIDResolution
  """The newest live version of each function of the caller's tenant, newest first."""
  listFunctions(search: String, tags: [String], limit: Int = 20, offset: Int = 0): FunctionList
  """Usage statistics of one function version."""
  getFunctionMetrics(rufid: String!): FunctionMetrics
  """The signed receipt of a finished execution of the caller's tenant (docs/receipts.md)."""
  executionReceipt(executionId: String!): JSON
}

type Mutation {
  """Publishes a function; identical content returns the existing version."""
  createFunction(input: CreateFunctionInput!): Function
  """Runs a function with named arguments (an object) or positional ones (an array)."""
  executeFunction(rufid: String!, args: JSON!): ExecutionResult
  """Deletes (tombstones) a version, or every live version of a hash; true when something was deleted."""
  deleteFunction(rufid: String!): Boolean
}

type Subscription {
  """Finished executions of the caller's tenant, optionally of one RUFID (short or full form)."""
  functionExecutions(rufid: String): ExecutionEvent
  """
  System events of the caller's tenant and node-wide ones (node started/stopping, peers). The
  first event is the node's lifecycle event (node.started, or node.stopping while it drains).
  """
  systemEvents: SystemEvent
}

type Function {
  """the full RUFID, rufid:<hash>:v<n>:<tenant>"""
  rufid: String!
  shortRufid: String!
  name: String!
  signature: String!
  language: String!
  """v<n>"""
  version: String!
  createdAt: DateTime!
  metrics: FunctionMetrics
  tags: [String!]!
  description: String!
  """SHA-256 hex of the function's canonical content"""
  contentDigest: String!
  author: String!
  tenantId: String!
  functionId: String!
  importStatement: String!
  shareUrl: String!
  apiEndpoint: String!
  """the full RUFID (always; \`rufid\` is too in this type)"""
  fullRufid: String!
}

type FunctionMetrics {
  usageCount: Int!
  avgExecutionTimeMs: Float!
  """0 to 1"""
  successRate: Float!
}

type RUFIDResolution {
  functionId: String!
  """the full RUFID of the resolved version"""
  rufid: String!
  shortRufid: String!
  version: String!
  accessible: Boolean!
  cached: Boolean!
  resolutionTimeMs: Float!
  contentDigest: String!
  manifest: JSON
  lockfile: JSON
  """function.svc.json as the text it was published as (null when only the object was sent)"""
  manifestText: String
  """function.lock.json as the text it was published as (null when only the object was sent or it was generated)"""
  lockfileText: String
  function: Function!
  """the full RUFID (always)"""
  fullRufid: String!
}

type Pagination {
  total: Int!
  limit: Int!
  offset: Int!
  """null on the last page"""
  nextOffset: Int
}

type FunctionList {
  items: [Function!]!
  pagination: Pagination!
}

input CreateFunctionInput {
  functionName: String!
  sourceCode: String!
  signature: String!
  language: String!
  description: String
  tags: [String!]
  """function.svc.json (service-spec §2.4)"""
  manifest: JSON
  """function.lock.json (service-spec §2.5); computed from the manifest when absent"""
  lockfile: JSON
  """the manifest file's own text, kept so an export gives it back byte for byte; must parse to \`manifest\`"""
  manifestText: String
  """the lockfile's own text; must parse to \`lockfile\`"""
  lockfileText: String
}

type ExecutionResult {
  result: JSON
  executionTimeMs: Float!
  """success for a successful run (failed runs are errors 1004/1007)"""
  status: String!
  executionId: String!
  """the 12-character hash of the function that ran"""
  shortRufid: String!
  """the full RUFID of the version that ran"""
  fullRufid: String!
  """true when a deterministic function's result came from the result cache (nothing ran)"""
  cached: Boolean!
  """the signed receipt (docs/receipts.md); a cached result carries the receipt of the execution that computed it"""
  receipt: JSON
}

type ExecutionEvent {
  executionId: String!
  """the full RUFID of the version that ran"""
  rufid: String!
  shortRufid: String!
  """the full RUFID (always)"""
  fullRufid: String!
  version: String!
  tenantId: String!
  functionName: String!
  """success, error or timeout"""
  status: String!
  executionTimeMs: Float!
  errorCode: Int
  timestamp: DateTime!
  """SHA-256 hex of the receipt's signed bytes (null when the execution has no receipt)"""
  receiptDigest: String
  """true when the result came from the result cache"""
  cached: Boolean!
}

type SystemEvent {
  """function.created, function.deleted, node.started, node.stopping, peer.joined, peer.left"""
  type: String!
  """null for node-wide events"""
  tenantId: String
  """the full RUFID the event is about (null when none)"""
  rufid: String
  """its 12-character hash (null when none)"""
  shortRufid: String
  """the full RUFID (null when none)"""
  fullRufid: String
  message: String!
  timestamp: DateTime!
  data: JSON!
}
`

/** What every resolver gets: the caller (authenticated once per request or operation) and its address. */
export interface GraphqlContext {
  /** absent only for public introspection, which runs no resolver of ours */
  principal: Principal | undefined
  ip: string
}


/** The audit (and metrics) operation name of each root field. */
export const OPERATIONS: Readonly<Record<string, string>> = {
  resolveRUFID: 'rufid.resolve',
  listFunctions: 'rufid.list',
  getFunctionMetrics: 'rufid.read',
  executionReceipt: 'execution.receipt',
  createFunction: 'rufid.create',
  executeFunction: 'rufid.execute',
  deleteFunction: 'rufid.delete',
  functionExecutions: 'events.executions',
  systemEvents: 'events.system',
}

/** How many events a subscriber may fall behind before the oldest are dropped. */
const SUBSCRIPTION_BUFFER = 256

type Resolver = GraphQLFieldResolver<unknown, GraphqlContext, Record<string, unknown>>
type FieldMap<TSource> = Record<string, (source: TSource, args: Record<string, unknown>, ctx: GraphqlContext) => unknown>

type Args = Record<string, unknown>

/**
 * Builds the schema with resolvers bound to one door: each root field is one operation of the
 * operation envelope (audited and metered on its own, with the caller admitted once per request
 * or per graphql-ws operation); the other fields only encode.
 */
export function createGraphqlSchema(door: Pick<GraphqlDoor, 'engine' | 'envelope'>): GraphQLSchema {
  const schema = buildSchema(SDL)
  const { engine, envelope } = door
  const { functions, executions, events } = engine

  /** A root field's resolver: its operation through the envelope, for the caller of the request. */
  const rootField = <O>(operation: CallerOperation<Args, O>): ((source: unknown, args: Args, ctx: GraphqlContext) => Promise<O>) =>
    enveloped((_source: unknown, args: Args, ctx: GraphqlContext): Promise<O> => {
      if (ctx.principal === undefined) {
        // only introspection runs without credentials; a field of ours refuses (audited)
        const call = envelope.open(operation, ctx.ip)
        return Promise.reject(envelope.finish(call, unauthenticated('credentials required: Authorization: Bearer <token>')))
      }
      return envelope.runAdmitted(operation, ctx.principal, ctx.ip, args)
    }, operation)

  const stringArg = (args: Args, name: string): string | undefined =>
    typeof args[name] === 'string' ? (args[name] as string) : undefined
  const rufidArg = (args: Args): string | undefined => stringArg(args, 'rufid')

  const query: FieldMap<unknown> = {
    resolveRUFID: rootField({
      name: OPERATIONS.resolveRUFID!, rufidOf: rufidArg,
      handle: (p, args) => functions.resolve(p, functions.target(p, args.rufid)),
    }),
    listFunctions: rootField({
      name: OPERATIONS.listFunctions!,
      handle: (p, args) => functions.list(p, {
        search: stringArg(args, 'search'),
        tags: Array.isArray(args.tags) ? args.tags.filter((t): t is string => typeof t === 'string') : undefined,
        limit: typeof args.limit === 'number' ? args.limit : undefined,
        offset: typeof args.offset === 'number' ? args.offset : undefined,
      }),
    }),
    getFunctionMetrics: rootField({
      name: OPERATIONS.getFunctionMetrics!, rufidOf: rufidArg,
      async handle(p, args) {
        const { fn } = await functions.resolve(p, functions.target(p, args.rufid))
        return executions.usageOf(fn)
      },
    }),
    executionReceipt: rootField({
      name: OPERATIONS.executionReceipt!,
      handle: (p, args) => executions.receiptOf(p, args.executionId),
    }),
  }

  const mutation: FieldMap<unknown> = {
    createFunction: rootField({
      name: OPERATIONS.createFunction!,
      async handle(p, args, call) {
        const input = (args.input ?? {}) as Record<string, unknown>
        const result = await functions.create(p, dropUndefined({
          function_name: input.functionName,
          source_code: input.sourceCode,
          signature: input.signature,
          language: input.language,
          description: input.description ?? undefined,
          tags: input.tags ?? undefined,
          manifest: input.manifest ?? undefined,
          lockfile: input.lockfile ?? undefined,
          manifest_text: input.manifestText ?? undefined,
          lockfile_text: input.lockfileText ?? undefined,
        }))
        call.rufid = result.rufid
        return result.fn
      },
    }),
    executeFunction: rootField({
      name: OPERATIONS.executeFunction!, rufidOf: rufidArg,
      handle: (p, args) => executions.execute(p, functions.target(p, args.rufid), args.args),
    }),
    deleteFunction: rootField({
      name: OPERATIONS.deleteFunction!, rufidOf: rufidArg,
      handle: async (p, args) => (await functions.delete(p, functions.target(p, args.rufid))).length > 0,
    }),
  }

  const subscription: Record<string, { subscribe: Resolver; resolve: Resolver }> = {
    functionExecutions: {
      subscribe: rootField({
        name: OPERATIONS.functionExecutions!, rufidOf: rufidArg,
        async handle(p, args) {
          requirePermission(p, 'rufid.read')
          const target = args.rufid === undefined || args.rufid === null ? undefined : functions.target(p, args.rufid)
          const tenant = p.tenant_id
          return EventStream.from<ExecutionEvent>((push) => {
            const listener = (e: ExecutionEvent): void => {
              if (executionEventMatches(e, tenant, target)) push(e)
            }
            events.on('execution', listener)
            return () => events.off('execution', listener)
          }, SUBSCRIPTION_BUFFER)
        },
      }) as Resolver,
      resolve: (event) => event,
    },
    systemEvents: {
      subscribe: rootField({
        name: OPERATIONS.systemEvents!,
        async handle(p) {
          requirePermission(p, 'rufid.read')
          const tenant = p.tenant_id
          return EventStream.from<SystemEvent>((push) => {
            const listener = (e: SystemEvent): void => {
              if (systemEventVisibleTo(e, tenant)) push(e)
            }
            // the node's lifecycle event (node.started, or node.stopping while it drains) comes first
            if (events.lifecycle) push(events.lifecycle)
            events.on('system', listener)
            return () => events.off('system', listener)
          }, SUBSCRIPTION_BUFFER)
        },
      }) as Resolver,
      resolve: (event) => event,
    },
  }

  const fn: FieldMap<FunctionVersion> = {
    rufid: (f) => fullRufidOf(f),
    shortRufid: (f) => f.rufid_short,
    name: (f) => f.function_name,
    signature: (f) => f.signature,
    language: (f) => f.language,
    version: (f) => `v${f.version}`,
    createdAt: (f) => f.created_at,
    metrics: (f) => executions.usageOf(f),
    tags: (f) => f.tags,
    description: (f) => f.description,
    contentDigest: (f) => f.content_digest,
    author: (f) => f.author,
    tenantId: (f) => f.tenant_id,
    functionId: (f) => f.function_id,
    importStatement: (f) => functions.describeCreation(f, false).import_statement,
    shareUrl: (f) => functions.describeCreation(f, false).share_url,
    apiEndpoint: (f) => functions.describeCreation(f, false).api_endpoint,
    fullRufid: (f) => fullRufidOf(f),
  }

  const metrics: FieldMap<{ usage_count: number; avg_execution_time_ms: number; success_rate: number }> = {
    usageCount: (m) => m.usage_count,
    avgExecutionTimeMs: (m) => m.avg_execution_time_ms,
    successRate: (m) => m.success_rate,
  }

  const resolution: FieldMap<Resolution> = {
    functionId: (r) => r.fn.function_id,
    rufid: (r) => fullRufidOf(r.fn),
    shortRufid: (r) => r.fn.rufid_short,
    version: (r) => `v${r.fn.version}`,
    accessible: () => true,
    cached: (r) => r.cached,
    resolutionTimeMs: (r) => Math.round(r.resolution_time_ms * 1000) / 1000,
    contentDigest: (r) => r.fn.content_digest,
    manifest: (r) => r.fn.manifest,
    lockfile: (r) => r.fn.lockfile,
    manifestText: (r) => r.fn.manifest_text ?? null,
    lockfileText: (r) => r.fn.lockfile_text ?? null,
    function: (r) => r.fn,
    fullRufid: (r) => fullRufidOf(r.fn),
  }

  const pagination: FieldMap<{ total: number; limit: number; offset: number; next_offset: number | null }> = {
    total: (p) => p.total,
    limit: (p) => p.limit,
    offset: (p) => p.offset,
    nextOffset: (p) => p.next_offset,
  }

  const executionResult: FieldMap<ExecutionRecord> = {
    result: (r) => r.result ?? null,
    executionTimeMs: (r) => r.execution_time_ms ?? 0,
    status: (r) => r.status,
    executionId: (r) => r.execution_id,
    shortRufid: (r) => r.rufid_short,
    fullRufid: (r) => r.rufid,
    cached: (r) => r.cached === true,
    receipt: (r) => r.receipt ?? null,
  }

  const executionEvent: FieldMap<ExecutionEvent> = {
    executionId: (e) => e.execution_id,
    rufid: (e) => e.rufid,
    shortRufid: (e) => e.rufid_short,
    fullRufid: (e) => e.rufid,
    version: (e) => e.version,
    tenantId: (e) => e.tenant_id,
    functionName: (e) => e.function_name,
    status: (e) => e.status,
    executionTimeMs: (e) => e.execution_time_ms,
    errorCode: (e) => e.error_code,
    timestamp: (e) => e.timestamp,
    receiptDigest: (e) => e.receipt_digest,
    cached: (e) => e.cached,
  }

  const systemEvent: FieldMap<SystemEvent> = {
    type: (e) => e.type,
    tenantId: (e) => e.tenant_id,
    rufid: (e) => e.rufid,
    shortRufid: (e) => (e.rufid === null ? null : parseRufid(e.rufid).short),
    fullRufid: (e) => e.rufid,
    message: (e) => e.message,
    timestamp: (e) => e.timestamp,
    data: (e) => e.data,
  }

  bind(schema, 'Query', query)
  bind(schema, 'Mutation', mutation)
  bindSubscriptions(schema, subscription)
  bind(schema, 'Function', fn)
  bind(schema, 'FunctionMetrics', metrics)
  bind(schema, 'RUFIDResolution', resolution)
  bind(schema, 'Pagination', pagination)
  bind(schema, 'ExecutionResult', executionResult)
  bind(schema, 'ExecutionEvent', executionEvent)
  bind(schema, 'SystemEvent', systemEvent)
  defineScalars(schema)
  return schema
}

function dropUndefined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined))
}

/** Attaches resolvers to a type of the SDL; a name the SDL lacks (or a field left unbound) is a startup error. */
function bind<TSource>(schema: GraphQLSchema, typeName: string, resolvers: FieldMap<TSource>): void {
  const type = schema.getType(typeName) as GraphQLObjectType | undefined
  if (!type) throw new Error(`GraphQL SDL has no type ${typeName}`)
  const fields = type.getFields()
  for (const name of Object.keys(fields)) {
    const resolve = resolvers[name]
    if (!resolve) throw new Error(`GraphQL field ${typeName}.${name} has no resolver`)
    // a root field's resolver is the enveloped one itself (test/api/operation-envelope.test.ts reads it)
    fields[name]!.resolve = resolve as GraphQLFieldResolver<unknown, GraphqlContext>
  }
  for (const name of Object.keys(resolvers)) {
    if (!fields[name]) throw new Error(`GraphQL SDL has no field ${typeName}.${name}`)
  }
}

function bindSubscriptions(schema: GraphQLSchema, resolvers: Record<string, { subscribe: Resolver; resolve: Resolver }>): void {
  const fields = schema.getSubscriptionType()!.getFields()
  for (const [name, field] of Object.entries(fields)) {
    const r = resolvers[name]
    if (!r) throw new Error(`GraphQL subscription ${name} has no resolver`)
    field.subscribe = r.subscribe
    field.resolve = r.resolve
  }
}

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/

function defineScalars(schema: GraphQLSchema): void {
  const json = schema.getType('JSON') as GraphQLScalarType
  json.serialize = (value) => value
  json.parseValue = (value) => value
  json.parseLiteral = (ast: ValueNode, variables) => valueFromASTUntyped(ast, variables)

  const dateTime = schema.getType('DateTime') as GraphQLScalarType
  const toIso = (value: unknown): string => {
    const date = value instanceof Date ? value : typeof value === 'string' && ISO_UTC.test(value) ? new Date(value) : undefined
    if (date === undefined || Number.isNaN(date.getTime())) throw new GraphQLError(`DateTime cannot represent ${JSON.stringify(value)}`)
    return date.toISOString()
  }
  dateTime.serialize = toIso
  dateTime.parseValue = toIso
  dateTime.parseLiteral = (ast) => {
    if (ast.kind !== Kind.STRING) throw new GraphQLError('DateTime must be an ISO 8601 string')
    return toIso(ast.value)
  }
}
