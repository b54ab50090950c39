// GraphQL subscriptions and operations over graphql-ws and SSE, on a real HTTP server on 127.0.0.1.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addJs, greetJs } from '../../fixtures/functions.js'
import { first, startNode, type TestNode } from './node.js'

const EXECUTIONS = `subscription E($r: String) { functionExecutions(rufid: $r) {
  executionId rufid shortRufid version tenantId functionName status executionTimeMs errorCode timestamp } }`

interface ExecutionEventData {
  functionExecutions: { executionId: string; shortRufid: string; status: string; tenantId: string; errorCode: number | null }
}

async function until(check: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** Reads server-sent events from a fetch response until `stop` says enough. */
async function readEvents(res: Response, stop: (events: Array<{ event: string; data: string }>) => boolean): Promise<Array<{ event: string; data: string }>> {
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  const events: Array<{ event: string; data: string }> = []
  let buffer = ''
  while (!stop(events)) {
    const { value, done } = await reader.read()
    if (done) break
    buffer += decoder.decode(value, { stream: true })
    let idx
    while ((idx = buffer.indexOf('\n\n')) !== -1) {
      const frame = buffer.slice(0, idx)
      buffer = buffer.slice(idx + 2)
      const lines = frame.split('\n').filter((l) => !l.startsWith(':'))
      if (lines.length === 0) continue
      const event = lines.find((l) => l.startsWith('event:'))?.slice(6).trim() ?? 'message'
      const data = lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n')
      events.push({ event, data })
    }
  }
  await reader.cancel().catch(() => undefined)
  return events
}

describe('GraphQL subscriptions (graphql-ws and SSE)', () => {
  let node: TestNode
  let addShort: string
  let greetShort: string
  const listeners = (): number => node.engine.events.listenerCount('execution')
  const executeOverRest = (short: string, args: unknown, token?: string) =>
    node.rest(`/api/v1/functions/${short}/execute`, 'POST', { arguments: args }, token)

  beforeAll(async () => {
    node = await startNode({ graphql: { maxDepth: 3 } })
    addShort = (await node.rest('/api/v1/functions/create', 'POST', addJs)).body.rufid_short as string
    greetShort = (await node.rest('/api/v1/functions/create', 'POST', greetJs)).body.rufid_short as string
  })
  afterAll(async () => {
    await node?.stop()
  })

  it('a graphql-ws client subscribed to functionExecutions(rufid) receives an execution started over REST', async () => {
    const client = node.wsClient()
    const before = listeners()
    const sub = first<ExecutionEventData>(client, EXECUTIONS, { r: addShort })
    await until(() => listeners() > before, 'the subscription to attach')
    await executeOverRest(greetShort, { name: 'x' }) // another function: filtered out
    const run = await executeOverRest(addShort, { a: 2, b: 3 })
    expect(run.body.result).toBe(5)
    const event = (await sub.value).functionExecutions
    expect(event).toMatchObject({
      executionId: run.body.execution_id, shortRufid: addShort, status: 'success', tenantId: 'acme', errorCode: null,
      rufid: `rufid:${addShort}:v1:acme`, version: 'v1', functionName: 'add',
    })
    sub.cancel()
    await until(() => listeners() === before, 'the listener to be removed on complete')
  })

  it('filters by the full RUFID form too, and never delivers another tenant\'s executions', async () => {
    const client = node.wsClient()
    const before = listeners()
    const received: ExecutionEventData[] = []
    const stop = client.subscribe<ExecutionEventData>({ query: EXECUTIONS, variables: { r: `rufid:${addShort}:v1:acme` } }, {
      next: (v) => received.push(v.data as ExecutionEventData), error: () => undefined, complete: () => undefined,
    })
    const globex = node.wsClient(node.keys.globex)
    const globexReceived: unknown[] = []
    const stopGlobex = globex.subscribe({ query: EXECUTIONS }, {
      next: (v) => globexReceived.push(v), error: () => undefined, complete: () => undefined,
    })
    await until(() => listeners() >= before + 2, 'both subscriptions to attach')
    await executeOverRest(addShort, { a: 1, b: 1 })
    await until(() => received.length === 1, 'the event')
    expect(received[0]!.functionExecutions.shortRufid).toBe(addShort)
    await new Promise((r) => setTimeout(r, 100))
    expect(globexReceived).toEqual([])
    stop()
    stopGlobex()
    await until(() => listeners() === before, 'the listeners to be removed')
  })

  it('an SSE client (Accept: text/event-stream) receives the execution event too', async () => {
    const before = listeners()
    const res = await fetch(`${node.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${node.keys.acme}` },
      body: JSON.stringify({ query: EXECUTIONS, variables: { r: addShort } }),
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/)
    await until(() => listeners() > before, 'the SSE subscription to attach')
    const run = await executeOverRest(addShort, { a: 20, b: 22 })
    const events = await readEvents(res, (evs) => evs.length >= 1)
    expect(events[0]!.event).toBe('next')
    const payload = JSON.parse(events[0]!.data) as { data: ExecutionEventData }
    expect(payload.data.functionExecutions).toMatchObject({ executionId: run.body.execution_id, shortRufid: addShort, status: 'success' })
    // the client went away: the listener goes too
    await until(() => listeners() === before, 'the SSE listener to be removed')
  })

  it('SSE subscriptions need credentials and Accept: text/event-stream', async () => {
    const anonymous = await fetch(`${node.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: EXECUTIONS }),
    })
    expect(anonymous.status).toBe(401)
    expect(((await anonymous.json()) as { errors: Array<{ extensions: unknown }> }).errors[0]!.extensions).toMatchObject({ code: 1003, name: 'PERMISSION_DENIED' })
    const noAccept = await node.gql(EXECUTIONS)
    expect(noAccept.status).toBe(406)
  })

  it('systemEvents delivers the caller\'s function.created events (tenant-filtered)', async () => {
    const client = node.wsClient()
    const globexClient = node.wsClient(node.keys.globex)
    const systemBefore = node.engine.events.listenerCount('system')
    const query = `subscription { systemEvents { type tenantId rufid message timestamp data } }`
    const mine = first<{ systemEvents: { type: string; tenantId: string; rufid: string; data: Record<string, unknown> } }>(client, query)
    const theirs: unknown[] = []
    const stopTheirs = globexClient.subscribe({ query }, { next: (v) => theirs.push(v), error: () => undefined, complete: () => undefined })
    await until(() => node.engine.events.listenerCount('system') >= systemBefore + 2, 'system subscriptions to attach')
    const created = await node.rest('/api/v1/functions/create', 'POST', { ...addJs, function_name: 'fresh', source_code: 'function fresh() { return 1 }', signature: '()' })
    const event = (await mine.value).systemEvents
    expect(event).toMatchObject({ type: 'function.created', tenantId: 'acme', rufid: created.body.rufid, data: { function_name: 'fresh', version: 'v1' } })
    await new Promise((r) => setTimeout(r, 100))
    expect(theirs).toEqual([])
    mine.cancel()
    stopTheirs()
    await until(() => node.engine.events.listenerCount('system') === systemBefore, 'the system listeners to be removed')
  })

  it('serves queries and mutations over graphql-ws with the same error codes', async () => {
    const client = node.wsClient()
    const run = await first<{ executeFunction: { result: number; status: string } }>(client,
      `mutation R($r: String!) { executeFunction(rufid: $r, args: {a: 2, b: 3}) { result status } }`, { r: addShort }).value
    expect(run.executeFunction).toEqual({ result: 5, status: 'success' })
    const notFound = first(client, `{ resolveRUFID(rufid: "AAAAAAAAAAAA") { rufid } }`).value
    await expect(notFound).rejects.toMatchObject({ errors: [{ extensions: { code: 1002, name: 'RUFID_NOT_FOUND' } }] })
    const malformed = first(client, `subscription { functionExecutions(rufid: "bad!") { executionId } }`).value
    await expect(malformed).rejects.toMatchObject({ errors: [{ extensions: { code: 1001, name: 'INVALID_RUFID' } }] })
  })

  it('refuses a graphql-ws connection without valid credentials with close code 4401', async () => {
    for (const token of [null, 'not-a-key']) {
      const client = node.wsClient(token)
      const closed = new Promise<{ code: number; reason: string }>((resolve) => client.on('closed', (e) => resolve(e as { code: number; reason: string })))
      const result = first(client, `{ listFunctions { pagination { total } } }`).value
      await expect(result).rejects.toBeDefined()
      const event = await closed
      expect(event.code).toBe(4401)
      expect(event.reason).toMatch(/^1003 PERMISSION_DENIED/)
    }
  })

  it('refuses an operation past the depth limit with 1006 while the socket and another client keep being served', async () => {
    const client = node.wsClient()
    const other = node.wsClient(node.keys.acmeReader)
    const deep = first(client, `{ resolveRUFID(rufid: "${addShort}") { function { metrics { usageCount } } } }`).value
    const meanwhile = first<{ resolveRUFID: { version: string } }>(other, `{ resolveRUFID(rufid: "${addShort}") { version } }`).value
    await expect(deep).rejects.toMatchObject({ errors: [{ extensions: { code: 1006, name: 'VALIDATION_FAILED' } }] })
    expect((await meanwhile).resolveRUFID.version).toBe('v1')
    const again = await first<{ resolveRUFID: { function: { name: string } } }>(client, `{ resolveRUFID(rufid: "${addShort}") { function { name } } }`).value
    expect(again.resolveRUFID.function.name).toBe('add')
    // a read-only key may not execute (1003), and introspection is fine for an authenticated socket
    await expect(first(other, `mutation { executeFunction(rufid: "${addShort}", args: {}) { status } }`).value)
      .rejects.toMatchObject({ errors: [{ extensions: { code: 1003, name: 'PERMISSION_DENIED' } }] })
    expect(await first(other, `{ __schema { queryType { name } } }`).value).toEqual({ __schema: { queryType: { name: 'Query' } } })
  })

  it('removes subscription listeners when the socket closes', async () => {
    const client = node.wsClient()
    const before = listeners()
    client.subscribe({ query: EXECUTIONS }, { next: () => undefined, error: () => undefined, complete: () => undefined })
    client.subscribe({ query: EXECUTIONS, variables: { r: addShort } }, { next: () => undefined, error: () => undefined, complete: () => undefined })
    await until(() => listeners() === before + 2, 'two subscriptions to attach')
    await client.dispose()
    await until(() => listeners() === before, 'listeners to be removed on close')
  })
})
