import type { Principal } from '../types.js'

/** What a protocol adapter extracts from a request for the engine to authenticate. */
export interface CredentialInput {
  /** the raw `Authorization` header / metadata value */
  authorization?: string | undefined
  /** the `X-Svc-Namespace` header / metadata value */
  namespace?: string | undefined
  /** peer address, for the audit log and rate limits */
  ip: string
  /** a verified TLS client certificate, when the transport has one */
  clientCertificate?: {
    subject: string
    fingerprint256: string
    subjectAltName?: string
    /** the certificate's notAfter as the transport reports it (`Sep  3 20:33:31 2027 GMT`) */
    validTo?: string
  } | undefined
}

/** Turns credentials into a Principal, or throws 1003 (reason `unauthenticated` when none are valid). */
export interface Authenticator {
  authenticate(input: CredentialInput): Promise<Principal>
}
