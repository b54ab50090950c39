#!/usr/bin/env node
// Writes test/vectors/signature-v1.json from the cases below: the derived signature of
// shared/spec/rufid-v1.md §10 (the rules §10 leaves open are fixed in src/core/signature.ts).
// Each case's expected `signature` (or expected 1006 and its reason) is written by hand from the
// spec: it is the expectation, not an implementation's output. `sha256_hex` and `rufid_short`
// are what RUFID v1 gives for the case with that signature, computed with the RUFID v1 code that
// test/vectors/rufid-v1.json checks (dist/core/rufid.js: run `npm run build` first); the
// derivation itself is not used here.
// The TypeScript, Python and Go suites all check their derivations against the file.
//   node scripts/make-signature-vectors.mjs            write the file
//   node scripts/make-signature-vectors.mjs --check    exit 1 if the file differs from what would be written
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const rufidModule = new URL('../dist/core/rufid.js', import.meta.url)
if (!existsSync(rufidModule)) {
  console.error('dist/core/rufid.js is missing: run `npm run build` first')
  process.exit(1)
}
const { computeRufid } = await import(rufidModule.href)

/** A case that derives `signature`. */
const S = (id, covers, function_name, language, source_code, signature) =>
  ({ id, covers, function_name, language, source_code, signature })
/** A case that must fail with 1006 VALIDATION_FAILED for `reason`. */
const E = (id, covers, function_name, language, source_code, reason) =>
  ({ id, covers, function_name, language, source_code, error: { code: 1006, name: 'VALIDATION_FAILED', reason } })

