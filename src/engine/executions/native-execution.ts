import { SvcError, invalidRufid, validationFailed } from '../../core/errors.js'
import { computeRufid } from '../../core/rufid.js'
import { requirePermission } from '../authz.js'
import { deriveSignature } from '../../core/signature.js'
import { FUNCTION_NAME } from '../registry/create-input.js'
import type { FunctionRegistry } from '../registry/function-registry.js'
import type { ExecutionRecord, Principal } from '../types.js'
import type { ExecutionService } from './execution-service.js'

/** Body of `POST /api/v1/execution/execute` (service-spec §4.3). */
export interface NativeExecuteRequest {
  rufid?: unknown
  function_name?: unknown
  namespace?: unknown
  source_code?: unknown
  input_data?: unknown
  /** optional: derived from the source when absent */
  signature?: unknown
  language?: unknown
}

export interface NativeExecuteResult {
  record: ExecutionRecord
  registered: boolean
  total_time_ms: number
}

/** What a native execute tells its door as it goes (the door's envelope audits it). */
export interface NativeExecuteHooks {
  /** the call registered the function (a `rufid.create` by the caller), with its full RUFID; called before it runs */
  registered?(rufid: string): void
}

/**
 * Native test-mode execution (decisions.md): run a known function; when the RUFID is unknown but
 * `source_code` is given and hashes to it, register it first, then run it. Source that hashes to
 * another RUFID is 1001. The registration is part of the execute: it needs rufid.execute, not
 * rufid.create (the spec's flow mints `functions:execute` keys for this endpoint), and it is
 * reported through `hooks.registered` so the door audits it as a create by the caller.
 *
 * Order (decisions.md: size and permission are checked before the source is hashed): the RUFID's
 * syntax, rufid.execute and the lookup; then, only for a registration, the source's size against
 * registry.max_source_bytes, a language this node cannot run and the function name's syntax (1006);
 * only then the signature is derived and the source hashed. Each step is linear in its input.
 */
export async function nativeExecute(
  principal: Principal,
  body: NativeExecuteRequest,
  { functions, executions }: { functions: FunctionRegistry; executions: ExecutionService },
  hooks: NativeExecuteHooks = {},
): Promise<NativeExecuteResult> {
  const started = performance.now()
  // §4.3 names the function `rufid:` plus its hash; the short and full forms work too
  const named = typeof body.rufid === 'string' && /^rufid:[A-Za-z0-9]{12}$/.test(body.rufid) ? body.rufid.slice(6) : body.rufid
  const target = functions.target(principal, named)
  requirePermission(principal, 'rufid.execute')
  let registered = false
  try {
    await functions.resolve(principal, target, 'rufid.execute')
  } catch (err) {
    if (!(err instanceof SvcError) || err.code !== 1002 || typeof body.source_code !== 'string' || body.source_code === '') throw err
    functions.admitSource(principal, body.source_code, '/source_code', 'rufid.execute')
    functions.admitLanguage(body.language) // before the signature is derived and the source hashed
    const definition = definitionOf(body)
    const computed = computeRufid(definition)
    if (computed.rufid_short !== target.short) {
      throw invalidRufid(body.rufid, `source_code hashes to ${computed.rufid_short}, not to`)
    }
    const created = await functions.create(principal, definition, { permission: 'rufid.execute' })
    // false when a concurrent call registered the same content first: nothing was created here
    registered = created.created
    if (registered) hooks.registered?.(created.rufid)
  }
  const record = await executions.execute(principal, target, body.input_data ?? {})
  return { record, registered, total_time_ms: performance.now() - started }
}

/** The definition to register: language and signature read from the source when absent. */
function definitionOf(body: NativeExecuteRequest): { function_name: string; signature: string; language: string; source_code: string } {
  const source_code = body.source_code as string
  const function_name = typeof body.function_name === 'string' ? body.function_name : ''
  // the name is searched for in the source (below, and by the signature derivation): a create
  // refuses anything but an identifier of at most 128 characters, so it is refused here first
  if (!FUNCTION_NAME.test(function_name)) {
    throw validationFailed('invalid function definition: /function_name must be an identifier of at most 128 characters', [
      { pointer: '/function_name', message: 'must be an identifier of at most 128 characters' },
    ])
  }
  const language = typeof body.language === 'string' && body.language !== ''
    ? body.language
    : definesPythonFunction(source_code, function_name) ? 'python' : 'javascript'
  const signature = typeof body.signature === 'string' && body.signature !== ''
    ? body.signature
    : deriveSignature({ function_name, language, source_code })
  return { function_name, signature, language, source_code }
}

// JavaScript's \s (what the regex below used): ASCII blanks, line terminators and Unicode spaces
const isJsSpace = (c: number): boolean =>
  (c >= 9 && c <= 13) || c === 32 || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
  c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff
// what ends a line for `^` in a multiline regex
const isLineTerminator = (c: number): boolean => c === 10 || c === 13 || c === 0x2028 || c === 0x2029

/**
 * Whether the source defines `name` as Python does, exactly as the multiline regex
 * `^\s*(async\s+)?def\s+NAME\s*\(` matched it, in one pass: that regex retried `^\s*` at every line
 * start of a run of blank lines, quadratic in the run. `def` (or `async`) qualifies when the
 * blanks right before it reach the start of the text or hold a line terminator.
 */
export function definesPythonFunction(source: string, name: string): boolean {
  const n = source.length
  /** start of the run of blanks that ends at `end` (exclusive), and whether it holds a line end */
  const blanksBefore = (end: number): { start: number; lineEnd: boolean } => {
    let start = end
    let lineEnd = false
    while (start > 0 && isJsSpace(source.charCodeAt(start - 1))) {
      if (isLineTerminator(source.charCodeAt(start - 1))) lineEnd = true
      start--
    }
    return { start, lineEnd }
  }
  const atLineStart = (i: number): boolean => {
    const { start, lineEnd } = blanksBefore(i)
    return start === 0 || lineEnd
  }
  const skipBlanks = (i: number): number => {
    while (i < n && isJsSpace(source.charCodeAt(i))) i++
    return i
  }
  for (let d = source.indexOf('def'); d !== -1; d = source.indexOf('def', d + 1)) {
    const afterDef = skipBlanks(d + 3)
    if (afterDef === d + 3 || !source.startsWith(name, afterDef)) continue
    if (source.charCodeAt(skipBlanks(afterDef + name.length)) !== 40 /* ( */) continue
    if (atLineStart(d)) return true
    const before = blanksBefore(d)
    if (before.start < d && before.start >= 5 && source.startsWith('async', before.start - 5) && atLineStart(before.start - 5)) return true
  }
  return false
}
