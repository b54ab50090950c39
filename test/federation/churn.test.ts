// The short form of the churn runner (bench/churn.js, issue 17): 8 daemon processes on loopback,
// 45 s of publishes and executions on random nodes while 3 nodes restart, leave for good, or join
// fresh with a new identity and certificate. Asserts behaviour (the federation forms and re-forms,
// every function stays executable while a holder lives, digests converge), never timings: the
// figures are printed. Needs the compiled daemon (`npm run build`).
import { describe, expect, it } from 'vitest'
// @ts-expect-error bench/churn.js is plain JavaScript without types
import { runChurn, table } from '../../bench/churn.js'

interface Summary { n: number; p50_ms: number | null; p99_ms: number | null }
interface ChurnReport {
  formation: { every_node_lists_all_ms_after_last_start: number | null }
  churn_events: Array<{ action: string; node: string; published?: number; listen_to_ready_ms?: number }>
  churn_publish_to_visible_everywhere: Summary & { of: number; visible_everywhere: number }
  churn_publish_to_visible_on_settled_nodes: Summary & { of: number; settled_ms: number }
  churn_publish_to_visible_on_listening_nodes: Summary & { of: number }
  churn_executions: Summary & { attempts: number; ok: number }
  after_churn_digests_equal_ms: number | null
  after_churn_every_node_lists_all_ms: number | null
  availability_after_churn: { functions: number; with_live_holder: number; executed: number; orphaned_by_publisher: number; orphaned_executed: number; failures: unknown[] }
  live_nodes_at_end: number
  traffic_per_change_bytes_per_node: number
}

describe('a federation of 8 daemons under churn (restart, leave for good, join fresh)', () => {
  it('forms, stays usable, converges after churn, and keeps every function with a live holder executable', async () => {
    const report = await runChurn({ nodes: 8, seconds: 45, publishEveryMs: 1_500, log: (m: string) => console.log(`[churn] ${m}`) }) as ChurnReport
    console.log(table(report))
    expect(report.formation.every_node_lists_all_ms_after_last_start).not.toBeNull()
    expect(report.churn_events.map((e) => e.action)).toEqual(['restart', 'leave', 'join'])
    expect(report.live_nodes_at_end).toBe(8) // 8 − 1 left + 1 joined

    // publishes during churn made it to every node that stayed up
    expect(report.churn_publish_to_visible_everywhere.of).toBeGreaterThan(5)
    expect(report.churn_publish_to_visible_everywhere.visible_everywhere).toBe(report.churn_publish_to_visible_everywhere.of)
    // the nodes up 30 s at each publish are a subset of its targets: every publish reached them too, no later
    const settled = report.churn_publish_to_visible_on_settled_nodes
    expect(settled.n).toBe(settled.of)
    expect(settled.p99_ms ?? Infinity).toBeLessThanOrEqual(report.churn_publish_to_visible_everywhere.p99_ms ?? 0)
    // nodes count from /readyz 200 (caught up); every publish also reached every node that listened
    // at the time, ready or not (it catches up before it says it serves)
    const listening = report.churn_publish_to_visible_on_listening_nodes
    expect(listening.n).toBe(listening.of)
    expect(report.churn_events.filter((e) => e.action !== 'leave').every((e) => typeof e.listen_to_ready_ms === 'number')).toBe(true)
    // after churn: the same catalog everywhere, and every node (the fresh one too) lists every other
    expect(report.after_churn_digests_equal_ms).not.toBeNull()
    expect(report.after_churn_every_node_lists_all_ms).not.toBeNull()
    // every function with a live holder runs on a node that did not hold it, those of the node that
    // left for good included
    const a = report.availability_after_churn
    expect(a.with_live_holder).toBeGreaterThan(5)
    expect(a.failures).toEqual([])
    expect(a.executed).toBe(a.with_live_holder)
    expect(a.orphaned_by_publisher).toBeGreaterThan(0)
    expect(a.orphaned_executed).toBe(a.orphaned_by_publisher)
    expect(report.traffic_per_change_bytes_per_node).toBeGreaterThan(0)
  }, 600_000)
})
