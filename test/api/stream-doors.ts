// One subscription to a tenant's execution events on each of the node's four stream doors (/ws,
// graphql-ws, GraphQL over SSE, gRPC StreamExecutions) with one credential, recording every event
// and how (and when) each stream ended: shared by the door tests and the hostile-tenant fault case.
import * as grpc from '@grpc/grpc-js'
import * as protoLoader from '@grpc/proto-loader'
import { createClient, type Client } from 'graphql-ws'
import WebSocket from 'ws'
import { PROTO_LOADER_OPTIONS, PROTO_ROOT, SVC_PROTO_FILE } from '../../src/api/grpc/proto.js'

export type Door = 'ws' | 'graphql-ws' | 'sse' | 'grpc'
export const DOORS: readonly Door[] = ['ws', 'graphql-ws', 'sse', 'grpc']

/** How a stream ended, as its client saw it. */
export interface StreamEnd {
  /** /ws and graphql-ws: the close code; SSE: `complete` (or `eof` without it); gRPC: the status name */
  code: number | string
  /** the close reason, the SSE error's message, the gRPC details */
  reason: string
  /** the svc error code the door reported (SSE: extensions.code; gRPC: svc-error-code; ws doors: from the reason) */
  svcCode: number | undefined
  /** SSE: extensions.details; gRPC: svc-error-details */
  details: Record<string, unknown> | undefined
  /** performance.now() when the client saw the end */
  at: number
}

export interface DoorStream {
  door: Door
  /** execution ids received, in order, with performance.now() at arrival */
  events: Array<{ executionId: string; at: number }>
  ended: Promise<StreamEnd>
  /** set once ended */
  end: StreamEnd | undefined
  /** closes the client side (idempotent) */
  close(): void
}

type GrpcStreamClient = grpc.Client & { StreamExecutions(r: object, m: grpc.Metadata): grpc.ClientReadableStream<{ execution_id: string }> }
const proto = grpc.loadPackageDefinition(protoLoader.loadSync(SVC_PROTO_FILE, { ...PROTO_LOADER_OPTIONS, includeDirs: [PROTO_ROOT] })) as unknown as {
  svc: { v1: { SvcProtocolService: new (address: string, c: grpc.ChannelCredentials) => GrpcStreamClient } }
}

const svcCodeOfReason = (reason: string): number | undefined => {
  const m = /^(\d{4}) /.exec(reason)
  return m ? Number(m[1]) : undefined
}

function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

/** /ws: one `executions` subscription; resolves once it is acknowledged. */
export async function openWs(url: string, headers: Record<string, string>): Promise<DoorStream> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/ws`, { headers })
  const done = deferred<StreamEnd>()
  const stream: DoorStream = { door: 'ws', events: [], ended: done.promise, end: undefined, close: () => ws.terminate() }
  const subscribed = deferred<void>()
  ws.on('message', (raw) => {
    const frame = JSON.parse(String(raw)) as { type: string; payload?: { execution_id?: string } }
    if (frame.type === 'subscribed') subscribed.resolve()
    if (frame.type === 'event' && frame.payload?.execution_id) stream.events.push({ executionId: frame.payload.execution_id, at: performance.now() })
  })
  ws.on('close', (code, reason) => {
    const text = String(reason)
    stream.end = { code, reason: text, svcCode: svcCodeOfReason(text), details: undefined, at: performance.now() }
    done.resolve(stream.end)
  })
  ws.on('error', () => undefined)
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve())
    ws.once('unexpected-response', (_req, res) => reject(new Error(`/ws upgrade refused: ${res.statusCode}`)))
    ws.once('error', reject)
  })
  ws.send(JSON.stringify({ type: 'subscribe', id: 'x', channel: 'executions' }))
  await Promise.race([subscribed.promise, done.promise.then(() => {
    throw new Error('/ws closed before subscribing')
  })])
  return stream
}

/** graphql-ws: `functionExecutions`; live once the server ran its resolver (wait for a first event to know). */
export function openGraphqlWs(url: string, authorization: string): DoorStream {
  const done = deferred<StreamEnd>()
  const stream: DoorStream = { door: 'graphql-ws', events: [], ended: done.promise, end: undefined, close: () => void client.dispose() }
  const client: Client = createClient({
    url: `${url.replace(/^http/, 'ws')}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization }, retryAttempts: 0, lazy: true,
    on: {
      closed: (event) => {
        if (stream.end) return
        const e = event as { code: number; reason: string }
        const reason = String(e.reason)
        stream.end = { code: e.code, reason, svcCode: svcCodeOfReason(reason), details: undefined, at: performance.now() }
        done.resolve(stream.end)
      },
    },
  })
  client.subscribe<{ functionExecutions: { executionId: string } }>({ query: 'subscription { functionExecutions { executionId } }' }, {
    next: (v) => {
      if (v.data) stream.events.push({ executionId: v.data.functionExecutions.executionId, at: performance.now() })
    },
    error: () => undefined,
    complete: () => undefined,
  })
  return stream
}

