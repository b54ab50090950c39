// Hash routes (`#/functions/<rufid>?version=v2`): the node serves one index.html, nothing else to map.
import { useEffect, useState } from 'preact/hooks'

export interface Route {
  /** path segments, e.g. ['functions', 'abc'] */
  parts: string[]
  query: URLSearchParams
}

export function currentRoute(): Route {
  const hash = location.hash.replace(/^#/, '') || '/'
  const [path = '/', search = ''] = hash.split('?', 2)
  return { parts: path.split('/').filter(Boolean).map((p) => decodeURIComponent(p)), query: new URLSearchParams(search) }
}

export function useRoute(): Route {
  const [route, setRoute] = useState(currentRoute)
  useEffect(() => {
    const onChange = (): void => setRoute(currentRoute())
    window.addEventListener('hashchange', onChange)
    return () => window.removeEventListener('hashchange', onChange)
  }, [])
  return route
}

/** `#/a/b?x=1` for path segments and query values (empty values left out). */
export function href(parts: string[], query: Record<string, string | number | undefined | null> = {}): string {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v))
  const s = q.toString()
  return `#/${parts.map((p) => encodeURIComponent(p)).join('/')}${s ? `?${s}` : ''}`
}

export function navigate(to: string): void {
  if (location.hash !== to) location.hash = to
}
