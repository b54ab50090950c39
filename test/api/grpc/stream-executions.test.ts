// StreamExecutions: the engine's execution events, per tenant and per RUFID, with back-pressure.
import * as grpc from '@grpc/grpc-js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ExecutionEvent__Output } from '../../../src/api/grpc/generated/svc/v1/ExecutionEvent.js'
import type { ExecutionEvent, Principal } from '../../../src/engine/index.js'
import { principal, realSandbox } from '../../fixtures/engine.js'
import { addJs, throwsJs } from '../../fixtures/functions.js'
import { bearer, startGrpcHarness, statusOf, type GrpcHarness, type SvcClient } from './helpers.js'

interface Subscription {
  call: grpc.ClientReadableStream<ExecutionEvent__Output>
  events: ExecutionEvent__Output[]
  /** resolves with the final status */
  ended: Promise<grpc.StatusObject>
  /** resolves once `n` events arrived */
  received(n: number): Promise<ExecutionEvent__Output[]>
}

/** Opens a stream and waits for its response headers (sent once the subscription is live). */
async function subscribe(client: SvcClient, md: grpc.Metadata, rufid = ''): Promise<Subscription> {
  const call = client.StreamExecutions({ rufid }, md)
  const events: ExecutionEvent__Output[] = []
  const waiters: Array<{ n: number; resolve: (e: ExecutionEvent__Output[]) => void }> = []
  call.on('data', (e: ExecutionEvent__Output) => {
    events.push(e)
    for (const w of waiters.filter((w) => events.length >= w.n)) w.resolve(events)
  })
  call.on('error', () => undefined)
  const ended = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve))
  await Promise.race([
    new Promise((resolve) => call.once('metadata', resolve)),
    ended.then((s) => {
      throw Object.assign(new Error(`stream ended before it was live: ${s.details}`), s)
    }),
  ])
  return {
    call,
    events,
    ended,
    received: (n) => new Promise((resolve) => (events.length >= n ? resolve(events) : waiters.push({ n, resolve }))),
  }
}

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('gRPC door: StreamExecutions', () => {
  let h: GrpcHarness
  let client: SvcClient
  let acme: Principal
  let globex: Principal

  beforeAll(async () => {
    h = await startGrpcHarness({ sandbox: await realSandbox(1), server: { streamBufferEvents: 8 } })
    client = h.client()
    acme = principal('acme')
    globex = principal('globex')
  })
  afterAll(async () => {
    await h?.close()
  })

  it('delivers the event of an execution started through the engine, and only the caller\'s tenant\'s', async () => {
    const sub = await subscribe(client, bearer(h.adminKey))
    const mine = await h.engine.functions.create(acme, addJs)
    const theirs = await h.engine.functions.create(globex, addJs)
    await h.engine.executions.execute(globex, h.engine.functions.target(globex, theirs.rufid), { a: 1, b: 1 })
    const record = await h.engine.executions.execute(acme, h.engine.functions.target(acme, mine.rufid), { a: 2, b: 3 })
    const [event] = await sub.received(1)
    expect(event).toEqual({
      execution_id: record.execution_id,
      rufid: mine.rufid,
      rufid_short: mine.rufid_short,
      full_rufid: mine.rufid,
      version: 'v1',
      tenant_id: 'acme',
      function_name: 'add',
      status: 'success',
      execution_time_ms: record.execution_time_ms,
      timestamp: record.finished_at,
      // this engine signs no receipts
      receipt_digest: '',
      cached: false,
    })
    expect(event!.error_code).toBeUndefined()
    await tick(100)
    expect(sub.events.map((e) => e.tenant_id)).toEqual(['acme'])
    sub.call.cancel()
    expect(grpc.status[(await sub.ended).code]).toBe('CANCELLED')
  })

  it('filters by RUFID (short or full) and reports failed runs with their error code', async () => {
    const add = await h.engine.functions.create(acme, addJs)
    const boom = await h.engine.functions.create(acme, throwsJs)
    const onlyBoom = await subscribe(client, bearer(h.adminKey), boom.rufid_short)
    const onlyBoomFull = await subscribe(client, bearer(h.adminKey), boom.rufid)
    await h.engine.executions.execute(acme, h.engine.functions.target(acme, add.rufid), [1, 2])
    await expect(h.engine.executions.execute(acme, h.engine.functions.target(acme, boom.rufid), [])).rejects.toMatchObject({ code: 1007 })
    for (const sub of [onlyBoom, onlyBoomFull]) {
      const [event] = await sub.received(1)
      expect(event).toMatchObject({ rufid_short: boom.rufid_short, status: 'error', error_code: 1007, function_name: 'boom' })
      await tick(50)
      expect(sub.events).toHaveLength(1)
      sub.call.cancel()
    }
  })

  it('executions through the gRPC door itself reach subscribers', async () => {
    const add = await h.engine.functions.create(acme, addJs)
    const sub = await subscribe(client, bearer(h.adminKey), add.rufid_short)
    await new Promise((resolve, reject) =>
      client.ExecuteFunction({ rufid: add.rufid_short, arguments_json: '[20, 22]' }, bearer(h.adminKey), (err, res) => (err ? reject(err) : resolve(res))),
    )
    const [event] = await sub.received(1)
    expect(event).toMatchObject({ rufid_short: add.rufid_short, status: 'success' })
    sub.call.cancel()
  })

  it('refuses callers without credentials, without read permission, or with a malformed filter', async () => {
    const cases: Array<[grpc.Metadata, string, string, string]> = [
      [bearer(undefined), '', 'UNAUTHENTICATED', '1003'],
      [bearer(await h.mint('acme', ['functions:execute'])), '', 'PERMISSION_DENIED', '1003'],
      [bearer(h.adminKey), 'bad rufid', 'INVALID_ARGUMENT', '1001'],
    ]
    for (const [md, rufid, code, svcCode] of cases) {
      const err = await subscribe(client, md, rufid).then(() => undefined, (e: grpc.ServiceError) => e)
      expect(err, code).toBeDefined()
      expect(statusOf(err!)).toMatchObject({ code, svcCode })
    }
  })

  it('unsubscribes from the engine when the client cancels', async () => {
    const before = h.engine.events.listenerCount('execution')
    const subs = await Promise.all([1, 2, 3].map(() => subscribe(client, bearer(h.adminKey))))
    expect(h.engine.events.listenerCount('execution')).toBe(before + 3)
    for (const s of subs) s.call.cancel()
    await Promise.all(subs.map((s) => s.ended))
    await tick(50)
    expect(h.engine.events.listenerCount('execution')).toBe(before)
  })

  it('drops a subscriber that stops reading: it gets what was buffered, then UNAVAILABLE (1010)', async () => {
    const sub = await subscribe(client, bearer(h.adminKey))
    sub.call.pause()
    const before = h.engine.events.listenerCount('execution')
    const event = (i: number): ExecutionEvent => ({
      execution_id: `ex_${String(i).padStart(26, '0')}`, rufid: 'rufid:AAAAAAAAAAAA:v1:acme', rufid_short: 'AAAAAAAAAAAA', version: 'v1',
      tenant_id: 'acme', function_name: 'f'.repeat(2000), status: 'success', execution_time_ms: 1, error_code: null, timestamp: new Date().toISOString(),
      receipt_digest: null, cached: false,
    })
    // enough to fill HTTP/2 flow-control windows and socket buffers, then the bounded queue
    let published = 0
    while (h.engine.events.listenerCount('execution') === before && published < 20_000) {
      h.engine.events.publishExecution(event(published++))
      if (published % 100 === 0) await tick(1)
    }
    expect(h.engine.events.listenerCount('execution')).toBe(before - 1)
    sub.call.resume()
    const status = await sub.ended
    expect(grpc.status[status.code]).toBe('UNAVAILABLE')
    expect(status.metadata.get('svc-error-code')).toEqual(['1010'])
    expect(JSON.parse(String(status.metadata.get('svc-error-details')[0]))).toMatchObject({ reason: 'slow_consumer' })
    expect(sub.events.length).toBeGreaterThan(0)
    expect(sub.events.length).toBeLessThan(published)
    expect(sub.events.map((e) => e.execution_id)).toEqual(sub.events.map((_, i) => event(i).execution_id))
  })
})
