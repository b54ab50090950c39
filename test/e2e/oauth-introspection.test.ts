// auth.oauth_introspection through a real daemon and a real authorization server (oidc-provider,
// test/engine/auth/oauth-server.ts): an opaque access token is a caller of its tenant with its
// roles, an inactive one is 401, and a server that cannot answer is 503 (1010), never a caller.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { call, removeDir, startDaemonProcess, tempDataDir, type DaemonProcess } from '../fixtures/daemon-process.js'
import { addJs } from '../fixtures/functions.js'
import { INTROSPECTOR, startOAuthServer, type OAuthApp, type OAuthServer } from '../engine/auth/oauth-server.js'

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const codeOf = (body: unknown): number | undefined => (body as { error?: { code?: number } }).error?.code
const developerApp: OAuthApp = {
  client_id: 'acme-deploy', client_secret: 'acme-deploy-secret-0123456789', claims: { tenant_id: 'acme', roles: ['developer'], email: 'deploy@acme.test' },
}

describe('OAuth 2.0 token introspection on a daemon', () => {
  let d: DaemonProcess
  let server: OAuthServer

  beforeAll(async () => {
    server = await startOAuthServer([developerApp])
    const dataDir = tempDataDir()
    writeFileSync(join(dataDir, 'introspection-secret'), `${INTROSPECTOR.client_secret}\n`)
    writeFileSync(join(dataDir, 'svc.yaml'), [
      'auth:',
      '  bootstrap_admin_key: false',
      '  oauth_introspection:',
      `    endpoint: ${server.introspectionEndpoint}`,
      `    client_id: ${INTROSPECTOR.client_id}`,
      `    client_secret_file: ${join(dataDir, 'introspection-secret')}`,
      '    cache_ttl_s: 0',
    ].join('\n'))
    d = await startDaemonProcess({ dataDir, env: { AUTH_PROVIDER: 'standard', SVC_CONFIG: join(dataDir, 'svc.yaml') } })
  })
  afterAll(async () => {
    await d?.stop()
    if (d) removeDir(d.dataDir)
    await server?.close()
  })

  it('an active token is a caller of its tenant with its roles; an inactive one is 401; a server that cannot answer is 503', async () => {
    const { access_token } = await server.token(developerApp)
    const me = await call(`${d.url}/api/v1/auth/whoami`, 'GET', undefined, bearer(access_token))
    expect(me.status).toBe(200)
    expect(me.body).toMatchObject({ tenant_id: 'acme', user: 'deploy@acme.test', method: 'oauth' })
    const created = await call(`${d.url}/api/v1/functions/create`, 'POST', addJs, bearer(access_token))
    expect(created.status).toBe(201)
    expect(created.body.rufid).toMatch(/:v1:acme$/)

    const unknown = await call(`${d.url}/api/v1/auth/whoami`, 'GET', undefined, bearer('opaque-token-nobody-issued'))
    expect(unknown.status).toBe(401)
    expect(codeOf(unknown.body)).toBe(1003)

    server.failing = true
    try {
      const down = await call(`${d.url}/api/v1/auth/whoami`, 'GET', undefined, bearer(access_token))
      expect(down.status).toBe(503)
      expect(codeOf(down.body)).toBe(1010)
    } finally {
      server.failing = false
    }
    await server.revoke(developerApp, access_token)
    const revoked = await call(`${d.url}/api/v1/auth/whoami`, 'GET', undefined, bearer(access_token))
    expect(revoked.status).toBe(401)
  })
})
