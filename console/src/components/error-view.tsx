import { ApiError } from '../api'

/** A refusal of the node as the operator needs it: code, name, message and details. */
export function ErrorView({ error, title = 'The node refused the request' }: { error: unknown; title?: string }) {
  if (!(error instanceof ApiError)) {
    return <div class="error" role="alert"><p><strong>{title}</strong>: {String((error as Error)?.message ?? error)}</p></div>
  }
  const problems = Array.isArray(error.details.problems) ? (error.details.problems as Array<{ pointer?: string; message?: string }>) : []
  const rest = Object.fromEntries(Object.entries(error.details).filter(([k]) => k !== 'problems' && k !== 'logs'))
  return (
    <div class="error" role="alert">
      <p>
        <strong>{title}</strong>
        {error.code !== null ? <> — <span class="code-badge">{error.code}</span> <span class="error-name">{error.errorName}</span></> : null}
        {error.status ? <span class="muted"> (HTTP {error.status})</span> : null}
      </p>
      <p class="error-message">{error.message}</p>
      {problems.length > 0 && (
        <ul class="problems">
          {problems.map((p, i) => <li key={i}><code>{p.pointer || '/'}</code> {p.message}</li>)}
        </ul>
      )}
      {Object.keys(rest).length > 0 && (
        <details>
          <summary>Details</summary>
          <pre class="json">{JSON.stringify(rest, null, 2)}</pre>
        </details>
      )}
    </div>
  )
}
