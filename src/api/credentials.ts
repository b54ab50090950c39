import type { IncomingMessage } from 'node:http'
import type { TLSSocket } from 'node:tls'
import type { CredentialInput } from '../engine/index.js'

/**
 * How every door reads a caller's credentials: the one place a bearer token, a namespace and a
 * verified TLS client certificate become the engine's `CredentialInput`.
 */

/** A peer certificate as Node's TLS and grpc-js report it. */
export interface PeerCertificate {
  subject?: object
  fingerprint256?: string
  /** notAfter, e.g. `Sep  3 20:33:31 2027 GMT`: streams the certificate opened end then */
  valid_to?: string
}

/**
 * The client certificate part of the credentials: present only when the transport verified the
 * certificate against the client CA (`socket.authorized`, or grpc-js's auth context).
 */
export function certificateCredentialOf(cert: PeerCertificate | undefined): CredentialInput['clientCertificate'] {
  if (!cert || !cert.subject || !cert.fingerprint256) return undefined
  return {
    subject: Object.entries(cert.subject).map(([k, v]) => `${k}=${String(v)}`).join('\n'),
    fingerprint256: cert.fingerprint256,
    ...(cert.valid_to ? { validTo: cert.valid_to } : {}),
  }
}

/** The verified client certificate of an HTTP(S) request's socket, if any. */
export function verifiedCertificateOf(req: IncomingMessage): CredentialInput['clientCertificate'] {
  const socket = req.socket as Partial<TLSSocket>
  if (!socket.authorized || typeof socket.getPeerCertificate !== 'function') return undefined
  return certificateCredentialOf(socket.getPeerCertificate())
}

const headerOf = (req: IncomingMessage, name: string): string | undefined => {
  const v = req.headers[name]
  return typeof v === 'string' && v !== '' ? v : undefined
}

/** `svc.bearer.<base64url(token)>`: credentials a browser can send on a WebSocket without a URL. */
export const BEARER_SUBPROTOCOL_PREFIX = 'svc.bearer.'

/**
 * `Bearer <token>` from an offered `svc.bearer.<base64url>` WebSocket subprotocol
 * (`Sec-WebSocket-Protocol`), if any: how a browser, which cannot set headers on a WebSocket,
 * sends its key without putting it in the URL. A malformed or empty one counts as none.
 */
export function subprotocolBearerOf(req: IncomingMessage): string | undefined {
  for (const protocol of headerOf(req, 'sec-websocket-protocol')?.split(',') ?? []) {
    const p = protocol.trim()
    if (!p.startsWith(BEARER_SUBPROTOCOL_PREFIX)) continue
    const encoded = p.slice(BEARER_SUBPROTOCOL_PREFIX.length)
    if (!/^[A-Za-z0-9_-]+$/.test(encoded)) return undefined
    const token = Buffer.from(encoded, 'base64url').toString('utf8')
    return token === '' ? undefined : `Bearer ${token}`
  }
  return undefined
}

/**
 * The credentials of an HTTP request or WebSocket upgrade: the `Authorization` and
 * `X-Svc-Namespace` headers unless `given` names them (a graphql-ws `connectionParams`, `/ws`'s
 * `?token=`, the native execute body's `namespace`), the caller's address and its verified
 * client certificate.
 */
export function httpCredentialsOf(
  req: IncomingMessage,
  ip: string,
  given?: { authorization?: string | undefined; namespace?: string | undefined; preferGiven?: boolean },
): CredentialInput {
  const preferGiven = given?.preferGiven ?? true
  const authorization = preferGiven ? given?.authorization ?? headerOf(req, 'authorization') : headerOf(req, 'authorization') ?? given?.authorization
  const namespace = preferGiven ? given?.namespace ?? headerOf(req, 'x-svc-namespace') : headerOf(req, 'x-svc-namespace') ?? given?.namespace
  return { authorization, namespace, ip, clientCertificate: verifiedCertificateOf(req) }
}
