// The console's Federation page on a real 3-node cluster (daemon processes, local mode as
// scripts/cluster.sh runs them): three members with their certificates and equal catalog digests.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFederationCa, issueNodeCertificate, writeCa, writeNodeCertificate } from '../../src/federation/certificates.js'
import { loadOrCreatePeerIdentity } from '../../src/federation/identity.js'
import { removeDir, startDaemonProcess, tempDataDir, type DaemonProcess } from '../fixtures/daemon-process.js'
import { waitFor } from '../federation/fixtures.js'
import { horizontalOverflow, launchBrowser, PageWatch, screenshot, seriousViolations, type TestBrowser } from './browser.js'

interface Member { node_id: string; self: boolean; connected: boolean; certificate: { subject: string; expires_at: string } | null; catalog: { digest: string } | null }

describe('the Federation page of a 3-node cluster', () => {
  let root: string
  const nodes: Array<{ peerId: string; proc: DaemonProcess; p2p: string }> = []
  let browser: TestBrowser
  let short: string

  const get = async <T>(node: number, path: string): Promise<T> => (await (await fetch(`${nodes[node]!.proc.url}${path}`)).json()) as T

  beforeAll(async () => {
    root = tempDataDir()
    const ca = createFederationCa({ name: 'console test CA' })
    await writeCa(join(root, 'ca'), ca)
    for (let i = 1; i <= 3; i++) {
      const dataDir = join(root, `node${i}`)
      mkdirSync(dataDir, { recursive: true })
      const { peerId } = await loadOrCreatePeerIdentity(dataDir)
      await writeNodeCertificate(join(dataDir, 'cert'), issueNodeCertificate(ca, peerId), ca.certPem)
      const configFile = join(root, `node${i}.json`)
      writeFileSync(configFile, JSON.stringify({
        federation: {
          enabled: true, listen: ['/ip4/127.0.0.1/tcp/0'], bootstrap: nodes.map((n) => n.p2p),
          ca_file: join(root, 'ca', 'ca.crt'), cert_file: join(dataDir, 'cert', 'node.crt'), sync_interval_ms: 500,
        },
      }))
      const proc = await startDaemonProcess({ dataDir, env: { SVC_CONFIG: configFile, SVC_SANDBOX_WORKERS: '1' }, startTimeoutMs: 60_000 })
      const line = proc.output().split('\n').find((l) => l.includes('svc-node listening'))!
      const addr = (JSON.parse(line) as { p2p: string[] }).p2p[0]!
      nodes.push({ peerId, proc, p2p: addr.includes('/p2p/') ? addr : `${addr}/p2p/${peerId}` })
    }
    await waitFor(async () => (await Promise.all([0, 1, 2].map((i) => get<{ nodes: unknown[] }>(i, '/api/v1/federation/nodes')))).every((l) => l.nodes.length === 3), 30_000, 250)
    const created = await fetch(`${nodes[0]!.proc.url}/api/v1/functions/create`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ function_name: 'inc', signature: '(a)', language: 'javascript', source_code: 'function inc(a) { return a + 1 }' }),
    })
    short = ((await created.json()) as { rufid_short: string }).rufid_short
    await waitFor(async () => new Set(await Promise.all([0, 1, 2].map(async (i) => (await get<{ digest: string }>(i, '/api/v1/federation/catalog/digest')).digest))).size === 1, 30_000, 250)
    browser = await launchBrowser()
  }, 240_000)

  afterAll(async () => {
    await browser?.close()
    await Promise.all(nodes.map((n) => n.proc.stop()))
    if (root) removeDir(root)
  })

  it('GET /api/v1/federation/members: three members, certificates, the same digest everywhere', async () => {
    const answer = await get<{ node_id: string; digest: string; converged: boolean; members: Member[] }>(1, '/api/v1/federation/members')
    expect(answer.node_id).toBe(nodes[1]!.peerId)
    expect(answer.converged).toBe(true)
    expect(answer.members.map((m) => m.node_id).sort()).toEqual(nodes.map((n) => n.peerId).sort())
    expect(answer.members[0]!.self).toBe(true)
    for (const m of answer.members) {
      expect(m.connected).toBe(true)
      expect(m.catalog?.digest).toBe(answer.digest)
      expect(Date.parse(m.certificate!.expires_at)).toBeGreaterThan(Date.now())
    }
  })

  it('the console (local mode: no sign-in, a warning banner) shows three members with equal digests, and discovers a RUFID', async () => {
    const { page } = browser
    const watch = new PageWatch(page)
    await page.goto(`${nodes[1]!.proc.url}/console/#/federation`)
    await page.getByText('Local mode: this node runs with AUTH_PROVIDER=none').waitFor()
    expect(await page.locator('#token').count()).toBe(0)
    await page.locator('#federation-summary').waitFor()
    expect(await page.locator('#federation-summary').textContent()).toContain("3 nodes known, 3 connected · every connected member has this node's catalog digest")
    const rows = page.locator('tr.member')
    expect(await rows.count()).toBe(3)
    for (const n of nodes) expect(await page.locator('tr.member', { hasText: n.peerId }).count()).toBe(1)
    expect(await page.locator('tr.member .status-badge', { hasText: 'same' }).count()).toBe(2)
    expect(await page.locator('tr.member .status-badge', { hasText: 'differs' }).count()).toBe(0)
    const digests = new Set(await page.locator('tr.member code.digest').allTextContents())
    expect(digests.size).toBe(1)
    expect(await rows.first().textContent()).toContain('expires')

    await page.fill('#discover-rufid', short)
    await page.getByRole('button', { name: 'Discover' }).click()
    await page.locator('.result', { hasText: 'inc' }).waitFor()
    expect(await page.locator('.result').textContent()).toContain(nodes[0]!.peerId)

    expect(await seriousViolations(page)).toEqual([])
    expect(await horizontalOverflow(page)).toBe(0)
    await screenshot(page, 'laptop-federation-cluster')
    await page.setViewportSize({ width: 390, height: 844 })
    expect(await horizontalOverflow(page)).toBe(0)
    await screenshot(page, 'phone-federation-cluster')
    expect(watch.problems).toEqual([])
    expect(watch.dialogs).toEqual([])
  })
})