const cases = [
  // --- python -----------------------------------------------------------------------------
  S('py-basic', ['family:python'], 'add', 'python',
    'def add(a, b):\n    return a + b\n',
    '(a, b)'),
  S('py-spec-example', ['family:python', 'nesting', 'return-annotation'], 'add', 'python',
    'def add(a: int, b: int = (1)) -> int:\n    return a + b\n',
    '(a: int, b: int = (1))'),
  S('py-default-calls', ['nesting', 'default-with-call'], 'f', 'py',
    'def f(a, b=g(1, [2, 3]), c={"k": (4,)}, *, d=h()):\n    return a\n',
    '(a, b=g(1, [2, 3]), c={"k": (4,)}, *, d=h())'),
  S('py-multiline', ['multi-line', 'comment-in-list', 'return-annotation'], 'connect', 'python3',
    'def connect(\n    host: str,  # the host (a name)\n    port: int = 8080,\n\n    *args,\n    **kwargs,\n) -> None:\n    pass\n',
    '(host: str, port: int = 8080, *args, **kwargs,)'),
  S('py-async', ['async'], 'fetch', 'python',
    'import asyncio\n\nasync def fetch(url, *, timeout=10):\n    await asyncio.sleep(0)\n    return url\n',
    '(url, *, timeout=10)'),
  S('py-method-any-depth', ['any-depth'], 'add', 'python',
    'class Calc:\n    def helper(self):\n        return 0\n\n    def add(self, a, b):\n        return a + b\n',
    '(self, a, b)'),
  S('py-name-in-comment-and-string-first', ['name-in-comment', 'name-in-string'], 'add', 'python',
    '# def add(x): the old version\nDOC = "def add(y, z): not this one"\nOLD = """\ndef add(q):\n"""\ndef add(a, b):\n    return a + b\n',
    '(a, b)'),
  S('py-strings-hold-parens', ['string-in-list'], 'f', 'python',
    'def f(a=")", b=\'(\', c="""x)""", d=r"\\)"):\n    return a\n',
    '(a=")", b=\'(\', c="""x)""", d=r"\\)")'),
  S('py-whitespace-collapse', ['whitespace'], 'f', 'python',
    'def f( a ,\tb = 1 ,\n\n  c ):\n    return a\n',
    '(a , b = 1 , c)'),
  S('py-whitespace-in-string-kept', ['whitespace', 'string-in-list'], 'f', 'python',
    'def f(sep="  a\tb  ",  end = \'\\n\' ):\n    return sep\n',
    '(sep="  a\tb  ", end = \'\\n\')'),
  S('py-first-of-two', ['first-definition'], 'add', 'python',
    'def add(a):\n    return a\n\ndef add(a, b):\n    return a + b\n',
    '(a)'),
  S('py-longer-name-not-matched', ['whole-word'], 'add', 'python',
    'def add_all(xs):\n    return sum(xs)\n\ndef add (x, y):\n    return x + y\n',
    '(x, y)'),
  S('py-crlf-bom', ['crlf', 'bom', 'multi-line'], 'add', 'python',
    '\ufeffdef add(a,\r\n        b):\r\n    return a + b\r\n',
    '(a, b)'),
  S('py-non-ascii', ['non-ascii', 'string-in-list'], 'grüße', 'python',
    'def grüße(name: str = "Welt (🌍)"):\n    return "Grüße, " + name\n',
    '(name: str = "Welt (🌍)")'),
  E('py-no-definition', ['no-definition'], 'add', 'python',
    'def other(a):\n    return add(a, 1)\n',
    'no_definition'),
  E('py-definition-only-in-string', ['no-definition', 'name-in-string'], 'add', 'python',
    's = "def add(a): pass"\n# def add(b): pass\n',
    'no_definition'),
  E('py-lambda-is-not-a-definition', ['no-definition'], 'add', 'python',
    'add = lambda a, b: a + b\n',
    'no_definition'),
  E('py-unbalanced', ['unbalanced'], 'add', 'python',
    'def add(a, b:\n    return a + b\n',
    'unbalanced'),
  E('py-mismatched-closer', ['unbalanced'], 'add', 'python',
    'def add(a, b]:\n    return a + b\n',
    'unbalanced'),
  S('py-identifier-boundaries', ['whole-word', 'identifier-characters'], 'add', 'python',
    'def _add(p): pass\ndef $add(p): pass\ndef éadd(p): pass\ndef Xadd(p): pass\ndef add_(p): pass\ndef add$(p): pass\ndef addé(p): pass\ndef add9(p): pass\ndef add(a, b): pass\n',
    '(a, b)'),
  S('py-keyword-boundaries', ['whole-word', 'identifier-characters'], 'add', 'python',
    '_def add(p): pass\nxdef add(p): pass\ndef_ add(p): pass\ndefé add(p): pass\ndef0 add(p): pass\ndef\fadd(a): pass\n',
    '(a)'),

  // --- js / ts ----------------------------------------------------------------------------
  S('js-basic', ['family:js'], 'add', 'javascript',
    'function add(a, b) {\n  return a + b\n}\n',
    '(a, b)'),
  S('js-spec-example', ['family:js', 'nesting', 'default-with-call'], 'f', 'js',
    'function f(a, b = g(1), { c } = {}) {\n  return a\n}\n',
    '(a, b = g(1), { c } = {})'),
  S('js-export-async-function', ['async', 'export', 'nesting'], 'load', 'mjs',
    'export async function load(url, { retries = 3 } = {}) {\n  return url\n}\n',
    '(url, { retries = 3 } = {})'),
  S('js-generator', ['generator'], 'count', 'javascript',
    'function* count(from, to = from + 10) {\n  for (let i = from; i < to; i++) yield i\n}\n',
    '(from, to = from + 10)'),
  S('js-generator-star-before-name', ['generator'], 'count', 'js',
    'function *count(n) { yield n }\n',
    '(n)'),
  S('js-const-arrow', ['arrow'], 'add', 'javascript',
    'const add = (a, b) => a + b\n',
    '(a, b)'),
  S('js-bare-parameter', ['arrow', 'bare-parameter'], 'h', 'js',
    'const h = x => x\n',
    '(x)'),
  S('js-export-async-arrow', ['arrow', 'async', 'export', 'nesting'], 'fetchAll', 'js',
    'export const fetchAll = async (urls, opts = { parallel: 2 }) => {\n  return urls\n}\n',
    '(urls, opts = { parallel: 2 })'),
  S('js-let-function-expression', ['function-expression'], 'add', 'cjs',
    'let add = function (a, b) { return a + b }\nmodule.exports = add\n',
    '(a, b)'),
  S('js-var-async-function-expression', ['function-expression', 'async'], 'add', 'node',
    'var add = async function(a, b) { return a + b }\n',
    '(a, b)'),
  S('js-plain-binding', ['binding'], 'add', 'js',
    'let add\nadd = (a, b) => a + b\n',
    '(a, b)'),
  S('js-property-binding', ['binding'], 'add', 'cjs',
    'module.exports.add = function (a, b) {\n  return a + b\n}\n',
    '(a, b)'),
  S('js-class-field', ['binding', 'any-depth'], 'add', 'javascript',
    'class Calc {\n  add = (a, b) => a + b\n}\n',
    '(a, b)'),
  S('js-not-bindings-then-async-bare', ['binding', 'bare-parameter', 'async'], 'add', 'js',
    'const twice = add => add + add\nif (add == (1)) {}\nif (add === (2)) {}\nlet add = async x => x\n',
    '(x)'),
  S('js-bare-async-parameter', ['bare-parameter'], 'f', 'js',
    'const f = async => async + 1\n',
    '(async)'),
  S('js-parenthesized-value-is-not-an-arrow', ['binding', 'first-definition'], 'add', 'js',
    'let add = (compute)(1)\nadd = (a, b) => a + b\n',
    '(a, b)'),
  S('js-strings-and-comments-hold-parens', ['string-in-list', 'comment-in-list'], 'f', 'js',
    'function f(a = ")", /* ) */ b = \'(\', c = `)`) {\n  return a\n}\n',
    '(a = ")", b = \'(\', c = `)`)'),
  S('js-template-literal-in-list', ['string-in-list'], 'fmt', 'js',
    'function fmt(s = `(${x})  `, t) {\n  return s\n}\n',
    '(s = `(${x})  `, t)'),
  S('js-multiline-comments', ['multi-line', 'comment-in-list'], 'configure', 'javascript',
    'function configure(\n  host, // the host (name)\n  port = 80, /* default\n  port */\n  opts = {}\n) {}\n',
    '(host, port = 80, opts = {})'),
  S('js-name-in-comment-and-string-first', ['name-in-comment', 'name-in-string'], 'add', 'js',
    '// function add(x) is below\nconst msg = "add = (y) => y"\nconst tpl = `function add(z) {}`\nfunction add(a, b) { return a + b }\n',
    '(a, b)'),
  S('js-any-depth', ['any-depth'], 'add', 'js',
    'export default {\n  run() {\n    function add(a, b) { return a + b }\n    return add(1, 2)\n  }\n}\n',
    '(a, b)'),
  S('js-destructuring', ['nesting'], 'add', 'js',
    'const add = ({ a, b: [c, d] }, ...rest) => a + c + d\n',
    '({ a, b: [c, d] }, ...rest)'),
  S('js-inner-parens-spaces', ['whitespace', 'nesting'], 'f', 'js',
    'function f( a = g( 1 ), b ) {}\n',
    '(a = g(1), b)'),
  S('js-crlf-bom', ['crlf', 'bom', 'multi-line', 'arrow'], 'add', 'js',
    '\ufeffconst add = (\r\n  a,\r\n  b\r\n) => a + b\r\n',
    '(a, b)'),
  S('ts-function-annotations', ['typescript', 'return-annotation', 'default-with-call'], 'add', 'typescript',
    'export function add(a: number, b: number = Math.max(1, 2)): number {\n  return a + b\n}\n',
    '(a: number, b: number = Math.max(1, 2))'),
  S('ts-type-before-equals', ['typescript', 'type-annotation', 'arrow'], 'add', 'ts',
    'const add: (a: number, b: number) => number = (a, b) => a + b\n',
    '(a, b)'),
  S('ts-export-let-typed-bare', ['typescript', 'type-annotation', 'bare-parameter', 'export'], 'inc', 'tsx',
    'export let inc: Fn = x => x + 1\n',
    '(x)'),
  S('ts-arrow-return-annotation', ['typescript', 'return-annotation', 'arrow'], 'add', 'typescript',
    'export const add = (a: number, b: number): { sum: number } => ({ sum: a + b })\n',
    '(a: number, b: number)'),
  S('ts-class-field-type', ['typescript', 'type-annotation', 'any-depth'], 'sub', 'typescript',
    'class Calc {\n  add: number\n  sub: (x: number) => number = (x: number) => -x\n}\n',
    '(x: number)'),
  E('ts-type-annotation-ends-at-lf', ['typescript', 'type-annotation', 'no-definition'], 'add', 'typescript',
    'class Calc {\n  add: number\n  sub = (x) => x\n}\n',
    'no_definition'),
  E('ts-generic-not-a-listed-form', ['typescript', 'no-definition'], 'identity', 'ts',
    'export function identity<T>(value: T): T {\n  return value\n}\n',
    'no_definition'),
  E('js-named-function-expression', ['function-expression', 'no-definition'], 'add', 'js',
    'const add = function sum(a, b) { return a + b }\n',
    'no_definition'),
  E('js-anonymous-default-export', ['no-definition'], 'add', 'js',
    'export default function (a, b) {\n  return a + b\n}\n',
    'no_definition'),
  E('js-call-only', ['no-definition'], 'add', 'js',
    'console.log(add(1, 2))\n',
    'no_definition'),
  E('js-mismatched-closer', ['unbalanced'], 'add', 'js',
    'function add(a, b = [1, 2) {}\n',
    'unbalanced'),
  E('js-arrow-list-never-closes', ['unbalanced', 'arrow'], 'add', 'js',
    'const add = (a, b\n',
    'unbalanced'),
  E('js-paren-in-comment-leaves-list-open', ['unbalanced', 'comment-in-list'], 'add', 'js',
    'function add(a, b /* ) */ {\n  return a + b\n}\n',
    'unbalanced'),
  S('js-identifier-boundaries-before', ['whole-word', 'identifier-characters'], 'add', 'js',
    'const _add = (p) => p\nconst $add = (p) => p\nconst éadd = (p) => p\nconst \u0080add = (p) => p\n' +
    'x0add = (p) => p\nx9add = (p) => p\nAadd = (p) => p\nZadd = (p) => p\naadd = (p) => p\nzadd = (p) => p\n' +
    '/add = (p) => p\n',
    '(p)'),
  S('js-identifier-boundaries-after', ['whole-word', 'identifier-characters'], 'add', 'js',
    'add_ = (p) => p\nadd$ = (p) => p\naddé = (p) => p\nadd\u0080 = (p) => p\nadd0 = (p) => p\nadd9 = (p) => p\n' +
    'addA = (p) => p\naddZ = (p) => p\nadda = (p) => p\naddz = (p) => p\n@add\t= (a, b) => a\n',
    '(a, b)'),
  S('js-keyword-boundaries', ['whole-word', 'identifier-characters', 'async'], 'add', 'js',
    '_function add(p) {}\nfunction$ add(p) {}\nfunctioné add(p) {}\nconst add = asyncx => 1\n',
    '(asyncx)'),
  S('js-async-boundary', ['whole-word', 'async'], 'add', 'js',
    'const add = async$ => 1\n',
    '(async$)'),
  S('js-binding-annotation-stops-at-comma', ['typescript', 'type-annotation'], 'add', 'ts',
    'let add: A, b = (p) => p\nlet add2\nadd = (a) => a\n',
    '(a)'),
  S('js-binding-annotation-stops-at-semicolon', ['typescript', 'type-annotation'], 'add', 'ts',
    'let add: A; b = (p) => p\nadd = (a) => a\n',
    '(a)'),
  S('js-binding-annotation-stops-at-enclosing-closer', ['typescript', 'type-annotation'], 'add', 'ts',
    '[{ add: A } = (p) => p]\nadd = (a) => a\n',
    '(a)'),
  S('js-binding-annotation-skips-nested-lists', ['typescript', 'type-annotation', 'nesting'], 'add', 'ts',
    'const add: { f: (x: number, y: T) => void; g: [a, b] } = (a) => a\n',
    '(a)'),
  S('js-binding-annotation-equals-forms', ['typescript', 'type-annotation'], 'add', 'ts',
    'const add: T extends U ? (x) => y : Z = function (a) {}\n',
    '(a)'),
  S('js-arrow-return-annotation-stops', ['typescript', 'return-annotation', 'arrow'], 'add', 'ts',
    'add = (p): A, b => p\nadd = (p): A; b => p\nadd = (p): A) => p\nadd = (a): { r: [T, (U)] } => a\n',
    '(a)'),
  S('js-binding-not-compare-or-arrow', ['binding'], 'add', 'js',
    'if (add == (p)) {}\nx = add => (p)\nadd = (a) => a\n',
    '(a)'),

  // --- go ---------------------------------------------------------------------------------
  S('go-basic', ['family:go', 'return-annotation'], 'Add', 'go',
    'package calc\n\nfunc Add(a int, b int) int {\n\treturn a + b\n}\n',
    '(a int, b int)'),
  S('go-method', ['method', 'return-annotation'], 'Add', 'golang',
    'func (c *Calc) Add(a, b int) (int, error) {\n\treturn a + b, nil\n}\n',
    '(a, b int)'),
  S('go-func-literal-first', ['first-definition'], 'Add', 'go',
    'var helper = func(x int) int { return x }\n\nfunc Add(a int, b int) int { return helper(a) + b }\n',
    '(a int, b int)'),
  S('go-strings-and-comments', ['name-in-comment', 'name-in-string', 'comment-in-list', 'nesting'], 'Add', 'go',
    '// func Add(x) in a comment\nconst doc = `func Add(y) in a raw string`\nvar s = "func Add(z)"\nfunc Add(a string /* (unused) */, b []map[string]int) string { return a }\n',
    '(a string , b []map[string]int)'),
  S('go-multiline', ['multi-line', 'nesting'], 'Sum', 'go',
    'func Sum(\n\txs []int,\n\topts ...func(int) int, // mappers\n) int {\n\treturn 0\n}\n',
    '(xs []int, opts ...func(int) int,)'),
  S('go-crlf', ['crlf'], 'Hello', 'go',
    'package m\r\n\r\nfunc Hello(name string) string {\r\n\treturn "hi " + name\r\n}\r\n',
    '(name string)'),
  S('go-rune-paren', ['string-in-list'], 'P', 'go',
    "func P(r rune, s string) bool { return r == ')' || s == \"(\" }\n",
    '(r rune, s string)'),
  E('go-generic-not-a-listed-form', ['no-definition'], 'Map', 'go',
    'func Map[T any](xs []T, f func(T) T) []T { return xs }\n',
    'no_definition'),
  E('go-name-is-case-sensitive', ['no-definition'], 'Add', 'go',
    'package m\n\nfunc add(a int) int { return a }\n',
    'no_definition'),
  E('go-unbalanced', ['unbalanced'], 'Add', 'go',
    'func Add(a int, b int {\n\treturn a + b\n}\n',
    'unbalanced'),
  S('go-identifier-boundaries', ['whole-word', 'identifier-characters'], 'Add', 'go',
    'func _Add(p int) {}\nfunc éAdd(p int) {}\nfunc XAdd(p int) {}\nfunc Add_(p int) {}\nfunc Add0(p int) {}\n' +
    'xfunc Add(p int) {}\nfunc_ Add(p int) {}\nfunc (r T)Add(a int) {}\n',
    '(a int)'),
  S('go-func-literal-then-name', ['method', 'first-definition'], 'Add', 'go',
    'var f = func(x int) {}\nfunc (c *C) Add (a, b int) {}\n',
    '(a, b int)'),

  // --- plain ------------------------------------------------------------------------------
  E('plain-sql', ['family:plain'], 'q', 'sql',
    'SELECT 1;\n',
    'unsupported_language'),
  E('plain-ruby-def', ['family:plain'], 'add', 'ruby',
    'def add(a, b)\n  a + b\nend\n',
    'unsupported_language'),
]

