import { useEffect, useState } from 'preact/hooks'
import { api, queryOf } from '../api'
import { ErrorView } from '../components/error-view'
import { formatTime, Loading, PageTitle } from '../components/misc'

interface Entry { id: string; timestamp: string; operation: string; rufid: string | null; user: string | null; tenant: string | null; ip: string; result: string; duration_ms: number; code?: number; count?: number }
interface Filters { from: string; to: string; tenant: string; operation: string; rufid: string; limit: string }

/** `datetime-local` value of a moment (local time, minutes) */
const localInput = (ms: number): string => {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000)
  return d.toISOString().slice(0, 16)
}
/** the last hour by default: entries come oldest first, so an unbounded first page would be months old */
const defaults = (): Filters => ({ from: localInput(Date.now() - 3_600_000), to: '', tenant: '', operation: '', rufid: '', limit: '50' })
/** `datetime-local` (local time) → ISO 8601 */
const iso = (local: string): string => (local ? new Date(local).toISOString() : '')

/** The audit log with filters and cursor paging (admins read their tenant, operators every tenant). */
export function AuditPage() {
  const [form, setForm] = useState<Filters>(defaults)
  const [applied, setApplied] = useState<Filters>(form)
  const [cursors, setCursors] = useState<string[]>([])
  const [page, setPage] = useState<{ items: Entry[]; next_cursor: string | null } | undefined>()
  const [error, setError] = useState<unknown>()
  const cursor = cursors[cursors.length - 1]

  useEffect(() => {
    let live = true
    setError(undefined)
    setPage(undefined)
    const q = queryOf({ from: iso(applied.from), to: iso(applied.to), tenant: applied.tenant, operation: applied.operation, rufid: applied.rufid, limit: applied.limit, cursor })
    api<{ items: Entry[]; next_cursor: string | null }>('GET', `/api/v1/audit${q}`).then((p) => live && setPage(p), (err: unknown) => live && setError(err))
    return () => {
      live = false
    }
  }, [applied, cursor])

  const field = (key: keyof Filters, label: string, type: 'text' | 'datetime-local' = 'text') => (
    <div class="field">
      <label for={`audit-${key}`}>{label}</label>
      <input id={`audit-${key}`} type={type as 'text'} value={form[key]} onInput={(e) => setForm({ ...form, [key]: (e.target as HTMLInputElement).value })} />
    </div>
  )

  return (
    <section aria-labelledby="page-title">
      <PageTitle>Audit log</PageTitle>
      <p class="muted">Oldest first within the filters; every operation, refusals included.</p>
      <form class="filters" onSubmit={(e) => { e.preventDefault(); setCursors([]); setApplied(form) }} aria-label="Filter the audit log">
        {field('from', 'From', 'datetime-local')}
        {field('to', 'To', 'datetime-local')}
        {field('tenant', 'Tenant')}
        {field('operation', 'Operation')}
        {field('rufid', 'RUFID')}
        <div class="field">
          <label for="audit-limit">Per page</label>
          <select id="audit-limit" value={form.limit} onChange={(e) => setForm({ ...form, limit: (e.target as HTMLSelectElement).value })}>
            <option>20</option><option>50</option><option>100</option><option>500</option>
          </select>
        </div>
        <div class="field buttons">
          <button type="submit" class="button primary">Apply</button>
          <button type="button" class="button" onClick={() => { const d = defaults(); setForm(d); setCursors([]); setApplied(d) }}>Reset</button>
        </div>
      </form>
      {error !== undefined && <ErrorView error={error} title="The audit log could not be read" />}
      {page === undefined && error === undefined && <Loading what="audit entries" />}
      {page && (
        <>
          <p role="status" class="muted">{page.items.length} entries on this page{cursors.length ? ` (page ${cursors.length + 1})` : ''}</p>
          <div class="table-wrap">
            <table class="audit">
              <thead>
                <tr><th scope="col">Time</th><th scope="col">Operation</th><th scope="col">Result</th><th scope="col">User</th><th scope="col">Tenant</th><th scope="col">RUFID</th><th scope="col">IP</th><th scope="col">ms</th></tr>
              </thead>
              <tbody>
                {page.items.map((e) => (
                  <tr key={e.id}>
                    <td>{formatTime(e.timestamp)}</td>
                    <td>{e.operation}{e.count ? ` ×${e.count + 1}` : ''}</td>
                    <td><span class={`status-badge status-${e.result}`}>{e.result}</span>{e.code ? ` ${e.code}` : ''}</td>
                    <td>{e.user ?? '—'}</td>
                    <td>{e.tenant ?? '—'}</td>
                    <td>{e.rufid ? <code>{e.rufid}</code> : '—'}</td>
                    <td>{e.ip}</td>
                    <td>{e.duration_ms}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <nav class="pager" aria-label="Audit pages">
            <button type="button" class="button" disabled={cursors.length === 0} onClick={() => setCursors([])}>First page</button>
            <button type="button" class="button" disabled={page.next_cursor === null} onClick={() => page.next_cursor && setCursors([...cursors, page.next_cursor])}>Next page</button>
          </nav>
        </>
      )}
    </section>
  )
}
