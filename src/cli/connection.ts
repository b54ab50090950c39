import { readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { Command, Option } from 'commander'
import { DEFAULT_URL, SvcClient } from '../client/client.js'
import { SvcConnectionError, SvcError } from '../client/errors.js'
import { isSvcError as isCoreSvcError } from '../core/errors.js'

export { DEFAULT_URL }

/** Options every command that talks to a node accepts. */
export interface ConnectionOptions {
  url?: string
  token?: string
  namespace?: string
  config?: string
  timeout?: string
}

/** `~/.config/svc/config.json` (or `$XDG_CONFIG_HOME/svc/config.json`, or `--config`). */
export interface CliConfigFile {
  url?: string
  token?: string
  namespace?: string
  pip_index_url?: string
  npm_registry_url?: string
}

export interface CliSettings {
  url: string
  token?: string
  namespace?: string
  pipIndexUrl?: string
  npmRegistryUrl?: string
  timeoutMs: number
  /** the config file read, if any */
  configFile?: string
}

/** A failure the command line reports as `error <code> <NAME>: message` and exits non-zero with. */
export class CliError extends Error {
  constructor(
    readonly code: number,
    readonly errorName: string,
    message: string,
    readonly details: Record<string, unknown> = {},
    readonly exitCode = 1,
  ) {
    super(message)
    this.name = 'CliError'
  }
}

export function defaultConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME !== '' ? env.XDG_CONFIG_HOME : join(homedir(), '.config')
  return join(base, 'svc', 'config.json')
}

