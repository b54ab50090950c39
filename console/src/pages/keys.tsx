import { useEffect, useRef, useState } from 'preact/hooks'
import { api } from '../api'
import { CopyButton } from '../components/copy-button'
import { ErrorView } from '../components/error-view'
import { formatTime, Loading, PageTitle } from '../components/misc'

interface KeyRecord { key_id: string; name: string; tenant_id: string; scopes: string[]; created_at: string; created_by: string; expires_at: string | null; revoked_at?: string }
interface Minted { api_key: string; key_id: string; name: string; scopes: string[]; expires_at: string | null }

const SCOPES = [
  ['functions:read', 'read functions'],
  ['functions:execute', 'execute functions'],
  ['functions:create', 'publish functions'],
  ['functions:delete', 'delete functions'],
  ['admin', 'administer the tenant (everything)'],
] as const

/** API keys of the tenant: mint (the secret shown once), list, revoke. Admins only. */
export function KeysPage() {
  const [keys, setKeys] = useState<KeyRecord[] | undefined>()
  const [error, setError] = useState<unknown>()
  const [name, setName] = useState('')
  const [scopes, setScopes] = useState<string[]>(['functions:read', 'functions:execute'])
  const [days, setDays] = useState('90')
  const [minted, setMinted] = useState<Minted | undefined>()
  const [mintError, setMintError] = useState<unknown>()
  const [confirming, setConfirming] = useState<string | undefined>()
  const [reload, setReload] = useState(0)
  const secretRef = useRef<HTMLInputElement>(null)

  useEffect(() => {
    let live = true
    api<{ items: KeyRecord[] }>('GET', '/api/v1/auth/v2/api-keys').then((a) => live && setKeys(a.items), (err: unknown) => live && setError(err))
    return () => {
      live = false
    }
  }, [reload])

  const mint = async (e: Event): Promise<void> => {
    e.preventDefault()
    setMintError(undefined)
    setMinted(undefined)
    try {
      const answer = await api<Minted>('POST', '/api/v1/auth/v2/api-keys', { name: name.trim(), scopes, expires_days: Number(days) })
      setMinted(answer)
      setName('')
      setReload((n) => n + 1)
      window.setTimeout(() => secretRef.current?.focus(), 0)
    } catch (err) {
      setMintError(err)
    }
  }

  const revoke = async (keyId: string): Promise<void> => {
    setConfirming(undefined)
    try {
      await api('DELETE', `/api/v1/auth/v2/api-keys/${encodeURIComponent(keyId)}`)
      setReload((n) => n + 1)
    } catch (err) {
      setError(err)
    }
  }

  return (
    <section aria-labelledby="page-title">
      <PageTitle>API keys</PageTitle>
      <h2>Mint a key</h2>
      <form class="form" onSubmit={(e) => void mint(e)}>
        <div class="row">
          <div class="field">
            <label for="key-name">Name</label>
            <input id="key-name" required maxLength={128} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} placeholder="my-app" />
          </div>
          <div class="field">
            <label for="key-days">Expires after (days)</label>
            <input id="key-days" type="number" min={1} required value={days} onInput={(e) => setDays((e.target as HTMLInputElement).value)} />
          </div>
        </div>
        <fieldset>
          <legend>Scopes</legend>
          {SCOPES.map(([scope, label]) => (
            <div class="check" key={scope}>
              <input type="checkbox" id={`scope-${scope}`} checked={scopes.includes(scope)}
                onChange={(e) => setScopes((e.target as HTMLInputElement).checked ? [...scopes, scope] : scopes.filter((s) => s !== scope))} />
              <label for={`scope-${scope}`}><code>{scope}</code> — {label}</label>
            </div>
          ))}
        </fieldset>
        <button type="submit" class="button primary">Mint key</button>
      </form>
      {mintError !== undefined && <ErrorView error={mintError} title="No key minted" />}
      {minted && (
        <div class="result secret" role="status">
          <h3>Key “{minted.name}” minted: copy it now, it is shown only this once</h3>
          <label for="minted-secret">API key</label>
          <div class="inline">
            <input id="minted-secret" ref={secretRef} readOnly value={minted.api_key} spellcheck={false} onFocus={(e) => (e.target as HTMLInputElement).select()} />
            <CopyButton text={minted.api_key} label="Copy the new API key" />
          </div>
          <p class="help">Scopes {minted.scopes.join(', ')}; expires {formatTime(minted.expires_at)}. The node keeps only a hash of it.</p>
          <button type="button" class="button" onClick={() => setMinted(undefined)}>I have copied it</button>
        </div>
      )}

      <h2>Keys of this tenant</h2>
      {error !== undefined && <ErrorView error={error} />}
      {keys === undefined && error === undefined && <Loading what="the keys" />}
      {keys && (
        <div class="table-wrap">
          <table class="keys">
            <thead><tr><th scope="col">Name</th><th scope="col">Key id</th><th scope="col">Scopes</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">State</th></tr></thead>
            <tbody>
              {keys.map((k) => (
                <tr key={k.key_id}>
                  <td>{k.name}</td>
                  <td><code>{k.key_id}</code></td>
                  <td>{k.scopes.join(', ')}</td>
                  <td>{formatTime(k.created_at)}</td>
                  <td>{k.expires_at ? formatTime(k.expires_at) : 'never'}</td>
                  <td>
                    {k.revoked_at ? <>revoked {formatTime(k.revoked_at)}</>
                      : confirming === k.key_id ? (
                        <span class="confirm">
                          Revoke “{k.name}”?{' '}
                          <button type="button" class="button danger small" onClick={() => void revoke(k.key_id)}>Yes, revoke</button>{' '}
                          <button type="button" class="button small" onClick={() => setConfirming(undefined)}>Cancel</button>
                        </span>
                      ) : <button type="button" class="button small" onClick={() => setConfirming(k.key_id)} aria-label={`Revoke key ${k.name} (${k.key_id})`}>Revoke</button>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  )
}
