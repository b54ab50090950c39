// The /ws event socket: real WebSocket clients (ws) against an in-process node on 127.0.0.1.
import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { pino } from 'pino'
import WebSocket from 'ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { attachEventSocket } from '../../../src/api/ws/event-socket.js'
import { addJs, greetJs } from '../../fixtures/functions.js'
import { startNode, type TestNode } from '../graphql/node.js'

type Frame = Record<string, unknown> & { type: string; id?: string }

interface Peer {
  ws: WebSocket
  frames: Frame[]
  send(frame: unknown): void
  /** the next frame (from now on, or already received and not yet taken) satisfying `match` */
  next(match: (f: Frame) => boolean, timeoutMs?: number): Promise<Frame>
  closed: Promise<{ code: number; reason: string }>
}

function open(url: string, headers: Record<string, string> = {}): Promise<Peer> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers })
    const frames: Frame[] = []
    const waiters: Array<{ match: (f: Frame) => boolean; resolve: (f: Frame) => void }> = []
    let taken = 0
    ws.on('message', (data) => {
      const frame = JSON.parse(String(data)) as Frame
      frames.push(frame)
      const i = waiters.findIndex((w) => w.match(frame))
      if (i !== -1) waiters.splice(i, 1)[0]!.resolve(frame)
    })
    const closed = new Promise<{ code: number; reason: string }>((res) => ws.on('close', (code, reason) => res({ code, reason: String(reason) })))
    ws.on('unexpected-response', (_req, res) => {
      let body = ''
      res.on('data', (c: Buffer) => (body += String(c)))
      res.on('end', () => reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode, body: JSON.parse(body || '{}') as unknown })))
    })
    ws.on('error', reject)
    ws.on('open', () => resolve({
      ws,
      frames,
      closed,
      send: (frame) => ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame)),
      next(match, timeoutMs = 5000) {
        const already = frames.slice(taken).find(match)
        if (already) {
          taken = frames.indexOf(already) + 1
          return Promise.resolve(already)
        }
        return new Promise((res, rej) => {
          const timer = setTimeout(() => rej(new Error('timed out waiting for a frame')), timeoutMs)
          waiters.push({ match, resolve: (f) => { clearTimeout(timer); taken = frames.indexOf(f) + 1; res(f) } })
        })
      },
    }))
  })
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('/ws event socket', () => {
  let node: TestNode
  let addShort: string
  let greetShort: string
  const connect = (key = node.keys.acme) => open(`${node.wsUrl}/ws`, { authorization: `Bearer ${key}` })
  const subscribe = async (peer: Peer, frame: Record<string, unknown>): Promise<void> => {
    peer.send({ type: 'subscribe', ...frame })
    const ack = await peer.next((f) => f.id === frame.id && (f.type === 'subscribed' || f.type === 'error'))
    expect(ack).toEqual({ type: 'subscribed', id: frame.id, channel: frame.channel })
  }
  const peers: Peer[] = []
  const tracked = async (p: Promise<Peer>): Promise<Peer> => {
    const peer = await p
    peers.push(peer)
    return peer
  }

  beforeAll(async () => {
    node = await startNode({ ws: { maxConnectionsPerTenant: 4, maxMessagesPerSecond: 20, maxPayloadBytes: 4096 } })
    addShort = (await node.rest('/api/v1/functions/create', 'POST', addJs)).body.rufid_short as string
    greetShort = (await node.rest('/api/v1/functions/create', 'POST', greetJs)).body.rufid_short as string
  })
  afterAll(async () => {
    for (const p of peers) p.ws.terminate()
    await node?.stop()
  })

  it('delivers execution and system events of the connection\'s tenant only', async () => {
    const acme = await tracked(connect())
    const globex = await tracked(connect(node.keys.globex))
    for (const peer of [acme, globex]) {
      await subscribe(peer, { id: '1', channel: 'executions' })
      await subscribe(peer, { id: '2', channel: 'system' })
    }
    const created = await node.rest('/api/v1/functions/create', 'POST', { ...addJs, function_name: 'sum3', source_code: 'function sum3(a, b) { return a + b + 3 }' })
    const system = await acme.next((f) => f.type === 'event' && f.channel === 'system')
    expect(system).toMatchObject({
      id: '2',
      payload: { type: 'function.created', tenant_id: 'acme', rufid: created.body.rufid, rufid_short: created.body.rufid_short, full_rufid: created.body.rufid },
    })

    const run = await node.rest(`/api/v1/functions/${addShort}/execute`, 'POST', { arguments: { a: 2, b: 3 } })
    const event = await acme.next((f) => f.type === 'event' && f.channel === 'executions')
    expect(event).toEqual({
      type: 'event', id: '1', channel: 'executions',
      payload: expect.objectContaining({
        execution_id: run.body.execution_id, rufid: `rufid:${addShort}:v1:acme`, rufid_short: addShort, full_rufid: `rufid:${addShort}:v1:acme`, version: 'v1',
        tenant_id: 'acme', function_name: 'add', status: 'success', error_code: null,
      }),
    })

    // globex's own execution reaches globex, and nothing of acme's ever did
    const g = (await node.rest('/api/v1/functions/create', 'POST', greetJs, node.keys.globex)).body.rufid_short as string
    await node.rest(`/api/v1/functions/${g}/execute`, 'POST', { arguments: { name: 'g' } }, node.keys.globex)
    const theirs = await globex.next((f) => f.type === 'event' && f.channel === 'executions')
    expect(theirs).toMatchObject({ payload: { tenant_id: 'globex' } })
    await sleep(100)
    const tenantsSeenBy = (peer: Peer) => new Set(peer.frames.filter((f) => f.type === 'event')
      .map((f) => (f.payload as { tenant_id: string | null }).tenant_id).filter((t) => t !== null))
    expect(tenantsSeenBy(acme)).toEqual(new Set(['acme']))
    expect(tenantsSeenBy(globex)).toEqual(new Set(['globex']))
    acme.ws.close()
    globex.ws.close()
  })

  it('filters by RUFID and stops after unsubscribe', async () => {
    const peer = await tracked(connect(node.keys.acmeReader))
    await subscribe(peer, { id: 'only-greet', channel: 'executions', rufid: `rufid:${greetShort}:v1:acme` })
    await node.rest(`/api/v1/functions/${addShort}/execute`, 'POST', { arguments: [1, 1] })
    await node.rest(`/api/v1/functions/${greetShort}/execute`, 'POST', { arguments: { name: 'Ada' } })
    const event = await peer.next((f) => f.type === 'event')
    expect(event).toMatchObject({ id: 'only-greet', payload: { rufid_short: greetShort } })

    peer.send({ type: 'unsubscribe', id: 'only-greet' })
    expect(await peer.next((f) => f.type === 'unsubscribed')).toEqual({ type: 'unsubscribed', id: 'only-greet' })
    await node.rest(`/api/v1/functions/${greetShort}/execute`, 'POST', { arguments: { name: 'Bob' } })
    await sleep(100)
    expect(peer.frames.filter((f) => f.type === 'event')).toHaveLength(1)
    peer.ws.close()
  })

  it('answers ping, and protocol mistakes with error frames (1006, 1001) without closing', async () => {
    const peer = await tracked(connect())
    peer.send({ type: 'ping' })
    expect(await peer.next((f) => f.type === 'pong')).toEqual({ type: 'pong' })
    peer.send('not json')
    expect(await peer.next((f) => f.type === 'error')).toMatchObject({ code: 1006, name: 'VALIDATION_FAILED' })
    peer.send({ type: 'dance', id: 'a' })
    expect(await peer.next((f) => f.type === 'error')).toMatchObject({ id: 'a', code: 1006 })
    peer.send({ type: 'subscribe', id: 'b', channel: 'gossip' })
    expect(await peer.next((f) => f.type === 'error')).toMatchObject({ id: 'b', code: 1006 })
    peer.send({ type: 'subscribe', id: 'c', channel: 'executions', rufid: 'bad!' })
    expect(await peer.next((f) => f.type === 'error')).toMatchObject({ id: 'c', code: 1001, name: 'INVALID_RUFID' })
    peer.send({ type: 'unsubscribe', id: 'never' })
    expect(await peer.next((f) => f.type === 'error')).toMatchObject({ id: 'never', code: 1006 })
    await subscribe(peer, { id: 'd', channel: 'system' })
    peer.send({ type: 'subscribe', id: 'd', channel: 'system' })
    expect(await peer.next((f) => f.type === 'error')).toMatchObject({ id: 'd', code: 1006 })
    peer.ws.send(Buffer.from([1, 2, 3]), { binary: true })
    expect(await peer.next((f) => f.type === 'error')).toMatchObject({ code: 1006 })
    peer.send({ type: 'ping' })
    await peer.next((f) => f.type === 'pong')
    expect(peer.ws.readyState).toBe(WebSocket.OPEN)
    peer.ws.close()
  })

  it('authenticates at connect: 401 with code 1003 without credentials, ?token= for browsers', async () => {
    await expect(open(`${node.wsUrl}/ws`)).rejects.toMatchObject({ status: 401, body: { error: { code: 1003, name: 'PERMISSION_DENIED' } } })
    await expect(open(`${node.wsUrl}/ws`, { authorization: 'Bearer nope' })).rejects.toMatchObject({ status: 401 })
    const browser = await tracked(open(`${node.wsUrl}/ws?token=${encodeURIComponent(node.keys.acme)}`))
    await subscribe(browser, { id: '1', channel: 'executions' })
    browser.ws.close()
    const audit = await node.engine.auditLog.query({ operation: 'events.connect' })
    expect(audit.items.some((e) => e.result === 'unauthenticated')).toBe(true)
  })

  it('closes a flooding connection with 1008 while a second connection keeps receiving events', async () => {
    const flooder = await tracked(connect())
    const calm = await tracked(connect())
    await subscribe(flooder, { id: 'f', channel: 'executions' })
    await subscribe(calm, { id: 'c', channel: 'executions' })
    for (let i = 0; i < 50; i++) flooder.send({ type: 'ping' })
    const closed = await flooder.closed
    expect(closed.code).toBe(1008)
    expect(closed.reason).toMatch(/messages per second/)
    await node.rest(`/api/v1/functions/${addShort}/execute`, 'POST', { arguments: { a: 4, b: 4 } })
    expect(await calm.next((f) => f.type === 'event')).toMatchObject({ id: 'c', payload: { rufid_short: addShort, status: 'success' } })
    calm.ws.close()
  })

  it('closes a connection sending a frame over the payload limit with 1009', async () => {
    const peer = await tracked(connect())
    peer.send({ type: 'ping', pad: 'x'.repeat(5000) })
    expect((await peer.closed).code).toBe(1009)
  })

  it('limits connections per tenant (429 with code 1005) and frees the slot when a socket closes', async () => {
    await sleep(50) // sockets of earlier tests finish closing
    const mine = await Promise.all([1, 2, 3, 4].map(() => tracked(connect(node.keys.globex))))
    await expect(connect(node.keys.globex)).rejects.toMatchObject({ status: 429, body: { error: { code: 1005, name: 'RATE_LIMITED' } } })
    const other = await tracked(connect()) // other tenants are unaffected
    other.ws.close()
    mine[0]!.ws.close()
    await mine[0]!.closed
    await sleep(50)
    const again = await tracked(connect(node.keys.globex))
    for (const p of [...mine, again]) p.ws.close()
  })

  it('drops a client that stops reading (back-pressure) with 1013', async () => {
    const server = http.createServer()
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const manager = attachEventSocket(server, { maxConnectionsPerTenant: 10, maxMessagesPerSecond: 10, maxBufferedBytes: 64 * 1024, maxPayloadBytes: 4096 }, {
      engine: node.engine, logger: pino({ level: 'silent' }),
    })
    try {
      const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws`
      const slow = await open(url, { authorization: `Bearer ${node.keys.acme}` })
      await subscribe(slow, { id: 's', channel: 'system' })
      ;(slow.ws as unknown as { _socket: Socket })._socket.pause()
      const big = 'x'.repeat(256 * 1024)
      for (let i = 0; i < 200; i++) {
        node.engine.events.publishSystem({ type: 'peer.joined', tenant_id: 'acme', rufid: null, message: big })
        if (i % 20 === 0) await sleep(5)
      }
      ;(slow.ws as unknown as { _socket: Socket })._socket.resume()
      const closed = await slow.closed
      expect(closed.code).toBe(1013)
      expect(slow.frames.filter((f) => f.type === 'event').length).toBeLessThan(200)
    } finally {
      await manager.close()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })

  it('close() closes every socket with 1001 and detaches from the event bus', async () => {
    const server = http.createServer()
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const before = { execution: node.engine.events.listenerCount('execution'), upgrade: server.listenerCount('upgrade') }
    const manager = attachEventSocket(server, { maxConnectionsPerTenant: 10, maxMessagesPerSecond: 10, maxBufferedBytes: 1 << 20, maxPayloadBytes: 4096 }, {
      engine: node.engine, logger: pino({ level: 'silent' }),
    })
    const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws`
    const peer = await open(url, { authorization: `Bearer ${node.keys.acme}` })
    await subscribe(peer, { id: '1', channel: 'executions' })
    await manager.close()
    expect((await peer.closed).code).toBe(1001)
    expect(node.engine.events.listenerCount('execution')).toBe(before.execution)
    expect(server.listenerCount('upgrade')).toBe(before.upgrade)
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
})
