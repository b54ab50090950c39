// The hostile-tenant group's shared fixture: a default node (standard auth, default config unless a
// case overrides it) with two tenants, each holding an administrator key of its own. Tenant A
// (`acme`) is the hostile one; tenant B (`globex`) is the one that must not notice. Real daemon
// process, real sockets; every case records its figures with recordFault under an `isolation.` id
// (RELIABILITY.md's "Hostile tenant" section).
import { call, removeDir, startDaemonProcess, tempDataDir, type DaemonProcess, type JsonResponse } from '../../fixtures/daemon-process.js'
import { mintAdminKeyOffline } from '../fault-fixtures.js'

export const TENANT_A = 'acme'
export const TENANT_B = 'globex'

export interface TwoTenantNode {
  daemon: DaemonProcess
  url: string
  keyA: string
  keyB: string
  /** a request as tenant A (headers may add X-Svc-Namespace, …) */
  asA<T = Record<string, unknown>>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<JsonResponse<T>>
  /** a request as tenant B */
  asB<T = Record<string, unknown>>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<JsonResponse<T>>
  /** creates a function as tenant A or B and returns its short RUFID (fails the test on anything but 200/201) */
  create(as: 'A' | 'B', fn: Record<string, unknown>): Promise<string>
  stop(): Promise<void>
}

export interface TwoTenantOptions {
  /** environment of the daemon (merged over standard auth and one sandbox worker) */
  env?: Record<string, string>
  /** a data directory to use (else a temporary one, removed by stop) */
  dataDir?: string
}

/** Starts a standard-auth node whose data directory holds an admin key for each of the two tenants. */
export async function startTwoTenantNode(options: TwoTenantOptions = {}): Promise<TwoTenantNode> {
  const dataDir = options.dataDir ?? tempDataDir()
  const keyA = await mintAdminKeyOffline(dataDir, TENANT_A)
  const keyB = await mintAdminKeyOffline(dataDir, TENANT_B)
  const daemon = await startDaemonProcess({
    dataDir,
    env: { AUTH_PROVIDER: 'standard', LOG_FORMAT: 'json', ...options.env },
    startTimeoutMs: 60_000,
  })
  const as = (key: string) => <T = Record<string, unknown>>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    call<T>(`${daemon.url}${path}`, method, body, { authorization: `Bearer ${key}`, ...headers })
  const asA = as(keyA)
  const asB = as(keyB)
  return {
    daemon,
    url: daemon.url,
    keyA,
    keyB,
    asA,
    asB,
    async create(who, fn) {
      const r = await (who === 'A' ? asA : asB)('POST', '/api/v1/functions/create', fn)
      if (r.status !== 200 && r.status !== 201) throw new Error(`create as ${who} answered ${r.status}: ${JSON.stringify(r.body)}`)
      return (r.body as Record<string, unknown>).rufid_short as string
    },
    async stop() {
      await daemon.stop('SIGKILL')
      if (options.dataDir === undefined) removeDir(dataDir)
    },
  }
}

/** Percentile (nearest rank) of a list of numbers; NaN for an empty list. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((x, y) => x - y)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}