const vectors = {
  description: 'Derived signatures (shared/spec/rufid-v1.md §10; open points fixed in src/core/signature.ts). ' +
    'A case gives the expected `signature` and the RUFID v1 of the source with it, or an expected `error`. ' +
    'Read by the TypeScript, Python and Go test suites.',
  algorithm: 'rufid-v1 §10',
  cases: cases.map((c) => {
    if (c.error) return c
    const r = computeRufid({ function_name: c.function_name, signature: c.signature, language: c.language, source_code: c.source_code })
    return { ...c, sha256_hex: r.content_digest, rufid_short: r.rufid_short }
  }),
}

const ids = new Set()
for (const c of cases) {
  if (ids.has(c.id)) throw new Error(`duplicate case id ${c.id}`)
  ids.add(c.id)
}

const target = fileURLToPath(new URL('../test/vectors/signature-v1.json', import.meta.url))
const text = JSON.stringify(vectors, null, 2) + '\n'
if (process.argv.includes('--check')) {
  const current = existsSync(target) ? readFileSync(target, 'utf8') : ''
  if (current !== text) {
    console.error('test/vectors/signature-v1.json is not what scripts/make-signature-vectors.mjs writes')
    process.exit(1)
  }
} else {
  writeFileSync(target, text)
  console.log(`wrote ${vectors.cases.length} vectors to ${target}`)
}
