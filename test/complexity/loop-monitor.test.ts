// Issue 27: a request that blocks the event loop longer than server.block_warn_ms is logged as a
// warning naming its protocol, operation and tenant, and counted in svc_event_loop_blocks_total,
// and the blame goes to the operation whose code ran, not to one that was merely in flight. In
// process, through the operation envelope (as every door runs its operations), with operations
// that block on purpose: before their first await, after one, and one that blocks outside any
// operation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createOperationEnvelope, LoopMonitor, type DoorProfile, type Engine, type Operation, type OperationEnvelope,
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
    monitor = new LoopMonitor({ thresholdMs: 100 }, { metrics: engine.metrics, logger: { warn: (obj, msg) => warnings.push({ obj: obj as Record<string, unknown>, msg }) } })
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

  it('blames an operation that blocks after an await (its context follows it), not the one that started last', async () => {
    const before = monitor.recent.length
    const late = envelope.run(blocksLater, { token })
    await sleep(5)
    const other = envelope.run(bystander, { token }) // starts after blocksLater, is in flight during its block
    await Promise.all([late, other])
    await blocksSeen(before + 1)
    const blocks = monitor.recent.slice(before)
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
    expect(text).toMatch(/svc_event_loop_block_seconds_count 3/)
    expect(text).not.toMatch(/svc_event_loop_blocks_total\{[^}]*operation="test.bystander"/)
  })

  it('no block, no warning: operations that only await', async () => {
    const before = monitor.recent.length
    await Promise.all(Array.from({ length: 20 }, () => envelope.run(bystander, { token })))
    await sleep(100)
    expect(monitor.recent.length).toBe(before)
  })
})
