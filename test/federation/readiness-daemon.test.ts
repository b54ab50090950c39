// A federated daemon's doors say when it serves as a caught-up member (issue 17): /readyz answers 503
// `starting`, /api/v1/node/info `starting` and gRPC health NOT_SERVING (asked with grpcurl) until
// its first sync round pulled everything a member had, or `federation.ready_timeout_ms` when no
// member answers; a load balancer that waits for /readyz sends nothing to a node with a stale
// catalog. Real daemon processes on loopback (needs `npm run build`).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { removeDir, tempDataDir } from '../fixtures/daemon-process.js'
import { grpcurl } from '../fixtures/grpcurl.js'
import { digestOf, federationOnDisk, logLines, prepareDaemon, rest as call, startFederatedDaemon, type FederatedDaemon, type FederationOnDisk } from './federated-daemon.js'
import { newIdentity, waitFor } from './fixtures.js'

const health = async (node: FederatedDaemon): Promise<string> => {
  const r = await grpcurl(['-plaintext', node.proc!.grpcAddress!, 'grpc.health.v1.Health/Check'])
  expect(r.code, r.stderr).toBe(0)
  return (JSON.parse(r.stdout) as { status: string }).status
}

describe('a federated daemon\'s readiness, as its doors tell it', () => {
  let fed: FederationOnDisk
  let root: string
  const nodes: FederatedDaemon[] = []

  beforeAll(async () => {
    root = tempDataDir()
    fed = await federationOnDisk(root, 'readiness test CA')
  })
  afterAll(async () => {
    await Promise.allSettled(nodes.map((n) => n.proc?.stop()))
    removeDir(root)
  })

  it('with no member to reach: starting on REST and NOT_SERVING on gRPC, then ready after federation.ready_timeout_ms', async () => {
    const lone = await prepareDaemon(fed, 'lone')
    nodes.push(lone)
    // nothing listens on port 1: the bootstrap peer is never reached
    const nobody = `/ip4/127.0.0.1/tcp/1/p2p/${(await newIdentity()).peerId}`
    const TIMEOUT_MS = 8_000
    await startFederatedDaemon(fed, lone, [nobody], { ready_timeout_ms: TIMEOUT_MS })
    // the timeout runs from the federation's start (logged just before the node listens; a loaded
    // machine can take seconds to get there from the process start)
    const federationStarted = logLines(lone).find((l) => l.msg === 'federation started')!.time as number
    const ready = await call(lone, 'GET', '/readyz')
    expect(Date.now() - federationStarted).toBeLessThan(TIMEOUT_MS) // still within the timeout (else the premise fails)
    expect([ready.status, ready.body]).toEqual([503, { status: 'starting' }])
    expect((await call(lone, 'GET', '/api/v1/node/info')).body).toMatchObject({ status: 'starting', ready: false })
    expect(await health(lone)).toBe('NOT_SERVING')
    await waitFor(async () => (await call(lone, 'GET', '/readyz')).status === 200, TIMEOUT_MS + 15_000, 100)
    expect(Date.now() - federationStarted).toBeGreaterThanOrEqual(TIMEOUT_MS - 100)
    expect(await health(lone)).toBe('SERVING')
    expect((await call(lone, 'GET', '/api/v1/node/info')).body).toMatchObject({ status: 'ready', ready: true })
  }, 60_000)

  it('a node joining a member is ready once it holds the member\'s catalog', async () => {
    const a = await prepareDaemon(fed, 'first')
    nodes.push(a)
    await startFederatedDaemon(fed, a, [])
    // the federation's first node has nothing to wait for
    expect((await call(a, 'GET', '/readyz')).status).toBe(200)
    for (let i = 0; i < 12; i++) {
      const created = await call(a, 'POST', '/api/v1/functions/create', {
        function_name: `ready_${i}`, signature: '(a)', language: 'javascript', source_code: `function ready_${i}(a) {\n  return a + ${i}\n}\n`,
      })
      expect(created.status).toBe(201)
    }
    const expected = await digestOf(a)
    const b = await prepareDaemon(fed, 'joiner')
    nodes.push(b)
    await startFederatedDaemon(fed, b, a.p2p.slice(0, 1), { sync_interval_ms: 0 }, { SVC_SANDBOX_WORKERS: '3' })
    // polled as a load balancer would: at the first 200 the node holds everything the member had
    await waitFor(async () => (await call(b, 'GET', '/readyz')).status === 200, 20_000, 25)
    expect(await digestOf(b)).toBe(expected)
    expect(await health(b)).toBe('SERVING')
    // each declares the capabilities of its configuration (service-spec §2.7): one call per sandbox worker
    const listed = (await call(a, 'GET', '/api/v1/federation/nodes')).body.nodes as Array<{ node_id: string; capabilities: unknown }>
    expect(listed.find((n) => n.node_id === b.peerId)?.capabilities).toEqual({ languages: ['javascript', 'typescript', 'python'], max_concurrent: 3, protocols: ['rest', 'grpc', 'graphql'] })
    expect(listed.find((n) => n.node_id === a.peerId)?.capabilities).toMatchObject({ max_concurrent: 1 })
  }, 60_000)
})
