#!/usr/bin/env node
// Generates the TypeScript types of the gRPC door from proto/ with proto-loader-gen-types
// (@grpc/proto-loader; no protoc needed) into src/api/grpc/generated/.
//
//   node scripts/gen-proto-types.mjs           regenerate (replaces the folder's contents)
//   node scripts/gen-proto-types.mjs --check   regenerate into a temp dir; exit 1 if the committed
//                                              files differ (CI), 0 if they are up to date
//
// The flags below must agree with PROTO_LOADER_OPTIONS in src/api/grpc/proto.ts (keepCase,
// longs as String, enums as String, defaults, oneofs), or the types lie about the runtime objects.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, cpSync, mkdirSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const protoRoot = join(root, 'proto')
const outDir = join(root, 'src', 'api', 'grpc', 'generated')
const check = process.argv.includes('--check')
const unknown = process.argv.slice(2).filter((a) => a !== '--check')
if (unknown.length) {
  console.error(`gen-proto-types: unknown argument(s) ${unknown.join(' ')}; usage: gen-proto-types.mjs [--check]`)
  process.exit(2)
}

/** Every file under `dir`, as paths relative to it with '/' separators, sorted. */
function listFiles(dir) {
  if (!existsSync(dir)) return []
  const out = []
  const walk = (d) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name)
      if (statSync(p).isDirectory()) walk(p)
      else out.push(relative(dir, p).split(sep).join('/'))
    }
  }
  walk(dir)
  return out.sort()
}

const protoFiles = listFiles(protoRoot).filter((f) => f.endsWith('.proto'))
if (protoFiles.length === 0) {
  console.error(`gen-proto-types: no .proto files under ${protoRoot}`)
  process.exit(1)
}

const require = createRequire(import.meta.url)
const generator = join(dirname(require.resolve('@grpc/proto-loader/package.json')), 'build', 'bin', 'proto-loader-gen-types.js')

const target = mkdtempSync(join(tmpdir(), 'svc-proto-types-'))
try {
  const args = [
    generator,
    '--keepCase', '--longs=String', '--enums=String', '--defaults', '--oneofs', '--includeComments',
    '--grpcLib=@grpc/grpc-js', '--importFileExtension=.js',
    '-I', 'proto', '-O', target, ...protoFiles,
  ]
  // run from the repository root: the generated "Original file:" comments name paths relative to it
  const run = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8' })
  if (run.status !== 0) {
    process.stderr.write(run.stdout ?? '')
    process.stderr.write(run.stderr ?? '')
    console.error(`gen-proto-types: proto-loader-gen-types failed (exit ${run.status})`)
    process.exit(1)
  }

  if (check) {
    const fresh = listFiles(target)
    const committed = listFiles(outDir)
    const problems = []
    for (const f of fresh) {
      if (!committed.includes(f)) problems.push(`missing: ${f}`)
      else if (!readFileSync(join(target, f)).equals(readFileSync(join(outDir, f)))) problems.push(`differs: ${f}`)
    }
    for (const f of committed) if (!fresh.includes(f)) problems.push(`stale: ${f}`)
    if (problems.length) {
      console.error(`gen-proto-types: src/api/grpc/generated is out of date with proto/:\n  ${problems.join('\n  ')}`)
      console.error('run `node scripts/gen-proto-types.mjs` and commit the result')
      process.exit(1)
    }
    console.log(`gen-proto-types: src/api/grpc/generated is up to date (${fresh.length} files)`)
  } else {
    rmSync(outDir, { recursive: true, force: true })
    mkdirSync(outDir, { recursive: true })
    cpSync(target, outDir, { recursive: true })
    console.log(`gen-proto-types: wrote ${listFiles(outDir).length} files to ${relative(root, outDir)}`)
  }
} finally {
  rmSync(target, { recursive: true, force: true })
}
