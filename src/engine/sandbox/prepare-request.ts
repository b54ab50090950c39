import { SvcError, isSvcError, validationFailed } from '../../core/errors.js'
import type { ExecuteJob } from './ipc.js'
import { sandboxFamilyOf } from './languages.js'
import { checkPins } from './python-wheelhouse.js'
import { bindArguments, parseSignature, type SignatureParam } from './signature.js'
import type { PipPin, SandboxRequest } from './types.js'

const MAX_LIMITS = { timeoutMs: 86_400_000, memoryMb: 1_048_576, cpuMs: 86_400_000 } as const

export type PreparedRequest =
  | { ok: true; job: ExecuteJob }
  /** The request is well formed but its arguments do not fit the signature. */
  | { ok: false; error: SvcError }

/**
 * Checks a request and binds its arguments. Throws VALIDATION_FAILED for a request that cannot
 * be attempted (malformed fields, a language no sandbox runtime runs, arguments that are not JSON).
 */
export function prepareRequest(req: SandboxRequest, maxLogBytes: number, digestOf: (req: SandboxRequest) => string): PreparedRequest {
  if (typeof req !== 'object' || req === null) throw validationFailed('sandbox request must be an object')
  requireString(req.key, 'key', true)
  requireString(req.language, 'language', true)
  requireString(req.source, 'source', false)
  requireString(req.functionName, 'functionName', true)
  requireString(req.signature, 'signature', false)
  if (req.context !== undefined && req.context !== 'warm' && req.context !== 'fresh') throw validationFailed("context must be 'warm' or 'fresh'")
  if (req.deterministic !== undefined && (typeof req.deterministic?.seed !== 'string' || !/^[0-9a-f]{16,128}$/.test(req.deterministic.seed))) {
    throw validationFailed('deterministic.seed must be a hexadecimal digest')
  }
  const family = sandboxFamilyOf(req.language)
  if (family === undefined) {
    throw new SvcError('VALIDATION_FAILED', `language '${req.language}' cannot be executed by this node`, {
      details: { language: req.language },
    })
  }
  if (typeof req.args !== 'object' || req.args === null) throw validationFailed('args must be an object or an array')
  const limits = req.limits
  if (typeof limits !== 'object' || limits === null) throw validationFailed('limits are required')
  for (const field of ['timeoutMs', 'memoryMb', 'cpuMs'] as const) {
    const value = limits[field]
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > MAX_LIMITS[field]) {
      throw validationFailed(`limits.${field} must be a positive number not above ${MAX_LIMITS[field]}`)
    }
  }

  const maxResultBytes = req.maxResultBytes
  if (maxResultBytes !== undefined && (typeof maxResultBytes !== 'number' || !Number.isInteger(maxResultBytes) || maxResultBytes <= 0)) {
    throw validationFailed('maxResultBytes must be a positive integer')
  }
  requireString(req.account, 'account', true, true)
  const scope = req.tenant ?? req.key.split('/')[0] ?? ''
  const common = {
    key: req.key,
    scope,
    account: req.account ?? scope,
    language: req.language.toLowerCase(),
    family,
    source: req.source,
    sourceDigest: digestOf(req),
    // a deterministic call never shares a context with another call
    context: req.deterministic !== undefined ? 'fresh' as const : req.context ?? 'warm',
    ...(req.deterministic !== undefined ? { deterministicSeed: req.deterministic.seed } : {}),
    functionName: req.functionName,
    limits: { timeoutMs: limits.timeoutMs, memoryMb: limits.memoryMb, cpuMs: limits.cpuMs },
    maxLogBytes,
    ...(maxResultBytes !== undefined ? { maxResultBytes } : {}),
  }
  if (family === 'python') {
    // Python binds the arguments in the worker, against the function's own inspect.signature.
    let pipPins: PipPin[] = []
    const pip = req.dependencies?.pip
    if (pip !== undefined && pip !== null) {
      try {
        pipPins = checkPins(pip)
      } catch (err) {
        if (isSvcError(err)) return { ok: false, error: err }
        throw err
      }
    }
    const job: ExecuteJob = { ...common, argsJson: argumentsJson(req.args), missingArgs: [] }
    if (pipPins.length > 0) job.pipPins = pipPins
    return { ok: true, job }
  }

  let bound
  try {
    bound = bindArguments(parsedSignature(req.signature), req.args)
  } catch (err) {
    if (isSvcError(err)) return { ok: false, error: err }
    throw err
  }
  return { ok: true, job: { ...common, argsJson: argumentsJson(bound.values), missingArgs: bound.missing } }
}

/** Parsed signatures, by their text (a function's signature is parsed once, not on every call). */
const signatures = new Map<string, readonly SignatureParam[]>()
const MAX_SIGNATURES = 4096

function parsedSignature(signature: string): SignatureParam[] {
  let params = signatures.get(signature)
  if (params === undefined) {
    params = Object.freeze(parseSignature(signature).map((p) => Object.freeze(p)))
    if (signatures.size >= MAX_SIGNATURES) signatures.delete(signatures.keys().next().value as string)
    signatures.set(signature, params)
  }
  return params as SignatureParam[]
}

function argumentsJson(values: unknown): string {
  try {
    return JSON.stringify(values)
  } catch (err) {
    throw validationFailed(`arguments are not JSON-serialisable: ${err instanceof Error ? err.message : String(err)}`)
  }
}

function requireString(value: unknown, field: string, nonEmpty: boolean, optional = false): void {
  if (optional && value === undefined) return
  if (typeof value !== 'string' || (nonEmpty && value.length === 0)) {
    throw validationFailed(`${field} must be a${nonEmpty ? ' non-empty' : ''} string`)
  }
}
