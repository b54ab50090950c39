import { isIP } from 'node:net'
import type { Metadata } from '@grpc/grpc-js'
import type { CredentialInput } from '../../engine/index.js'
import { CONNECTION_ADDRESSES, type ClientAddresses } from '../client-address.js'
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
 * The caller's address of a call: the peer's, or, when the peer is a trusted proxy
 * (`server.trusted_proxies`), the one its `forwarded` / `x-forwarded-for` metadata names
 * (api/client-address.ts; several values of one key are one list, in order).
 */
export function callerAddressOf(call: Pick<CallCredentialsSource, 'metadata' | 'getPeer'>, addresses: ClientAddresses = CONNECTION_ADDRESSES): string {
  const peer = ipOfPeer(call.getPeer())
  if (!addresses.trustsProxies) return peer
  return addresses.of(peer, { forwarded: joined(call.metadata, 'forwarded'), xForwardedFor: joined(call.metadata, 'x-forwarded-for') })
}

const joined = (metadata: Metadata, key: string): string | undefined => {
  const values = metadata.get(key).filter((v): v is string => typeof v === 'string')
  return values.length === 0 ? undefined : values.join(', ')
}

/**
 * The credentials of one call for `engine.access.admit`: `authorization` and `x-svc-namespace`
 * metadata, the caller's address (`callerAddressOf`), and the client certificate when TLS
 * verified one against the client CA (grpc-js reports none otherwise).
 */
export function credentialsOf(call: CallCredentialsSource, addresses: ClientAddresses = CONNECTION_ADDRESSES): CredentialInput {
  return {
    authorization: firstString(call.metadata, 'authorization'),
    namespace: firstString(call.metadata, 'x-svc-namespace'),
    ip: callerAddressOf(call, addresses),
    clientCertificate: certificateCredentialOf(call.getAuthContext?.()?.sslPeerCertificate),
  }
}
