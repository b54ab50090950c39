import { languageFamily, type LanguageFamily } from '../../core/rufid.js'

/** Language families the sandbox has a runtime for: js (isolated-vm) and python (Pyodide). */
export const SANDBOX_FAMILIES: ReadonlySet<LanguageFamily> = new Set<LanguageFamily>(['js', 'python'])

/**
 * The language names the sandbox runs, one per language (what a node declares in its federation
 * registration, service-spec §2.7): their aliases (`js`, `ts`, `py`, `python3.12`, …) run too.
 */
export const SANDBOX_LANGUAGES: readonly string[] = Object.freeze(['javascript', 'typescript', 'python'].filter((l) => SANDBOX_FAMILIES.has(languageFamily(l))))

/** Versioned Python runtime names (`python3.12`, `py3.11`), which rufid-v1 §3 leaves to `plain`. */
const VERSIONED_PYTHON = /^(?:python|py)3(?:\.\d+)*$/i

/** The sandbox runtime family for a language value, or undefined when none runs it. */
export function sandboxFamilyOf(language: string): LanguageFamily | undefined {
  const family = languageFamily(language)
  if (SANDBOX_FAMILIES.has(family)) return family
  return VERSIONED_PYTHON.test(language) ? 'python' : undefined
}

const TRANSPILED = new Map<string, string>([
  ['typescript', 'function.ts'],
  ['ts', 'function.ts'],
  ['tsx', 'function.tsx'],
  ['jsx', 'function.jsx'],
])

/** For js-family languages that must be stripped to JavaScript first: the file name to transpile as. */
export function transpileFileName(language: string): string | undefined {
  return TRANSPILED.get(language.toLowerCase())
}
