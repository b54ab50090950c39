import { useEffect, useRef, useState } from 'preact/hooks'
import { api, ApiError } from '../api'
import { CopyButton } from '../components/copy-button'
import { ErrorView } from '../components/error-view'
import { PageTitle } from '../components/misc'
import { href } from '../router'

interface Created {
  rufid: string
  rufid_short: string
  version: string
  content_digest: string
  import_statement: string
  created: boolean
}

const LANGUAGES = [['javascript', 'JavaScript'], ['typescript', 'TypeScript'], ['python', 'Python']] as const
const BY_EXTENSION: Record<string, string> = { js: 'javascript', mjs: 'javascript', cjs: 'javascript', ts: 'typescript', mts: 'typescript', py: 'python' }

/** The first defined function's name, to prefill the name field (the operator can change it). */
function guessName(source: string, language: string): string | undefined {
  const m = language === 'python' ? /^\s*(?:async\s+)?def\s+([A-Za-z_][A-Za-z0-9_]*)/m.exec(source)
    : /(?:function\s*\*?\s*([A-Za-z_$][\w$]*)|(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=)/.exec(source)
  return m?.[1] ?? m?.[2]
}

/**
 * Publish a function: source (pasted or from a file), language, name, tags, description, an
 * optional manifest. The signature is derived by the node (rufid-v1 §10) as the source changes and
 * can be edited; the answer says the RUFID and whether identical content already existed.
 */
export function PublishPage() {
  const [name, setName] = useState('')
  const [nameTouched, setNameTouched] = useState(false)
  const [language, setLanguage] = useState('javascript')
  const [source, setSource] = useState('')
  const [signature, setSignature] = useState('')
  const [signatureEdited, setSignatureEdited] = useState(false)
  const [derivation, setDerivation] = useState<string>('')
  const [description, setDescription] = useState('')
  const [tags, setTags] = useState('')
  const [manifest, setManifest] = useState('')
  const [busy, setBusy] = useState(false)
  const [result, setResult] = useState<Created | undefined>()
  const [error, setError] = useState<unknown>()
  const resultRef = useRef<HTMLDivElement>(null)

  // the node derives the signature from the source (debounced), unless the operator typed one
  useEffect(() => {
    if (signatureEdited) return
    if (source.trim() === '' || name.trim() === '') {
      setDerivation('')
      return
    }
    let live = true
    const timer = window.setTimeout(() => {
      api<{ signature: string }>('POST', '/api/v1/functions/signature', { function_name: name.trim(), language, source_code: source })
        .then((a) => {
          if (!live) return
          setSignature(a.signature)
          setDerivation('derived by the node from the source')
        }, (err: unknown) => live && setDerivation(`not derived: ${(err as ApiError).message}`))
    }, 350)
    return () => {
      live = false
      clearTimeout(timer)
    }
  }, [source, name, language, signatureEdited])

  const onSource = (text: string): void => {
    setSource(text)
    if (!nameTouched) setName(guessName(text, language) ?? '')
  }

  const onFile = async (input: HTMLInputElement): Promise<void> => {
    const file = input.files?.[0]
    if (!file) return
    const ext = file.name.split('.').pop()?.toLowerCase() ?? ''
    const lang = BY_EXTENSION[ext] ?? language
    setLanguage(lang)
    const text = await file.text()
    setSource(text)
    if (!nameTouched) setName(guessName(text, lang) ?? file.name.replace(/\.[^.]+$/, '').replace(/[^A-Za-z0-9_]/g, '_'))
  }

  const submit = async (e: Event): Promise<void> => {
    e.preventDefault()
    setError(undefined)
    setResult(undefined)
    let manifestObject: unknown
    if (manifest.trim() !== '') {
      try {
        manifestObject = JSON.parse(manifest)
      } catch (err) {
        setError(new ApiError(0, 1006, 'VALIDATION_FAILED', `the manifest is not JSON: ${(err as Error).message}`))
        return
      }
    }
    setBusy(true)
    try {
      const body: Record<string, unknown> = {
        function_name: name.trim(),
        language,
        source_code: source,
        signature: signature.trim(),
        ...(description.trim() ? { description: description.trim() } : {}),
        tags: tags.split(',').map((t) => t.trim()).filter(Boolean),
        ...(manifestObject !== undefined ? { manifest: manifestObject, manifest_text: manifest } : {}),
      }
      setResult(await api<Created>('POST', '/api/v1/functions/create', body))
      window.setTimeout(() => resultRef.current?.focus(), 0)
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }

  return (
    <section aria-labelledby="page-title">
      <PageTitle>Publish a function</PageTitle>
      <form class="form" onSubmit={(e) => void submit(e)}>
        <div class="field">
          <label for="publish-file">Upload a source file</label>
          <input id="publish-file" type="file" accept=".js,.mjs,.cjs,.ts,.mts,.py,text/*" onChange={(e) => void onFile(e.target as HTMLInputElement)} />
        </div>
        <div class="field">
          <label for="publish-source">Source code</label>
          <textarea id="publish-source" class="code-input" rows={12} required spellcheck={false} value={source}
            onInput={(e) => onSource((e.target as HTMLTextAreaElement).value)} aria-describedby="publish-source-help" />
          <p id="publish-source-help" class="help">Define a function with the name below, e.g. <code>function add(a, b) {'{'} return a + b {'}'}</code> or <code>def add(a, b):</code>.</p>
        </div>
        <div class="row">
          <div class="field">
            <label for="publish-language">Language</label>
            <select id="publish-language" value={language} onChange={(e) => setLanguage((e.target as HTMLSelectElement).value)}>
              {LANGUAGES.map(([v, label]) => <option key={v} value={v}>{label}</option>)}
            </select>
          </div>
          <div class="field">
            <label for="publish-name">Function name</label>
            <input id="publish-name" required pattern="[A-Za-z_$][A-Za-z0-9_$]*" value={name}
              onInput={(e) => { setNameTouched(true); setName((e.target as HTMLInputElement).value) }} />
          </div>
        </div>
        <div class="field">
          <label for="publish-signature">Signature</label>
          <input id="publish-signature" required value={signature} spellcheck={false} aria-describedby="publish-signature-help"
            onInput={(e) => { setSignatureEdited(true); setSignature((e.target as HTMLInputElement).value) }} />
          <p id="publish-signature-help" class="help" role="status">
            {signatureEdited ? 'edited by you' : derivation || 'derived by the node once the source and name are filled in'}
            {signatureEdited && <> · <button type="button" class="link" onClick={() => setSignatureEdited(false)}>derive it again</button></>}
          </p>
        </div>
        <div class="field">
          <label for="publish-description">Description (optional)</label>
          <input id="publish-description" value={description} onInput={(e) => setDescription((e.target as HTMLInputElement).value)} />
        </div>
        <div class="field">
          <label for="publish-tags">Tags (optional, comma-separated)</label>
          <input id="publish-tags" value={tags} onInput={(e) => setTags((e.target as HTMLInputElement).value)} placeholder="math, demo" />
        </div>
        <details class="field">
          <summary>Manifest (optional)</summary>
          <label for="publish-manifest">function.svc.json</label>
          <textarea id="publish-manifest" class="code-input" rows={6} spellcheck={false} value={manifest}
            onInput={(e) => setManifest((e.target as HTMLTextAreaElement).value)} aria-describedby="publish-manifest-help" />
          <p id="publish-manifest-help" class="help">The node validates it and generates the lockfile.</p>
        </details>
        <button type="submit" class="button primary" disabled={busy}>{busy ? 'Publishing…' : 'Publish'}</button>
      </form>
      {error !== undefined && <ErrorView error={error} title="Not published" />}
      {result && (
        <div class="result success" tabIndex={-1} ref={resultRef} role="status" aria-labelledby="publish-result-title">
          <h2 id="publish-result-title">{result.created ? 'Published: a new function version' : 'Already published: identical content has this RUFID'}</h2>
          <dl class="facts">
            <dt>RUFID</dt>
            <dd><code class="rufid" id="published-rufid">{result.rufid}</code> <CopyButton text={result.rufid} label="Copy the RUFID" /></dd>
            <dt>Import</dt>
            <dd><code>{result.import_statement}</code> <CopyButton text={result.import_statement} label="Copy the import statement" /></dd>
          </dl>
          <p class="actions">
            <a class="button" href={href(['functions', result.rufid_short], { version: result.version })}>Open the function</a>
            <a class="button primary" href={href(['run', result.rufid_short], { version: result.version })}>Run it</a>
          </p>
        </div>
      )}
    </section>
  )
}
