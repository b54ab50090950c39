#!/usr/bin/env node
// Copies the files of src/ that are not TypeScript but that the compiled daemon reads at run time
// into dist/, beside the modules that read them (`npm run build` runs it after tsc).
import { copyFileSync, mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
/** paths under src/ */
const ASSETS = [
  'engine/sandbox/python-prelude.py', // the sandbox's Python prelude (python-interpreter.ts)
]

for (const asset of ASSETS) {
  const to = join(root, 'dist', asset)
  mkdirSync(dirname(to), { recursive: true })
  copyFileSync(join(root, 'src', asset), to)
}
