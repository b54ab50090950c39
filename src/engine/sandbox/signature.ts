import { SvcError } from '../../core/errors.js'

/** One parameter of a textual signature. */
export interface SignatureParam {
  /** The parameter's name; destructured parameters get the placeholder `$<position>`. */
  name: string
  rest: boolean
  destructured: boolean
  /** Has a default value or a `?` marker. */
  optional: boolean
  /** Python: a `**name` parameter, which collects named arguments no other parameter takes. */
  keywords?: true
  /** Python: a parameter after a bare `*`, which can only be given by name. */
  keywordOnly?: true
}

const IDENTIFIER = /^[\p{ID_Start}$_][\p{ID_Continue}$\u200C\u200D]*/u
const MODIFIERS = /^(?:(?:public|private|protected|readonly|override)\s+)+/
const BARE_ARROW = /^\s*(?:async\s+)?([\p{ID_Start}$_][\p{ID_Continue}$\u200C\u200D]*)\s*=>/u

/**
 * Parameter names of a signature, in order. Accepts `(a, b)`, `add(a: number, b: number): number`,
 * `(a, b = 2) => number`, `function f<T>(x: T)`, `x => …`; handles type annotations, defaults
 * (with nested brackets and strings), rest parameters (`...xs` → `xs`) and destructured
 * parameters (placeholder `$<position>`).
 */
export function parseSignatureParams(signature: string): string[] {
  return parseSignature(signature).map((p) => p.name)
}

export function parseSignature(signature: string): SignatureParam[] {
  const open = findParamListStart(signature)
  if (open < 0) {
    const bare = BARE_ARROW.exec(signature)
    return bare?.[1] ? [{ name: bare[1], rest: false, destructured: false, optional: false }] : []
  }
  const params: SignatureParam[] = []
  let keywordOnly = false
  for (const segment of splitParamList(signature, open + 1)) {
    // Python: the parameters after a bare `*` or a `*args` are keyword-only (a bare `*` is no parameter)
    if (segment.head === '*') keywordOnly = true
    const param = toParam(segment, params.length)
    if (param === undefined) continue
    if (keywordOnly && param.keywords === undefined) param.keywordOnly = true
    if (param.rest) keywordOnly = true
    params.push(param)
  }
  return params
}

interface Segment {
  head: string
  optional: boolean
}

/** Index of the `(` opening the parameter list: the first one outside strings, comments and generics. */
function findParamListStart(s: string): number {
  let angle = 0
  for (let i = 0; i < s.length; i++) {
    const skipped = skipLiteral(s, i)
    if (skipped !== i) {
      i = skipped - 1
      continue
    }
    const c = s[i]
    if (c === '<') angle++
    else if (c === '>' && s[i - 1] !== '=' && angle > 0) angle--
    else if (c === '(' && angle === 0) return i
  }
  return -1
}

/** Splits the parameter list starting at `start` (just after its `(`) into per-parameter heads. */
function splitParamList(s: string, start: number): Segment[] {
  const segments: Segment[] = []
  let depth = 0
  let angle = 0
  let section: 'name' | 'type' | 'default' = 'name'
  let head = ''
  let optional = false
  const finish = (): void => {
    segments.push({ head: head.trim(), optional })
    head = ''
    optional = false
    section = 'name'
    angle = 0
  }
  for (let i = start; i < s.length; i++) {
    const skipped = skipLiteral(s, i)
    if (skipped !== i) {
      if (section === 'name') head += ' '
      i = skipped - 1
      continue
    }
    const c = s[i] as string
    if (c === '(' || c === '[' || c === '{') depth++
    else if (c === ')' || c === ']' || c === '}') {
      if (depth === 0 && c === ')') break
      depth = Math.max(0, depth - 1)
    } else if (depth === 0 && section === 'type' && c === '<') angle++
    else if (depth === 0 && section === 'type' && c === '>' && s[i - 1] !== '=') angle = Math.max(0, angle - 1)
    else if (depth === 0 && angle === 0) {
      if (c === ',') {
        finish()
        continue
      }
      if (section === 'name' && c === ':') {
        section = 'type'
        continue
      }
      if (section === 'name' && c === '?') {
        optional = true
        continue
      }
      if (c === '=' && s[i + 1] !== '>' && section !== 'default') {
        section = 'default'
        optional = true
        continue
      }
    }
    if (section === 'name') head += c
  }
  finish()
  return segments
}

