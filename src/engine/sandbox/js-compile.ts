import type ivm from 'isolated-vm'
import { SvcError } from '../../core/errors.js'
import { transpileFileName } from './languages.js'

/** A function's source compiled for one isolate. */
export type CompiledSource =
  /** A script: compiled once, run in each call's fresh context. */
  | { mode: 'script'; script: ivm.Script; filename: string }
  /** An ES module: a module binds to one context, so each call compiles `code` again. */
  | { mode: 'module'; code: string; filename: string }

type TypeScriptApi = typeof import('typescript')
let typescript: Promise<TypeScriptApi> | undefined

/** Loads `typescript` on first use only (it is large and most workers may never need it). */
function loadTypeScript(): Promise<TypeScriptApi> {
  typescript ??= import('typescript').then((m) => (m as { default?: TypeScriptApi }).default ?? m)
  return typescript
}

/** JavaScript for a js-family source: TypeScript (and JSX) is stripped with `transpileModule`. */
export async function toJavaScript(language: string, source: string): Promise<{ code: string; filename: string }> {
  const fileName = transpileFileName(language)
  if (fileName === undefined) return { code: source, filename: 'function.js' }
  const ts = await loadTypeScript()
  const out = ts.transpileModule(source, {
    fileName,
    reportDiagnostics: true,
    compilerOptions: {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      jsx: ts.JsxEmit.React,
      sourceMap: false,
      removeComments: false,
    },
  })
  const errors = (out.diagnostics ?? []).filter((d) => d.category === ts.DiagnosticCategory.Error)
  if (errors.length > 0) {
    const messages = errors.slice(0, 5).map((d) => {
      const text = ts.flattenDiagnosticMessageText(d.messageText, '\n')
      if (d.file === undefined || d.start === undefined) return text
      const { line, character } = d.file.getLineAndCharacterOfPosition(d.start)
      return `${text} (${fileName}:${line + 1}:${character + 1})`
    })
    throw new SvcError('VALIDATION_FAILED', `the TypeScript source does not compile: ${messages.join('; ')}`, {
      details: { diagnostics: messages },
    })
  }
  return { code: out.outputText, filename: fileName.replace(/\.[jt]sx?$/, '.js') }
}

/** Syntax V8 accepts only in modules: such a source is compiled as an ES module instead. */
const MODULE_ONLY_SYNTAX = [
  "Unexpected token 'export'",
  'Cannot use import statement outside a module',
  "Cannot use 'import.meta' outside a module",
  'await is only valid in async functions and the top level bodies of modules',
]

/**
 * Compiles JavaScript as a script, or as an ES module when it uses module syntax. A syntax
 * error, or a module that imports anything, is VALIDATION_FAILED.
 */
export function compileJavaScript(isolate: ivm.Isolate, code: string, filename: string): CompiledSource {
  try {
    const script = isolate.compileScriptSync(code, { filename })
    return { mode: 'script', script, filename }
  } catch (err) {
    if (isolate.isDisposed || !isSyntaxError(err)) throw err
    if (!MODULE_ONLY_SYNTAX.some((m) => err.message.includes(m))) throw syntaxError(err)
  }
  let module: ivm.Module
  try {
    module = isolate.compileModuleSync(code, { filename })
  } catch (err) {
    if (isSyntaxError(err)) throw syntaxError(err)
    throw err
  }
  const imports = module.dependencySpecifiers
  module.release()
  if (imports.length > 0) {
    throw new SvcError('VALIDATION_FAILED', `sandboxed functions cannot import modules (imports: ${imports.join(', ')})`, {
      details: { imports },
    })
  }
  return { mode: 'module', code, filename }
}

function isSyntaxError(err: unknown): err is Error {
  return err instanceof Error && err.name === 'SyntaxError'
}

function syntaxError(err: Error): SvcError {
  return new SvcError('VALIDATION_FAILED', `syntax error in the source: ${err.message}`, { details: { syntaxError: err.message } })
}
