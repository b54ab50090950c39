// A real OAuth 2.0 authorization server for the suite: the certified `oidc-provider` package on a
// loopback port, issuing opaque access tokens (client credentials grant) and serving token
// introspection (RFC 7662) and revocation (RFC 7009). Not a mock: the node under test talks HTTP
// to it exactly as to a production server.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import Provider from 'oidc-provider'

/** The client the node introspects with (a resource server: no grant of its own). */
export const INTROSPECTOR = { client_id: 'svc-node', client_secret: 'svc-node-introspection-secret' }

/** An application of a tenant: it gets tokens with the client credentials grant. */
export interface OAuthApp {
  client_id: string
  client_secret: string
  /** the claims its tokens carry (e.g. tenant_id, roles, email), shown by introspection */
  claims: Record<string, unknown>
  /** the scopes it may ask for */
  scope?: string
}

export interface OAuthServer {
  issuer: string
  introspectionEndpoint: string
  /** introspection requests served so far (what the node's cache saves) */
  introspections: number
  /** the lifetime (s) of the next tokens issued */
  tokenTtlSeconds: number
  /** an opaque access token for `app` */
  token(app: OAuthApp, scope?: string): Promise<{ access_token: string; expires_in: number }>
  /** revokes a token at the server (RFC 7009) */
  revoke(app: OAuthApp, token: string): Promise<void>
  /** refuses (503) every introspection while set: a server that cannot answer */
  failing: boolean
  close(): Promise<void>
}

export async function startOAuthServer(apps: OAuthApp[]): Promise<OAuthServer> {
  const server: Server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const claimsOf = new Map(apps.map((a) => [a.client_id, a.claims]))
  const state = { introspections: 0, tokenTtlSeconds: 600, failing: false }
  const provider = new Provider(issuer, {
    clients: [
      { ...INTROSPECTOR, grant_types: [], response_types: [], redirect_uris: [] },
      ...apps.map((a) => ({
        client_id: a.client_id, client_secret: a.client_secret, grant_types: ['client_credentials'], response_types: [], redirect_uris: [],
        ...(a.scope ? { scope: a.scope } : {}),
      })),
    ],
    scopes: ['functions:create', 'functions:read', 'functions:execute', 'functions:delete', 'admin'],
    features: {
      clientCredentials: { enabled: true },
      // the node (a resource server) may introspect every token; an application its own
      introspection: {
        enabled: true,
        allowedPolicy: (_ctx: unknown, client: { clientId: string }, token: { clientId?: string }) => client.clientId === INTROSPECTOR.client_id || client.clientId === token.clientId,
      },
      revocation: { enabled: true, allowedPolicy: (_ctx: unknown, client: { clientId: string }, token: { clientId?: string }) => client.clientId === token.clientId },
      devInteractions: { enabled: false },
    },
    // opaque tokens: these claims are stored with the token and answered by introspection
    extraTokenClaims: (_ctx: unknown, token: { clientId?: string }) => claimsOf.get(token.clientId ?? ''),
    ttl: { ClientCredentials: () => state.tokenTtlSeconds },
  })
  const handle = provider.callback()
  server.on('request', (req, res) => {
    if (req.url?.startsWith('/token/introspection')) {
      state.introspections++
      if (state.failing) {
        res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"temporarily_unavailable"}')
        return
      }
    }
    handle(req, res)
  })

  const post = async (path: string, app: { client_id: string; client_secret: string }, form: Record<string, string>): Promise<Response> =>
    fetch(`${issuer}${path}`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${app.client_id}:${app.client_secret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
      signal: AbortSignal.timeout(10_000),
    })

  return {
    issuer,
    introspectionEndpoint: `${issuer}/token/introspection`,
    get introspections() { return state.introspections },
    set introspections(n: number) { state.introspections = n },
    get tokenTtlSeconds() { return state.tokenTtlSeconds },
    set tokenTtlSeconds(s: number) { state.tokenTtlSeconds = s },
    get failing() { return state.failing },
    set failing(f: boolean) { state.failing = f },
    async token(app, scope) {
      const res = await post('/token', app, { grant_type: 'client_credentials', ...(scope ? { scope } : {}) })
      const body = await res.json() as { access_token: string; expires_in: number; error?: string; error_description?: string }
      if (res.status !== 200) throw new Error(`token endpoint: ${res.status} ${body.error}: ${body.error_description}`)
      return body
    },
    async revoke(app, token) {
      const res = await post('/token/revocation', app, { token })
      if (res.status !== 200) throw new Error(`revocation endpoint: ${res.status} ${await res.text()}`)
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
}
