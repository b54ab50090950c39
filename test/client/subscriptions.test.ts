import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Duplex } from 'node:stream'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { WebSocketServer, type WebSocket } from 'ws'
import { PermissionDeniedError, RateLimitedError, SvcClient, SvcConnectionError, SvcError, ValidationFailedError, type ExecutionEvent } from '../../src/client/index.js'

/** A fake `/ws` endpoint speaking the protocol of src/api/ws (subscribe → subscribed → event…). */
class FakeSocketNode {
  server: Server
  wss = new WebSocketServer({ noServer: true })
  url = ''
  sockets: WebSocket[] = []
  received: unknown[] = []
  upgradeHeaders: IncomingMessage['headers'][] = []
  /** answer to each upgrade: accept, or an HTTP refusal */
  refuse: { status: number; body: unknown; headers?: Record<string, string> } | undefined
  /** answer to a subscribe message */
  onSubscribe: (ws: WebSocket, msg: { id: string; channel: string; rufid?: string }) => void = (ws, msg) =>
    ws.send(JSON.stringify({ type: 'subscribed', id: msg.id, channel: msg.channel }))

  constructor() {
    this.server = createServer((_req, res) => res.writeHead(404).end())
    this.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      this.upgradeHeaders.push(req.headers)
      if (new URL(req.url ?? '/', 'http://x').pathname !== '/ws') return socket.destroy()
      if (this.refuse) {
        const body = JSON.stringify(this.refuse.body)
        const extra = Object.entries(this.refuse.headers ?? {}).map(([k, v]) => `${k}: ${v}\r\n`).join('')
        socket.end(`HTTP/1.1 ${this.refuse.status} No\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}connection: close\r\n\r\n${body}`)
        return
      }
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        this.sockets.push(ws)
        ws.on('message', (data) => {
          const msg = JSON.parse(data.toString()) as { type: string; id: string; channel: string; rufid?: string }
          this.received.push(msg)
          if (msg.type === 'subscribe') this.onSubscribe(ws, msg)
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
    for (const ws of this.sockets) ws.terminate()
    this.server.closeAllConnections()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  emit(event: Partial<ExecutionEvent>, id = '1'): void {
    for (const ws of this.sockets) ws.send(JSON.stringify({ type: 'event', id, channel: 'executions', payload: event }))
  }
}

let node: FakeSocketNode
let client: SvcClient

beforeEach(async () => {
  node = await new FakeSocketNode().start()
  client = new SvcClient({ url: node.url, token: 'tok-ws', namespace: 'ns', timeoutMs: 3000 })
})
afterEach(async () => node.stop())

describe('subscribeExecutions over /ws', () => {
  it('subscribes with the protocol message and the Authorization header, then yields events', async () => {
    const sub = await client.subscribeExecutions('tUwBWSc8Nozv')
    expect(node.received).toEqual([{ type: 'subscribe', id: '1', channel: 'executions', rufid: 'tUwBWSc8Nozv' }])
    expect(node.upgradeHeaders[0]).toMatchObject({ authorization: 'Bearer tok-ws', 'x-svc-namespace': 'ns' })
    node.emit({ execution_id: 'ex_1', status: 'success' })
    node.emit({ execution_id: 'ex_other' }, '2') // another subscription id: not ours
    node.emit({ execution_id: 'ex_2', status: 'error' })
    const seen: string[] = []
    for await (const ev of sub) {
      seen.push(ev.execution_id)
      if (seen.length === 2) break // break closes the subscription
    }
    expect(seen).toEqual(['ex_1', 'ex_2'])
    expect(sub.done).toBe(true)
  })

  it('without a RUFID subscribes to the whole tenant; nextEvent() and onEvent work', async () => {
    const sub = await client.subscribeExecutions()
    expect(node.received).toEqual([{ type: 'subscribe', id: '1', channel: 'executions' }])
    node.emit({ execution_id: 'ex_9' })
    await expect(sub.nextEvent(2000)).resolves.toMatchObject({ execution_id: 'ex_9' })
    await expect(sub.nextEvent(50)).rejects.toMatchObject({ name: 'WAIT_TIMEOUT' })
    await sub.close()

    const got: ExecutionEvent[] = []
    const sub2 = await client.subscribeExecutions(undefined, { onEvent: (e) => got.push(e) })
    node.emit({ execution_id: 'ex_10' })
    await expect.poll(() => got.length).toBe(1)
    await sub2.close()
  })

  it('an error frame answering the subscribe rejects with the typed error', async () => {
    node.onSubscribe = (ws, msg) => ws.send(JSON.stringify({ type: 'error', id: msg.id, code: 1006, name: 'VALIDATION_FAILED', message: 'bad channel' }))
    const err = await client.subscribeExecutions().catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ValidationFailedError)
    expect((err as Error).message).toBe('bad channel')
  })

  it('a refused upgrade becomes the REST typed error (401 unauthenticated, 429 Retry-After)', async () => {
    node.refuse = { status: 401, body: { error: { code: 1003, name: 'PERMISSION_DENIED', message: 'credentials required', details: {} } } }
    const err = await client.subscribeExecutions().catch((e: unknown) => e)
    expect(err).toBeInstanceOf(PermissionDeniedError)
    expect(err).toMatchObject({ httpStatus: 401, unauthenticated: true })

    node.refuse = { status: 429, body: { error: { code: 1005, name: 'RATE_LIMITED', message: 'too many sockets', details: {} } }, headers: { 'retry-after': '5' } }
    const err2 = await client.subscribeExecutions().catch((e: unknown) => e)
    expect(err2).toBeInstanceOf(RateLimitedError)
    expect(err2).toMatchObject({ retryAfterSeconds: 5 })
  })

  it('a subscription the node never confirms times out', async () => {
    node.onSubscribe = () => undefined
    const err = await client.with({ timeoutMs: 200 }).subscribeExecutions().catch((e: unknown) => e)
    expect(err).toBeInstanceOf(SvcConnectionError)
    expect(err).toMatchObject({ name: 'REQUEST_TIMEOUT' })
  })

  it('the node closing the socket ends the iteration with an error', async () => {
    const sub = await client.subscribeExecutions()
    node.emit({ execution_id: 'ex_1' })
    await expect.poll(() => node.sockets.length).toBe(1)
    setTimeout(() => node.sockets[0]!.close(1013, 'slow consumer'), 50)
    const seen: string[] = []
    const err = await (async () => {
      for await (const ev of sub) seen.push(ev.execution_id)
    })().catch((e: unknown) => e)
    expect(seen).toEqual(['ex_1'])
    expect(err).toBeInstanceOf(SvcError)
    expect(err).toMatchObject({ name: 'SUBSCRIPTION_CLOSED', details: { close_code: 1013, reason: 'slow consumer' } })
  })

  it('an unreachable node rejects with SvcConnectionError', async () => {
    const url = node.url
    await node.stop()
    const err = await new SvcClient({ url, timeoutMs: 2000 }).subscribeExecutions().catch((e: unknown) => e)
    expect(err).toBeInstanceOf(SvcConnectionError)
    node = await new FakeSocketNode().start()
  })
})
