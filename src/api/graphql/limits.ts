import {
  getNamedType, getNullableType, getOperationAST, GraphQLError, isCompositeType, isInterfaceType, isListType, isObjectType,
  Kind, parse, specifiedRules, validate,
  type DocumentNode, type FieldNode, type FragmentDefinitionNode, type GraphQLCompositeType, type GraphQLSchema,
  type OperationDefinitionNode, type SelectionSetNode, type ValidationRule, type ValueNode,
} from 'graphql/index.js'
import { SvcError, validationFailed } from '../../core/errors.js'
import { LruCache, MAX_LIST_PAGE } from '../../engine/index.js'
import { graphqlErrorOf } from './errors.js'
import { OPERATIONS } from './schema.js'

/** Settings of the GraphQL door (config `graphql.*`). */
export interface GraphqlInit {
  /**
   * deepest field nesting allowed (a root field is depth 1), introspection included: the standard
   * introspection query of graphql-js (`getIntrospectionQuery()`) is 15 deep, this schema's own
   * fields at most 4
   */
  maxDepth: number
  /** highest cost allowed: the number of objects an operation can return (see `costOf`) */
  maxCost: number
  /** longest query document, in UTF-8 bytes */
  maxDocumentBytes: number
  /** who may query `__schema` / `__type`: authenticated callers, anyone, or no one */
  introspection: 'authenticated' | 'public' | 'disabled'
}

/** A parsed request: its document, the operation to run, and what to call it in audit and metrics. */
export interface ParsedOperation {
  document: DocumentNode
  operation: OperationDefinitionNode
  operationName: string | undefined
  variables: Record<string, unknown> | undefined
  /** the audit operation of each root field (`rufid.create`, …, `graphql.introspect`) */
  auditOperations: string[]
  /** the metrics label: the one audit operation, or `graphql.batch` for several */
  label: string
  /** what was worked out once for this document's operation (see DocumentCache) */
  cached: CachedOperation
}

/** An operation of a document and what was worked out from it once (see DocumentCache). */
interface CachedOperation extends Pick<ParsedOperation, 'operation' | 'auditOperations' | 'label'> {
  /** checkOperation's verdict without the cost limit (variables change that): for anonymous, authenticated callers */
  verdicts: [readonly GraphQLError[] | undefined, readonly GraphQLError[] | undefined]
}

/** A parsed document and its operations by operationName ('' for none). */
interface CachedDocument {
  document: DocumentNode
  operations: Map<string, CachedOperation>
}

/** Documents kept by a DocumentCache, at most. */
export const DOCUMENT_CACHE_ENTRIES = 128
/** Longer query texts are parsed and validated on every request (a cache entry is bounded by this). */
export const DOCUMENT_CACHE_MAX_QUERY_CHARS = 8 * 1024

/**
 * Parsed GraphQL documents by query text, with their operations and validation verdicts: clients
 * send the same few documents again and again (with other variables), and parsing plus the
 * specified validation rules cost more than running a cheap field. Bounded (LRU, DOCUMENT_CACHE_ENTRIES
 * documents of at most DOCUMENT_CACHE_MAX_QUERY_CHARS); one per door, since a verdict depends on
 * the door's schema and introspection policy. Nothing in an entry depends on the caller beyond
 * "authenticated or not", which is kept apart.
 */
export class DocumentCache {
  private readonly entries: LruCache<CachedDocument>

  constructor(private readonly maxEntries = DOCUMENT_CACHE_ENTRIES, private readonly maxQueryChars = DOCUMENT_CACHE_MAX_QUERY_CHARS) {
    this.entries = new LruCache<CachedDocument>(this.maxEntries, () => undefined)
  }

  get size(): number {
    return this.entries.size
  }

  /** The cached entry of a query text (now the most recently used), if any. */
  get(query: string): CachedDocument | undefined {
    const entry = this.entries.take(query)
    if (entry !== undefined) this.entries.put(query, entry)
    return entry
  }