function readConfigFile(path: string, explicit: boolean): CliConfigFile | undefined {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    if (!explicit && (err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new CliError(1006, 'VALIDATION_FAILED', `cannot read config file ${path}: ${(err as Error).message}`)
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (err) {
    throw new CliError(1006, 'VALIDATION_FAILED', `config file ${path} is not JSON: ${(err as Error).message}`)
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new CliError(1006, 'VALIDATION_FAILED', `config file ${path} must hold a JSON object`)
  }
  const out: CliConfigFile = {}
  for (const key of ['url', 'token', 'namespace', 'pip_index_url', 'npm_registry_url'] as const) {
    const v = (parsed as Record<string, unknown>)[key]
    if (v === undefined) continue
    if (typeof v !== 'string') throw new CliError(1006, 'VALIDATION_FAILED', `config file ${path}: "${key}" must be a string`)
    out[key] = v
  }
  return out
}

const nonEmpty = (...values: Array<string | undefined>): string | undefined => values.find((v) => v !== undefined && v !== '')

/**
 * Settings from, in this order: flags, environment (`SVC_URL`, `SVC_TOKEN`, `SVC_NAMESPACE`,
 * `SVC_PIP_INDEX_URL`, `SVC_NPM_REGISTRY_URL`), the config file, defaults.
 */
export function resolveSettings(opts: ConnectionOptions & { pipIndexUrl?: string; npmRegistryUrl?: string }, env: NodeJS.ProcessEnv = process.env): CliSettings {
  const explicit = nonEmpty(opts.config, env.SVC_CLI_CONFIG)
  const path = explicit ?? defaultConfigPath(env)
  const file = readConfigFile(path, explicit !== undefined) ?? {}
  const timeoutMs = opts.timeout === undefined ? 120_000 : Number(opts.timeout)
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) throw new CliError(1006, 'VALIDATION_FAILED', '--timeout must be a positive number of milliseconds')
  const url = nonEmpty(opts.url, env.SVC_URL, file.url) ?? DEFAULT_URL
  const s: CliSettings = { url: url.replace(/(?<!\/)\/+$/, ''), timeoutMs }
  const token = nonEmpty(opts.token, env.SVC_TOKEN, file.token)
  const namespace = nonEmpty(opts.namespace, env.SVC_NAMESPACE, file.namespace)
  const pip = nonEmpty(opts.pipIndexUrl, env.SVC_PIP_INDEX_URL, file.pip_index_url)
  const npm = nonEmpty(opts.npmRegistryUrl, env.SVC_NPM_REGISTRY_URL, file.npm_registry_url)
  if (token) s.token = token
  if (namespace) s.namespace = namespace
  if (pip) s.pipIndexUrl = pip
  if (npm) s.npmRegistryUrl = npm
  if (Object.keys(file).length > 0) s.configFile = path
  return s
}

/** Adds the connection flags (`--url`, `--token`, `--namespace`, `--config`, `--timeout`) to a command. */
export function withConnection(cmd: Command): Command {
  return cmd
    .addOption(new Option('--url <url>', `node base URL (env SVC_URL, config "url"; default ${DEFAULT_URL})`))
    .addOption(new Option('--token <token>', 'bearer token: API key or JWT (env SVC_TOKEN, config "token")'))
    .addOption(new Option('--namespace <tenant>', 'X-Svc-Namespace header (env SVC_NAMESPACE, config "namespace")'))
    .addOption(new Option('--config <file>', 'CLI config file (env SVC_CLI_CONFIG; default ~/.config/svc/config.json)'))
    .addOption(new Option('--timeout <ms>', 'give up on the node after this long (default 120000)'))
}

/** The typed client (`SvcClient`) for a command's connection settings: every command talks to a node through it. */
export function clientFor(opts: ConnectionOptions): SvcClient {
  const s = resolveSettings(opts)
  return new SvcClient({ url: s.url, token: s.token ?? '', namespace: s.namespace ?? '', timeoutMs: s.timeoutMs })
}

/** Runs `work` with a spinner showing `text` on standard error meanwhile (see progressMode). */
export async function withProgress<T>(text: string, work: () => Promise<T>): Promise<T> {
  const stop = spinner(text)
  try {
    return await work()
  } finally {
    stop()
  }
}

/**
 * What a client failure prints as: the node's own code and name; a node that cannot be reached is
 * 1010 (`cannot reach the svc node at <url>: <why>`), an answer that is not the node's JSON 1009.
 */
function cliErrorOf(err: SvcError): CliError {
  if (err.code !== null) return new CliError(err.code, err.name, err.message, err.details)
  if (err instanceof SvcConnectionError) {
    const url = typeof err.details.url === 'string' ? new URL(err.details.url).origin : 'the configured URL'
    const why = err.name === 'REQUEST_TIMEOUT' ? `no answer within ${String(err.details.timeout_ms)} ms` : String(err.details.reason ?? err.message)
    return new CliError(1010, 'SERVICE_UNAVAILABLE', `cannot reach the svc node at ${url}: ${why}`)
  }
  const status = err.httpStatus === undefined ? '' : ` (HTTP ${err.httpStatus})`
  return new CliError(1009, 'INTERNAL_ERROR', `${err.message}${err.message.includes('HTTP') ? '' : status}`, err.details)
}

/**
 * How progress shows on standard error: `tty` (redrawn in place) on a terminal, nothing elsewhere.
 * `SVC_PROGRESS=1` (or `always`) forces it, as plain lines when standard error is not a terminal
 * (CI logs); `SVC_PROGRESS=0` (or `never`) turns it off.
 */
export function progressMode(stream: { isTTY?: boolean } = process.stderr, env: NodeJS.ProcessEnv = process.env): 'tty' | 'lines' | 'off' {
  const setting = (env.SVC_PROGRESS ?? '').trim().toLowerCase()
  if (['0', 'never', 'false', 'no', 'off'].includes(setting)) return 'off'
  if (stream.isTTY) return 'tty'
  return ['1', 'always', 'true', 'yes', 'on'].includes(setting) ? 'lines' : 'off'
}

/** A small spinner on standard error while something runs (see progressMode; one line when not a terminal). */
export function spinner(text: string): () => void {
  const stream = process.stderr
  const mode = progressMode(stream)
  if (mode === 'off') return () => undefined
  if (mode === 'lines') {
    stream.write(`${text} …\n`)
    return () => undefined
  }
  const frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏']
  let i = 0
  const draw = (): void => {
    stream.write(`\r${frames[i++ % frames.length]} ${text}`)
  }
  draw()
  const timer = setInterval(draw, 80)
  return () => {
    clearInterval(timer)
    stream.write(`\r${' '.repeat(text.length + 2)}\r`)
  }
}

/**
 * Prints a failure as `error <code> <NAME>: message` (plus one line per problem pointer) on
 * standard error and sets a non-zero exit code.
 */
export function reportFailure(err: unknown): void {
  let code: number
  let name: string
  let message: string
  let details: Record<string, unknown> = {}
  let exitCode = 1
  const failure = err instanceof SvcError ? cliErrorOf(err) : err
  if (failure instanceof CliError) {
    ;({ code, errorName: name, message, details, exitCode } = failure)
  } else if (isCoreSvcError(failure)) {
    ;({ code, name, message, details } = failure)
  } else {
    code = 1009
    name = 'INTERNAL_ERROR'
    message = (err as Error)?.message ?? String(err)
  }
  const lines = [`error ${code} ${name}: ${message}`]
  const problems = details.problems
  if (Array.isArray(problems)) {
    for (const p of problems as Array<{ pointer?: unknown; message?: unknown }>) lines.push(`  ${String(p.pointer) || '/'}: ${String(p.message)}`)
  }
  process.stderr.write(lines.join('\n') + '\n')
  process.exitCode = exitCode
}

/**
 * Makes `svc … | head` end quietly, as Unix tools do, for every command: when the reader of
 * standard output (or standard error) goes away, the next write fails with EPIPE, and Node would
 * otherwise crash on the unhandled stream error with a stack trace. svc then exits at once, with
 * the exit code already set (0 unless the command had failed): nobody is left to read the rest.
 * Any other write error on those streams is reported (if standard error can still take it) and
 * exits 1. Installed once, before the command runs.
 */
export function exitQuietlyOnBrokenPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0)
      if (stream !== process.stderr) {
        try {
          process.stderr.write(`svc: cannot write to standard output: ${err.code ?? err.message}\n`)
        } catch {
          // nowhere left to say it
        }
      }
      process.exit(1)
    })
  }
}

/** Wraps a command action so that any failure is reported as `error <code> <NAME>: …`. */
export function action<A extends unknown[]>(fn: (...args: A) => Promise<void> | void): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await fn(...args)
    } catch (err) {
      reportFailure(err)
    }
  }
}

/** Prints a value as indented JSON on standard output. */
export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n')
}
