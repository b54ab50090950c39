/** Reading package metadata from an index over HTTP(S): bounded in time and size. */

export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>

export interface IndexRequestOptions {
  timeoutMs: number
  maxResponseBytes: number
  userAgent: string
  accept: string
  fetch: FetchLike
}

/** The index did not answer usefully (network error, timeout, 5xx, not JSON): retry later. */
export class IndexUnreachableError extends Error {
  constructor(readonly url: string, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'IndexUnreachableError'
  }
}

/** The index answered that it does not know the package (404/410). */
export class PackageNotFoundError extends Error {
  constructor(readonly url: string) {
    super(`not found at ${url}`)
    this.name = 'PackageNotFoundError'
  }
}

/** GETs a JSON document from an index. Redirects are followed; the whole exchange has one deadline. */
export async function fetchIndexJson(url: string, o: IndexRequestOptions): Promise<unknown> {
  let res: Response
  const signal = AbortSignal.timeout(o.timeoutMs)
  try {
    res = await o.fetch(url, { headers: { accept: o.accept, 'user-agent': o.userAgent }, redirect: 'follow', signal })
  } catch (err) {
    throw new IndexUnreachableError(url, describeFailure(err, o.timeoutMs), { cause: err })
  }
  if (res.status === 404 || res.status === 410) {
    await res.body?.cancel().catch(() => undefined)
    throw new PackageNotFoundError(url)
  }
  if (!res.ok) {
    await res.body?.cancel().catch(() => undefined)
    throw new IndexUnreachableError(url, `answered HTTP ${res.status}`)
  }
  const declared = Number(res.headers.get('content-length') ?? NaN)
  if (Number.isFinite(declared) && declared > o.maxResponseBytes) {
    await res.body?.cancel().catch(() => undefined)
    throw new IndexUnreachableError(url, `answer of ${declared} bytes exceeds the limit of ${o.maxResponseBytes}`)
  }
  let text: string
  try {
    text = await readCapped(res, o.maxResponseBytes)
  } catch (err) {
    if (err instanceof IndexUnreachableError) throw err
    throw new IndexUnreachableError(url, describeFailure(err, o.timeoutMs), { cause: err })
  }
  try {
    return JSON.parse(text) as unknown
  } catch {
    throw new IndexUnreachableError(url, 'answered with something that is not JSON')
  }
}

async function readCapped(res: Response, max: number): Promise<string> {
  if (!res.body) return ''
  const reader = res.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > max) {
      await reader.cancel().catch(() => undefined)
      throw new IndexUnreachableError(res.url, `answer exceeds the limit of ${max} bytes`)
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks).toString('utf8')
}

function describeFailure(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } }
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `no answer within ${timeoutMs} ms`
  const code = e?.cause?.code
  const detail = e?.cause?.message ?? e?.message ?? String(err)
  return code && !detail.includes(code) ? `${code}: ${detail}` : detail
}

/** An index base URL without trailing slashes; only http and https are accepted. */
export function normalizeIndexUrl(raw: string): string | undefined {
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    return undefined
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return undefined
  if (u.search || u.hash) return undefined
  return u.toString().replace(/(?<!\/)\/+$/, '')
}
