import type { ComponentChildren } from 'preact'

/** The page's heading: focused after each navigation so screen readers announce the new page. */
export function PageTitle({ children }: { children: ComponentChildren }) {
  return <h1 id="page-title" tabIndex={-1}>{children}</h1>
}

export function Loading({ what }: { what: string }) {
  return <p class="muted" role="status">Loading {what}…</p>
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—'
  const d = new Date(iso)
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString()
}

export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—'
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`
  return `${(n / 1024 / 1024).toFixed(1)} MiB`
}

export function formatDuration(seconds: number): string {
  const d = Math.floor(seconds / 86400)
  const h = Math.floor((seconds % 86400) / 3600)
  const m = Math.floor((seconds % 3600) / 60)
  const s = Math.floor(seconds % 60)
  return [d ? `${d} d` : '', h ? `${h} h` : '', m ? `${m} min` : '', `${s} s`].filter(Boolean).join(' ')
}

export function Tags({ tags }: { tags: string[] }) {
  if (tags.length === 0) return null
  return <ul class="tags" aria-label="tags">{tags.map((t) => <li key={t} class="tag">{t}</li>)}</ul>
}
