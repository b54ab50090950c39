import { languageFamily } from '../../core/rufid.js'

/** The direct-import convention of decisions.md, for the function's language. */
export function importStatement(language: string, rufidShort: string, functionName: string): string {
  switch (languageFamily(language)) {
    case 'js':
      return `const ${functionName} = (await import('svc://${rufidShort}')).default`
    case 'go':
      return `${functionName} := client.Function("${rufidShort}")`
    default:
      return pythonImportStatement(rufidShort, functionName)
  }
}

/** A short RUFID that starts with a digit is not a Python identifier: prefix it with `_`. */
export function pythonImportStatement(rufidShort: string, functionName: string): string {
  const name = /^[0-9]/.test(rufidShort) ? `_${rufidShort}` : rufidShort
  return `from svc.rufid import ${name} as ${functionName}`
}
