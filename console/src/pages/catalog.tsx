import { useEffect, useState } from 'preact/hooks'
import { api, queryOf, type SearchAnswer } from '../api'
import { ErrorView } from '../components/error-view'
import { formatTime, Loading, PageTitle, Tags } from '../components/misc'
import { href, navigate, type Route } from '../router'

const PAGE = 20

/** Marketplace search: newest live version of each function, words, facets and pages. */
export function CatalogPage({ route }: { route: Route }) {
  const q = route.query.get('q') ?? ''
  const language = route.query.get('language') ?? ''
  const tags = route.query.get('tags') ?? ''
  const author = route.query.get('author') ?? ''
  const offset = Math.max(0, Number(route.query.get('offset') ?? 0) || 0)
  const [text, setText] = useState(q)
  const [answer, setAnswer] = useState<SearchAnswer | undefined>()
  const [error, setError] = useState<unknown>()
  useEffect(() => setText(q), [q])
  useEffect(() => {
    let live = true
    setError(undefined)
    api<SearchAnswer>('GET', `/v1/marketplace/functions/search${queryOf({ q, language, tags, author, limit: PAGE, offset })}`)
      .then((a) => live && setAnswer(a), (err: unknown) => live && setError(err))
    return () => {
      live = false
    }
  }, [q, language, tags, author, offset])

  const state = { q, language, tags, author }
  const go = (changes: Partial<typeof state> & { offset?: number }): void =>
    navigate(href(['catalog'], { ...state, offset: undefined, ...changes }))
  const tagList = tags ? tags.split(',') : []
  const toggleTag = (t: string): void => go({ tags: (tagList.includes(t) ? tagList.filter((x) => x !== t) : [...tagList, t]).join(',') })

  const facet = (title: string, counts: Record<string, number>, selected: (v: string) => boolean, toggle: (v: string) => void) => (
    <section class="facet" aria-label={`Filter by ${title.toLowerCase()}`}>
      <h2>{title}</h2>
      {Object.keys(counts).length === 0 ? <p class="muted">none</p> : (
        <ul>
          {Object.entries(counts).map(([value, count]) => (
            <li key={value}>
              <button type="button" class="facet-value" aria-pressed={selected(value) ? 'true' : 'false'} onClick={() => toggle(value)}>
                <span class="facet-name">{value || '(none)'}</span> <span class="count">{count}</span>
              </button>
            </li>
          ))}
        </ul>
      )}
    </section>
  )

  const p = answer?.pagination
  return (
    <section aria-labelledby="page-title">
      <PageTitle>Catalog</PageTitle>
      <form role="search" class="search" onSubmit={(e) => { e.preventDefault(); go({ q: text.trim() }) }}>
        <label for="catalog-q">Search functions</label>
        <div class="inline">
          <input id="catalog-q" type="search" value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} placeholder="name, description, signature or tag" />
          <button type="submit" class="button primary">Search</button>
          {(q || language || tags || author) && <button type="button" class="button" onClick={() => navigate(href(['catalog']))}>Clear filters</button>}
        </div>
      </form>
      {error !== undefined && <ErrorView error={error} title="Search failed" />}
      {answer === undefined && error === undefined && <Loading what="the catalog" />}
      {answer && (
        <div class="catalog">
          <aside class="facets" aria-label="Facets">
            {facet('Language', answer.aggregations.language, (v) => v === language, (v) => go({ language: v === language ? '' : v }))}
            {facet('Tags', answer.aggregations.tags, (v) => tagList.includes(v), toggleTag)}
            {facet('Author', answer.aggregations.author, (v) => v === author, (v) => go({ author: v === author ? '' : v }))}
          </aside>
          <div class="results">
            <p role="status" class="result-count">
              {p!.total === 0 ? 'No function matches.' : `Showing ${p!.offset + 1}–${p!.offset + answer.items.length} of ${p!.total} functions`}
            </p>
            {p!.total === 0 && !q && !language && !tags && !author && <p>This tenant has no function yet: <a href={href(['publish'])}>publish one</a>.</p>}
            <ul class="cards">
              {answer.items.map((f) => (
                <li key={f.rufid} class="card">
                  <h2 class="card-title"><a href={href(['functions', f.rufid])}>{f.function_name}</a> <span class="muted">{f.version}</span></h2>
                  <p class="meta"><code class="rufid">{f.rufid}</code> · {f.language} · <span>{f.author}</span> · {formatTime(f.created_at)}</p>
                  {f.description && <p class="description">{f.description}</p>}
                  <p class="signature"><code>{f.function_name}{f.signature}</code></p>
                  <Tags tags={f.tags} />
                </li>
              ))}
            </ul>
            {p!.total > PAGE && (
              <nav class="pager" aria-label="Pages">
                <button type="button" class="button" disabled={offset === 0} onClick={() => go({ offset: Math.max(0, offset - PAGE) })}>Previous page</button>
                <span>Page {Math.floor(offset / PAGE) + 1} of {Math.ceil(p!.total / PAGE)}</span>
                <button type="button" class="button" disabled={p!.next_offset === null} onClick={() => go({ offset: p!.next_offset ?? offset })}>Next page</button>
              </nav>
            )}
          </div>
        </div>
      )}
    </section>
  )
}
