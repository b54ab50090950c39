import { isIP } from 'node:net'
import type { Metadata } from '@grpc/grpc-js'
import type { CredentialInput } from '../../engine/index.js'
import { certificateCredentialOf, type PeerCertificate } from '../credentials.js'

/** What the gRPC door reads of a call to authenticate it (server calls of every kind have these). */
export interface CallCredentialsSource {
  metadata: Metadata
  getPeer(): string
  getAuthContext?(): { sslPeerCertificate?: PeerCertificate } | null
}

const firstString = (metadata: Metadata, key: string): string | undefined => {
  const value = metadata.get(key).find((v): v is string => typeof v === 'string')
  return value === undefined || value === '' ? undefined : value
}

/** `127.0.0.1:5000` or `::1:5000` (grpc-js does not bracket IPv6) into the address alone. */
export function ipOfPeer(peer: string): string {
  const withoutPort = peer.replace(/:\d+$/, '')
  if (isIP(withoutPort)) return withoutPort
  if (isIP(peer)) return peer
  return peer.replace(/^\[(.*)\](:\d+)?$/, '$1')
}

/**
 * The credentials of one call for `engine.access.admit`: `authorization` and `x-svc-namespace`
 * metadata, the peer address, and the client certificate when TLS verified one against the
 * client CA (grpc-js reports none otherwise).
 */
export function credentialsOf(call: CallCredentialsSource): CredentialInput {
  return {
    authorization: firstString(call.metadata, 'authorization'),
    namespace: firstString(call.metadata, 'x-svc-namespace'),
    ip: ipOfPeer(call.getPeer()),
    clientCertificate: certificateCredentialOf(call.getAuthContext?.()?.sslPeerCertificate),
  }
}
