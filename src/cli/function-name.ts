import { languageFamily, lexSource, prepareSource } from '../core/rufid.js'

/**
 * The functions a source file defines at its top level that a node could call by name, in source
 * order: what `svc functions create --file <source>` takes the function name from when the file
 * defines exactly one (and lists when it defines several). Strings and comments never count (the
 * source is lexed as for its RUFID, rufid-v1 §4–§5).
 *
 * - Python: `def NAME(` or `async def NAME(` at the start of a line (not indented: not a method or
 *   a nested function).
 * - JavaScript and TypeScript, outside any bracket: `function NAME(` (also `async`, `function*`)
 *   and `const|let|var NAME [: Type] = ` a function or an arrow function. A source that uses
 *   module syntax (`export`, `import`) runs as a module, where the node calls an exported function:
 *   then only the exported ones count (`export function`, `export const`, `export default function
 *   NAME`, `export { NAME [as ALIAS] }`).
 * - Go: `func NAME(` at the start of a line (methods `func (r T) NAME(` and `init` do not count).
 * - Other languages: none.
 */
export function topLevelFunctions(source: string, language: string): string[] {
  const family = languageFamily(language)
  if (family === 'plain') return []
  const lexed = lexSource(prepareSource(source), family)
  // the code with every string literal blanked to one `"` and spaces (newlines kept): only code can
  // define a function, and the literal stays a value (`const s = "…"` is not followed by nothing)
  let code = ''
  let runStart = 0
  for (let i = 0; i <= lexed.text.length; i++) {
    const isCode = i < lexed.text.length && lexed.code[i] === 1
    if (isCode) continue
    code += lexed.text.slice(runStart, i)
    if (i < lexed.text.length) {
      const startsLiteral = i === 0 || lexed.code[i - 1] === 1
      code += lexed.text[i] === '\n' ? '\n' : startsLiteral ? '"' : ' '
    }
    runStart = i + 1
  }
  if (family === 'python') return lineDefinitions(code, PYTHON_DEF)
  if (family === 'go') return lineDefinitions(code, GO_FUNC).filter((name) => name !== 'init')
  return jsDefinitions(code)
}

