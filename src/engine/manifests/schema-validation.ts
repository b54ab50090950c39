import { readFileSync } from 'node:fs'
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import type { Problem } from './types.js'

/** The published schema files (schemas/ at the package root; same relative path from src/ and dist/). */
const SCHEMA_DIR = new URL('../../../schemas/', import.meta.url)
export const MANIFEST_SCHEMA_URL = new URL('function_manifest.schema.json', SCHEMA_DIR)
export const LOCKFILE_SCHEMA_URL = new URL('function_lock.schema.json', SCHEMA_DIR)

const MAX_PROBLEMS = 100

let compiled: { manifest: ValidateFunction; lockfile: ValidateFunction } | undefined

function validators(): { manifest: ValidateFunction; lockfile: ValidateFunction } {
  if (compiled) return compiled
  const ajv = new Ajv2020({ allErrors: true, strict: true })
  addFormats.default(ajv)
  const load = (url: URL): object => JSON.parse(readFileSync(url, 'utf8')) as object
  compiled = { manifest: ajv.compile(load(MANIFEST_SCHEMA_URL)), lockfile: ajv.compile(load(LOCKFILE_SCHEMA_URL)) }
  return compiled
}

const escapePointer = (token: string): string => token.replace(/~/g, '~0').replace(/\//g, '~1')

/** A readable problem for one ajv error; the pointer names the offending member itself where ajv knows it. */
function problemOf(err: ErrorObject, prefix: string): Problem {
  const params = err.params as Record<string, unknown>
  let pointer = prefix + err.instancePath
  let message = err.message ?? 'is invalid'
  if (err.keyword === 'required' && typeof params.missingProperty === 'string') {
    pointer += '/' + escapePointer(params.missingProperty)
    message = 'is required'
  } else if (err.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') {
    pointer += '/' + escapePointer(params.additionalProperty)
    message = 'is not a known field'
  } else if (err.keyword === 'const') {
    message = `must be ${JSON.stringify(params.allowedValue)}`
  } else if (err.keyword === 'enum' && Array.isArray(params.allowedValues)) {
    message = `must be one of ${params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`
  } else if (err.keyword === 'pattern' && typeof params.pattern === 'string') {
    message = `does not have the required form (pattern ${params.pattern})`
  } else if (err.keyword === 'propertyNames' && typeof params.propertyName === 'string') {
    pointer += '/' + escapePointer(params.propertyName)
    message = 'is not an allowed name'
  }
  return { pointer, message }
}

function run(validate: ValidateFunction, value: unknown, prefix: string): Problem[] {
  if (validate(value)) return []
  const seen = new Set<string>()
  const out: Problem[] = []
  for (const err of validate.errors ?? []) {
    // propertyNames reports the name twice (the inner pattern and the outer keyword): keep the outer one
    if (err.propertyName !== undefined) continue
    const p = problemOf(err, prefix)
    const key = `${p.pointer}\u0000${p.message}`
    if (seen.has(key)) continue
    seen.add(key)
    out.push(p)
    if (out.length >= MAX_PROBLEMS) break
  }
  return out
}

/** Problems of a manifest against schemas/function_manifest.schema.json; pointers start with `prefix`. */
export function manifestSchemaProblems(value: unknown, prefix = ''): Problem[] {
  return run(validators().manifest, value, prefix)
}

/** Problems of a lockfile against schemas/function_lock.schema.json; pointers start with `prefix`. */
export function lockfileSchemaProblems(value: unknown, prefix = ''): Problem[] {
  return run(validators().lockfile, value, prefix)
}
