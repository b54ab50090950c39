import { validationFailed } from '../../core/errors.js'
import { parseSignature } from '../sandbox/signature.js'

/**
 * The arguments a function's *input* binds to: the body of `POST /v1/functions/{rufid}/executions`
 * (decisions.md, "`/v1` group field names"). What a function declares is its signature (the one
 * the JavaScript binding reads too):
 *
 * - exactly one parameter: the whole input is its value, whatever JSON it is (`[input]`, a
 *   positional call). A Python `**kwargs` alone collects the input object's members instead, and a
 *   lone keyword-only parameter (`def f(*, event)`) is given the input by its name;
 * - none or several: an input object's members are the named arguments (a member that names no
 *   parameter is 1006 when the call binds, as for the core group's `arguments`); an array is a
 *   positional call, as in the core group; anything else is 1006 here.
 *
 * No input (`undefined`) is the empty object. The result is what the call runs with, so it is also
 * what its receipt's `arguments_digest` and the result cache of a deterministic function are keyed
 * by: a core call with the same arguments (`[input]`, or the same object) binds the same way.
 */
export function argumentsOfInput(signature: string, input: unknown): Record<string, unknown> | unknown[] {
  const value = input === undefined ? {} : input
  const params = parseSignature(signature)
  if (params.length === 1) {
    const only = params[0]!
    if (only.keywords === true) return inputObject(value, 'its only parameter collects named arguments')
    if (only.keywordOnly === true) return { [only.name]: value }
    return [value]
  }
  if (Array.isArray(value)) return value
  return inputObject(value, `it declares ${params.length === 0 ? 'no parameters' : `${params.length} parameters`}`)
}

function inputObject(value: unknown, why: string): Record<string, unknown> {
  if (value !== null && typeof value === 'object' && [Object.prototype, null].includes(Object.getPrototypeOf(value))) {
    return value as Record<string, unknown>
  }
  throw validationFailed(`the function's input must be a JSON object whose members name its parameters: ${why}`, [
    { pointer: '', message: 'must be an object' },
  ])
}
