import { canonicalJson } from '../../core/canonical-json.js'
import type { CatalogChange } from './catalog-replica.js'

/**
 * Why a replicated change was not applied:
 * - unsigned: it carries no signature (recorded before changes were signed, or by an older node)
 * - bad_signature: its signature does not verify against its origin's key: forged or altered
 * - unknown_origin: no credential of its origin was presented or is held
 * - untrusted_origin: its origin's credential is not one the federation accepts now (another CA,
 *   expired, revoked, bound to another origin)
 */
export const CHANGE_REJECTIONS = ['unsigned', 'bad_signature', 'unknown_origin', 'untrusted_origin'] as const
export type ChangeRejection = (typeof CHANGE_REJECTIONS)[number]

export type ChangeVerdict =
  | { ok: true; /** when the credential that vouched for the origin stops being valid (ISO time) */ credentialExpiresAt: string }
  | { ok: false; reason: ChangeRejection; detail: string }

/**
 * The replica's narrow port to the federation's identity: it signs this node's changes and checks
 * other origins' signatures, without the engine knowing what keys or certificates are.
 *
 * An origin is the identity a change names (a federation node's PeerId); a credential is what
 * vouches for it (the node's certificate, PEM). Signatures are over `signedBytes(change)`.
 */
export interface ChangeAuthenticator {
  /** the origin this node's changes carry */
  readonly origin: string
  /** this node's credential, shipped with its changes so that others can check them */
  readonly credential: string
  sign(bytes: Uint8Array): Promise<Uint8Array>
  /** checks that `signature` over `bytes` is `origin`'s and that `credential` vouches for `origin` now */
  verify(origin: string, bytes: Uint8Array, signature: Uint8Array, credential: string | undefined): Promise<ChangeVerdict>
}

/** A change without its code (changes travel without source; code is fetched by digest on demand). */
export const withoutCode = <C extends CatalogChange>(c: C): C => (c.kind === 'branch' ? c : { ...c, fn: { ...c.fn, source_code: '' } })

/**
 * The bytes a change's signature covers: the change as it travels (without code) and without its
 * signature, in canonical JSON (RFC 8785). Origin, sequence number, clock, key and content are all
 * inside, so a change cannot be altered, renumbered or moved to another key without its origin.
 */
export function signedBytes(change: CatalogChange): Uint8Array {
  const { sig: _sig, ...unsigned } = withoutCode(change)
  return new TextEncoder().encode(canonicalJson(unsigned))
}