/** GraphQL over SSE: `functionExecutions` as server-sent events; resolves once the response started. */
export async function openSse(url: string, headers: Record<string, string>): Promise<DoorStream> {
  const abort = new AbortController()
  const done = deferred<StreamEnd>()
  const stream: DoorStream = { door: 'sse', events: [], ended: done.promise, end: undefined, close: () => abort.abort() }
  const res = await fetch(`${url}/graphql`, {
    method: 'POST', signal: abort.signal,
    headers: { ...headers, 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ query: 'subscription { functionExecutions { executionId } }' }),
  })
  if (res.status !== 200) throw new Error(`SSE subscription answered ${res.status}: ${await res.text()}`)
  let error: { message: string; extensions?: { code?: number; details?: Record<string, unknown> } } | undefined
  const finish = (code: string): void => {
    if (stream.end) return
    stream.end = { code, reason: error?.message ?? '', svcCode: error?.extensions?.code, details: error?.extensions?.details, at: performance.now() }
    done.resolve(stream.end)
  }
  void (async () => {
    const reader = res.body!.getReader()
    const decoder = new TextDecoder()
    let text = ''
    try {
      for (;;) {
        const { value, done: eof } = await reader.read()
        if (eof) break
        text += decoder.decode(value, { stream: true })
        let cut: number
        while ((cut = text.indexOf('\n\n')) !== -1) {
          const frame = text.slice(0, cut)
          text = text.slice(cut + 2)
          const event = /^event: (.*)$/m.exec(frame)?.[1]
          const data = /^data: (.*)$/m.exec(frame)?.[1]
          if (event === 'complete') return finish('complete')
          if (event !== 'next' || data === undefined) continue
          const result = JSON.parse(data) as { data?: { functionExecutions?: { executionId: string } }; errors?: Array<NonNullable<typeof error>> }
          if (result.errors?.length) error = result.errors[0]
          const id = result.data?.functionExecutions?.executionId
          if (id) stream.events.push({ executionId: id, at: performance.now() })
        }
      }
    } catch {
      // aborted by close()
    }
    finish('eof')
  })()
  return stream
}

/** gRPC StreamExecutions; resolves once the response headers came (the subscription is live). */
export async function openGrpc(address: string, authorization: string): Promise<DoorStream & { client: grpc.Client }> {
  const client = new proto.svc.v1.SvcProtocolService(address, grpc.credentials.createInsecure())
  const md = new grpc.Metadata()
  md.set('authorization', authorization)
  const call = client.StreamExecutions({}, md)
  const done = deferred<StreamEnd>()
  const stream = {
    door: 'grpc' as const, events: [] as DoorStream['events'], ended: done.promise, end: undefined as StreamEnd | undefined, client,
    close: () => {
      call.cancel()
      client.close()
    },
  }
  call.on('data', (e: { execution_id: string }) => stream.events.push({ executionId: e.execution_id, at: performance.now() }))
  call.on('error', () => undefined)
  call.on('status', (s: grpc.StatusObject) => {
    const first = (key: string) => s.metadata.get(key)[0]
    const details = first('svc-error-details')
    stream.end = {
      code: grpc.status[s.code] ?? String(s.code), reason: s.details,
      svcCode: first('svc-error-code') === undefined ? undefined : Number(first('svc-error-code')),
      details: details === undefined ? undefined : JSON.parse(String(details)) as Record<string, unknown>,
      at: performance.now(),
    }
    done.resolve(stream.end)
  })
  await Promise.race([new Promise((resolve) => call.once('metadata', resolve)), done.promise.then((e) => {
    throw new Error(`StreamExecutions ended before it was live: ${String(e.code)} ${e.reason}`)
  })])
  return stream
}

/** One execution subscription on each of the four doors with `token` (a bearer key or JWT). */
export async function openEveryDoor(target: { url: string; grpcAddress: string }, token: string): Promise<DoorStream[]> {
  const authorization = `Bearer ${token}`
  return [
    await openWs(target.url, { authorization }),
    openGraphqlWs(target.url, authorization),
    await openSse(target.url, { authorization }),
    await openGrpc(target.grpcAddress, authorization),
  ]
}

/** Waits (at most `timeoutMs`) until every stream received the execution `id`; returns the doors that did not. */
export async function awaitEverywhere(streams: readonly DoorStream[], id: string, timeoutMs: number): Promise<Door[]> {
  const deadline = Date.now() + timeoutMs
  const missing = () => streams.filter((s) => !s.events.some((e) => e.executionId === id)).map((s) => s.door)
  while (missing().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
  return missing()
}

/** Waits (at most `timeoutMs`) until every stream ended; returns the doors still open. */
export async function awaitEnded(streams: readonly DoorStream[], timeoutMs: number): Promise<Door[]> {
  const deadline = Date.now() + timeoutMs
  const open = () => streams.filter((s) => s.end === undefined).map((s) => s.door)
  while (open().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
  return open()
}