const PYTHON_DEF = /^(?:async[ \t]+)?def[ \t]+([\p{L}_][\p{L}\p{N}_]*)[ \t]*\(/u
const GO_FUNC = /^func[ \t]+([\p{L}_][\p{L}\p{N}_]*)[ \t]*[([]/u

function lineDefinitions(code: string, definition: RegExp): string[] {
  const names: string[] = []
  for (const line of code.split('\n')) {
    const m = definition.exec(line)
    if (m && !names.includes(m[1]!)) names.push(m[1]!)
  }
  return names
}

interface Token {
  text: string
  /** a line break came before it (a statement may start there) */
  newline: boolean
  /** for an opening bracket: the text up to its matching closer */
  inner?: string
}

const isIdentStart = (c: number): boolean => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 36 || c >= 0x80
const isIdentPart = (c: number): boolean => isIdentStart(c) || (c >= 48 && c <= 57)
const isIdentifier = (t: Token | undefined): boolean => t !== undefined && isIdentStart(t.text.charCodeAt(0))
const OPENERS: Record<string, string> = { '(': ')', '[': ']', '{': '}' }

/** The tokens of `code` outside any bracket; a bracket pair is one opening token (with its inner text) and its closer. */
function topLevelTokens(code: string): Token[] {
  const tokens: Token[] = []
  let newline = true
  let i = 0
  while (i < code.length) {
    const c = code.charCodeAt(i)
    if (c === 10) {
      newline = true
      i++
      continue
    }
    if (c === 32 || c === 9 || c === 11 || c === 12 || c === 13) {
      i++
      continue
    }
    let text: string
    let inner: string | undefined
    if (isIdentStart(c)) {
      let j = i + 1
      while (j < code.length && isIdentPart(code.charCodeAt(j))) j++
      text = code.slice(i, j)
      i = j
    } else if (code[i]! in OPENERS) {
      // skip to the matching closer (any kind: the source was already lexed; balance is all that matters)
      let depth = 1
      let j = i + 1
      while (j < code.length && depth > 0) {
        const ch = code[j]!
        if (ch === '(' || ch === '[' || ch === '{') depth++
        else if (ch === ')' || ch === ']' || ch === '}') depth--
        j++
      }
      text = code[i]!
      inner = code.slice(i + 1, depth === 0 ? j - 1 : j)
      tokens.push({ text, newline, inner })
      newline = false
      if (depth === 0) tokens.push({ text: code[j - 1]!, newline: false })
      i = j
      continue
    } else if (code.startsWith('=>', i)) {
      text = '=>'
      i += 2
    } else {
      text = code[i]!
      i++
    }
    tokens.push({ text, newline, ...(inner === undefined ? {} : { inner }) })
    newline = false
  }
  return tokens
}

/** Whether tokens[p] starts a function value: `[async] function`, `[async] (…) [: T] =>`, `[async] x =>`. */
function isFunctionValue(tokens: Token[], p: number): boolean {
  if (tokens[p]?.text === 'async') p++
  const t = tokens[p]
  if (t === undefined) return false
  if (t.text === 'function') return true
  if (isIdentifier(t)) return tokens[p + 1]?.text === '=>'
  if (t.text !== '(') return false
  p += 2 // `(` and its `)`
  if (tokens[p]?.text === ':') {
    // a return type runs to the arrow, within the statement
    while (p < tokens.length && tokens[p]!.text !== '=>' && tokens[p]!.text !== ';' && tokens[p]!.text !== '=') p++
  }
  return tokens[p]?.text === '=>'
}

function jsDefinitions(code: string): string[] {
  const tokens = topLevelTokens(code)
  const declared: string[] = []
  const exported: string[] = []
  let isModule = false
  const add = (list: string[], name: string): void => {
    if (!list.includes(name)) list.push(name)
  }
  for (let i = 0; i < tokens.length; i++) {
    const previous = tokens[i - 1]
    if (!(i === 0 || tokens[i]!.newline || previous!.text === ';' || previous!.text === '}')) continue
    let p = i
    let isExport = false
    if (tokens[p]!.text === 'import' && tokens[p + 1]?.text !== '(' && tokens[p + 1]?.text !== '.') isModule = true
    if (tokens[p]!.text === 'export') {
      isModule = true
      isExport = true
      p++
      if (tokens[p]?.text === 'default') p++
      if (tokens[p]?.text === '{') {
        // export { a, b as c }: the local a is exported as c
        for (const part of (tokens[p]!.inner ?? '').split(',')) {
          const words = part.trim().split(/\s+/)
          const local = words[0]
          const alias = words.length === 3 && words[1] === 'as' ? words[2]! : local
          if (local && alias && declared.includes(local)) add(exported, alias)
        }
        continue
      }
    }
    if (tokens[p]?.text === 'async') p++
    if (tokens[p]?.text === 'function') {
      p++
      if (tokens[p]?.text === '*') p++
      const name = tokens[p]
      if (name !== undefined && isIdentifier(name) && (tokens[p + 1]?.text === '(' || tokens[p + 1]?.text === '<')) {
        add(declared, name.text)
        if (isExport) add(exported, name.text)
      }
      continue
    }
    if (tokens[p]?.text === 'const' || tokens[p]?.text === 'let' || tokens[p]?.text === 'var') {
      const name = tokens[++p]
      if (name === undefined || !isIdentifier(name)) continue
      p++
      if (tokens[p]?.text === ':') {
        // a type annotation runs to the `=`, within the line
        p++
        while (p < tokens.length && tokens[p]!.text !== '=' && tokens[p]!.text !== ';' && !tokens[p]!.newline) p++
      }
      if (tokens[p]?.text !== '=' || !isFunctionValue(tokens, p + 1)) continue
      add(declared, name.text)
      if (isExport) add(exported, name.text)
    }
  }
  return isModule ? exported : declared
}

/**
 * The function name a source file gives when none was named, or a message saying why it gives
 * none (no top-level function, or several: listed, so the caller can pick one with --name).
 */
export function functionNameOf(source: string, language: string, file: string): { name: string } | { problem: string } {
  const names = topLevelFunctions(source, language)
  if (names.length === 1) return { name: names[0]! }
  if (names.length === 0) {
    const family = languageFamily(language)
    const forms = family === 'python' ? 'a "def NAME(" at the start of a line'
      : family === 'go' ? 'a "func NAME(" at the start of a line'
        : family === 'js' ? 'a top-level "function NAME(" or "const NAME = (…) =>" (in a module: an exported one)'
          : `no name can be read from ${language} source`
    return { problem: `${file} defines no top-level function the name could be taken from (${forms})` }
  }
  const shown = names.length > 10 ? `${names.slice(0, 10).join(', ')}, …` : names.join(', ')
  return { problem: `${file} defines ${names.length} top-level functions (${shown}): say which with --name` }
}
