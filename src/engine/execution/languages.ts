import { languageFamily, type LanguageFamily } from '../../core/rufid.js'

/** Language families the sandbox has a runtime for (Python joins once its runtime exists). */
export const SANDBOX_FAMILIES: ReadonlySet<LanguageFamily> = new Set<LanguageFamily>(['js'])

/** The sandbox runtime family for a language value, or undefined when none runs it. */
export function sandboxFamilyOf(language: string): LanguageFamily | undefined {
  const family = languageFamily(language)
  return SANDBOX_FAMILIES.has(family) ? family : undefined
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
