import { useState } from 'preact/hooks'
import { api, ApiError, type Identity } from '../api'
import { PageTitle } from '../components/misc'

/** One password field for an API key or a JWT; the key is checked with the node before it is kept. */
export function SignInPage({ onSignedIn, notice }: { onSignedIn: (token: string, identity: Identity) => void; notice?: string | undefined }) {
  const [token, setToken] = useState('')
  const [error, setError] = useState<string | undefined>()
  const [busy, setBusy] = useState(false)
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault()
    const key = token.trim()
    if (key === '') {
      setError('Paste an API key (svck_…) or a JWT.')
      return
    }
    setBusy(true)
    setError(undefined)
    try {
      const identity = await api<Identity>('GET', '/api/v1/auth/whoami', undefined, { token: key })
      setToken('')
      onSignedIn(key, identity)
    } catch (err) {
      const e = err as ApiError
      setError(e.status === 401
        ? `This key was refused: ${e.message}. Check that you pasted the whole key (it starts with svck_), and that it was not revoked or has not expired.`
        : e.status === 429 ? `Too many attempts: ${e.message}. Wait a moment and try again.`
        : `Sign-in failed: ${e.message}`)
    } finally {
      setBusy(false)
    }
  }
  return (
    <section class="sign-in" aria-labelledby="page-title">
      <PageTitle>Sign in to this node</PageTitle>
      {notice && <p class="notice" role="status">{notice}</p>}
      <form onSubmit={(e) => void submit(e)} class="form narrow">
        <label for="token">API key or JWT</label>
        <input
          id="token" name="token" type="password" autoComplete="off" spellcheck={false} required
          value={token} onInput={(e) => setToken((e.target as HTMLInputElement).value)}
          aria-describedby="token-help" aria-invalid={error ? 'true' : 'false'}
        />
        <p id="token-help" class="help">
          On its first start the node printed an administrator key as a line <code>ADMIN_API_KEY=svck_…</code>.
          The key stays in this browser tab only (session storage) and is sent to this node as a Bearer header.
        </p>
        {error && <p class="error" role="alert" id="sign-in-error">{error}</p>}
        <button type="submit" class="button primary" disabled={busy}>{busy ? 'Checking…' : 'Sign in'}</button>
      </form>
    </section>
  )
}
