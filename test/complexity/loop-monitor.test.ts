// Issue 27: a request that blocks the event loop longer than server.block_warn_ms is logged as a
// warning naming its protocol, operation and tenant, and counted in svc_event_loop_blocks_total,
// and the blame goes to the operation whose code ran, not to one that was merely in flight. In
// process, through the operation envelope (as every door runs its operations), with operations
// that block on purpose: before their first await (named at once), after one (the first such
// stall lists the operations in flight and switches context tracking on; the next is named), and
// one that blocks outside any operation. Context tracking (promise hooks) is off in the steady
// state: it doubled the daemon's CPU per request when it was always on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createOperationEnvelope, LoopMonitor, operationContext, type DoorProfile, type Engine, type Operation, type OperationEnvelope,
} from '../../src/engine/index.js'
import { createTestEngine } from '../fixtures/engine.js'

/** Holds the thread for `ms` (what a super-linear regex on a hostile input does). */
function busy(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) { /* blocking on purpose */ }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

interface Input {
  token: string
}

describe('event-loop blocks name the operation that blocked (in process)', () => {
  let engine: Engine
  let envelope: OperationEnvelope<Input>
  let monitor: LoopMonitor
  let token: string
  const warnings: Array<{ obj: Record<string, unknown>; msg: string }> = []

  beforeAll(async () => {
    engine = (await createTestEngine({ auth: { mode: 'standard' } })).engine
    token = (await engine.keys.mintFor('acme', 'test', { name: 'k', scopes: ['admin'] })).api_key
    const profile: DoorProfile<Input> = {
      protocol: 'rest',
      credentialsOf: (input) => ({ authorization: `Bearer ${input.token}`, ip: '127.0.0.1' }),
      ipOf: () => '127.0.0.1',
      statusOf: (error) => (error ? String(error.code) : '200'),
    }
    envelope = createOperationEnvelope(profile, { engine, logger: { error() {}, debug() {} } })
    monitor = new LoopMonitor({ thresholdMs: 100, attributionMs: 1500 }, { metrics: engine.metrics, logger: { warn: (obj, msg) => warnings.push({ obj: obj as Record<string, unknown>, msg }) } })
    monitor.start()
  })
  afterAll(async () => {
    monitor?.stop()
    await engine?.stop()
  })

  const operation = (name: string, handle: () => Promise<unknown>): Operation<Input, unknown> => ({ name, audited: false, handle: async () => handle() })
  /** a caller's operation that sleeps: in flight during the block, never running */
  const bystander = operation('test.bystander', () => sleep(400))
  /** blocks 250 ms before its first await */
  const blocksAtOnce = operation('test.blocks_at_once', async () => {
    busy(250)
    await sleep(1)
  })
  /** awaits (a timer, as a store read would), then blocks 250 ms, then awaits again */
  const blocksLater = operation('test.blocks_later', async () => {
    await sleep(30)
    busy(250)
    await sleep(1)
    return 'done'
  })

  /** Waits until the monitor has reported `count` blocks in all (bounded). */
  async function blocksSeen(count: number): Promise<void> {
    for (let i = 0; i < 100 && monitor.recent.length < count; i++) await sleep(20)
  }

  it('blames the blocking operation, with its tenant, while another is in flight', async () => {
    const before = monitor.recent.length
    const started = envelope.run(bystander, { token })
    await sleep(20) // the bystander is in flight (admitted, sleeping)
    await Promise.all([envelope.run(blocksAtOnce, { token }), started])
    await blocksSeen(before + 1)
    const blocks = monitor.recent.slice(before)
    expect(blocks).toHaveLength(1)
    expect(blocks[0]).toMatchObject({ protocol: 'rest', operation: 'test.blocks_at_once', tenant_id: 'acme' })
    expect(blocks[0]!.ms).toBeGreaterThanOrEqual(100)
    const warning = warnings.at(-1)!
    expect(warning.msg).toBe(`event loop blocked ${blocks[0]!.ms} ms by rest test.blocks_at_once of tenant acme`)
    expect(warning.obj).toMatchObject({ protocol: 'rest', operation: 'test.blocks_at_once', tenant_id: 'acme', blocked_ms: blocks[0]!.ms })
  })

  it('an operation that blocks after an await: the first stall lists the operations in flight, the next one is named', async () => {
    expect(monitor.attributing).toBe(false)
    const runLate = async (): Promise<void> => {
      const late = envelope.run(blocksLater, { token })
      await sleep(5)
      const other = envelope.run(bystander, { token }) // starts after blocksLater, is in flight during its block
      await Promise.all([late, other])
    }
    let before = monitor.recent.length
    await runLate()
    await blocksSeen(before + 1)
    let blocks = monitor.recent.slice(before)
    expect(blocks).toHaveLength(1)
    expect(blocks[0]).toMatchObject({ operation: undefined })
    expect(blocks[0]!.in_flight).toEqual(expect.arrayContaining(['rest test.blocks_later (acme)', 'rest test.bystander (acme)']))
    expect(warnings.at(-1)!.msg).toMatch(/^event loop blocked \d+ ms by code of one of the operations in flight \(.*rest test\.blocks_later \(acme\).*\); the next block is named/)
    expect(monitor.attributing).toBe(true)
    // the same again, contexts tracked now: blamed on the one that blocked, not the one that started last
    before = monitor.recent.length
    await runLate()
    await blocksSeen(before + 1)
    blocks = monitor.recent.slice(before)
    expect(blocks).toHaveLength(1)
    expect(blocks[0]).toMatchObject({ protocol: 'rest', operation: 'test.blocks_later', tenant_id: 'acme' })
  })

  it('a block outside any operation is counted and logged as such', async () => {
    const before = monitor.recent.length
    await sleep(30)
    await new Promise<void>((resolve) => setTimeout(() => {
      busy(200)
      resolve()
    }, 1))
    await blocksSeen(before + 1)
    expect(monitor.recent.slice(before)).toEqual([expect.objectContaining({ operation: undefined })])
    expect(warnings.at(-1)!.msg).toMatch(/^event loop blocked \d+ ms outside any operation$/)
  })

  it('counts blocks by operation and their durations in /metrics', async () => {
    const text = await engine.metrics.registry.metrics()
    expect(text).toMatch(/svc_event_loop_blocks_total\{protocol="rest",operation="test.blocks_at_once"\} 1/)
    expect(text).toMatch(/svc_event_loop_blocks_total\{protocol="rest",operation="test.blocks_later"\} 1/)
    expect(text).toMatch(/svc_event_loop_blocks_total\{protocol="none",operation="unattributed"\} 1/)
    expect(text).toMatch(/svc_event_loop_block_seconds_count 4/)
    expect(text).not.toMatch(/svc_event_loop_blocks_total\{[^}]*operation="test.bystander"/)
  })

  it('no block, no warning: operations that only await', async () => {
    const before = monitor.recent.length
    await Promise.all(Array.from({ length: 20 }, () => envelope.run(bystander, { token })))
    await sleep(100)
    expect(monitor.recent.length).toBe(before)
  })

  it('context tracking switches itself off once no stall has needed it for attributionMs: operations then run without a context', async () => {
    for (let i = 0; i < 150 && monitor.attributing; i++) await sleep(20)
    expect(monitor.attributing).toBe(false)
    let seen: unknown = 'unset'
    await envelope.run(operation('test.looks', async () => {
      await sleep(1)
      seen = operationContext.getStore()
    }), { token })
    expect(seen).toBeUndefined()
  })
})
