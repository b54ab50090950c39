// Hostile tenant, streams and proxies (issue 27, items 8 and 9), against a real daemon process:
// - a key of tenant A subscribed on all four stream doors (/ws, graphql-ws, GraphQL over SSE, gRPC
//   StreamExecutions) while A executes; the key is revoked: every stream ends within 1 s with its
//   door's code, and no event arrives after (A keeps executing, and another key's stream keeps
//   receiving, so there were events to leak);
// - the same with a key that expires (a record written into the data directory before the start,
//   its expiry seconds away: the API mints whole days);
// - the node behind a reverse proxy (trusted_proxies: [127.0.0.1/32]): a client flooding bad tokens
//   with X-Forwarded-For 203.0.113.7 is limited while another client behind the same proxy
//   (203.0.113.8) is served, and the audit entries carry the forwarded addresses.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ClassicLevel } from 'classic-level'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ApiKeyService, createLevelKeyStorage, type LevelDatabase } from '../../../src/engine/index.js'
import { awaitEnded, awaitEverywhere, openEveryDoor, openWs, type DoorStream } from '../../api/stream-doors.js'
import { call, tempDataDir } from '../../fixtures/daemon-process.js'
import { recordFault } from '../fault-record.js'
import { mintAdminKeyOffline, sleep } from '../fault-fixtures.js'
import { startTwoTenantNode, TENANT_A, type TwoTenantNode } from './two-tenants.js'

/** The expiring key's lifetime, counted from when its record is written (before the daemon starts). */
const EXPIRING_KEY_LIFETIME_MS = 45_000
const PROXY = '127.0.0.1'
const FLOODER = '203.0.113.7'
const NEIGHBOUR = '203.0.113.8'

/** Writes a functions:read key of `tenant` that expires `lifetimeMs` from now into a stopped node's key store. */
async function writeExpiringKey(dataDir: string, tenant: string, lifetimeMs: number): Promise<{ apiKey: string; keyId: string; expiresAt: number }> {
  const db = new ClassicLevel<string, unknown>(join(dataDir, 'catalog'), { valueEncoding: 'json' })
  await db.open()
  try {
    const storage = createLevelKeyStorage(db as unknown as LevelDatabase)
    const minted = await new ApiKeyService({ defaultExpiresDays: 90, maxExpiresDays: 3650 }, storage)
      .mintFor(tenant, 'test:expiring', { name: 'expiring watcher', scopes: ['functions:read'], expires_days: 1 })
    const expiresAt = Date.now() + lifetimeMs
    await storage.put({ ...(await storage.get(minted.key_id))!, expires_at: new Date(expiresAt).toISOString() })
    return { apiKey: minted.api_key, keyId: minted.key_id, expiresAt }
  } finally {
    await db.close()
  }
}

/** performance.now() → epoch ms */
const epochOf = (at: number): number => performance.timeOrigin + at

