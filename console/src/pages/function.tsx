import { Fragment } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { api, queryOf, type FunctionMetadata } from '../api'
import { Chart } from '../components/chart'
import { CodeView } from '../components/code-view'
import { CopyButton } from '../components/copy-button'
import { ErrorView } from '../components/error-view'
import { formatTime, Loading, PageTitle, Tags } from '../components/misc'
import { href, navigate, type Route } from '../router'

interface SourceAnswer {
  rufid: string
  rufid_short: string
  version: string
  function_name: string
  language: string
  signature: string
  content_digest: string
  source_code: string
  imports: { typescript: string; python: string; go: string }
}

interface Head { function_name: string; branch: string; version: string; rufid: string; rufid_short: string; updated_at: string; updated_by: string }

interface VersionsAnswer {
  function_name: string
  versions: Array<{
    version: string; rufid: string; rufid_short: string; content_digest: string; created_at: string; author: string; deleted_at?: string
    branches: unknown[]
  }>
  heads: Head[]
}

interface ExportAnswer { manifest: unknown; lockfile: unknown; manifest_text: string | null; lockfile_text: string | null }

interface SeriesAnswer {
  bucket_ms: number
  buckets: Array<{ start: string; executions: number; errors: number; error_rate: number; latency_ms: { p50: number; p95: number; p99: number } }>
}

const WINDOWS = [['15m', '15 minutes'], ['1h', '1 hour'], ['6h', '6 hours'], ['24h', '24 hours'], ['7d', '7 days']] as const

