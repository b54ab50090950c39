import { SvcError, invalidRufid } from '../../core/errors.js'
import { computeRufid } from '../../core/rufid.js'
import { deriveSignature } from '../../core/signature.js'
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

/**
 * Native test-mode execution (decisions.md): run a known function; when the RUFID is unknown but
 * `source_code` is given and hashes to it, register it first (this needs rufid.create), then run
 * it. Source that hashes to another RUFID is 1001.
 */
export async function nativeExecute(
  principal: Principal,
  body: NativeExecuteRequest,
  { functions, executions }: { functions: FunctionRegistry; executions: ExecutionService },
): Promise<NativeExecuteResult> {
  const started = performance.now()
  // §4.3 names the function `rufid:` plus its hash; the short and full forms work too
  const named = typeof body.rufid === 'string' && /^rufid:[A-Za-z0-9]{12}$/.test(body.rufid) ? body.rufid.slice(6) : body.rufid
  const target = functions.target(principal, named)
  let registered = false
  try {
    await functions.resolve(principal, target, 'rufid.execute')
  } catch (err) {
    if (!(err instanceof SvcError) || err.code !== 1002 || typeof body.source_code !== 'string' || body.source_code === '') throw err
    const definition = definitionOf(body)
    const computed = computeRufid(definition)
    if (computed.rufid_short !== target.short) {
      throw invalidRufid(body.rufid, `source_code hashes to ${computed.rufid_short}, not to`)
    }
    await functions.create(principal, definition)
    registered = true
  }
  const record = await executions.execute(principal, target, body.input_data ?? {})
  return { record, registered, total_time_ms: performance.now() - started }
}

function definitionOf(body: NativeExecuteRequest): { function_name: string; signature: string; language: string; source_code: string } {
  const source_code = body.source_code as string
  const function_name = typeof body.function_name === 'string' ? body.function_name : ''
  const language = typeof body.language === 'string' && body.language !== ''
    ? body.language
    : new RegExp(`^\\s*(async\\s+)?def\\s+${escape(function_name)}\\s*\\(`, 'm').test(source_code) ? 'python' : 'javascript'
  const signature = typeof body.signature === 'string' && body.signature !== ''
    ? body.signature
    : deriveSignature({ function_name, language, source_code })
  return { function_name, signature, language, source_code }
}

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
