import { useEffect, useState } from 'preact/hooks'
import { api, ApiError, type Identity, type NodeInfo } from '../api'
import { formatBytes, formatDuration, formatTime, PageTitle } from '../components/misc'

/** Prometheus text → metric name → summed value (labels folded), and per-label rows for a few. */
function parseMetrics(text: string): { sum: Map<string, number>; byLabel: Map<string, Array<[string, number]>> } {
  const sum = new Map<string, number>()
  const byLabel = new Map<string, Array<[string, number]>>()
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line)
    if (!m) continue
    const value = Number(m[3])
    if (!Number.isFinite(value)) continue
    sum.set(m[1]!, (sum.get(m[1]!) ?? 0) + value)
    if (m[2]) byLabel.set(m[1]!, [...(byLabel.get(m[1]!) ?? []), [m[2], value]])
  }
  return { sum, byLabel }
}

const statusOf = (labels: string): string => /status="([^"]*)"/.exec(labels)?.[1] ?? '?'

/** Version, uptime, readiness, sandbox, federation, and key metrics from /metrics. */
export function NodePage({ node: initial, identity }: { node: NodeInfo; identity: Identity }) {
  const [node, setNode] = useState(initial)
  const [metrics, setMetrics] = useState<ReturnType<typeof parseMetrics> | undefined>()
  const [metricsNote, setMetricsNote] = useState<string | undefined>()
  const [tick, setTick] = useState(0)
  useEffect(() => {
    const timer = window.setInterval(() => setTick((t) => t + 1), 10_000)
    return () => clearInterval(timer)
  }, [])
  useEffect(() => {
    let live = true
    api<NodeInfo>('GET', '/api/v1/node/info').then((n) => live && setNode(n), () => undefined)
    api<string>('GET', '/metrics', undefined, { text: true }).then(
      (t) => live && setMetrics(parseMetrics(t)),
      (err: ApiError) => live && setMetricsNote(err.status === 404 ? 'The node does not serve /metrics (server.metrics_access: disabled).' : `Metrics are not readable with this key: ${err.message}`),
    )
    return () => {
      live = false
    }
  }, [tick])
  const executions = metrics?.byLabel.get('svc_function_executions_total') ?? []
  const byStatus = new Map<string, number>()
  for (const [labels, v] of executions) byStatus.set(statusOf(labels), (byStatus.get(statusOf(labels)) ?? 0) + v)
  const value = (name: string): number | undefined => metrics?.sum.get(name)
  return (
    <section aria-labelledby="page-title">
      <PageTitle>Node</PageTitle>
      <p class="actions"><button type="button" class="button" onClick={() => setTick((t) => t + 1)}>Refresh</button></p>
      <dl class="facts">
        <dt>Version</dt><dd>svc-node {node.version}</dd>
        <dt>Status</dt><dd><span class={`status-badge ${node.ready ? 'status-success' : 'status-error'}`}>{node.status}</span></dd>
        <dt>Started</dt><dd>{formatTime(node.started_at)}</dd>
        <dt>Uptime</dt><dd>{formatDuration(node.uptime_s)}</dd>
        <dt>Authentication</dt><dd>{node.auth_mode === 'none' ? 'none (local mode: every caller is trusted)' : node.auth_mode}</dd>
        <dt>Sandbox workers</dt><dd>{node.sandbox.workers ?? '—'}</dd>
        <dt>Federation</dt><dd>{node.federation.enabled ? 'member of a federation' : 'off (a single node)'}</dd>
        <dt>Signed in as</dt><dd>{identity.user} · tenant <strong>{identity.tenant_id}</strong> · {identity.permissions.join(', ')}</dd>
      </dl>
      <h2>Key metrics</h2>
      {metricsNote && <p class="muted">{metricsNote}</p>}
      {metrics && (
        <dl class="facts metrics">
          <dt>Executions</dt>
          <dd>{value('svc_function_executions_total') ?? 0}{byStatus.size > 0 && ` (${[...byStatus].map(([s, n]) => `${s} ${n}`).join(', ')})`}</dd>
          <dt>Function versions created</dt><dd>{value('svc_rufid_creations_total') ?? 0}</dd>
          <dt>Resolutions</dt><dd>{value('svc_rufid_resolutions_total') ?? 0}</dd>
          <dt>Resolution cache hit ratio</dt><dd>{((value('svc_rufid_cache_hits_ratio') ?? 0) * 100).toFixed(1)} %</dd>
          <dt>Requests answered with an error</dt><dd>{value('svc_protocol_errors_total') ?? 0}</dd>
          <dt>Federation members connected</dt><dd>{value('svc_federation_nodes_active') ?? 0}</dd>
          <dt>Resident memory</dt><dd>{formatBytes(value('process_resident_memory_bytes'))}</dd>
          <dt>Event loop lag (p99)</dt><dd>{((value('nodejs_eventloop_lag_p99_seconds') ?? 0) * 1000).toFixed(1)} ms</dd>
        </dl>
      )}
    </section>
  )
}
