#!/usr/bin/env node
// Fails when the modules of src/ import each other in a cycle (run by `npm run lint`). Counted:
// static imports and re-exports that load a module at run time; not counted: `import type` /
// `export type` (erased by the compiler), imports whose every name is a type, and dynamic
// `import()` (loaded later, on demand). Every cycle found is printed as a chain of files.
// (eslint-plugin-import's import/no-cycle would add a dependency tree for one rule; type-only
// back-references between a module and its helper, such as a request helper naming the context
// type of the module that uses it, order nothing at run time and stay allowed.)
import { readdirSync, readFileSync, existsSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const src = join(root, 'src')

function* sourceFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) {
      if (entry.name !== 'generated') yield* sourceFiles(path)
    } else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) yield path
  }
}

/** The file a relative specifier names (NodeNext: `./x.js` is `./x.ts`), or undefined. */
function resolveSpecifier(from, specifier) {
  if (!specifier.startsWith('.')) return undefined
  const base = resolve(dirname(from), specifier)
  for (const candidate of [base.replace(/\.js$/, '.ts'), base.replace(/\.js$/, '.tsx'), base, join(base, 'index.ts')]) {
    if (candidate.endsWith('.ts') || candidate.endsWith('.tsx')) if (existsSync(candidate)) return candidate
  }
  return undefined
}

/** The modules `file` loads when it is loaded. */
function runtimeImports(file) {
  const text = readFileSync(file, 'utf8')
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, false)
  const out = []
  for (const statement of sf.statements) {
    let specifier
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause
      if (clause?.isTypeOnly) continue
      const bindings = clause?.namedBindings
      const onlyTypes = clause !== undefined && clause.name === undefined && bindings !== undefined && ts.isNamedImports(bindings)
        && bindings.elements.length > 0 && bindings.elements.every((e) => e.isTypeOnly)
      if (onlyTypes) continue
      specifier = statement.moduleSpecifier
    } else if (ts.isExportDeclaration(statement) && statement.moduleSpecifier) {
      if (statement.isTypeOnly) continue
      const clause = statement.exportClause
      if (clause && ts.isNamedExports(clause) && clause.elements.length > 0 && clause.elements.every((e) => e.isTypeOnly)) continue
      specifier = statement.moduleSpecifier
    }
    if (specifier && ts.isStringLiteral(specifier)) {
      const target = resolveSpecifier(file, specifier.text)
      if (target) out.push(target)
    }
  }
  return out
}

const graph = new Map()
for (const file of sourceFiles(src)) graph.set(file, runtimeImports(file))

// Tarjan's strongly connected components: a component of more than one module (or a module that
// imports itself) is a cycle
let index = 0
const indexOf = new Map()
const low = new Map()
const stack = []
const onStack = new Set()
const components = []
function connect(v) {
  indexOf.set(v, index)
  low.set(v, index)
  index++
  stack.push(v)
  onStack.add(v)
  for (const w of graph.get(v) ?? []) {
    if (!indexOf.has(w)) {
      connect(w)
      low.set(v, Math.min(low.get(v), low.get(w)))
    } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), indexOf.get(w)))
  }
  if (low.get(v) === indexOf.get(v)) {
    const component = []
    let w
    do {
      w = stack.pop()
      onStack.delete(w)
      component.push(w)
    } while (w !== v)
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) components.push(component)
  }
}
for (const v of graph.keys()) if (!indexOf.has(v)) connect(v)

/** One cycle through the component, as a chain of files (a shortest path back to its start). */
function cycleIn(component) {
  const members = new Set(component)
  const start = [...component].sort()[0]
  const previous = new Map([[start, undefined]])
  const queue = [start]
  while (queue.length) {
    const v = queue.shift()
    for (const w of graph.get(v) ?? []) {
      if (!members.has(w)) continue
      if (w === start) {
        const chain = [start]
        for (let x = v; x !== undefined && x !== start; x = previous.get(x)) chain.splice(1, 0, x)
        return [...chain, start]
      }
      if (!previous.has(w)) {
        previous.set(w, v)
        queue.push(w)
      }
    }
  }
  return component
}

if (components.length > 0) {
  console.error(`import cycles in src/ (${components.length}):`)
  for (const component of components) {
    console.error(`- ${component.length} modules, e.g. ${cycleIn(component).map((f) => relative(root, f)).join(' → ')}`)
  }
  process.exit(1)
}
console.log(`no import cycles among ${graph.size} modules of src/`)
