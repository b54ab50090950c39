import { useEffect, useRef, useState } from 'preact/hooks'
import { api, ApiError, queryOf, type ExecutionRecord, type FunctionMetadata } from '../api'
import { ErrorView } from '../components/error-view'
import { formatBytes, formatTime, Loading, PageTitle } from '../components/misc'
import { href, navigate, type Route } from '../router'

interface Parameter { name: string; optional: boolean; rest: boolean }
interface Executed { result: unknown; execution_time_ms: number; status: string; execution_id: string }

const argName = (p: Parameter): string => (p.name.startsWith('$') ? `arg${p.name.slice(1)}` : p.name)

/**
 * `{ "a": null, "b": null }` from the signature's required parameters (a rest parameter takes a
 * list); parameters with a default are left out, so their defaults apply unless the operator adds them.
 */
function templateOf(parameters: Parameter[]): string {
  const required = parameters.filter((p) => !p.optional)
  if (required.length === 0) return '{}'
  return JSON.stringify(Object.fromEntries(required.map((p) => [argName(p), p.rest ? [] : null])), null, 2)
}

function Logs({ logs }: { logs: ExecutionRecord['logs'] }) {
  if (logs.length === 0) return <p class="muted">The function wrote no console output.</p>
  return (
    <ol class="logs" aria-label="Console output">
      {logs.map((l, i) => <li key={i} class={`log log-${l.level}`}><span class="log-level">{l.level}</span> <span class="log-message">{l.message}</span></li>)}
    </ol>
  )
}

function RecordView({ record }: { record: ExecutionRecord }) {
  return (
    <details class="record">
      <summary>Execution record {record.execution_id}</summary>
      <dl class="facts">
        <dt>Status</dt><dd>{record.status}</dd>
        <dt>RUFID</dt><dd><code>{record.rufid}</code> {record.version}</dd>
        <dt>Started</dt><dd>{formatTime(record.started_at)}</dd>
        <dt>Finished</dt><dd>{formatTime(record.finished_at)}</dd>
        <dt>Wall time</dt><dd>{record.execution_time_ms ?? '—'} ms</dd>
        <dt>CPU time</dt><dd>{record.cpu_time_ms ?? '—'} ms</dd>
        <dt>Memory</dt><dd>{formatBytes(record.memory_bytes)}</dd>
      </dl>
    </details>
  )
}

/** Run a function with JSON arguments (prefilled from its signature): result, logs, record, failures. */
export function RunPage({ route }: { route: Route }) {
  const short = route.parts[1] ?? ''
  const version = route.query.get('version') ?? ''
  const [pick, setPick] = useState(short)
  const [meta, setMeta] = useState<FunctionMetadata | undefined>()
  const [args, setArgs] = useState('')
  const [optional, setOptional] = useState<string[]>([])
  const [loadError, setLoadError] = useState<unknown>()
  const [busy, setBusy] = useState(false)
  const [executed, setExecuted] = useState<Executed | undefined>()
  const [failure, setFailure] = useState<unknown>()
  const [record, setRecord] = useState<ExecutionRecord | undefined>()
  const outcomeRef = useRef<HTMLDivElement>(null)

  useEffect(() => {
    setPick(short)
    setMeta(undefined)
    setExecuted(undefined)
    setFailure(undefined)
    setRecord(undefined)
    setLoadError(undefined)
    if (!short) return
    let live = true
    api<FunctionMetadata>('GET', `/api/v1/functions/${encodeURIComponent(short)}${queryOf({ version })}`)
      .then(async (m) => {
        const sig = await api<{ parameters: Parameter[] }>('POST', '/api/v1/functions/signature', { signature: m.signature })
        if (!live) return
        setMeta(m)
        setArgs(templateOf(sig.parameters))
        setOptional(sig.parameters.filter((p) => p.optional).map(argName))
      })
      .catch((err: unknown) => live && setLoadError(err))
    return () => {
      live = false
    }
  }, [short, version])

  const run = async (e: Event): Promise<void> => {
    e.preventDefault()
    setExecuted(undefined)
    setFailure(undefined)
    setRecord(undefined)
    let parsed: unknown
    try {
      parsed = args.trim() === '' ? {} : JSON.parse(args)
    } catch (err) {
      setFailure(new ApiError(0, 1006, 'VALIDATION_FAILED', `the arguments are not JSON: ${(err as Error).message}`))
      return
    }
    setBusy(true)
    let executionId: string | undefined
    try {
      const answer = await api<Executed>('POST', `/api/v1/functions/${encodeURIComponent(short)}/execute`, { arguments: parsed, ...(version ? { version } : {}) })
      setExecuted(answer)
      executionId = answer.execution_id
    } catch (err) {
      setFailure(err)
      const details = err instanceof ApiError ? err.details : {}
      executionId = typeof details.execution_id === 'string' ? details.execution_id : undefined
    } finally {
      setBusy(false)
      window.setTimeout(() => outcomeRef.current?.focus(), 0)
    }
    if (executionId) {
      api<ExecutionRecord>('GET', `/v1/executions/${encodeURIComponent(executionId)}`).then(setRecord, () => undefined)
    }
  }

  return (
    <section aria-labelledby="page-title">
      <PageTitle>{meta ? <>Run {meta.function_name} <span class="muted">{meta.version}</span></> : 'Run a function'}</PageTitle>
      <form class="form inline-form" onSubmit={(e) => { e.preventDefault(); navigate(href(['run', pick.trim()])) }}>
        <label for="run-rufid">Function (RUFID)</label>
        <div class="inline">
          <input id="run-rufid" value={pick} spellcheck={false} onInput={(e) => setPick((e.target as HTMLInputElement).value)} placeholder="short or full RUFID" />
          <button type="submit" class="button">Load</button>
        </div>
      </form>
      {!short && <p>Pick a function in the <a href={href(['catalog'])}>catalog</a>, or paste its RUFID above.</p>}
      {loadError !== undefined && <ErrorView error={loadError} title="Cannot load this function" />}
      {short && !meta && loadError === undefined && <Loading what="the function" />}
      {meta && (
        <form class="form" onSubmit={(e) => void run(e)}>
          <p>
            <a href={href(['functions', meta.rufid], { version: meta.version })}>{meta.function_name}</a>
            <code>{meta.signature}</code> · {meta.language} · <code class="rufid">{meta.full_rufid}</code>
          </p>
          <label for="run-arguments">Arguments (JSON: an object of named arguments, or an array of positional ones)</label>
          <textarea id="run-arguments" class="code-input" rows={8} spellcheck={false} value={args} onInput={(e) => setArgs((e.target as HTMLTextAreaElement).value)}
            aria-describedby="run-arguments-help" />
          <p id="run-arguments-help" class="help">
            {optional.length > 0 ? `Optional (their defaults apply when left out): ${optional.join(', ')}.` : 'Replace each null with a value.'}
          </p>
          <button type="submit" class="button primary" disabled={busy}>{busy ? 'Running…' : 'Run'}</button>
        </form>
      )}
      <div class="outcome" tabIndex={-1} ref={outcomeRef} aria-live="polite">
        {executed && (
          <div class="result success">
            <h2>Result <span class="status-badge status-success">{executed.status}</span> <span class="muted">{executed.execution_time_ms} ms</span></h2>
            <pre class="json" id="run-result">{JSON.stringify(executed.result, null, 2)}</pre>
          </div>
        )}
        {failure !== undefined && <ErrorView error={failure} title="The execution failed" />}
        {record && (
          <>
            <h2>Logs</h2>
            <Logs logs={record.logs} />
            <RecordView record={record} />
          </>
        )}
      </div>
    </section>
  )
}
