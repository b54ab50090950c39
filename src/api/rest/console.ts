import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { extname, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import type Koa from 'koa'
import { validationFailed } from '../../core/errors.js'
import type { OperationEnvelope } from '../../engine/index.js'
import { sendError, type RestContext, type RestState } from './operation.js'

/** Settings of the operator console (config `server.console`). */
export interface ConsoleInit {
  /** the built console (`npm run build` writes it): default `<package>/dist/console` */
  directory?: string
}

export interface ConsoleComponents {
  /** the REST door's envelope: each console request is metered through it (never audited) */
  envelope: OperationEnvelope<RestContext>
}

/**
 * A console request as the envelope records it: metered (`svc_protocol_requests_total`), not
 * audited — it serves a file, not an operation, and needs no credential (the console's API calls
 * are audited operations of their own).
 */
export const CONSOLE_OPERATION = { name: 'system.console', audited: false } as const

/** Where the console is served, and where `GET /` leads. */
export const CONSOLE_PATH = '/console/'

/** `dist/console` of this package, from `src/api/rest` and from `dist/api/rest` alike. */
export const DEFAULT_CONSOLE_DIRECTORY = fileURLToPath(new URL('../../../dist/console', import.meta.url))

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
}

/**
 * Vite's content-hashed asset names (`assets/index-B3x_9kQa.js`): cached for a year. Only ever
 * tested against the names of the built console's files, read once at start (never a request).
 */
// eslint-disable-next-line regexp/no-super-linear-backtracking -- input: the build's own file names, trusted and short
const HASHED_ASSET = /^assets\/[^/]+-[A-Za-z0-9_-]{8,}\.[a-z0-9]+$/

interface StaticFile {
  body: Buffer
  type: string
  etag: string
  immutable: boolean
}

/** Every file of the built console, read once: a request can only ever name one of these. */
function readConsoleFiles(directory: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>()
  if (!existsSync(directory)) return files
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name)
      if (entry.isDirectory()) walk(full)
      else if (entry.isFile() && statSync(full).size <= 16 * 1024 * 1024) {
        const name = relative(directory, full).split(sep).join('/')
        const body = readFileSync(full)
        files.set(name, {
          body,
          type: CONTENT_TYPES[extname(name)] ?? 'application/octet-stream',
          etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
          immutable: HASHED_ASSET.test(name),
        })
      }
    }
  }
  walk(directory)
  return files
}

/**
 * The Content-Security-Policy of every console response: scripts, styles and connections from
 * this origin only (`/ws` included, named explicitly for browsers whose `'self'` does not cover
 * ws:/wss:), no inline script or style, no plugins, no framing, no `<base>`.
 */
export function consoleSecurityPolicy(host: string | undefined): string {
  // the Host header is only echoed when it is a plain host[:port]
  const sockets = host && /^[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$/.test(host) ? ` ws://${host} wss://${host}` : ''
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src 'self'${sockets}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ')
}

/**
 * Serves the operator console, built by `npm run build` into `dist/console`, under `/console/`,
 * and sends `GET /` there. The files are read once at start into a map, so a request can name
 * nothing else (`..`, encoded or not, never reaches the file system). Hashed assets are cached
 * for a year, `index.html` is revalidated (ETag) on every load. Requests are `system.console`
 * (CONSOLE_OPERATION): metered through the REST envelope, not audited, not charged to any
 * credential (the console's API calls are).
 */
export function createConsoleMiddleware(init: ConsoleInit, { envelope }: ConsoleComponents): Koa.Middleware<RestState> {
  const files = readConsoleFiles(init.directory ?? DEFAULT_CONSOLE_DIRECTORY)
  return async (ctx, next) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next()
    const path = ctx.path
    const redirect = path === '/' || path === '/console'
    if (!redirect && !path.startsWith(CONSOLE_PATH)) return next()
    ctx.state.served = true
    const call = envelope.open(CONSOLE_OPERATION, ctx.ip)
    if (redirect) {
      ctx.redirect(CONSOLE_PATH)
      call.status = String(ctx.status)
      envelope.finish(call)
      return
    }
    const name = path === CONSOLE_PATH ? 'index.html' : path.slice(CONSOLE_PATH.length)
    const file = files.get(name)
    if (file === undefined) {
      const missing = validationFailed(files.size === 0 ? 'the console is not built: run npm run build' : `no console file ${path}`)
      call.status = '404'
      sendError(ctx as unknown as RestContext, envelope.finish(call, missing)!)
      ctx.status = 404
      return
    }
    ctx.set('Content-Security-Policy', consoleSecurityPolicy(ctx.get('host') || undefined))
    ctx.set('X-Content-Type-Options', 'nosniff')
    ctx.set('Referrer-Policy', 'no-referrer')
    ctx.set('X-Frame-Options', 'DENY')
    ctx.set('Cross-Origin-Opener-Policy', 'same-origin')
    ctx.set('Cross-Origin-Resource-Policy', 'same-origin')
    ctx.set('Cache-Control', file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
    ctx.set('ETag', file.etag)
    if (ctx.get('if-none-match') === file.etag) {
      ctx.status = 304
    } else {
      ctx.type = file.type
      ctx.body = file.body
    }
    call.status = String(ctx.status)
    envelope.finish(call)
  }
}

/** True when `npm run build` has built the console into `directory`. */
export function isConsoleBuilt(directory: string = DEFAULT_CONSOLE_DIRECTORY): boolean {
  return existsSync(join(directory, 'index.html'))
}