function toParam(segment: Segment, position: number): SignatureParam | undefined {
  let head = segment.head.replace(MODIFIERS, '')
  if (head === '' || head === '*' || head === '/') return undefined
  let rest = false
  let keywords = false
  if (head.startsWith('...')) {
    rest = true
    head = head.slice(3).trimStart()
  } else if (head.startsWith('**')) {
    keywords = true
    head = head.slice(2)
  } else if (head.startsWith('*')) {
    rest = true
    head = head.slice(1)
  }
  if (head === 'this' && !rest) return undefined
  const destructured = head.startsWith('{') || head.startsWith('[')
  const name = destructured ? undefined : IDENTIFIER.exec(head)?.[0]
  const param: SignatureParam = { name: name ?? `$${position}`, rest, destructured, optional: segment.optional }
  if (keywords) param.keywords = true
  return param
}

/**
 * If a string literal, template literal or comment starts at `i`, the index just past it;
 * otherwise `i`. Template substitutions (`${…}`) are scanned with their own nesting.
 */
function skipLiteral(s: string, i: number): number {
  const c = s[i]
  if (c === '"' || c === "'") {
    let j = i + 1
    while (j < s.length && s[j] !== c && s[j] !== '\n') j += s[j] === '\\' ? 2 : 1
    return Math.min(j + 1, s.length)
  }
  if (c === '`') return skipTemplate(s, i + 1)
  if (c === '/' && s[i + 1] === '/') {
    const end = s.indexOf('\n', i)
    return end < 0 ? s.length : end
  }
  if (c === '/' && s[i + 1] === '*') {
    const end = s.indexOf('*/', i + 2)
    return end < 0 ? s.length : end + 2
  }
  return i
}

function skipTemplate(s: string, from: number): number {
  let j = from
  while (j < s.length) {
    const c = s[j]
    if (c === '\\') j += 2
    else if (c === '`') return j + 1
    else if (c === '$' && s[j + 1] === '{') j = skipBraces(s, j + 2)
    else j++
  }
  return s.length
}

/** Index just past the `}` closing a substitution whose body starts at `from`. */
function skipBraces(s: string, from: number): number {
  let depth = 0
  for (let j = from; j < s.length; j++) {
    const skipped = skipLiteral(s, j)
    if (skipped !== j) {
      j = skipped - 1
      continue
    }
    if (s[j] === '{') depth++
    else if (s[j] === '}') {
      if (depth === 0) return j + 1
      depth--
    }
  }
  return s.length
}

/** Positional arguments for a call; `missing` lists positions that must be `undefined`. */
export interface BoundArguments {
  values: unknown[]
  missing: number[]
}

/**
 * Matches arguments to parameters: a positional array is taken as is; named arguments are placed
 * in the order the signature lists them (a rest parameter given an array is spread), absent ones
 * are `undefined`. A name the signature does not declare is VALIDATION_FAILED.
 */
export function bindArguments(params: SignatureParam[], args: Record<string, unknown> | unknown[]): BoundArguments {
  let values: unknown[]
  if (Array.isArray(args)) {
    values = [...args]
  } else {
    const known = new Set(params.map((p) => p.name))
    const unknown = Object.keys(args).filter((k) => !known.has(k))
    if (unknown.length > 0) {
      const declared = params.length ? params.map((p) => p.name).join(', ') : 'no parameters'
      const list = unknown.map((k) => `'${k}'`).join(', ')
      throw new SvcError(
        'VALIDATION_FAILED',
        `unknown argument${unknown.length > 1 ? 's' : ''} ${list} (the signature declares ${declared})`,
        { details: { unknownArguments: unknown, parameters: params.map((p) => p.name) } },
      )
    }
    values = []
    params.forEach((p, i) => {
      const present = Object.hasOwn(args, p.name)
      const value = present ? args[p.name] : undefined
      if (p.rest && i === params.length - 1 && Array.isArray(value)) values.push(...value)
      else values[i] = value
    })
  }
  while (values.length > 0 && values[values.length - 1] === undefined) values.pop()
  const missing: number[] = []
  for (let i = 0; i < values.length; i++) if (values[i] === undefined) missing.push(i)
  return { values, missing }
}
