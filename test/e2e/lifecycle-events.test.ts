// node.started and node.stopping reach real subscribers of a daemon process: on /ws, over
// graphql-ws and over GraphQL SSE. A subscriber learns that (and when) the node started when it
// subscribes, and receives node.stopping before the node closes its socket.
import { createClient, type Client } from 'graphql-ws'
import WebSocket from 'ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { removeDir, startDaemonProcess, type DaemonProcess } from '../fixtures/daemon-process.js'

type Frame = Record<string, unknown> & { type: string; payload?: { type: string; timestamp: string } }
interface SystemEventData { systemEvents: { type: string; tenantId: string | null; message: string; timestamp: string } }

/** Resolves once `items` holds an element satisfying `match` (checked on every `notify`), or rejects after `timeoutMs`. */
function waitable<T>(): { items: T[]; add(item: T): void; until(match: (item: T) => boolean, what: string, timeoutMs?: number): Promise<T> } {
  const items: T[] = []
  const waiters = new Set<() => void>()
  return {
    items,
    add(item) {
      items.push(item)
      for (const w of [...waiters]) w()
    },
    until(match, what, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = (): boolean => {
          const found = items.find(match)
          if (found === undefined) return false
          waiters.delete(check)
          clearTimeout(timer)
          resolve(found)
          return true
        }
        const timer = setTimeout(() => {
          waiters.delete(check)
          reject(new Error(`timed out waiting for ${what}; got ${JSON.stringify(items)}`))
        }, timeoutMs)
        if (!check()) waiters.add(check)
      })
    },
  }
}

describe('node lifecycle events reach subscribers of a daemon process', () => {
  let d: DaemonProcess
  let gqlClient: Client | undefined
  let ws: WebSocket | undefined

  beforeAll(async () => {
    d = await startDaemonProcess()
  })
  afterAll(async () => {
    ws?.terminate()
    await gqlClient?.dispose()
    await d?.stop('SIGKILL')
    if (d) removeDir(d.dataDir)
  })

  it('node.started on subscribing; node.stopping before the socket closes when the process is stopped (/ws, graphql-ws, SSE)', async () => {
    const wsUrl = d.url.replace(/^http/, 'ws')

    // /ws
    const frames = waitable<Frame>()
    ws = new WebSocket(`${wsUrl}/ws`)
    const wsClosed = new Promise<{ code: number; framesBefore: number }>((resolve) => ws!.on('close', (code) => resolve({ code, framesBefore: frames.items.length })))
    ws.on('message', (data) => frames.add(JSON.parse(String(data)) as Frame))
    await new Promise<void>((resolve, reject) => {
      ws!.once('open', () => resolve())
      ws!.once('error', reject)
    })
    ws.send(JSON.stringify({ type: 'subscribe', id: 'sys', channel: 'system' }))
    await frames.until((f) => f.type === 'subscribed', '/ws subscribed')
    const started = await frames.until((f) => f.type === 'event', '/ws node.started')
    expect(started).toMatchObject({ id: 'sys', channel: 'system', payload: { type: 'node.started', tenant_id: null } })

    // graphql-ws
    const gqlEvents = waitable<SystemEventData['systemEvents']>()
    let ended: () => void = () => undefined
    const gqlEnded = new Promise<void>((resolve) => (ended = resolve))
    gqlClient = createClient({ url: `${wsUrl}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0, lazy: true })
    gqlClient.subscribe<SystemEventData>({ query: 'subscription { systemEvents { type tenantId message timestamp } }' }, {
      next: (v) => {
        if (v.data) gqlEvents.add(v.data.systemEvents)
      },
      error: () => ended(),
      complete: () => ended(),
    })
    const gqlStarted = await gqlEvents.until(() => true, 'graphql-ws first event')
    expect(gqlStarted).toMatchObject({ type: 'node.started', tenantId: null })
    expect(gqlStarted.timestamp).toBe(started.payload!.timestamp)

    // SSE
    const sse = await fetch(`${d.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: 'subscription { systemEvents { type timestamp } }' }),
    })
    expect(sse.status).toBe(200)
    const sseChunks = waitable<string>()
    const sseRead = (async () => {
      const decoder = new TextDecoder()
      // ends when the daemon ends the stream or the connection
      for await (const chunk of sse.body!) sseChunks.add(decoder.decode(chunk as Uint8Array, { stream: true }))
    })().catch(() => undefined)
    await sseChunks.until(() => sseChunks.items.join('').includes('node.started'), 'SSE node.started')

    // stop the process: every subscriber gets node.stopping, then its socket or stream ends
    const exit = await d.stop('SIGTERM')
    expect(exit.code).toBe(0)

    const stopping = await frames.until((f) => f.type === 'event' && f.payload?.type === 'node.stopping', '/ws node.stopping')
    expect(stopping).toMatchObject({ id: 'sys', channel: 'system', payload: { type: 'node.stopping', tenant_id: null } })
    const closed = await wsClosed
    expect(closed.code).toBe(1001)
    expect(frames.items.indexOf(stopping)).toBeLessThan(closed.framesBefore)

    expect(await gqlEvents.until((e) => e.type === 'node.stopping', 'graphql-ws node.stopping')).toMatchObject({ tenantId: null })
    await gqlEnded

    await sseRead
    const text = sseChunks.items.join('')
    expect(text).toMatch(/event: next\ndata: .*"node\.stopping"/)
    expect(text.indexOf('node.stopping')).toBeLessThan(text.lastIndexOf('event: complete'))
  })
})
