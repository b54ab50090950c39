import { useEffect, useState } from 'preact/hooks'
import { api, type NodeInfo } from '../api'
import { ErrorView } from '../components/error-view'
import { formatTime, Loading, PageTitle } from '../components/misc'
import type { FederationMembers as MembersAnswer } from '../../../src/client/types.js'

interface Conflict { kind?: string; key: string; tenant_id: string; function_name: string; version?: number; branch?: string; winner: { rufid_short?: string; move_id?: string }; losers: Array<{ rufid_short?: string; move_id?: string }>; detected_at: string }
interface Discovery { rufid: string; rufid_short: string; content_digest: string | null; function_name: string | null; versions: string[]; nodes: Array<{ node_id: string; endpoint: string; source: string }> }

const short = (digest: string): string => digest.slice(0, 16)

/** Members with certificates and catalog digests beside this node's, conflicts, and discovery. */
export function FederationPage({ node }: { node: NodeInfo }) {
  const [members, setMembers] = useState<MembersAnswer | undefined>()
  const [conflicts, setConflicts] = useState<Conflict[] | undefined>()
  const [error, setError] = useState<unknown>()
  const [refreshed, setRefreshed] = useState(0)
  const [rufid, setRufid] = useState('')
  const [discovery, setDiscovery] = useState<Discovery | undefined>()
  const [discoveryError, setDiscoveryError] = useState<unknown>()

  useEffect(() => {
    if (!node.federation.enabled) return
    let live = true
    setError(undefined)
    Promise.all([
      api<MembersAnswer>('GET', '/api/v1/federation/members'),
      api<{ items: Conflict[] }>('GET', '/api/v1/federation/conflicts'),
    ]).then(([m, c]) => {
      if (!live) return
      setMembers(m)
      setConflicts(c.items)
    }, (err: unknown) => live && setError(err))
    return () => {
      live = false
    }
  }, [node.federation.enabled, refreshed])

  const discover = async (e: Event): Promise<void> => {
    e.preventDefault()
    setDiscovery(undefined)
    setDiscoveryError(undefined)
    try {
      setDiscovery(await api<Discovery>('GET', `/api/v1/federation/discover/${encodeURIComponent(rufid.trim())}`))
    } catch (err) {
      setDiscoveryError(err)
    }
  }

  if (!node.federation.enabled) {
    return (
      <section aria-labelledby="page-title">
        <PageTitle>Federation</PageTitle>
        <p>This node runs alone: it is not a federation member (<code>federation.enabled</code> is false in its configuration).</p>
        <p class="muted">See the README's Federation section to join nodes with certificates from a federation CA.</p>
      </section>
    )
  }
  return (
    <section aria-labelledby="page-title">
      <PageTitle>Federation</PageTitle>
      <p class="actions"><button type="button" class="button" onClick={() => setRefreshed((n) => n + 1)}>Refresh</button></p>
      {error !== undefined && <ErrorView error={error} />}
      {members === undefined && error === undefined && <Loading what="the members" />}
      {members && (
        <>
          <p role="status" class={members.converged ? 'ok' : 'warning'} id="federation-summary">
            {members.members.length} nodes known, {members.members.filter((m) => m.connected).length} connected ·{' '}
            {members.converged ? 'every connected member has this node\'s catalog digest' : 'catalog digests differ: replication has not converged (yet)'}
          </p>
          <div class="table-wrap">
            <table class="members">
              <caption class="visually-hidden">Federation members</caption>
              <thead>
                <tr><th scope="col">Node (PeerId)</th><th scope="col">Endpoint</th><th scope="col">Certificate</th><th scope="col">Last seen</th><th scope="col">Catalog digest</th></tr>
              </thead>
              <tbody>
                {members.members.map((m) => (
                  <tr key={m.node_id} class="member">
                    <td><code class="peer-id">{m.node_id}</code>{m.self && <span class="status-badge">this node</span>}{!m.connected && <span class="status-badge status-error">not connected</span>}</td>
                    <td>{m.endpoint}</td>
                    <td>{m.certificate ? <>{m.certificate.subject}<br /><span class="muted">expires {formatTime(m.certificate.expires_at)}</span></> : '—'}</td>
                    <td>{formatTime(m.last_seen_at)}</td>
                    <td>
                      {m.catalog ? (
                        <>
                          <code class="digest">{short(m.catalog.digest)}…</code>{' '}
                          <span class={`status-badge ${m.catalog.digest === members.digest ? 'status-success' : 'status-error'}`}>
                            {m.self ? 'this node' : m.catalog.digest === members.digest ? 'same' : 'differs'}
                          </span>
                          <br /><span class="muted">{m.catalog.entries} entries, {m.catalog.branch_moves} branch moves</span>
                        </>
                      ) : <span class="muted">{m.error ?? 'unknown'}</span>}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}

      <h2>Conflicts</h2>
      {conflicts === undefined ? null : conflicts.length === 0 ? <p class="muted">No conflict recorded.</p> : (
        <div class="table-wrap">
          <table>
            <thead><tr><th scope="col">Detected</th><th scope="col">Function</th><th scope="col">What</th><th scope="col">Winner</th><th scope="col">Losers</th></tr></thead>
            <tbody>
              {conflicts.map((c) => (
                <tr key={c.key}>
                  <td>{formatTime(c.detected_at)}</td>
                  <td>{c.tenant_id} / {c.function_name}</td>
                  <td>{c.kind === 'branch' ? `branch ${c.branch}` : `version v${c.version}`}</td>
                  <td><code>{c.winner.rufid_short ?? c.winner.move_id}</code></td>
                  <td>{c.losers.map((l) => l.rufid_short ?? l.move_id).join(', ')}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}

      <h2>Discover a RUFID</h2>
      <form class="form inline-form" onSubmit={(e) => void discover(e)}>
        <label for="discover-rufid">RUFID</label>
        <div class="inline">
          <input id="discover-rufid" required spellcheck={false} value={rufid} onInput={(e) => setRufid((e.target as HTMLInputElement).value)} placeholder="short or full RUFID" />
          <button type="submit" class="button">Discover</button>
        </div>
      </form>
      {discoveryError !== undefined && <ErrorView error={discoveryError} title="Discovery failed" />}
      {discovery && (
        <div class="result" role="status">
          <p>{discovery.function_name ?? 'unknown function'} · versions {discovery.versions.join(', ') || 'none'} · digest <code class="digest">{discovery.content_digest ?? '—'}</code></p>
          {discovery.nodes.length === 0 ? <p>No node provides its code.</p> : (
            <ul>{discovery.nodes.map((n) => <li key={`${n.node_id}${n.source}`}><code class="peer-id">{n.node_id}</code> {n.endpoint} <span class="muted">({n.source})</span></li>)}</ul>
          )}
        </div>
      )}
    </section>
  )
}
