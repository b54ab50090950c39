import { readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { Command, Option } from 'commander'
import { errorNameOf, isSvcError } from '../core/errors.js'

/** The node the command line talks to, when nothing says otherwise. */
export const DEFAULT_URL = 'http://127.0.0.1:8080'

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
  const s: CliSettings = { url: url.replace(/\/+$/, ''), timeoutMs }
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

export interface RequestOptions {
  query?: Record<string, string | number | undefined>
  /** show a spinner with this text while waiting (only on a terminal) */
  progress?: string
}

/** The command line's REST client: JSON in, JSON out, svc error bodies turned into CliErrors. */
export class SvcHttpClient {
  constructor(readonly settings: CliSettings, private readonly fetchImpl: typeof fetch = fetch) {}

  async request<T = Record<string, unknown>>(method: string, path: string, body?: unknown, options: RequestOptions = {}): Promise<T> {
    const url = new URL(this.settings.url + path)
    for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined && v !== '') url.searchParams.set(k, String(v))
    const headers: Record<string, string> = { accept: 'application/json' }
    if (body !== undefined) headers['content-type'] = 'application/json'
    if (this.settings.token) headers.authorization = `Bearer ${this.settings.token}`
    if (this.settings.namespace) headers['x-svc-namespace'] = this.settings.namespace
    const stop = options.progress ? spinner(options.progress) : () => undefined
    let res: Response
    let text: string
    try {
      res = await this.fetchImpl(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.settings.timeoutMs),
      })
      text = await res.text()
    } catch (err) {
      const e = err as { name?: string; cause?: { code?: string; message?: string }; message?: string }
      const why = e.name === 'TimeoutError' ? `no answer within ${this.settings.timeoutMs} ms` : e.cause?.code ?? e.cause?.message ?? e.message ?? String(err)
      throw new CliError(1010, 'SERVICE_UNAVAILABLE', `cannot reach the svc node at ${this.settings.url}: ${why}`)
    } finally {
      stop()
    }
    let parsed: unknown
    try {
      parsed = text === '' ? {} : JSON.parse(text)
    } catch {
      throw new CliError(1009, 'INTERNAL_ERROR', `${method} ${url.pathname} answered HTTP ${res.status} with something that is not JSON`)
    }
    if (!res.ok) {
      const e = (parsed as { error?: { code?: unknown; name?: unknown; message?: unknown; details?: unknown } }).error
      if (e && typeof e.code === 'number') {
        throw new CliError(
          e.code,
          typeof e.name === 'string' ? e.name : errorNameOf(e.code) ?? 'ERROR',
          typeof e.message === 'string' ? e.message : `HTTP ${res.status}`,
          e.details && typeof e.details === 'object' ? (e.details as Record<string, unknown>) : {},
        )
      }
      throw new CliError(1009, 'INTERNAL_ERROR', `${method} ${url.pathname} answered HTTP ${res.status}`)
    }
    return parsed as T
  }
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
  if (err instanceof CliError) {
    ;({ code, errorName: name, message, details, exitCode } = err)
  } else if (isSvcError(err)) {
    ;({ code, name, message, details } = err)
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