  /** Keeps a parsed document; undefined when the text is too long to keep. */
  add(query: string, document: DocumentNode): CachedDocument | undefined {
    if (query.length > this.maxQueryChars) return undefined
    const entry: CachedDocument = { document, operations: new Map() }
    this.entries.put(query, entry)
    return entry
  }
}

/** List size assumed for a list field when no `limit` argument above it says otherwise. */
const DEFAULT_LIST_SIZE = 10
/**
 * Cost of one introspection root field (`__schema`, `__type`): its answer is bounded by the schema
 * rather than by the query (graphql's MaxIntrospectionDepthRule bounds its nesting), so it is
 * charged flat, as a page of this many objects. Aliasing it many times is what this stops.
 */
const INTROSPECTION_COST = 100

/**
 * Decodes the GraphQL parameters of a request (HTTP body or query string, or a graphql-ws
 * `subscribe` payload): size limit, syntax, operation selection and variables. Throws 1006
 * (`payload_too_large` for an oversized document).
 */
export function parseOperation(
  params: { query?: unknown; operationName?: unknown; variables?: unknown },
  init: GraphqlInit,
  cache?: DocumentCache,
): ParsedOperation {
  const { query } = params
  if (typeof query !== 'string' || query.trim() === '') throw validationFailed('a GraphQL request needs a query string')
  const operationName = params.operationName === undefined || params.operationName === null || params.operationName === ''
    ? undefined
    : params.operationName
  let cached = cache?.get(query)
  if (cached === undefined) {
    const bytes = Buffer.byteLength(query, 'utf8')
    if (bytes > init.maxDocumentBytes) {
      throw new SvcError('VALIDATION_FAILED', `the query document is ${bytes} bytes, more than the limit of ${init.maxDocumentBytes}`, {
        reason: 'payload_too_large',
        details: { limit: init.maxDocumentBytes },
      })
    }
    let document: DocumentNode
    try {
      document = parse(query, { maxTokens: Math.max(1000, Math.ceil(init.maxDocumentBytes / 2)) })
    } catch (err) {
      throw new SvcError('VALIDATION_FAILED', err instanceof Error ? err.message : 'GraphQL syntax error', { cause: err })
    }
    cached = cache?.add(query, document) ?? { document, operations: new Map() }
  }
  if (operationName !== undefined && typeof operationName !== 'string') throw validationFailed('operationName must be a string')
  const { document } = cached
  let selected = cached.operations.get(operationName ?? '')
  if (selected === undefined) {
    const operation = getOperationAST(document, operationName)
    if (!operation) {
      throw validationFailed(operationName === undefined
        ? 'the document must contain exactly one operation, or name one with operationName'
        : `the document has no operation named ${operationName}`)
    }
    const auditOperations = [...new Set(rootFieldsOf(document, operation.selectionSet).map(auditOperationOf))]
    const label = auditOperations.length === 1 ? auditOperations[0]! : auditOperations.length === 0 ? 'graphql.request' : 'graphql.batch'
    selected = { operation, auditOperations, label, verdicts: [undefined, undefined] }
    cached.operations.set(operationName ?? '', selected)
  }
  const variables = variablesOf(params.variables)
  const { operation, auditOperations, label } = selected
  return { document, operation, operationName, variables, auditOperations, label, cached: selected }
}

function variablesOf(raw: unknown): Record<string, unknown> | undefined {
  if (raw === undefined || raw === null || raw === '') return undefined
  let value = raw
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw)
    } catch {
      throw validationFailed('variables must be a JSON object')
    }
  }
  if (value === null) return undefined
  if (typeof value !== 'object' || Array.isArray(value)) throw validationFailed('variables must be a JSON object')
  return value as Record<string, unknown>
}

function auditOperationOf(rootField: string): string {
  if (rootField === '__schema' || rootField === '__type') return 'graphql.introspect'
  return OPERATIONS[rootField] ?? 'graphql.request'
}

