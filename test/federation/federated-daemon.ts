// Federated svc-node daemons as real processes: a federation CA on disk, a data directory, PeerId and
// certificate per node, a config file, and the daemon's REST door and libp2p address once it listens.
// Needs the compiled daemon (`npm run build`).
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createFederationCa, issueNodeCertificate, writeCa, writeNodeCertificate, type CertificateAuthority } from '../../src/federation/certificates.js'
import { loadOrCreatePeerIdentity } from '../../src/federation/identity.js'
import { startDaemonProcess, type DaemonProcess } from '../fixtures/daemon-process.js'

export interface FederatedDaemon {
  name: string
  dataDir: string
  configFile: string
  peerId: string
  proc?: DaemonProcess
  /** libp2p multiaddrs with /p2p/<peerId> */
  p2p: string[]
  /** the administrator key the node printed at its first start (standard auth), for REST calls */
  adminKey?: string
}

export interface FederationOnDisk {
  ca: CertificateAuthority
  caFile: string
  root: string
}

export async function federationOnDisk(root: string, name = 'svc test federation'): Promise<FederationOnDisk> {
  const ca = createFederationCa({ name })
  const { certFile } = await writeCa(join(root, 'ca'), ca)
  return { ca, caFile: certFile, root }
}

/** A node's data directory with its PeerId and a certificate from the federation CA. */
export async function prepareDaemon(fed: FederationOnDisk, name: string): Promise<FederatedDaemon> {
  const dataDir = join(fed.root, name)
  mkdirSync(dataDir, { recursive: true })
  const { peerId } = await loadOrCreatePeerIdentity(dataDir)
  await writeNodeCertificate(join(dataDir, 'cert'), issueNodeCertificate(fed.ca, peerId), fed.ca.certPem)
  return { name, dataDir, configFile: join(fed.root, `${name}.json`), peerId, p2p: [] }
}

/**
 * Starts (or restarts) `node` with `bootstrap` and the given `federation:` settings over the defaults
 * of a test federation (loopback, port 0, the CA and the node's certificate).
 */
export async function startFederatedDaemon(
  fed: FederationOnDisk,
  node: FederatedDaemon,
  bootstrap: string[],
  federation: Record<string, unknown> = {},
  env: Record<string, string> = {},
): Promise<DaemonProcess> {
  writeFileSync(node.configFile, JSON.stringify({
    federation: {
      enabled: true,
      listen: ['/ip4/127.0.0.1/tcp/0'],
      bootstrap,
      ca_file: fed.caFile,
      cert_file: join(node.dataDir, 'cert', 'node.crt'),
      sync_interval_ms: 500,
      ...federation,
    },
  }))
  node.proc = await startDaemonProcess({ dataDir: node.dataDir, env: { SVC_CONFIG: node.configFile, SVC_SANDBOX_WORKERS: '1', ...env } })
  const output = node.proc.output()
  const line = output.split('\n').find((l) => l.includes('svc-node listening'))!
  node.p2p = (JSON.parse(line) as { p2p: string[] }).p2p.map((a) => (a.includes('/p2p/') ? a : `${a}/p2p/${node.peerId}`))
  node.adminKey ??= /ADMIN_API_KEY=(\S+)/.exec(output)?.[1]
  return node.proc
}

/**
 * A JSON call to a daemon's REST door: with the node's administrator key when it has one
 * (standard auth), else in local mode with the tenant in X-Svc-Namespace.
 */
export async function rest(node: FederatedDaemon, method: string, path: string, body?: unknown, tenant = 'acme'): Promise<{ status: number; body: Record<string, unknown>; text: string }> {
  const res = await fetch(`${node.proc!.url}${path}`, {
    method,
    headers: { ...(node.adminKey ? { authorization: `Bearer ${node.adminKey}` } : { 'x-svc-namespace': tenant }), 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await res.text()
  let parsed: Record<string, unknown> = {}
  try {
    parsed = text ? JSON.parse(text) as Record<string, unknown> : {}
  } catch {
    // /metrics is text
  }
  return { status: res.status, body: parsed, text }
}

export const digestOf = async (node: FederatedDaemon): Promise<string> => (await rest(node, 'GET', '/api/v1/federation/catalog/digest')).body.digest as string

/** The daemon's JSON log lines (pino) so far. */
export function logLines(node: FederatedDaemon): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = []
  for (const line of node.proc!.output().split('\n')) {
    if (!line.startsWith('{')) continue
    try {
      out.push(JSON.parse(line) as Record<string, unknown>)
    } catch {
      // a partial line
    }
  }
  return out
}
