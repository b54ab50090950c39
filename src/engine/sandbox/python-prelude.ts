import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/**
 * The Python prelude run once in every fresh Pyodide interpreter (what it defines and guards is
 * described at the top of the file): `python-prelude.py` beside this module, in src/ and, copied
 * by `npm run build` (scripts/copy-build-assets.mjs), in dist/. pytest exercises it under CPython
 * (test/python/test_prelude.py).
 */
export const PYTHON_PRELUDE_FILE = fileURLToPath(new URL('./python-prelude.py', import.meta.url))

export const PYTHON_PRELUDE = readFileSync(PYTHON_PRELUDE_FILE, 'utf8')