/** Names of the root fields an operation selects (through fragments), `__typename` left out. */
function rootFieldsOf(document: DocumentNode, selectionSet: SelectionSetNode, seen = new Set<string>()): string[] {
  const fragments = fragmentsOf(document)
  const out: string[] = []
  for (const sel of selectionSet.selections) {
    if (sel.kind === Kind.FIELD) {
      if (sel.name.value !== '__typename') out.push(sel.name.value)
    } else if (sel.kind === Kind.INLINE_FRAGMENT) {
      out.push(...rootFieldsOf(document, sel.selectionSet, seen))
    } else {
      const frag = fragments.get(sel.name.value)
      if (frag && !seen.has(frag.name.value)) {
        seen.add(frag.name.value)
        out.push(...rootFieldsOf(document, frag.selectionSet, seen))
      }
    }
  }
  return out
}

/** True when the operation asks for nothing but introspection (`__schema`, `__type`). */
export function isIntrospectionOnly(parsed: ParsedOperation): boolean {
  return parsed.auditOperations.length === 1 && parsed.auditOperations[0] === 'graphql.introspect'
}

/**
 * Validates a parsed operation against the schema (graphql's specified rules), the introspection
 * policy, and the depth and cost limits. Returns the errors (empty when the operation may run),
 * each carrying its svc code: 1006, or 1003 for refused introspection.
 */
export function checkOperation(schema: GraphQLSchema, parsed: ParsedOperation, init: GraphqlInit, authenticated: boolean): GraphQLError[] {
  const slot = authenticated ? 1 : 0
  const verdicts = parsed.cached.verdicts
  let verdict = verdicts[slot]
  if (verdict === undefined) {
    verdict = documentVerdict(schema, parsed, init, authenticated)
    verdicts[slot] = verdict
  }
  if (verdict.length > 0) return [...verdict]
  const root = parsed.operation.operation === 'query'
    ? schema.getQueryType()
    : parsed.operation.operation === 'mutation' ? schema.getMutationType() : schema.getSubscriptionType()
  const variables = { ...defaultsOf(parsed.operation), ...parsed.variables }
  const fragments = fragmentsOf(parsed.document)
  const cost = root ? costOf(parsed.operation.selectionSet, root, 1, DEFAULT_LIST_SIZE, { schema, fragments, variables }, true) : 0
  if (cost > init.maxCost) {
    return [graphqlErrorOf(validationFailed(`query cost ${cost} exceeds the limit of ${init.maxCost}`))]
  }
  return []
}

/** What checkOperation finds from the document alone: the specified rules, introspection, depth. */
function documentVerdict(schema: GraphQLSchema, parsed: ParsedOperation, init: GraphqlInit, authenticated: boolean): readonly GraphQLError[] {
  const rules: ValidationRule[] = [...specifiedRules, introspectionRule(init.introspection, authenticated)]
  const invalid = validate(schema, parsed.document, rules, { maxErrors: 20 })
  if (invalid.length > 0) return invalid
  const depth = depthOf(parsed.operation.selectionSet, fragmentsOf(parsed.document), 0)
  if (depth > init.maxDepth) {
    return [graphqlErrorOf(validationFailed(`query depth ${depth} exceeds the limit of ${init.maxDepth}`))]
  }
  return []
}

function introspectionRule(policy: GraphqlInit['introspection'], authenticated: boolean): ValidationRule {
  return (context) => ({
    Field(node: FieldNode) {
      const name = node.name.value
      if (name !== '__schema' && name !== '__type') return
      if (policy === 'disabled') {
        context.reportError(graphqlErrorOf(new SvcError('PERMISSION_DENIED', 'introspection is disabled on this node')))
      } else if (policy === 'authenticated' && !authenticated) {
        context.reportError(graphqlErrorOf(new SvcError('PERMISSION_DENIED', 'introspection needs credentials', { reason: 'unauthenticated' })))
      }
    },
  })
}

function fragmentsOf(document: DocumentNode): Map<string, FragmentDefinitionNode> {
  const map = new Map<string, FragmentDefinitionNode>()
  for (const def of document.definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) map.set(def.name.value, def)
  return map
}

