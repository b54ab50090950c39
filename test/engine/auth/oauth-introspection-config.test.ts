// auth.oauth_introspection in the daemon configuration: off by default, on with an endpoint, and
// refused at start when it lacks what it needs.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src/daemon/config.js'

const dir = mkdtempSync(join(tmpdir(), 'svc-introspection-config-'))
let n = 0
const withConfig = (yaml: string) => {
  const file = join(dir, `c${n++}.yaml`)
  writeFileSync(file, yaml)
  return loadConfig({ env: { SVC_CONFIG: file } })
}

describe('auth.oauth_introspection configuration', () => {
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('is off by default, on when an endpoint is set, with its defaults', () => {
    expect(loadConfig({ env: {} }).auth.oauth_introspection).toMatchObject({ enabled: false, cache_ttl_s: 60, cache_max_entries: 10_000, timeout_ms: 5000, tenant_claim: 'tenant_id' })
    const on = withConfig('auth:\n  oauth_introspection:\n    endpoint: https://auth.test/introspect\n    client_id: node\n    client_secret: s\n')
    expect(on.auth.oauth_introspection).toMatchObject({ enabled: true, endpoint: 'https://auth.test/introspect', client_id: 'node' })
  })

  it('needs an http(s) endpoint, a client id and exactly one of client_secret and client_secret_file', () => {
    expect(() => withConfig('auth:\n  oauth_introspection:\n    enabled: true\n    client_id: node\n    client_secret: s\n')).toThrow(/needs endpoint/)
    expect(() => withConfig('auth:\n  oauth_introspection:\n    endpoint: ftp://auth.test/x\n    client_id: node\n    client_secret: s\n')).toThrow(/endpoint/)
    expect(() => withConfig('auth:\n  oauth_introspection:\n    endpoint: https://auth.test/x\n    client_secret: s\n')).toThrow(/needs client_id/)
    expect(() => withConfig('auth:\n  oauth_introspection:\n    endpoint: https://auth.test/x\n    client_id: node\n')).toThrow(/client_secret/)
    expect(() => withConfig('auth:\n  oauth_introspection:\n    endpoint: https://auth.test/x\n    client_id: node\n    client_secret: s\n    client_secret_file: /f\n')).toThrow(/client_secret/)
    expect(() => withConfig('auth:\n  oauth_introspection:\n    endpoint: https://auth.test/x\n    client_id: node\n    client_secret: s\n    cache_ttl_s: -1\n')).toThrow(/cache_ttl_s/)
  })
})
