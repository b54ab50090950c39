/**
 * The TypeScript client of svc-node, exported by the package as `svc-node/client`.
 *
 * - `SvcClient`: typed methods for every REST operation, plus execution event subscriptions;
 * - typed errors (`SvcError` and one subclass per code);
 * - RUFID computation and signature derivation from the daemon's own code (`src/core/rufid.ts`,
 *   `src/core/signature.ts`);
 * - `registerSvcLoader()`: `(await import('svc://<rufid_short>')).default` is an async callable
 *   that executes the function on the configured node.
 */
export {
  CLIENT_VERSION, DEFAULT_URL, PROTOCOL_VERSION, SvcClient, parseRufid,
  type RequestOptions, type SvcClientOptions, type SvcFunction, type WaitOptions,
} from './client.js'
export {
  ERROR_CODES, ExecutionFailedError, ExecutionTimeoutError, FederationUnreachableError, InternalError, InvalidRufidError,
  NotFoundError, PermissionDeniedError, RateLimitedError, RufidCollisionError, RufidNotFoundError, ServiceUnavailableError,
  SvcConnectionError, SvcError, SyncConflictError, ValidationFailedError, WaitTimeoutError,
  errorFromResponse, isSvcError,
  type SvcErrorInit, type SvcErrorSubclassInit,
} from './errors.js'
export { EventSubscription, type SubscribeOptions } from './subscriptions.js'
export { registerSvcLoader, type SvcLoaderOptions } from './loader.js'
export { deriveSignature } from './signature.js'
export type { SignatureFailure, SignatureSource } from '../core/signature.js'
export type * from './types.js'
// RUFID v1: the very functions the daemon uses (one implementation, checked against the vectors)
export {
  BASE62_ALPHABET, FULL_RUFID, SHORT_RUFID, base62, computeRufid, formatRufid, isShortRufid, languageFamily,
  normalizeSource,
  type LanguageFamily, type ParsedRufid, type RufidComputation, type RufidInput,
} from '../core/rufid.js'
// execution receipts (docs/receipts.md): the daemon's own verification
export { ReceiptError, argumentsDigest, isReceiptError, lockfileDigest, receiptDigest, resultDigest, verifyReceipt, type Receipt, type ReceiptFailure, type VerifiedReceipt, type VerifyReceiptOptions } from '../core/receipt.js'