/** Nesting depth of a selection set, introspection fields (`__schema { types { … } }`) included. */
function depthOf(set: SelectionSetNode, fragments: Map<string, FragmentDefinitionNode>, depth: number): number {
  let max = depth
  for (const sel of set.selections) {
    if (sel.kind === Kind.FIELD) {
      max = Math.max(max, sel.selectionSet ? depthOf(sel.selectionSet, fragments, depth + 1) : depth + 1)
    } else if (sel.kind === Kind.INLINE_FRAGMENT) {
      max = Math.max(max, depthOf(sel.selectionSet, fragments, depth))
    } else {
      const frag = fragments.get(sel.name.value)
      if (frag) max = Math.max(max, depthOf(frag.selectionSet, fragments, depth))
    }
  }
  return max
}

interface CostContext {
  schema: GraphQLSchema
  fragments: Map<string, FragmentDefinitionNode>
  variables: Record<string, unknown>
}

/**
 * The number of objects an operation can return, which is the work its resolvers do: each object
 * a field returns costs 1, times `multiplier` (the product of the sizes of the lists it sits in);
 * a list of objects costs its size. Scalar fields cost nothing (they are read from an object
 * already paid for), except root fields, which are an engine call each (`deleteFunction`). A
 * list's size is the `limit` argument of the nearest field above it that has one (capped at the
 * engine's page size, default value of the argument when absent), else DEFAULT_LIST_SIZE.
 * Introspection root fields cost INTROSPECTION_COST each.
 *
 * So `listFunctions(limit: 500) { items { …scalars… } pagination { total } }` costs 502, within the
 * default of 1000, while two such pages in one request (aliases), or a page with per-item
 * `metrics`, cost more.
 */
function costOf(set: SelectionSetNode, parent: GraphQLCompositeType, multiplier: number, listSize: number, c: CostContext, root = false): number {
  let cost = 0
  for (const sel of set.selections) {
    if (sel.kind === Kind.FIELD) {
      const name = sel.name.value
      if (name === '__schema' || name === '__type') {
        cost += multiplier * INTROSPECTION_COST
        continue
      }
      if (name.startsWith('__')) continue
      const def = isObjectType(parent) || isInterfaceType(parent) ? parent.getFields()[name] : undefined
      if (!def) continue
      const child = getNamedType(def.type)
      if (!sel.selectionSet || !isCompositeType(child)) {
        if (root) cost += multiplier
        continue
      }
      const limitArg = def.args.find((a) => a.name === 'limit')
      const size = limitArg ? pageSize(sel, limitArg.defaultValue, c.variables) : listSize
      const objects = isListType(getNullableType(def.type)) ? multiplier * size : multiplier
      cost += objects + costOf(sel.selectionSet, child, objects, size, c)
    } else {
      const typeName = sel.kind === Kind.INLINE_FRAGMENT ? sel.typeCondition?.name.value : c.fragments.get(sel.name.value)?.typeCondition.name.value
      const selectionSet = sel.kind === Kind.INLINE_FRAGMENT ? sel.selectionSet : c.fragments.get(sel.name.value)?.selectionSet
      const type = typeName === undefined ? parent : c.schema.getType(typeName)
      if (selectionSet && type && isCompositeType(type)) cost += costOf(selectionSet, type, multiplier, listSize, c, root)
    }
  }
  return cost
}

function pageSize(field: FieldNode, defaultValue: unknown, variables: Record<string, unknown>): number {
  const arg = field.arguments?.find((a) => a.name.value === 'limit')
  const value = arg ? literalOf(arg.value, variables) : defaultValue
  const n = typeof value === 'number' && Number.isFinite(value) ? Math.trunc(value) : typeof defaultValue === 'number' ? defaultValue : DEFAULT_LIST_SIZE
  return Math.min(MAX_LIST_PAGE, Math.max(1, n))
}

function literalOf(node: ValueNode, variables: Record<string, unknown>): unknown {
  if (node.kind === Kind.INT || node.kind === Kind.FLOAT) return Number(node.value)
  if (node.kind === Kind.VARIABLE) return variables[node.name.value]
  return undefined
}

function defaultsOf(operation: OperationDefinitionNode): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const v of operation.variableDefinitions ?? []) {
    if (v.defaultValue) out[v.variable.name.value] = literalOf(v.defaultValue, {})
  }
  return out
}
