// One connection to the node's /ws event socket for the whole console session: it subscribes to
// execution and system events as soon as the operator is signed in and keeps the latest ones, so
// the Live page also shows what happened while another page was open. The credential travels as
// the `svc.bearer.<base64url>` subprotocol (browsers cannot set headers on a WebSocket; a URL would
// leak it into logs); the node selects `svc.events` and never echoes the key.

import type { ExecutionEvent as ExecutionPayload, SystemEvent as SystemPayload } from '../../src/client/types.js'

export type LiveEvent =
  | { seq: number; channel: 'executions'; payload: ExecutionPayload }
  | { seq: number; channel: 'system'; payload: SystemPayload }

export type StreamStatus = 'connecting' | 'open' | 'closed' | 'stopped'

export const MAX_KEPT_EVENTS = 500

function base64url(text: string): string {
  let binary = ''
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte)
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

export class EventStream {
  events: LiveEvent[] = []
  status: StreamStatus = 'stopped'
  /** why the last connection ended (close code and reason), for the Live page */
  lastClose = ''
  private socket: WebSocket | undefined
  private token: string | null = null
  private seq = 0
  private retryMs = 1000
  private timer: number | undefined
  private readonly listeners = new Set<() => void>()

  /** Connects (again) with this credential (null: local mode, none needed). */
  start(token: string | null): void {
    this.stop()
    this.token = token
    this.connect()
  }

  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    const socket = this.socket
    this.socket = undefined
    socket?.close(1000, 'signed out')
    this.setStatus('stopped')
  }

  clear(): void {
    this.events = []
    this.notify()
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  private connect(): void {
    const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`
    const protocols = this.token ? ['svc.events', `svc.bearer.${base64url(this.token)}`] : ['svc.events']
    const socket = new WebSocket(url, protocols)
    this.socket = socket
    this.setStatus('connecting')
    socket.addEventListener('open', () => {
      if (this.socket !== socket) return
      this.retryMs = 1000
      socket.send(JSON.stringify({ type: 'subscribe', id: 'executions', channel: 'executions' }))
      socket.send(JSON.stringify({ type: 'subscribe', id: 'system', channel: 'system' }))
      this.setStatus('open')
    })
    socket.addEventListener('message', (msg) => {
      if (this.socket !== socket || typeof msg.data !== 'string') return
      let frame: { type?: string; channel?: string; payload?: unknown }
      try {
        frame = JSON.parse(msg.data) as typeof frame
      } catch {
        return
      }
      if (frame.type !== 'event' || (frame.channel !== 'executions' && frame.channel !== 'system')) return
      this.events = [{ seq: ++this.seq, channel: frame.channel, payload: frame.payload } as LiveEvent, ...this.events].slice(0, MAX_KEPT_EVENTS)
      this.notify()
    })
    socket.addEventListener('close', (evt) => {
      if (this.socket !== socket) return
      this.socket = undefined
      this.lastClose = `${evt.code}${evt.reason ? ` ${evt.reason}` : ''}`
      this.setStatus('closed')
      // reconnect, backing off up to 30 s (the node restarting, a network blip, 1013 slow consumer)
      this.timer = window.setTimeout(() => this.connect(), this.retryMs)
      this.retryMs = Math.min(this.retryMs * 2, 30_000)
    })
  }

  private setStatus(status: StreamStatus): void {
    this.status = status
    this.notify()
  }

  private notify(): void {
    for (const l of this.listeners) l()
  }
}

export const eventStream = new EventStream()