describe('hostile tenant: credentials end their streams; per-IP limits behind a trusted proxy (real daemon process)', () => {
  let node: TwoTenantNode
  let operatorKey = ''
  let short = ''
  let expiring: { apiKey: string; keyId: string; expiresAt: number }
  let expiringStreams: DoorStream[] = []
  const opened: DoorStream[] = []
  const target = () => ({ url: node.url, grpcAddress: node.daemon.grpcAddress! })

  /** A's executions, issued until `until()` holds, about every `everyMs`: each with when it was sent (performance.now). */
  const executeUntil = async (until: () => boolean, everyMs: number, log: Array<{ id: string; sentAt: number }>): Promise<void> => {
    for (let i = 0; i < 2000 && !until(); i++) {
      const sentAt = performance.now()
      const r = await node.asA('POST', `/api/v1/functions/${short}/execute`, { arguments: [i, 1] })
      if (r.status !== 200) throw new Error(`A's execute answered ${r.status}: ${JSON.stringify(r.body)}`)
      log.push({ id: r.body.execution_id as string, sentAt })
      await sleep(everyMs)
    }
  }
  /** The operations audited as ended by `keyId`'s credential (`result`), from A's audit trail. */
  const auditedEnds = async (keyId: string, result: string): Promise<string[]> => {
    const out: string[] = []
    for (const operation of ['events.end', 'graphql.end', 'rufid.stream_executions']) {
      const page = await call<{ items: Array<{ operation: string; result: string; key_id?: string }> }>(
        `${node.url}/api/v1/audit?operation=${operation}&limit=1000`, 'GET', undefined, { authorization: `Bearer ${node.keyA}` })
      out.push(...page.body.items.filter((e) => e.key_id === keyId && e.result === result).map((e) => e.operation))
    }
    return out.sort()
  }
  const executeOnce = async (): Promise<string> => {
    const log: Array<{ id: string; sentAt: number }> = []
    await executeUntil(() => log.length > 0, 0, log)
    return log[0]!.id
  }

  beforeAll(async () => {
    const dataDir = tempDataDir()
    operatorKey = await mintAdminKeyOffline(dataDir, 'default')
    expiring = await writeExpiringKey(dataDir, TENANT_A, EXPIRING_KEY_LIFETIME_MS)
    const config = join(dataDir, 'proxy.config.json')
    writeFileSync(config, JSON.stringify({ server: { trusted_proxies: [`${PROXY}/32`] } }))
    node = await startTwoTenantNode({ dataDir, env: { SVC_CONFIG: config } })
    short = await node.create('A', { function_name: 'tick', signature: '(a, b)', language: 'javascript', source_code: 'function tick(a, b) { return a + b }' })
    // the expiring key's streams, opened now (its expiry is counted from before the start)
    expiringStreams = await openEveryDoor(target(), expiring.apiKey)
    opened.push(...expiringStreams)
    const first = await executeOnce()
    expect(await awaitEverywhere(expiringStreams, first, 15_000), "doors that did not deliver the expiring key's first event").toEqual([])
    expect(Date.now(), 'the expiring key was subscribed everywhere before it expired').toBeLessThan(expiring.expiresAt - 3000)
  }, 120_000)

  afterAll(async () => {
    for (const s of opened) s.close()
    await node?.stop()
  })

  it('isolation.revoked-key-streams: revoking a minted key of A ends its streams on all four doors within 1 s; nothing after', async () => {
    const rec = recordFault('isolation.revoked-key-streams', {
      fault: "tenant A's minted key (functions:read) subscribed to A's executions on /ws, graphql-ws, GraphQL over SSE and gRPC StreamExecutions while A executes every 50 ms; A's admin revokes the key (DELETE /api/v1/auth/v2/api-keys/{id}) and keeps executing for 2 s after the streams ended (15 times at least)",
      expectation: 'each stream ends within 1 s of the revocation with its door\'s code (/ws 4401, graphql-ws 4403, SSE error 1003 then complete, gRPC UNAUTHENTICATED + svc-error-code 1003), no event arrives after its end; another key of A keeps receiving; each end audited with result revoked',
    })
    const minted = await node.asA('POST', '/api/v1/auth/v2/api-keys', { name: 'watcher', scopes: ['functions:read'], expires_days: 1 })
    expect(minted.status).toBe(201)
    const keyId = minted.body.key_id as string
    const streams = await openEveryDoor(target(), minted.body.api_key as string)
    const bystander = await openWs(node.url, { authorization: `Bearer ${node.keyA}` })
    opened.push(...streams, bystander)

    const log: Array<{ id: string; sentAt: number }> = []
    // A keeps executing for 2 s after the streams ended, and at least 15 times after the revocation (15 s at most)
    let stopAt = Number.POSITIVE_INFINITY
    let answeredAt = Number.POSITIVE_INFINITY
    const enoughAfter = (): boolean => log.filter((e) => e.sentAt > answeredAt).length >= 15
    const executing = executeUntil(() => performance.now() > stopAt && (enoughAfter() || performance.now() > stopAt + 13_000), 50, log)
    // every door delivers A's executions before the revocation
    for (let i = 0; i < 200 && log.length === 0; i++) await sleep(20)
    expect(await awaitEverywhere([...streams, bystander], log[0]!.id, 15_000)).toEqual([])

    const sentAt = performance.now()
    const revoked = await node.asA('DELETE', `/api/v1/auth/v2/api-keys/${keyId}`)
    answeredAt = performance.now()
    expect(revoked.status).toBe(200)
    const open = await awaitEnded(streams, 5000)
    stopAt = performance.now() + 2000
    await executing
    await sleep(300)

    expect(open, 'doors still open 5 s after the revocation').toEqual([])
    const ends = Object.fromEntries(streams.map((s) => [s.door, s.end!]))
    expect(ends.ws).toMatchObject({ code: 4401, svcCode: 1003, reason: '1003 PERMISSION_DENIED: API key revoked' })
    expect(ends['graphql-ws']).toMatchObject({ code: 4403, svcCode: 1003, reason: '1003 PERMISSION_DENIED: API key revoked' })
    expect(ends.sse).toMatchObject({ code: 'complete', svcCode: 1003, reason: 'API key revoked', details: { credential: 'revoked', key_id: keyId } })
    expect(ends.grpc).toMatchObject({ code: 'UNAUTHENTICATED', svcCode: 1003, reason: 'API key revoked', details: { credential: 'revoked', key_id: keyId } })
    const afterEnd = Object.fromEntries(streams.map((s) => [s.door, s.events.filter((e) => e.at > s.end!.at).length]))
    const executedAfter = new Set(log.filter((e) => e.sentAt > answeredAt).map((e) => e.id))
    const leaked = Object.fromEntries(streams.map((s) => [s.door, s.events.filter((e) => executedAfter.has(e.executionId)).length]))
    const bystanderAfter = bystander.events.filter((e) => executedAfter.has(e.executionId)).length
    const closeMs = Object.fromEntries(streams.map((s) => [s.door, Math.round(s.end!.at - sentAt)]))
    const sinceAnswerMs = Object.fromEntries(streams.map((s) => [s.door, Math.round(s.end!.at - answeredAt)]))

    const ended = await auditedEnds(keyId, 'revoked')

    rec.figures({
      revoke_answer_ms: Math.round(answeredAt - sentAt),
      ...Object.fromEntries(Object.entries(closeMs).map(([door, ms]) => [`close_ms_from_request_${door}`, ms])),
      close_ms_max_from_answer: Math.max(...Object.values(sinceAnswerMs)),
      events_after_close: Object.values(afterEnd).reduce((a, b) => a + b, 0),
      executions_after_revoke: executedAfter.size,
      events_of_those_on_revoked_streams: Object.values(leaked).reduce((a, b) => a + b, 0),
      events_of_those_on_other_key: bystanderAfter,
      audited_ends: ended.length,
    })
    rec.summary(`closed ${Object.entries(closeMs).map(([d, ms]) => `${d} ${ms} ms`).join(', ')} after the DELETE was sent (answered in ${Math.round(answeredAt - sentAt)} ms); ${executedAfter.size} executions after: 0 events on the revoked key's streams, ${bystanderAfter} on another key's`)

    for (const [door, ms] of Object.entries(sinceAnswerMs)) expect(ms, `${door}: ms from the revocation to the close`).toBeLessThanOrEqual(1000)
    expect(afterEnd, 'events after each stream ended').toEqual({ ws: 0, 'graphql-ws': 0, sse: 0, grpc: 0 })
    expect(leaked, 'events of executions after the revocation').toEqual({ ws: 0, 'graphql-ws': 0, sse: 0, grpc: 0 })
    expect(executedAfter.size).toBeGreaterThan(10)
    expect(bystanderAfter, "another key's stream kept receiving A's executions (so there were events to leak)").toBeGreaterThan(10)
    expect(ended).toEqual(['events.end', 'graphql.end', 'graphql.end', 'rufid.stream_executions'])
    bystander.close()
  }, 90_000)

  it('isolation.trusted-proxy: behind a trusted proxy, a flood of bad tokens limits only its forwarded address; the neighbour is served; audit entries carry the forwarded addresses', async () => {
    const rec = recordFault('isolation.trusted-proxy', {
      fault: `node configured with server.trusted_proxies [${PROXY}/32]; through it (from ${PROXY}) a client sends bad tokens (4 at a time) with X-Forwarded-For: ${FLOODER} for 3 s, while another client behind the same proxy (X-Forwarded-For: ${NEIGHBOUR}) calls with B's key every 100 ms, and a good key is sent for ${FLOODER} every 100 ms`,
      expectation: `the flood is limited (401 for the first 20 a second, then 429) and a good key from ${FLOODER} waits too; every call of ${NEIGHBOUR} answers 200; audit entries carry ${FLOODER} and ${NEIGHBOUR}, not the proxy's address`,
    })
    const whoami = (token: string, forwardedFor: string) =>
      call(`${node.url}/api/v1/auth/whoami`, 'GET', undefined, { authorization: `Bearer ${token}`, 'x-forwarded-for': forwardedFor })
    const flood = new Map<number, number>()
    const served: number[] = []
    // a good key sent for the flooded address while the flood runs: not even checked once its budget is used
    const sameAddress: number[] = []
    const started = performance.now()
    let done = false
    const flooder = async (n: number): Promise<void> => {
      for (let i = 0; i < 1000 && performance.now() - started < 3000; i++) {
        const status = (await whoami(`svck_${'F'.repeat(16)}_${`${n}x${i}`.padStart(43, '0')}`, FLOODER)).status
        flood.set(status, (flood.get(status) ?? 0) + 1)
        await sleep(10)
      }
    }
    const every100ms = async (out: number[], forwardedFor: string): Promise<void> => {
      for (let i = 0; i < 100 && !done; i++) {
        out.push((await whoami(node.keyB, forwardedFor)).status)
        await sleep(100)
      }
    }
    const others = [every100ms(served, NEIGHBOUR), every100ms(sameAddress, FLOODER)]
    await Promise.all([0, 1, 2, 3].map(flooder))
    const floodSeconds = (performance.now() - started) / 1000
    done = true
    await Promise.all(others)
    const sameAddressWaited = sameAddress.filter((s) => s === 429).length

    const floodAudit = await call<{ items: Array<{ ip: string; result: string; count?: number }> }>(
      `${node.url}/api/v1/audit?tenant=~none&operation=auth.whoami&limit=1000`, 'GET', undefined, { authorization: `Bearer ${operatorKey}` })
    const neighbourAudit = await call<{ items: Array<{ ip: string; tenant: string | null }> }>(
      `${node.url}/api/v1/audit?operation=auth.whoami&limit=1000`, 'GET', undefined, { authorization: `Bearer ${node.keyB}` })
    const floodIps = [...new Set(floodAudit.body.items.map((e) => e.ip))]
    // B's entries: the neighbour's calls, and those of the good key sent for the flooded address that got in
    const neighbourIps = [...new Set(neighbourAudit.body.items.map((e) => e.ip))].sort()
    const neighbourEntries = neighbourAudit.body.items.filter((e) => e.ip === NEIGHBOUR).length
    const attempts = [...flood.values()].reduce((a, b) => a + b, 0)

    rec.figures({
      flood_requests: attempts, flood_per_s: Math.round(attempts / floodSeconds), flood_401: flood.get(401) ?? 0, flood_429: flood.get(429) ?? 0,
      neighbour_requests: served.length, neighbour_200: served.filter((s) => s === 200).length,
      good_key_from_flooded_address_429: sameAddressWaited, good_key_from_flooded_address_requests: sameAddress.length, audit_ips_flood: floodIps.join(' '), audit_ips_neighbour: neighbourIps.join(' '),
    })
    rec.summary(`${attempts} bad tokens in ${floodSeconds.toFixed(1)} s from ${FLOODER} via the proxy: ${flood.get(401) ?? 0} checked (401), ${flood.get(429) ?? 0} limited (429), a good key for ${FLOODER} waited ${sameAddressWaited}/${sameAddress.length}; ${NEIGHBOUR} served ${served.filter((s) => s === 200).length}/${served.length}; audit ips ${floodIps.join(',')} / ${neighbourIps.join(',')}`)

    expect(attempts / floodSeconds, 'the flood ran at 20+ bad tokens a second').toBeGreaterThan(20)
    expect([...flood.keys()].sort()).toEqual([401, 429])
    expect(flood.get(401)!, 'at most the per-address budget (20 a second) checked, one window of slack').toBeLessThanOrEqual(20 * (Math.ceil(floodSeconds) + 1))
    expect(served.length).toBeGreaterThan(10)
    expect(served.every((s) => s === 200), `neighbour behind the same proxy: ${served.join(',')}`).toBe(true)
    // the flood uses each second's budget within its first part (at r a second, 1 - 20/r of it is
    // refused unchecked: 67-93 % in the runs recorded, at 73-300 a second); a third at least
    expect(sameAddress.filter((s) => s !== 200 && s !== 429), 'good key from the flooded address: 200 or 429 only').toEqual([])
    expect(sameAddressWaited, `good key from the flooded address: ${sameAddress.join(',')}`).toBeGreaterThanOrEqual(Math.ceil(sameAddress.length / 3))
    expect(floodIps).toEqual([FLOODER])
    expect(neighbourEntries).toBeGreaterThanOrEqual(served.length)
    expect(neighbourIps.filter((ip) => ip !== NEIGHBOUR && ip !== FLOODER), "B's audit entries name only the forwarded addresses").toEqual([])
  }, 60_000)

  it("isolation.expired-key-streams: a key of A that expires ends its streams on all four doors within 1 s of its expiry; nothing after", async () => {
    const rec = recordFault('isolation.expired-key-streams', {
      fault: `a key of tenant A (functions:read) whose expiry is ${EXPIRING_KEY_LIFETIME_MS / 1000} s after its record was written (into the data directory before the start), subscribed on /ws, graphql-ws, SSE and gRPC StreamExecutions since the start, while A executes every 50 ms through the expiry and 2 s after (15 times after it at least)`,
      expectation: "each stream ends within 1 s of the key's expiry with its door's code and details.credential expired; no event arrives after its end; each end audited with result expired",
    })
    const log: Array<{ id: string; sentAt: number }> = []
    // through the expiry, then 2 s and at least 15 executions more (15 s at most)
    const enoughAfter = (): boolean => log.filter((e) => epochOf(e.sentAt) > expiring.expiresAt).length >= 15
    const executing = executeUntil(() => Date.now() > expiring.expiresAt + 2000 && (enoughAfter() || Date.now() > expiring.expiresAt + 15_000), 50, log)
    const open = await awaitEnded(expiringStreams, Math.max(0, expiring.expiresAt - Date.now()) + 5000)
    await executing
    await sleep(300)

    expect(open, 'doors still open 5 s after the expiry').toEqual([])
    const ends = Object.fromEntries(expiringStreams.map((s) => [s.door, s.end!]))
    expect(ends.ws).toMatchObject({ code: 4401, svcCode: 1003, reason: '1003 PERMISSION_DENIED: API key expired' })
    expect(ends['graphql-ws']).toMatchObject({ code: 4403, svcCode: 1003, reason: '1003 PERMISSION_DENIED: API key expired' })
    expect(ends.sse).toMatchObject({ code: 'complete', svcCode: 1003, details: { credential: 'expired', key_id: expiring.keyId } })
    expect(ends.grpc).toMatchObject({ code: 'UNAUTHENTICATED', svcCode: 1003, details: { credential: 'expired', key_id: expiring.keyId } })
    const afterExpiryMs = Object.fromEntries(expiringStreams.map((s) => [s.door, Math.round(epochOf(s.end!.at) - expiring.expiresAt)]))
    const afterEnd = Object.fromEntries(expiringStreams.map((s) => [s.door, s.events.filter((e) => e.at > s.end!.at).length]))
    const executedAfter = new Set(log.filter((e) => epochOf(e.sentAt) > expiring.expiresAt).map((e) => e.id))
    const leaked = Object.fromEntries(expiringStreams.map((s) => [s.door, s.events.filter((e) => executedAfter.has(e.executionId)).length]))
    const ended = await auditedEnds(expiring.keyId, 'expired')

    rec.figures({
      ...Object.fromEntries(Object.entries(afterExpiryMs).map(([door, ms]) => [`close_ms_after_expiry_${door}`, ms])),
      events_before_expiry: expiringStreams.reduce((n, s) => n + s.events.length, 0),
      events_after_close: Object.values(afterEnd).reduce((a, b) => a + b, 0),
      executions_after_expiry: executedAfter.size,
      events_of_those: Object.values(leaked).reduce((a, b) => a + b, 0),
      audited_ends: ended.length,
    })
    rec.summary(`closed ${Object.entries(afterExpiryMs).map(([d, ms]) => `${d} ${ms} ms`).join(', ')} after the expiry; ${executedAfter.size} executions after it: 0 events delivered`)

    // the close comes after the expiry, and within 1 s of it (a stream ended early would be a bug too)
    for (const [door, ms] of Object.entries(afterExpiryMs)) {
      expect(ms, `${door}: ms from the expiry to the close`).toBeGreaterThanOrEqual(-50)
      expect(ms, `${door}: ms from the expiry to the close`).toBeLessThanOrEqual(1000)
    }
    expect(afterEnd).toEqual({ ws: 0, 'graphql-ws': 0, sse: 0, grpc: 0 })
    expect(leaked).toEqual({ ws: 0, 'graphql-ws': 0, sse: 0, grpc: 0 })
    expect(executedAfter.size).toBeGreaterThan(10)
    expect(ended).toEqual(['events.end', 'graphql.end', 'graphql.end', 'rufid.stream_executions'])
  }, 120_000)
})
