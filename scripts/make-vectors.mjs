#!/usr/bin/env node
// Writes test/vectors/rufid-v1.json from the cases below. Each case's `normalized_code` is
// written by hand from shared/spec/rufid-v1.md (it is the expectation, not the implementation's
// output); the digest and short RUFID are derived from it with SHA-256 and base62 alone.
// The TypeScript, Python and Go suites all check their implementations against the file.
//   node scripts/make-vectors.mjs            write the file
//   node scripts/make-vectors.mjs --check    exit 1 if the file differs from what would be written
import { createHash } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
function base62(buf) {
  let n = BigInt('0x' + buf.toString('hex'))
  let s = ''
  while (n > 0n) { s = ALPHABET[Number(n % 62n)] + s; n /= 62n }
  return s || '0'
}

const C = (id, covers, function_name, signature, language, source_code, normalized_code) =>
  ({ id, covers, function_name, signature, language, source_code, normalized_code })

const cases = [
  // --- python ---
  C('py-basic', ['family:python'], 'add', '(a, b)', 'python',
    'def add(a, b):\n    return a + b\n',
    'def add(a, b):\n    return a + b'),
  C('py-comments', ['family:python', 'line-comment'], 'add', '(a, b)', 'python3',
    '# adds two numbers\ndef add(a, b):  # inline\n    return a + b   # done\n',
    'def add(a, b):\n    return a + b'),
  C('py-hash-in-string', ['comment-in-string'], 'tag', '(x)', 'py',
    "def tag(x):\n    return '#' + x + \"# not a comment\"  # real comment\n",
    "def tag(x):\n    return '#' + x + \"# not a comment\""),
  C('py-triple-quoted', ['python-triple-quoted', 'blank-lines'], 'doc', '()', 'python',
    'def doc():\n    """First line.\n\n    # not a comment\n\n    last"""\n\n\n    return 1\n',
    'def doc():\n    """First line.\n\n    # not a comment\n\n    last"""\n    return 1'),
  C('py-triple-single', ['python-triple-quoted'], 'q', '()', 'python',
    "def q():\n    s = '''a ''b'' # c\n\n'''  # tail\n    return s\n",
    "def q():\n    s = '''a ''b'' # c\n\n'''\n    return s"),
  C('py-indent-2', ['indentation-depth'], 'f', '(x)', 'python',
    'def f(x):\n  if x:\n    return 1\n  return 0\n',
    'def f(x):\n  if x:\n    return 1\n  return 0'),
  C('py-indent-4', ['indentation-depth'], 'f', '(x)', 'python',
    'def f(x):\n    if x:\n        return 1\n    return 0\n',
    'def f(x):\n    if x:\n        return 1\n    return 0'),
  C('py-prefixes', ['python-string-prefix'], 'p', '()', 'python',
    'def p():\n    return rb"\\d#x" + f\'{1}#\' + br\'#\'  # c\n',
    'def p():\n    return rb"\\d#x" + f\'{1}#\' + br\'#\''),
  C('py-prefix-after-ident', ['python-string-prefix'], 'p', '()', 'python',
    'def p():\n    return bar"x#y"  #z\n',
    'def p():\n    return bar"x#y"'),
  C('py-escaped-quote', ['escapes'], 'e', '()', 'python',
    "def e():\n    return 'it\\'s # here'  # gone\n",
    "def e():\n    return 'it\\'s # here'"),
  C('py-unterminated-single', ['unterminated-string'], 'u', '()', 'python',
    "x = 'abc  # not closed\ny = 1   \n",
    "x = 'abc  # not closed\ny = 1"),
  C('py-unterminated-triple', ['unterminated-string'], 'u', '()', 'python',
    'x = 1  \ns = """open\n# inside   \n',
    'x = 1\ns = """open\n# inside   \n'),
  C('py-crlf', ['crlf'], 'add', '(a, b)', 'python',
    'def add(a, b):\r\n    return a + b\r\n',
    'def add(a, b):\n    return a + b'),
  C('py-lone-cr', ['crlf'], 'add', '(a, b)', 'python',
    'def add(a, b):\r    return a + b\r',
    'def add(a, b):\n    return a + b'),
  C('py-bom', ['bom'], 'add', '(a, b)', 'python',
    '\ufeffdef add(a, b):\n    return a + b\n',
    'def add(a, b):\n    return a + b'),
  C('py-non-ascii', ['non-ascii'], 'grüße', '(name)', 'python',
    'def grüße(name):\n    return "Grüße, " + name + " 👋"  # ß\n',
    'def grüße(name):\n    return "Grüße, " + name + " 👋"'),
  C('py-leading-blank', ['blank-lines'], 'z', '()', 'python',
    '\n\n   \n\t\ndef z():\n\n\n    return 0\n\n',
    'def z():\n    return 0'),
  C('py-empty', ['empty-source'], 'empty', '()', 'python', '', ''),
  C('py-trimmed-name-sig', ['name-signature-trim'], '  add\t', ' (a, b) \n', 'Python',
    'def add(a, b):\n    return a + b',
    'def add(a, b):\n    return a + b'),
  // --- js ---
  C('js-basic', ['family:js'], 'add', '(a, b)', 'javascript',
    'function add(a, b) {\n  return a + b;\n}\n',
    'function add(a, b) {\n  return a + b;\n}'),
  C('js-line-comment', ['family:js', 'line-comment'], 'add', '(a, b)', 'js',
    '// add two\nfunction add(a, b) { // inline\n  return a + b; // end\n}\n',
    'function add(a, b) {\n  return a + b;\n}'),
  C('js-block-no-lf', ['block-comment-no-lf'], 'add', '(a, b)', 'node',
    'function add(a, /* first */b) {\n  return a/**/+ b;\n}',
    'function add(a,  b) {\n  return a + b;\n}'),
  C('js-block-with-lf', ['block-comment-with-lf'], 'add', '(a, b)', 'nodejs',
    '/**\n * Adds.\n */\nfunction add(a, b) {\n  return a + b; /* multi\nline */ }\n',
    'function add(a, b) {\n  return a + b;\n }'),
  C('js-comment-in-strings', ['comment-in-string'], 'u', '()', 'mjs',
    'function u() {\n  return "http://x/*y*/" + \'// z\';\n}\n',
    'function u() {\n  return "http://x/*y*/" + \'// z\';\n}'),
  C('js-template-trailing-ws', ['template-trailing-whitespace'], 't', '()', 'javascript',
    'function t() {\n  return `line   \n\n  // kept   \n`;   \n}\n',
    'function t() {\n  return `line   \n\n  // kept   \n`;\n}'),
  C('js-template-escaped-backtick', ['template-literal', 'escapes'], 't', '()', 'cjs',
    'const t = () => `a\\`b ${"}"} /* c */`; // d\n',
    'const t = () => `a\\`b ${"}"} /* c */`;'),
  C('js-unterminated', ['unterminated-string'], 'u', '()', 'js',
    'let s = "abc // open   \nlet t = 1;\n',
    'let s = "abc // open   \nlet t = 1;'),
  C('js-unterminated-template', ['unterminated-string'], 'u', '()', 'js',
    'let s = `abc\n\n  ',
    'let s = `abc\n\n  '),
  C('js-unclosed-block', ['block-comment-with-lf'], 'u', '()', 'js',
    'let a = 1; /* never\nclosed',
    'let a = 1;'),
  C('js-ws-before-literal', ['whitespace'], 'w', '()', 'js',
    'let a =   "x"\t\t\nlet b = 2',
    'let a =   "x"\nlet b = 2'),
  C('js-regex-limitation', ['regex-limitation'], 'r', '()', 'js',
    'const r = /\\/\\//g; const k = 1;\n',
    'const r = /\\/\\'),
  C('ts-basic', ['family:js', 'typescript'], 'add', '(a: number, b: number): number', 'TypeScript',
    'export function add(a: number, b: number): number {\r\n\treturn a + b; // sum\r\n}\r\n',
    'export function add(a: number, b: number): number {\n\treturn a + b;\n}'),
  C('js-empty', ['empty-source'], 'noop', '()', 'js', '', ''),
  C('js-only-comments', ['empty-source', 'line-comment'], 'noop', '()', 'js', '// nothing\n/* here */\n', ''),
  C('js-bom-non-ascii', ['bom', 'non-ascii'], 'hi', '()', 'jsx',
    '\ufefffunction hi() { return "héllo – 世界"; } // ☃\n',
    'function hi() { return "héllo – 世界"; }'),
  // --- go ---
  C('go-basic', ['family:go'], 'Add', '(a int, b int) int', 'go',
    'func Add(a int, b int) int {\n\treturn a + b // sum\n}\n',
    'func Add(a int, b int) int {\n\treturn a + b\n}'),
  C('go-raw-string', ['go-raw-string', 'comment-in-string'], 'Raw', '() string', 'golang',
    'func Raw() string {\n\treturn `C:\\path // not comment\n\n   ` /* c */ + "x"\n}\n',
    'func Raw() string {\n\treturn `C:\\path // not comment\n\n   `   + "x"\n}'),
  C('go-rune', ['go-rune'], 'R', '() rune', 'go',
    "func R() rune { return '\\'' } // q\n",
    "func R() rune { return '\\'' }"),
  C('go-crlf-block', ['crlf', 'block-comment-with-lf'], 'G', '()', 'go',
    'package main\r\n/* a\r\n b */\r\nfunc G() {}\r\n',
    'package main\nfunc G() {}'),
  // --- plain ---
  C('plain-basic', ['family:plain'], 'q', '(sql)', 'sql',
    'SELECT 1; -- comment kept  \n\n  ',
    'SELECT 1; -- comment kept'),
  C('plain-crlf-bom', ['family:plain', 'crlf', 'bom'], 'r', '()', 'ruby',
    '\ufeffdef r\r\n  # kept\r\n\r\n  1\r\nend\r\n\r\n',
    'def r\n  # kept\n\n  1\nend'),
  C('plain-empty', ['family:plain', 'empty-source'], 'e', '()', 'unknown', '   \n\t\n', ''),
  // --- the ends of the text, FF and VT, and what is not whitespace (issue 28) ---
  C('js-trailing-blanks-at-end', ['trailing-whitespace-at-end'], 'a', '()', 'js',
    'let a = 1; \t \f\v',
    'let a = 1;'),
  C('py-trailing-blanks-at-end', ['trailing-whitespace-at-end'], 'f', '()', 'python',
    'def f():\n    return 1  \t',
    'def f():\n    return 1'),
  C('js-block-comment-at-end', ['trailing-whitespace-at-end', 'block-comment-no-lf'], 'a', '()', 'js',
    'let a = 1; /* last */',
    'let a = 1;'),
  C('js-line-comment-at-end', ['line-comment', 'comment-at-end'], 'a', '()', 'js',
    'let a = 1; // no LF after me',
    'let a = 1;'),
  C('py-line-comment-at-end', ['line-comment', 'comment-at-end'], 'f', '()', 'python',
    'def f():\n    return 1  # no LF after me',
    'def f():\n    return 1'),
  C('go-line-comment-at-end', ['line-comment', 'comment-at-end'], 'F', '()', 'go',
    'func F() {}\t// no LF after me',
    'func F() {}'),
  C('go-ff-vt-trailing', ['ff-vt', 'blank-lines'], 'F', '()', 'go',
    'func F() {\f\n\treturn\v\t\n\v\f\n}\f\v\n',
    'func F() {\n\treturn\n}'),
  C('js-ff-vt-inside-lines-kept', ['ff-vt', 'indentation-depth'], 'g', '()', 'js',
    'let\fa =\v1;\n\f\vlet b = 2;\n',
    'let\fa =\v1;\n\f\vlet b = 2;'),
  C('py-ff-vt-blank-lines', ['ff-vt', 'blank-lines'], 'f', '()', 'python',
    '\f\n\v\ndef f():\n\f\v\n    return 1\v\n',
    'def f():\n    return 1'),
  C('js-not-whitespace-kept', ['whitespace', 'non-ascii'], 'u', '()', 'js',
    'let u = 1;\b\x0e\x1c\x85\u00a0\u3000\nlet v = 2;\u2028\n\u2029',
    'let u = 1;\b\x0e\x1c\x85\u00a0\u3000\nlet v = 2;\u2028\n\u2029'),
  C('py-not-whitespace-kept', ['whitespace', 'non-ascii'], 'u', '()', 'python',
    'u = 1\x1c\n\x1dv = 2\x85\n\u2028',
    'u = 1\x1c\n\x1dv = 2\x85\n\u2028'),
  C('plain-ff-vt', ['family:plain', 'ff-vt'], 'p', '()', 'text',
    '\f  line\v\n\b\f\v \t\n\n\f',
    '\f  line\v\n\b'),
  C('plain-not-whitespace-kept', ['family:plain', 'whitespace', 'non-ascii'], 'p', '()', 'text',
    'line\x0e\x1c\x85\u00a0\u2028',
    'line\x0e\x1c\x85\u00a0\u2028'),
  C('plain-object-member-names', ['family:plain'], 'c', '()', 'constructor',
    'x = 1  // kept\n\n',
    'x = 1  // kept'),
  C('name-signature-trim-all-ascii-blanks', ['name-signature-trim', 'ff-vt'], '\r\f\vf\v \r', '\v\f(a)\t\b\n', 'js',
    'function f(a) {}',
    'function f(a) {}'),
]

const vectors = {
  description: 'RUFID v1 test vectors (shared/spec/rufid-v1.md). Read by the TypeScript, Python and Go test suites.',
  algorithm: 'rufid-v1',
  cases: cases.map((c) => {
    const canonical = `${c.function_name.replace(/^[ \t\n\r\f\v]+|[ \t\n\r\f\v]+$/g, '')}:${c.signature.replace(/^[ \t\n\r\f\v]+|[ \t\n\r\f\v]+$/g, '')}:${c.normalized_code}`
    const digest = createHash('sha256').update(canonical, 'utf8').digest()
    return { ...c, sha256_hex: digest.toString('hex'), rufid_short: base62(digest).slice(0, 12) }
  }),
}

const target = fileURLToPath(new URL('../test/vectors/rufid-v1.json', import.meta.url))
const text = JSON.stringify(vectors, null, 2) + '\n'
if (process.argv.includes('--check')) {
  const current = readFileSync(target, 'utf8')
  if (current !== text) {
    console.error('test/vectors/rufid-v1.json is not what scripts/make-vectors.mjs writes')
    process.exit(1)
  }
} else {
  writeFileSync(target, text)
  console.log(`wrote ${vectors.cases.length} vectors to ${target}`)
}
