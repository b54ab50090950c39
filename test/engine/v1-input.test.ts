// The `/v1` execution body is the function's input (decisions.md, "`/v1` group field names"): a
// function that declares exactly one parameter receives the whole object, one that declares several
// receives its members by name, and a member that names no parameter is 1006. In process: a real
// engine on a memory LevelDB and a real sandbox (isolated-vm and Pyodide workers).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { argumentsDigest } from '../../src/core/receipt.js'
import type { EngineComponents, ExecutionRecord } from '../../src/engine/index.js'
import { argumentsOfInput } from '../../src/engine/executions/input-binding.js'
import { createTestEngine, principal, realSandbox, rejectionOf, type TestEngine } from '../fixtures/engine.js'

const dev = principal('acme')
const EVENT = { x: 1, y: [2] }

describe('the /v1 input binds by the declared signature', () => {
  let sandbox: EngineComponents['sandbox']
  let t: TestEngine

  beforeAll(async () => {
    sandbox = await realSandbox(1)
    t = await createTestEngine({ sandbox })
  }, 60_000)
  afterAll(async () => {
    await t?.engine.stop()
  })

  const create = async (def: Record<string, unknown>): Promise<string> => (await t.engine.functions.create(dev, def)).rufid
  /** submits `input` as the /v1 group does and waits for the record's final status */
  const run = async (rufid: string, input: unknown): Promise<ExecutionRecord> => {
    const target = t.engine.functions.target(dev, rufid)
    const queued = await t.engine.executions.submit(dev, target, input, { as: 'input' })
    await t.engine.executions.drain()
    return t.engine.executions.get(dev, queued.execution_id)
  }

  it('gives a JavaScript handler(event) the whole object', async () => {
    const handler = await create({ function_name: 'handler', signature: '(event)', language: 'javascript', source_code: 'function handler(event) { return { got: event, sum: Array.isArray(event?.y) ? event.x + event.y[0] : null } }' })
    expect(await run(handler, EVENT)).toMatchObject({ status: 'success', result: { got: EVENT, sum: 3 } })
    // an object naming the parameter is still the whole input
    expect(await run(handler, { event: 5 })).toMatchObject({ status: 'success', result: { got: { event: 5 } } })
    // any JSON document is the input of a one-parameter function
    expect(await run(handler, [1, 2])).toMatchObject({ status: 'success', result: { got: [1, 2] } })
    expect(await run(handler, null)).toMatchObject({ status: 'success', result: { got: null } })
  })

  it('gives a TypeScript handler with a destructured parameter the whole object', async () => {
    const ts = await create({
      function_name: 'pick', signature: '({ x, y }: { x: number; y: number[] }): number', language: 'typescript',
      source_code: 'function pick({ x, y }: { x: number; y: number[] }): number { return x * 10 + y.length }',
    })
    expect(await run(ts, EVENT)).toMatchObject({ status: 'success', result: 11 })
  })

  it('gives a Python handler(event) the whole dict', async () => {
    const py = await create({ function_name: 'handler', signature: '(event)', language: 'python', source_code: 'def handler(event):\n    return {"got": event, "sum": event["x"] + event["y"][0]}\n' })
    expect(await run(py, EVENT)).toMatchObject({ status: 'success', result: { got: EVENT, sum: 3 } })
    // **kwargs alone collects the members; a lone keyword-only parameter gets the input by name
    const kw = await create({ function_name: 'kw', signature: '(**fields)', language: 'python', source_code: 'def kw(**fields):\n    return sorted(fields)\n' })
    expect(await run(kw, EVENT)).toMatchObject({ status: 'success', result: ['x', 'y'] })
    const only = await create({ function_name: 'only', signature: '(*, event)', language: 'python', source_code: 'def only(*, event):\n    return event\n' })
    expect(await run(only, EVENT)).toMatchObject({ status: 'success', result: EVENT })
  }, 60_000)

  it('binds the members of the object by name for several parameters; a member naming none is 1006', async () => {
    const js = await create({ function_name: 'scale', signature: '(x, factor)', language: 'javascript', source_code: 'function scale(x, factor) { return x * factor }' })
    expect(await run(js, { x: 21, factor: 2 })).toMatchObject({ status: 'success', result: 42 })
    expect(await run(js, [3, 4])).toMatchObject({ status: 'success', result: 12 })
    expect(await run(js, { x: 1, nope: 2 })).toMatchObject({ status: 'error', error: { code: 1006 } })
    const py = await create({ function_name: 'scale', signature: '(x, factor)', language: 'python', source_code: 'def scale(x, factor):\n    return x * factor\n' })
    expect(await run(py, { x: 21, factor: 2 })).toMatchObject({ status: 'success', result: 42 })
    expect(await run(py, { x: 1, nope: 2 })).toMatchObject({ status: 'error', error: { code: 1006 } })
    // a function without parameters takes an empty object
    const none = await create({ function_name: 'hello', signature: '()', language: 'javascript', source_code: 'function hello() { return "hi" }' })
    expect(await run(none, {})).toMatchObject({ status: 'success', result: 'hi' })
    expect(await run(none, { who: 'x' })).toMatchObject({ status: 'error', error: { code: 1006 } })
    // a scalar cannot name parameters: refused before anything is queued
    const refused = await rejectionOf(t.engine.executions.submit(dev, t.engine.functions.target(dev, js), 7, { as: 'input' }))
    expect(refused.code).toBe(1006)
  }, 60_000)

  it('keeps the core group\'s arguments: named arguments bind by name whatever the parameter count', async () => {
    const handler = await create({ function_name: 'echo', signature: '(event)', language: 'javascript', source_code: 'function echo(event) { return event }' })
    const target = t.engine.functions.target(dev, handler)
    expect((await t.engine.executions.execute(dev, target, { event: 5 })).result).toBe(5)
    expect(await rejectionOf(t.engine.executions.execute(dev, target, EVENT))).toMatchObject({ code: 1006 })
  })

  it('keys receipts and the result cache by the bound arguments: an input and the same object as arguments never share a result', async () => {
    const pure = await create({
      function_name: 'first', signature: '(x)', language: 'javascript', source_code: 'function first(x) { return typeof x === "object" ? "whole" : x }',
      manifest: { schemaVersion: '1.0', name: 'first', deterministic: true },
    })
    const target = t.engine.functions.target(dev, pure)
    expect((await t.engine.executions.execute(dev, target, { x: 1 })).result).toBe(1)
    const asInput = await run(pure, { x: 1 })
    expect(asInput).toMatchObject({ status: 'success', result: 'whole' })
    // the same call as positional arguments shares the input's binding, so its cached result
    const positional = await t.engine.executions.execute(dev, target, [{ x: 1 }])
    expect(positional).toMatchObject({ result: 'whole', cached: true })
    expect(argumentsOfInput('(x)', { x: 1 })).toEqual([{ x: 1 }])
    expect(argumentsDigest(argumentsOfInput('(x)', { x: 1 }))).not.toBe(argumentsDigest({ x: 1 }))
  })
})
