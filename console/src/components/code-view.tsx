import hljs from 'highlight.js/lib/core'
import go from 'highlight.js/lib/languages/go'
import javascript from 'highlight.js/lib/languages/javascript'
import json from 'highlight.js/lib/languages/json'
import python from 'highlight.js/lib/languages/python'
import typescript from 'highlight.js/lib/languages/typescript'
import { useMemo } from 'preact/hooks'

hljs.registerLanguage('javascript', javascript)
hljs.registerLanguage('typescript', typescript)
hljs.registerLanguage('python', python)
hljs.registerLanguage('json', json)
hljs.registerLanguage('go', go)

const LANGUAGES: Record<string, string> = { javascript: 'javascript', js: 'javascript', typescript: 'typescript', ts: 'typescript', python: 'python', py: 'python', json: 'json', go: 'go' }

/**
 * Source code with syntax highlighting. highlight.js escapes every character of the source it
 * wraps in its spans (its output is markup it built, never markup from the source), so the code is
 * shown as text whatever it holds; a language it does not know is shown as plain text.
 */
export function CodeView({ code, language, label }: { code: string; language: string; label: string }) {
  const lang = LANGUAGES[language.toLowerCase()]
  const html = useMemo(() => (lang ? hljs.highlight(code, { language: lang, ignoreIllegals: true }).value : undefined), [code, lang])
  return (
    <pre class="code" tabIndex={0} aria-label={label}>
      {html === undefined
        ? <code>{code}</code>
        : <code class={`hljs language-${lang}`} dangerouslySetInnerHTML={{ __html: html }} />}
    </pre>
  )
}
