import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { basename, dirname, extname, join, resolve } from 'node:path'
import cliProgress from 'cli-progress'
import { Command, Option } from 'commander'
import {
  LOCKFILE_FILE, LockfileGenerator, MANIFEST_FILE, checkLockfile, checkManifest, lockIdentity, manifestDigest,
  type FunctionLockfile, type FunctionManifest, type ResolutionProgress,
} from '../engine/manifests/index.js'
import { deriveSignature } from '../core/signature.js'
import type { CreateFunctionInput } from '../client/types.js'
import { functionNameOf } from './function-name.js'
import { CliError, action, clientFor, printJson, progressMode, resolveSettings, withConnection, withProgress, type ConnectionOptions } from './connection.js'

type Json = Record<string, unknown>

const invalid = (message: string): CliError => new CliError(1006, 'VALIDATION_FAILED', message)

/** The exact bytes svc writes for function.svc.json and function.lock.json: 2-space JSON and a newline. */
export function jsonFileText(value: unknown): string {
  return JSON.stringify(value, null, 2) + '\n'
}

function readJsonFile(path: string, what: string): Json {
  return readJsonFileText(path, what).value
}

/** A JSON file's object and its exact text (sent as manifest_text / lockfile_text, so export gives back the same bytes). */
function readJsonFileText(path: string, what: string): { value: Json; text: string } {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw invalid(`cannot read ${what} ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw invalid(`${what} ${path} is not JSON: ${(err as Error).message}`)
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalid(`${what} ${path} must hold a JSON object`)
  return { value: value as Json, text }
}

/** The manifest file a `--path` names: the file itself, or function.svc.json inside a directory. */
function manifestPathOf(path: string | undefined): string {
  const p = resolve(path ?? '.')
  return existsSync(p) && statSync(p).isDirectory() ? join(p, MANIFEST_FILE) : p
}

/** `--args`: a JSON object of named arguments or an array of positional ones (default none). */
function parseArgumentsOption(text: string | undefined): Record<string, unknown> | unknown[] {
  if (text === undefined) return {}
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw invalid(`--args is not JSON: ${(err as Error).message}`)
  }
  if (value === null || typeof value !== 'object') throw invalid('--args must be a JSON object of named arguments or an array')
  return value as Record<string, unknown> | unknown[]
}

/** A paging flag: a whole number, or absent. */
function wholeNumberOption(text: string | undefined, flag: string): number | undefined {
  if (text === undefined || text === '') return undefined
  const n = Number(text)
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n)) throw invalid(`${flag} must be a whole number, got ${JSON.stringify(text)}`)
  return n
}

const say = (line = ''): void => {
  process.stdout.write(line + '\n')
}

/** One line per pinned dependency of a lockfile, as the node (or the resolver) returned it. */
function pinLines(lock: unknown, withSource = false): string[] {
  const deps = (lock as { dependencies?: { pip?: unknown; npm?: unknown; system?: unknown } } | null)?.dependencies
  if (!deps) return []
  const out: string[] = []
  for (const eco of ['pip', 'npm'] as const) {
    const list = deps[eco]
    if (!Array.isArray(list)) continue
    for (const d of list as Array<{ name?: unknown; version?: unknown; source?: unknown }>) {
      out.push(`  ${eco.padEnd(7)} ${String(d.name)} ${String(d.version)}${withSource && d.source ? `  (${String(d.source)})` : ''}`)
    }
  }
  if (Array.isArray(deps.system) && deps.system.length > 0) out.push(`  ${'system'.padEnd(7)} ${(deps.system as unknown[]).map(String).join(', ')}`)
  return out
}

// ---------------------------------------------------------------- reading a function from files

const EXTENSION_LANGUAGE: Record<string, string> = {
  '.py': 'python',
  '.js': 'javascript',
  '.mjs': 'javascript',
  '.cjs': 'javascript',
  '.ts': 'typescript',
  '.mts': 'typescript',
  '.cts': 'typescript',
  '.go': 'go',
}

function extensionsFor(language: string | undefined): string[] {
  const l = language?.toLowerCase()
  if (l === undefined) return Object.keys(EXTENSION_LANGUAGE)
  if (['python', 'python3', 'py'].includes(l)) return ['.py']
  if (['typescript', 'ts', 'tsx'].includes(l)) return ['.ts', '.mts', '.cts']
  if (['go', 'golang'].includes(l)) return ['.go']
  return ['.js', '.mjs', '.cjs', '.ts']
}

export interface DefinitionFlags {
  code?: string
  file?: string
  name?: string
  signature?: string
  language?: string
  description?: string
  tags?: string
  manifest?: string
  lockfile?: string | boolean
}

/**
 * A function definition from a code directory (function.svc.json, function.lock.json, the source
 * its entrypoint names) and flags, flags first. Signature: --signature, then
 * `metadata.signature` of the manifest, then the parameter list found in the source.
 */
export function readDefinition(flags: DefinitionFlags): CreateFunctionInput {
  const dir = flags.code === undefined ? undefined : resolve(flags.code)
  if (dir !== undefined && !(existsSync(dir) && statSync(dir).isDirectory())) throw invalid(`--code ${flags.code} is not a directory`)
  const manifestPath = flags.manifest !== undefined ? resolve(flags.manifest) : dir !== undefined && existsSync(join(dir, MANIFEST_FILE)) ? join(dir, MANIFEST_FILE) : undefined
  const manifestFile = manifestPath === undefined ? undefined : readJsonFileText(manifestPath, 'manifest')
  const manifest = manifestFile?.value
  const lockPath = flags.lockfile === false
    ? undefined
    : typeof flags.lockfile === 'string' ? resolve(flags.lockfile) : dir !== undefined && existsSync(join(dir, LOCKFILE_FILE)) ? join(dir, LOCKFILE_FILE) : undefined
  const lockFile = lockPath === undefined ? undefined : readJsonFileText(lockPath, 'lockfile')
  const m = (manifest ?? {}) as Partial<FunctionManifest>
  const [entryModule, entryCallable] = typeof m.entrypoint === 'string' ? m.entrypoint.split(':') : []
  let name = flags.name ?? (typeof m.name === 'string' ? m.name : undefined) ?? entryCallable
  let language = flags.language ?? (typeof m.runtime?.language === 'string' ? m.runtime.language : undefined)

  let file: string | undefined
  if (flags.file !== undefined) {
    file = resolve(flags.file)
  } else if (dir !== undefined) {
    const exts = extensionsFor(language)
    const candidates: string[] = []
    if (entryModule) {
      if (EXTENSION_LANGUAGE[extname(entryModule)]) candidates.push(join(dir, entryModule))
      const base = join(dir, entryModule.replace(/\./g, '/'))
      candidates.push(...exts.map((e) => base + e))
    } else {
      const sources = readdirSync(dir).filter((f) => exts.includes(extname(f))).sort()
      const preferred = [name, 'main', 'index'].flatMap((b) => (b ? exts.map((e) => `${b}${e}`) : [])).find((f) => sources.includes(f))
      if (preferred) candidates.push(join(dir, preferred))
      else if (sources.length === 1) candidates.push(join(dir, sources[0]!))
    }
    file = candidates.find((c) => existsSync(c) && statSync(c).isFile())
    if (file === undefined) {
      throw invalid(entryModule
        ? `entrypoint ${m.entrypoint} names no source file in ${dir} (tried ${candidates.map((c) => basename(c)).join(', ')})`
        : `cannot tell which file of ${dir} holds the function: set "entrypoint" in ${MANIFEST_FILE} or pass --file`)
    }
  }
  if (file === undefined) throw invalid('pass --code <dir> or --file <source>')
  let source_code: string
  try {
    source_code = readFileSync(file, 'utf8')
  } catch (err) {
    throw invalid(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
  language ??= EXTENSION_LANGUAGE[extname(file)]
  if (!language) throw invalid('cannot tell the language: pass --language or set runtime.language in the manifest')
  if (!name) {
    // no name given: the one function the file defines at its top level
    const found = functionNameOf(source_code, language, basename(file))
    if ('problem' in found) throw invalid(`cannot tell the function name: ${found.problem}. Pass --name <function_name>, or set "name" in the manifest`)
    name = found.name
  }
  const metaSignature = typeof m.metadata?.signature === 'string' ? m.metadata.signature : undefined
  // rufid-v1 §10, exactly as the node derives it for /v1 (1006 naming the function when it cannot)
  const signature = flags.signature ?? metaSignature ?? deriveSignature({ function_name: name, language, source_code })
  const metaTags = Array.isArray(m.metadata?.tags) ? (m.metadata.tags as unknown[]).filter((t): t is string => typeof t === 'string') : undefined
  const tags = flags.tags !== undefined ? flags.tags.split(',').map((t) => t.trim()).filter(Boolean) : metaTags
  const description = flags.description ?? (typeof m.description === 'string' ? m.description : undefined)
  return {
    function_name: name,
    signature,
    language,
    source_code,
    ...(description !== undefined ? { description } : {}),
    ...(tags !== undefined ? { tags } : {}),
    ...(manifestFile !== undefined ? { manifest: manifestFile.value, manifest_text: manifestFile.text } : {}),
    ...(lockFile !== undefined ? { lockfile: lockFile.value, lockfile_text: lockFile.text } : {}),
  }
}

const definitionOptions = (cmd: Command): Command =>
  cmd
    .option('--code <dir>', `directory with ${MANIFEST_FILE}, optionally ${LOCKFILE_FILE}, and the source its entrypoint names`)
    .option('--file <source>', 'source file (default: from the manifest entrypoint in --code)')
    .option('--name <function_name>', 'function name (default: the manifest name, else the one function the source defines at its top level)')
    .option('--signature <signature>', 'textual signature, e.g. "(a, b)" (default: metadata.signature, else read from the source)')
    .option('--language <language>', 'python, javascript, typescript … (default: runtime.language, else the file extension)')
    .option('--description <text>', 'description (default: the manifest description)')
    .option('--tags <list>', 'comma-separated tags (default: metadata.tags)')
    .option('--manifest <file>', `manifest file (default: ${MANIFEST_FILE} in --code)`)
    .option('--lockfile <file>', `lockfile to send (default: ${LOCKFILE_FILE} in --code; without one the node generates it)`)
    .option('--no-lockfile', 'send no lockfile even if one is present: the node resolves the manifest')

// ---------------------------------------------------------------- manifest install / verify

interface InstallOptions {
  path?: string
  lockfile?: string
  pipIndexUrl?: string
  npmRegistryUrl?: string
  config?: string
  timeout?: string
  json?: boolean
}

function progressReporter(enabled: boolean): { onProgress?: (p: ResolutionProgress) => void; stop(): void } {
  const mode = enabled ? progressMode(process.stderr) : 'off'
  if (mode === 'off') return { stop: () => undefined }
  if (mode === 'lines') {
    return {
      onProgress(p) {
        process.stderr.write(`resolving ${p.done}/${p.total} ${p.ecosystem} ${p.name}${p.pinned ? ` ${p.pinned.version}` : ' (failed)'}\n`)
      },
      stop: () => undefined,
    }
  }
  const bar = new cliProgress.SingleBar(
    { stream: process.stderr, format: 'resolving {bar} {value}/{total} {dependency}', hideCursor: true, clearOnComplete: true },
    cliProgress.Presets.shades_classic,
  )
  let started = false
  return {
    onProgress(p) {
      if (!started) {
        bar.start(p.total, 0, { dependency: '' })
        started = true
      }
      bar.update(p.done, { dependency: `${p.ecosystem} ${p.name}` })
    },
    stop() {
      if (started) bar.stop()
    },
  }
}

async function manifestInstall(opts: InstallOptions): Promise<void> {
  const manifestPath = manifestPathOf(opts.path)
  const lockPath = opts.lockfile !== undefined ? resolve(opts.lockfile) : join(dirname(manifestPath), LOCKFILE_FILE)
  const raw = readJsonFile(manifestPath, 'manifest')
  const manifest = checkManifest(raw)
  const settings = resolveSettings({ config: opts.config, pipIndexUrl: opts.pipIndexUrl, npmRegistryUrl: opts.npmRegistryUrl })
  const timeoutMs = opts.timeout === undefined ? 10_000 : Number(opts.timeout)
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) throw invalid('--timeout must be a positive number of milliseconds')
  let generator: LockfileGenerator
  try {
    generator = new LockfileGenerator({
      ...(settings.pipIndexUrl ? { pipIndexUrl: settings.pipIndexUrl } : {}),
      ...(settings.npmRegistryUrl ? { npmRegistryUrl: settings.npmRegistryUrl } : {}),
      timeoutMs,
      allowSourceUrls: true,
    })
  } catch (err) {
    throw invalid((err as Error).message)
  }
  const progress = progressReporter(!opts.json)
  let lock: FunctionLockfile
  try {
    lock = await generator.generate(manifest, progress.onProgress ? { onProgress: progress.onProgress } : {})
  } finally {
    progress.stop()
  }
  // an existing lockfile with the same pins is left as it is (no churn of generated_at)
  let unchanged = false
  if (existsSync(lockPath)) {
    try {
      const existing = JSON.parse(readFileSync(lockPath, 'utf8')) as Json
      unchanged = lockIdentity(existing) === lockIdentity(lock as unknown as Json)
      if (unchanged) lock = existing as unknown as FunctionLockfile
    } catch {
      unchanged = false
    }
  }
  if (!unchanged) writeFileSync(lockPath, jsonFileText(lock))
  if (opts.json) {
    printJson({ lockfile_path: lockPath, written: !unchanged, lockfile: lock })
    return
  }
  say(`${unchanged ? 'up to date' : 'wrote'} ${lockPath}`)
  say(`manifest sha256 ${lock.manifest_digest}`)
  for (const line of pinLines(lock, true)) say(line)
}

async function manifestVerify(opts: { path?: string; lockfile?: string; json?: boolean }): Promise<void> {
  const manifestPath = manifestPathOf(opts.path)
  const lockPath = opts.lockfile !== undefined ? resolve(opts.lockfile) : join(dirname(manifestPath), LOCKFILE_FILE)
  const manifest = checkManifest(readJsonFile(manifestPath, 'manifest'))
  const lock = checkLockfile(readJsonFile(lockPath, 'lockfile'), manifest)
  if (opts.json) {
    printJson({ ok: true, manifest_digest: manifestDigest(manifest), manifest_path: manifestPath, lockfile_path: lockPath })
    return
  }
  say(`ok: ${basename(lockPath)} matches ${basename(manifestPath)} (manifest sha256 ${lock.manifest_digest})`)
}

function manifestCommand(): Command {
  const cmd = new Command('manifest').description(`work with ${MANIFEST_FILE} and ${LOCKFILE_FILE} locally (no node needed)`)
  cmd.command('install')
    .description(`resolve the manifest's dependencies to exact versions and write ${LOCKFILE_FILE} next to it: pip requirements (PEP 440) against a PyPI-style JSON index, npm ranges against an npm registry, system packages copied; lists sorted; records the manifest's SHA-256 (RFC 8785 canonical JSON). A lockfile with the same pins is left untouched.`)
    .option('--path <path>', `manifest file, or the directory holding ${MANIFEST_FILE}`, '.')
    .option('--lockfile <file>', `where to write the lockfile (default: ${LOCKFILE_FILE} next to the manifest)`)
    .option('--pip-index-url <url>', 'PyPI JSON API base (env SVC_PIP_INDEX_URL, config "pip_index_url"; default https://pypi.org/pypi)')
    .option('--npm-registry-url <url>', 'npm registry (env SVC_NPM_REGISTRY_URL, config "npm_registry_url"; default https://registry.npmjs.org)')
    .option('--config <file>', 'CLI config file (default ~/.config/svc/config.json)')
    .option('--timeout <ms>', 'deadline of each index request (default 10000)')
    .option('--json', 'print JSON')
    .addHelpText('after', `
Examples:
  svc functions manifest install                        # ./${MANIFEST_FILE} → ./${LOCKFILE_FILE}
  svc functions manifest install --path fn/ --pip-index-url http://127.0.0.1:3141/pypi

A pip "source" in the manifest may name another index URL; the node itself only resolves against
its configured index. Only the listed dependencies are pinned (not their own dependencies).`)
    .action(action(manifestInstall))
  cmd.command('verify')
    .description(`check that ${LOCKFILE_FILE} belongs to ${MANIFEST_FILE}: both valid, manifest_digest equal to the manifest's SHA-256, every dependency pinned within its range; exits 1 on any mismatch`)
    .option('--path <path>', `manifest file, or the directory holding ${MANIFEST_FILE}`, '.')
    .option('--lockfile <file>', `lockfile (default: ${LOCKFILE_FILE} next to the manifest)`)
    .option('--json', 'print JSON')
    .addHelpText('after', `
Example:
  svc functions manifest verify --path fn/ && echo "lockfile up to date"`)
    .action(action(manifestVerify))
  return cmd
}

// ---------------------------------------------------------------- commands against a node

type DeployOptions = DefinitionFlags & ConnectionOptions & { branch: string; branchKey?: string; json?: boolean }

async function deploy(opts: DeployOptions): Promise<void> {
  const definition = readDefinition(opts)
  const branchKey = opts.branchKey ?? (process.env.SVC_BRANCH_KEY || undefined)
  const client = clientFor(opts)
  const r = await withProgress(`deploying ${definition.function_name} to ${opts.branch}`, () => client.deploy({
    ...definition,
    branch: opts.branch,
    ...(branchKey ? { branch_key: branchKey } : {}),
  }))
  if (opts.json) return printJson(r)
  const move = r.moved
    ? r.previous_version ? `${r.previous_version} → ${r.version}` : `created at ${r.version}`
    : `already at ${r.version}`
  say(`deployed ${r.function_name} ${r.version} to branch ${r.branch} (${move})`)
  say(`  rufid   ${r.rufid}${r.created ? '' : '  (existing version)'}`)
  for (const line of pinLines(r.lockfile)) say(line)
  if (typeof r.branch_key === 'string') {
    say(`branch key for ${r.branch} (shown once; needed to deploy to this branch again):`)
    say(`  ${r.branch_key}`)
  }
}

type InvokeOptions = ConnectionOptions & { branch: string; name?: string; code?: string; args?: string; json?: boolean }

async function invoke(opts: InvokeOptions): Promise<void> {
  let name = opts.name
  if (name === undefined) {
    const path = join(resolve(opts.code ?? '.'), MANIFEST_FILE)
    if (!existsSync(path)) throw invalid(`pass --name <function_name> (no ${MANIFEST_FILE} in ${dirname(path)})`)
    const m = readJsonFile(path, 'manifest')
    if (typeof m.name !== 'string') throw invalid(`${path} has no "name": pass --name`)
    name = m.name
  }
  const args = parseArgumentsOption(opts.args)
  const client = clientFor(opts)
  const r = await withProgress(`running ${name} on ${opts.branch}`, () => client.invoke(name, opts.branch, args))
  if (opts.json) return printJson(r)
  say(`branch ${r.branch} → ${r.function_name} ${r.version} (${r.rufid})`)
  say(`status  ${r.status} in ${r.execution_time_ms} ms`)
  say(`result  ${JSON.stringify(r.result)}`)
}

type ExportOptions = ConnectionOptions & { version?: string; out?: string; json?: boolean }

async function exportFiles(rufid: string, opts: ExportOptions): Promise<void> {
  const r = await clientFor(opts).exportFunction(rufid, opts.version)
  if (r.manifest === null || r.manifest === undefined) throw invalid(`${r.rufid} was published without a manifest: nothing to export`)
  const out = resolve(opts.out ?? '.')
  mkdirSync(out, { recursive: true })
  const manifestPath = join(out, MANIFEST_FILE)
  const lockPath = join(out, LOCKFILE_FILE)
  // the files as they were published; as svc writes them when the node has no text (a generated lockfile)
  writeFileSync(manifestPath, typeof r.manifest_text === 'string' ? r.manifest_text : jsonFileText(r.manifest))
  if (r.lockfile !== null && r.lockfile !== undefined) writeFileSync(lockPath, typeof r.lockfile_text === 'string' ? r.lockfile_text : jsonFileText(r.lockfile))
  if (opts.json) return printJson({ ...r, manifest_path: manifestPath, lockfile_path: r.lockfile ? lockPath : null })
  say(`exported ${r.rufid}`)
  say(`  ${manifestPath}`)
  if (r.lockfile) say(`  ${lockPath}`)
  for (const line of pinLines(r.lockfile)) say(line)
}

type CreateOptions = DefinitionFlags & ConnectionOptions & { json?: boolean }

async function create(opts: CreateOptions): Promise<void> {
  const definition = readDefinition(opts)
  const client = clientFor(opts)
  const r = await withProgress(`publishing ${definition.function_name}`, () => client.create(definition))
  let lockfile = (r as { lockfile?: unknown }).lockfile
  if (lockfile === undefined && definition.manifest !== undefined) {
    // the resolved versions are in the stored lockfile
    lockfile = (await client.resolve(r.rufid_short, r.version)).lockfile
  }
  if (opts.json) return printJson(lockfile === undefined ? r : { ...r, lockfile })
  say(`${r.created === false ? 'exists' : 'created'} ${r.rufid}`)
  say(`  version  ${r.version}`)
  say(`  import   ${r.import_statement}`)
  say(`  share    ${r.share_url}`)
  for (const line of pinLines(lockfile)) say(line)
}

async function resolveRufid(rufid: string, opts: ConnectionOptions & { version?: string; json?: boolean }): Promise<void> {
  const r = await clientFor(opts).resolve(rufid, opts.version || undefined)
  if (opts.json) return printJson(r)
  say(r.rufid)
  for (const k of ['function_name', 'signature', 'language', 'version', 'function_id', 'content_digest', 'created_at', 'cached', 'resolution_time_ms'] as const) {
    if (r[k] !== undefined) say(`  ${k.padEnd(18)} ${String(r[k])}`)
  }
  for (const line of pinLines(r.lockfile)) say(line)
}

async function execute(rufid: string, opts: ConnectionOptions & { version?: string; args?: string; json?: boolean }): Promise<void> {
  const args = parseArgumentsOption(opts.args)
  const client = clientFor(opts)
  const r = await withProgress(`running ${rufid}`, () => client.execute(rufid, args, { version: opts.version || undefined }))
  if (opts.json) return printJson(r)
  say(`status  ${r.status} in ${r.execution_time_ms} ms (execution ${r.execution_id})`)
  say(`result  ${JSON.stringify(r.result)}`)
}

async function list(opts: ConnectionOptions & { search?: string; tags?: string; limit?: string; offset?: string; json?: boolean }): Promise<void> {
  const r = await clientFor(opts).listFunctions({
    search: opts.search || undefined,
    tags: opts.tags ? opts.tags.split(',') : undefined,
    limit: wholeNumberOption(opts.limit, '--limit'),
    offset: wholeNumberOption(opts.offset, '--offset'),
  })
  if (opts.json) return printJson(r)
  for (const f of r.items) say(`${f.full_rufid ?? f.rufid}  ${f.function_name}${f.signature}  ${f.language}  ${f.created_at}`)
  const p = r.pagination
  say(`${r.items.length} of ${p.total}${p.next_offset !== null && p.next_offset !== undefined ? ` (next: --offset ${p.next_offset})` : ''}`)
}

async function remove(rufid: string, opts: ConnectionOptions & { version?: string; json?: boolean }): Promise<void> {
  const r = await clientFor(opts).deleteFunction(rufid, opts.version || undefined)
  if (opts.json) return printJson(r)
  for (const d of r.deleted) say(`deleted ${d}`)
}

async function versions(rufid: string, opts: ConnectionOptions & { json?: boolean }): Promise<void> {
  const r = await clientFor(opts).listVersions(rufid)
  if (opts.json) return printJson(r)
  say(r.function_name)
  for (const v of r.versions) {
    const heads = r.heads.filter((h) => h.version === v.version).map((h) => h.branch)
    say(`  ${v.version.padEnd(5)} ${v.rufid_short}  ${v.created_at}  ${v.author}${v.deleted_at ? '  deleted' : ''}${heads.length ? `  ← ${heads.join(', ')}` : ''}`)
    for (const line of pinLines(v.manifest_snapshot?.lockfile)) say(`    ${line.trim()}`)
  }
}

async function branches(opts: ConnectionOptions & { name?: string; json?: boolean }): Promise<void> {
  const items = await clientFor(opts).listBranches(opts.name || undefined)
  if (opts.json) return printJson({ items })
  for (const h of items) say(`${h.function_name}/${h.branch}  ${h.version}  ${h.rufid}  ${h.updated_at}`)
  if (items.length === 0) say('no branches')
}

const json = (cmd: Command): Command => cmd.option('--json', 'print the node\'s JSON response')
const versionOption = (cmd: Command, what: string): Command => cmd.addOption(new Option('--version <v>', `version label, e.g. v2 (default: ${what})`))

/** `svc functions …`: manifests and lockfiles locally; publishing, branches and the everyday calls against a node. */
export function functionsCommand(): Command {
  const cmd = new Command('functions').description('publish, deploy, resolve, run and export functions; manifests and lockfiles')
  cmd.addHelpText('after', `
Commands that talk to a node take --url and --token, or SVC_URL and SVC_TOKEN, or "url" and "token"
in ~/.config/svc/config.json (or --config <file>). Failures print "error <code> <NAME>: message"
on standard error and exit 1. Progress shows on standard error when it is a terminal;
SVC_PROGRESS=1 shows it elsewhere too (plain lines, e.g. in CI logs), SVC_PROGRESS=0 never.`)
  cmd.addCommand(manifestCommand())

  json(withConnection(definitionOptions(cmd.command('deploy'))))
    .description(`publish the function in --code to a branch and move the branch head to it; the first deploy creates the branch and prints its branch key once; later deploys need that key. Prints the resolved dependency versions from the node's answer.`)
    .addOption(new Option('--branch <name>', 'branch').default('main'))
    .addOption(new Option('--branch-key <key>', 'the branch key (env SVC_BRANCH_KEY); on a new branch, optional: your own key (16+ characters) instead of a minted one'))
    .addHelpText('after', `
The code directory holds ${MANIFEST_FILE} (name, entrypoint "<module>:<callable>", runtime,
dependencies), the source file its entrypoint names (e.g. main:add → main.py / main.js / main.ts)
and, optionally, ${LOCKFILE_FILE} from "svc functions manifest install"; without one the node
resolves the manifest itself.

Examples:
  svc functions deploy --code ./add --branch staging                 # first deploy: prints the branch key once
  svc functions deploy --code ./add --branch staging --branch-key "$KEY"`)
    .action(action(deploy))

  json(withConnection(cmd.command('invoke')))
    .description('run the version a branch head points at')
    .addOption(new Option('--branch <name>', 'branch').default('main'))
    .option('--name <function_name>', `function name (default: the name in ${MANIFEST_FILE} of --code)`)
    .option('--code <dir>', `directory whose ${MANIFEST_FILE} names the function`, '.')
    .option('--args <json>', 'arguments: a JSON object of named arguments or an array', '{}')
    .addHelpText('after', `
Example:
  svc functions invoke --branch staging --name add --args '{"a": 1, "b": 2}'`)
    .action(action(invoke))

  versionOption(json(withConnection(cmd.command('export'))), 'the newest')
    .description(`write the stored ${MANIFEST_FILE} and ${LOCKFILE_FILE} of a RUFID (overwrites): byte for byte as they were deployed or created with svc; a lockfile the node generated as "manifest install" writes it`)
    .argument('<rufid>', 'short or full RUFID')
    .option('--out <dir>', 'directory to write into', '.')
    .addHelpText('after', `
Example:
  svc functions export rufid:AbCdEfGhIjKl:v2:default --out ./add-v2`)
    .action(action(exportFiles))

  json(withConnection(definitionOptions(cmd.command('create'))))
    .description('publish a function (no branch); with a manifest and no lockfile the node resolves one. Prints the resolved versions.')
    .action(action(create))

  versionOption(json(withConnection(cmd.command('resolve'))), 'the newest')
    .description('resolve a RUFID: its version, metadata and pinned dependencies')
    .argument('<rufid>', 'short or full RUFID')
    .action(action(resolveRufid))

  versionOption(json(withConnection(cmd.command('execute'))), 'the newest')
    .description('run a function by RUFID')
    .argument('<rufid>', 'short or full RUFID')
    .option('--args <json>', 'arguments: a JSON object of named arguments or an array', '{}')
    .action(action(execute))

  json(withConnection(cmd.command('list')))
    .description('list the newest version of each function')
    .option('--search <text>', 'search name, description, signature and tags')
    .option('--tags <list>', 'comma-separated tags that must all be present')
    .option('--limit <n>', 'page size (default 20)')
    .option('--offset <n>', 'page start (default 0)')
    .action(action(list))

  versionOption(json(withConnection(cmd.command('delete'))), 'every live version of the hash')
    .description('delete (tombstone) a function version; its number is never reused')
    .argument('<rufid>', 'short or full RUFID')
    .action(action(remove))

  json(withConnection(cmd.command('versions')))
    .description("the version ledger of a RUFID's lineage: every version with its manifest and lockfile snapshot and branch moves")
    .argument('<rufid>', 'short or full RUFID')
    .action(action(versions))

  json(withConnection(cmd.command('branches')))
    .description('branch heads of the tenant (or of one function)')
    .option('--name <function_name>', 'only this function')
    .action(action(branches))

  return cmd
}
