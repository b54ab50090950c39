import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One request the fake node received. */
export interface Recorded {
  method: string
  path: string
  query: URLSearchParams
  headers: IncomingHttpHeaders
  rawBody: string
  body: unknown
}

export interface Reply {
  status: number
  body?: unknown
  headers?: Record<string, string>
  /** wait this long before answering */
  delayMs?: number
}

export type Route = Reply | ((req: Recorded) => Reply | Promise<Reply>)

/** A fake svc node on 127.0.0.1: exact (method, path) routes; everything else 404 text/plain. */
export class FakeNode {
  readonly requests: Recorded[] = []
  readonly routes = new Map<string, Route>()
  readonly server: Server
  url = ''

  constructor() {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        void (async () => {
          const u = new URL(req.url ?? '/', 'http://fake')
          const rawBody = Buffer.concat(chunks).toString('utf8')
          const rec: Recorded = {
            method: req.method ?? 'GET',
            path: u.pathname,
            query: u.searchParams,
            headers: req.headers,
            rawBody,
            body: rawBody ? JSON.parse(rawBody) : undefined,
          }
          this.requests.push(rec)
          const route = this.routes.get(`${rec.method} ${rec.path}`)
          const reply: Reply = route === undefined
            ? { status: 404, body: 'no such route on the fake node', headers: { 'content-type': 'text/plain' } }
            : typeof route === 'function' ? await route(rec) : route
          if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs))
          const text = typeof reply.body === 'string' ? reply.body : reply.body === undefined ? '' : JSON.stringify(reply.body)
          res.writeHead(reply.status, { 'content-type': 'application/json', ...(reply.headers ?? {}) })
          res.end(text)
        })().catch(() => {
          res.writeHead(500)
          res.end()
        })
      })
    })
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve))
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
    return this
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  on(method: string, path: string, route: Route): void {
    this.routes.set(`${method} ${path}`, route)
  }

  get last(): Recorded {
    const last = this.requests[this.requests.length - 1]
    if (!last) throw new Error('the fake node received no request')
    return last
  }
}

export const errorBody = (code: number, name: string, message = 'boom', details: Record<string, unknown> = {}) => ({
  error: { code, name, message, details },
})
