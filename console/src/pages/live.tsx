import { useEffect, useState } from 'preact/hooks'
import { eventStream, MAX_KEPT_EVENTS, type LiveEvent } from '../events'
import { PageTitle } from '../components/misc'
import { href } from '../router'

function useEvents(): { events: LiveEvent[]; status: string; lastClose: string } {
  const [, setTick] = useState(0)
  useEffect(() => eventStream.subscribe(() => setTick((t) => t + 1)), [])
  return { events: eventStream.events, status: eventStream.status, lastClose: eventStream.lastClose }
}

const STATUS_TEXT: Record<string, string> = {
  connecting: 'Connecting to the event socket…',
  open: 'Connected: events appear as they happen.',
  closed: 'Disconnected: reconnecting…',
  stopped: 'Not connected.',
}

/** Executions and system events from /ws, newest first, since the console was opened. */
export function LivePage() {
  const { events, status, lastClose } = useEvents()
  const [channel, setChannel] = useState('all')
  const [outcome, setOutcome] = useState('all')
  const [text, setText] = useState('')
  const [paused, setPaused] = useState<LiveEvent[] | undefined>()
  const shown = (paused ?? events).filter((e) => {
    if (channel !== 'all' && e.channel !== channel) return false
    if (outcome !== 'all' && (e.channel !== 'executions' || e.payload.status !== outcome)) return false
    if (text) {
      const t = text.toLowerCase()
      const hay = e.channel === 'executions'
        ? `${e.payload.function_name} ${e.payload.rufid} ${e.payload.execution_id}`
        : `${e.payload.type} ${e.payload.message} ${e.payload.rufid ?? ''}`
      if (!hay.toLowerCase().includes(t)) return false
    }
    return true
  })
  return (
    <section aria-labelledby="page-title">
      <PageTitle>Live events</PageTitle>
      <p class={`connection connection-${status}`} role="status">{STATUS_TEXT[status]}{status === 'closed' && lastClose ? ` (last close: ${lastClose})` : ''}</p>
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filter events">
        <div class="field">
          <label for="live-channel">Channel</label>
          <select id="live-channel" value={channel} onChange={(e) => setChannel((e.target as HTMLSelectElement).value)}>
            <option value="all">all</option><option value="executions">executions</option><option value="system">system</option>
          </select>
        </div>
        <div class="field">
          <label for="live-status">Execution status</label>
          <select id="live-status" value={outcome} onChange={(e) => setOutcome((e.target as HTMLSelectElement).value)}>
            <option value="all">all</option><option value="success">success</option><option value="error">error</option><option value="timeout">timeout</option>
          </select>
        </div>
        <div class="field">
          <label for="live-text">Function, RUFID or text</label>
          <input id="live-text" type="search" value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} />
        </div>
        <div class="field buttons">
          <button type="button" class="button" aria-pressed={paused ? 'true' : 'false'} onClick={() => setPaused(paused ? undefined : events)}>{paused ? 'Resume' : 'Pause'}</button>
          <button type="button" class="button" onClick={() => { eventStream.clear(); if (paused) setPaused([]) }}>Clear</button>
        </div>
      </form>
      <p class="muted">{shown.length} of {(paused ?? events).length} events shown (the newest {MAX_KEPT_EVENTS} are kept while the console is open).</p>
      <div class="table-wrap">
        <table class="events">
          <thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">Function</th><th scope="col">Detail</th></tr></thead>
          <tbody>
            {shown.map((e) => e.channel === 'executions' ? (
              <tr key={e.seq} class="event-execution">
                <td>{new Date(e.payload.timestamp).toLocaleTimeString()}</td>
                <td><span class={`status-badge status-${e.payload.status}`}>{e.payload.status}</span></td>
                <td><a href={href(['functions', e.payload.rufid_short])}>{e.payload.function_name}</a> <code>{e.payload.rufid_short}</code> {e.payload.version}</td>
                <td>{e.payload.execution_time_ms} ms{e.payload.error_code !== null ? ` · error ${e.payload.error_code}` : ''} · <code>{e.payload.execution_id}</code></td>
              </tr>
            ) : (
              <tr key={e.seq} class="event-system">
                <td>{new Date(e.payload.timestamp).toLocaleTimeString()}</td>
                <td><span class="status-badge">{e.payload.type}</span></td>
                <td>{e.payload.rufid ? <code>{e.payload.rufid}</code> : '—'}</td>
                <td>{e.payload.message}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {shown.length === 0 && <p class="muted">No event yet. Run a function (<a href={href(['run'])}>Run page</a>) and it appears here.</p>}
    </section>
  )
}
