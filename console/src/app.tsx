import { useEffect, useRef, useState } from 'preact/hooks'
import { api, ApiError, session, setUnauthorizedListener, type Identity, type NodeInfo } from './api'
import { eventStream } from './events'
import { ErrorView } from './components/error-view'
import { PageTitle } from './components/misc'
import { AuditPage } from './pages/audit'
import { CatalogPage } from './pages/catalog'
import { FederationPage } from './pages/federation'
import { FunctionPage } from './pages/function'
import { KeysPage } from './pages/keys'
import { LivePage } from './pages/live'
import { NodePage } from './pages/node'
import { PublishPage } from './pages/publish'
import { RunPage } from './pages/run'
import { SignInPage } from './pages/sign-in'
import { href, navigate, useRoute, type Route } from './router'

interface Page { path: string; title: string; admin?: boolean }

const PAGES: Page[] = [
  { path: 'catalog', title: 'Catalog' },
  { path: 'publish', title: 'Publish' },
  { path: 'run', title: 'Run' },
  { path: 'live', title: 'Live' },
  { path: 'federation', title: 'Federation' },
  { path: 'keys', title: 'Keys', admin: true },
  { path: 'audit', title: 'Audit', admin: true },
  { path: 'node', title: 'Node' },
]

type State =
  | { phase: 'loading' }
  | { phase: 'unreachable'; error: unknown }
  | { phase: 'signed-out'; node: NodeInfo; notice?: string }
  | { phase: 'signed-in'; node: NodeInfo; identity: Identity }

export function App() {
  const route = useRoute()
  const [state, setState] = useState<State>({ phase: 'loading' })

  const signIn = (node: NodeInfo, token: string | null, identity: Identity): void => {
    if (token) session.set(token)
    eventStream.start(token)
    setState({ phase: 'signed-in', node, identity })
    if (route.parts.length === 0 || route.parts[0] === 'sign-in') navigate(href(['catalog']))
  }
  const signOut = (node: NodeInfo, notice?: string): void => {
    session.clear()
    eventStream.stop()
    eventStream.clear()
    setState({ phase: 'signed-out', node, notice })
  }

  // what kind of node this is (auth mode), then whether the kept credential still works
  useEffect(() => {
    let live = true
    void (async () => {
      let node: NodeInfo
      try {
        node = await api<NodeInfo>('GET', '/api/v1/node/info', undefined, { token: null })
      } catch (err) {
        if (live) setState({ phase: 'unreachable', error: err })
        return
      }
      const token = node.auth_mode === 'none' ? null : session.token
      if (node.auth_mode !== 'none' && !token) {
        if (live) setState({ phase: 'signed-out', node })
        return
      }
      try {
        const identity = await api<Identity>('GET', '/api/v1/auth/whoami', undefined, { token })
        if (live) signIn(node, token, identity)
      } catch (err) {
        if (live) signOut(node, (err as ApiError).status === 401 ? 'Your key was refused (revoked or expired): sign in again.' : undefined)
      }
    })()
    return () => {
      live = false
    }
  }, [])

  useEffect(() => {
    if (state.phase !== 'signed-in') return
    setUnauthorizedListener(() => signOut(state.node, 'The node refused your key (revoked or expired): sign in again.'))
    return () => setUnauthorizedListener(undefined)
  }, [state])

  // each navigation: a title, and focus on the new page's heading (screen readers announce it)
  const page = PAGES.find((p) => p.path === route.parts[0])
  const shown = useRef(false)
  useEffect(() => {
    document.title = `${page?.title ?? (route.parts[0] === 'functions' ? 'Function' : 'Sign in')} · svc-node console`
    const heading = document.getElementById('page-title')
    if (!heading || state.phase === 'loading') return
    // not on the first page shown: a fresh load starts at the top (the skip link comes first)
    if (!shown.current) {
      shown.current = true
      return
    }
    if (document.activeElement !== heading) heading.focus()
  }, [route.parts.join('/'), state.phase])

  if (state.phase === 'loading') return <main id="main" class="main"><p role="status">Connecting to the node…</p></main>
  if (state.phase === 'unreachable') {
    return <main id="main" class="main"><PageTitle>svc-node console</PageTitle><ErrorView error={state.error} title="The node did not answer" /></main>
  }

  const signedIn = state.phase === 'signed-in'
  return (
    <>
      <a class="skip-link" href="#main" onClick={(e) => { e.preventDefault(); document.getElementById('page-title')?.focus() }}>Skip to content</a>
      <header class="header">
        <a class="brand" href={href(['catalog'])}>svc-node <span>console</span></a>
        <span class="node-version">v{state.node.version} · {state.node.status}</span>
        {signedIn && (
          <span class="identity">
            <span>{state.identity.user} · tenant <strong>{state.identity.tenant_id}</strong></span>
            {state.node.auth_mode !== 'none' && <button type="button" class="button small" onClick={() => signOut(state.node)}>Sign out</button>}
          </span>
        )}
      </header>
      {state.node.auth_mode === 'none' && (
        <p class="banner warning" role="note">
          Local mode: this node runs with <code>AUTH_PROVIDER=none</code> and trusts every caller. Keep it on 127.0.0.1.
        </p>
      )}
      {signedIn && (
        <nav class="nav" aria-label="Console pages">
          <ul>
            {PAGES.filter((p) => !p.admin || state.identity.admin).map((p) => (
              <li key={p.path}><a href={href([p.path])} aria-current={route.parts[0] === p.path ? 'page' : undefined}>{p.title}</a></li>
            ))}
          </ul>
        </nav>
      )}
      <main id="main" class="main">
        {state.phase === 'signed-out'
          ? <SignInPage notice={state.notice} onSignedIn={(token, identity) => signIn(state.node, token, identity)} />
          : <PageView route={route} node={state.node} identity={state.identity} />}
      </main>
      <footer class="footer"><a href="/openapi.json">API description (OpenAPI)</a></footer>
    </>
  )
}

function PageView({ route, node, identity }: { route: Route; node: NodeInfo; identity: Identity }) {
  switch (route.parts[0]) {
    case undefined:
    case 'catalog': return <CatalogPage route={route} />
    case 'functions': return <FunctionPage route={route} />
    case 'publish': return <PublishPage />
    case 'run': return <RunPage route={route} />
    case 'live': return <LivePage />
    case 'federation': return <FederationPage node={node} />
    case 'keys': return identity.admin ? <KeysPage /> : <NotAllowed />
    case 'audit': return identity.admin ? <AuditPage /> : <NotAllowed />
    case 'node': return <NodePage node={node} identity={identity} />
    default: return <section aria-labelledby="page-title"><PageTitle>Not found</PageTitle><p>No console page here: <a href={href(['catalog'])}>go to the catalog</a>.</p></section>
  }
}

function NotAllowed() {
  return <section aria-labelledby="page-title"><PageTitle>Administrators only</PageTitle><p>This page needs an admin key of the tenant.</p></section>
}