/** One function: identity, source, how to import it, its versions and branches, manifest and telemetry. */
export function FunctionPage({ route }: { route: Route }) {
  const short = route.parts[1] ?? ''
  const version = route.query.get('version') ?? ''
  const window = route.query.get('window') ?? '1h'
  const [meta, setMeta] = useState<FunctionMetadata | undefined>()
  const [source, setSource] = useState<SourceAnswer | undefined>()
  const [versions, setVersions] = useState<VersionsAnswer | undefined>()
  const [files, setFiles] = useState<ExportAnswer | undefined>()
  const [series, setSeries] = useState<SeriesAnswer | undefined>()
  const [error, setError] = useState<unknown>()

  useEffect(() => {
    let live = true
    setError(undefined)
    const v = queryOf({ version })
    const base = `/api/v1/functions/${encodeURIComponent(short)}`
    Promise.all([
      api<FunctionMetadata>('GET', `${base}${v}`),
      api<SourceAnswer>('GET', `${base}/source${v}`),
      api<VersionsAnswer>('GET', `${base}/versions`),
      api<ExportAnswer>('GET', `${base}/export${v}`),
    ]).then(([m, s, vs, f]) => {
      if (!live) return
      setMeta(m)
      setSource(s)
      setVersions(vs)
      setFiles(f)
    }, (err: unknown) => live && setError(err))
    return () => {
      live = false
    }
  }, [short, version])

  useEffect(() => {
    let live = true
    api<SeriesAnswer>('GET', `/v1/telemetry/functions/${encodeURIComponent(short)}/series${queryOf({ window, buckets: 30, version })}`)
      .then((s) => live && setSeries(s), () => live && setSeries(undefined))
    return () => {
      live = false
    }
  }, [short, version, window])

  if (error !== undefined) return <section aria-labelledby="page-title"><PageTitle>Function {short}</PageTitle><ErrorView error={error} /></section>
  if (!meta || !source || !versions || !files) return <section aria-labelledby="page-title"><PageTitle>Function {short}</PageTitle><Loading what="the function" /></section>

  const times = series?.buckets.map((b) => b.start) ?? []
  return (
    <section aria-labelledby="page-title" class="function">
      <PageTitle>{meta.function_name} <span class="muted">{meta.version}</span></PageTitle>
      <p class="meta">{meta.language} · by <span>{meta.author}</span> · {formatTime(meta.created_at)}</p>
      {meta.description && <p class="description">{meta.description}</p>}
      <Tags tags={meta.tags} />
      <p class="actions">
        <a class="button primary" href={href(['run', meta.rufid], { version: meta.version })}>Run this function</a>
      </p>

      <h2>Identity</h2>
      <dl class="facts">
        <dt>RUFID</dt>
        <dd><code class="rufid" id="full-rufid">{meta.full_rufid}</code> <CopyButton text={meta.full_rufid} label="Copy the full RUFID" /></dd>
        <dt>Short RUFID</dt>
        <dd><code class="rufid">{meta.rufid}</code> <CopyButton text={meta.rufid} label="Copy the short RUFID" /></dd>
        <dt>Signature</dt>
        <dd><code>{meta.function_name}{meta.signature}</code></dd>
        <dt>Content digest</dt>
        <dd><code class="digest">{meta.content_digest}</code></dd>
        {meta.dependencies.length > 0 && <><dt>Dependencies</dt><dd>{meta.dependencies.join(', ')}</dd></>}
        {meta.metrics && (
          <>
            <dt>Usage</dt>
            <dd>{meta.metrics.usage_count} executions, {(meta.metrics.success_rate * 100).toFixed(1)} % successful, {meta.metrics.avg_execution_time_ms.toFixed(2)} ms on average</dd>
          </>
        )}
      </dl>

      <h2>Import it</h2>
      <dl class="facts imports">
        {([['TypeScript / JavaScript', source.imports.typescript], ['Python', source.imports.python], ['Go', source.imports.go]] as const).map(([lang, statement]) => (
          <Fragment key={lang}>
            <dt>{lang}</dt>
            <dd><code>{statement}</code> <CopyButton text={statement} label={`Copy the ${lang} import statement`} /></dd>
          </Fragment>
        ))}
      </dl>

      <h2>Source</h2>
      <CodeView code={source.source_code} language={source.language} label={`Source of ${meta.function_name}`} />

      <h2>Telemetry</h2>
      <div class="inline">
        <label for="telemetry-window">Window</label>
        <select id="telemetry-window" value={window} onChange={(e) => navigate(href(['functions', short], { version, window: (e.target as HTMLSelectElement).value }))}>
          {WINDOWS.map(([w, label]) => <option key={w} value={w}>{label}</option>)}
        </select>
      </div>
      {series === undefined ? <Loading what="telemetry" /> : (
        <div class="charts">
          <Chart title="Executions" unit="executions" times={times} bars series={[{ name: 'executions', values: series.buckets.map((b) => b.executions), className: 'series-1' }]} />
          <Chart title="Latency" unit="ms" times={times} series={[
            { name: 'p50', values: series.buckets.map((b) => b.latency_ms.p50), className: 'series-1' },
            { name: 'p95', values: series.buckets.map((b) => b.latency_ms.p95), className: 'series-2' },
            { name: 'p99', values: series.buckets.map((b) => b.latency_ms.p99), className: 'series-3' },
          ]} />
          <Chart title="Error rate" unit="%" times={times} series={[{ name: 'error rate', values: series.buckets.map((b) => b.error_rate * 100), className: 'series-3' }]} />
        </div>
      )}

      <h2>Versions</h2>
      <div class="table-wrap">
        <table>
          <caption class="visually-hidden">Versions of {versions.function_name}</caption>
          <thead><tr><th scope="col">Version</th><th scope="col">RUFID</th><th scope="col">Published</th><th scope="col">Author</th><th scope="col">State</th></tr></thead>
          <tbody>
            {versions.versions.map((v) => (
              <tr key={v.version}>
                <td><a href={href(['functions', v.rufid_short], { version: v.version })}>{v.version}</a></td>
                <td><code>{v.rufid_short}</code></td>
                <td>{formatTime(v.created_at)}</td>
                <td>{v.author}</td>
                <td>{v.deleted_at ? `deleted ${formatTime(v.deleted_at)}` : 'live'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>

      <h2>Branches</h2>
      {versions.heads.length === 0 ? <p class="muted">No branch points at this function (branches are created by deploy).</p> : (
        <div class="table-wrap">
          <table>
            <thead><tr><th scope="col">Branch</th><th scope="col">Head</th><th scope="col">Moved</th><th scope="col">By</th></tr></thead>
            <tbody>
              {versions.heads.map((h) => (
                <tr key={h.branch}><td>{h.branch}</td><td><code>{h.rufid_short}</code> {h.version}</td><td>{formatTime(h.updated_at)}</td><td>{h.updated_by}</td></tr>
              ))}
            </tbody>
          </table>
        </div>
      )}

      <h2>Manifest and lockfile</h2>
      {files.manifest === null && files.lockfile === null ? <p class="muted">This version has no manifest and no lockfile.</p> : (
        <div class="files">
          <h3>function.svc.json</h3>
          {files.manifest === null ? <p class="muted">none</p> : <CodeView code={files.manifest_text ?? JSON.stringify(files.manifest, null, 2)} language="json" label="Manifest" />}
          <h3>function.lock.json</h3>
          {files.lockfile === null ? <p class="muted">none</p> : <CodeView code={files.lockfile_text ?? JSON.stringify(files.lockfile, null, 2)} language="json" label="Lockfile" />}
        </div>
      )}
    </section>
  )
}
