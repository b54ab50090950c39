import { SvcError } from '../../core/errors.js'
import { computeRufid } from '../../core/rufid.js'
import { fitsUtf8Bytes } from '../../core/text.js'
import type { CatalogStore } from '../storage/catalog-store.js'
import type { FunctionVersion } from '../types.js'
import type { FederationPort } from './federation-port.js'

/**
 * Completes a replicated version with its code: asks the federation for it (a provider found in
 * the DHT), accepts it only when it hashes to the version's content digest, and caches it in the
 * store. 2001 when the node is not federated or no provider delivers matching code. Code longer
 * than `maxSourceBytes` (registry.max_source_bytes; no create on this node could have made it) is
 * refused before it is hashed.
 */
export async function fetchMissingCode(
  fn: FunctionVersion,
  components: { store: CatalogStore; federation: FederationPort | undefined; maxSourceBytes?: number },
): Promise<FunctionVersion> {
  const { federation, store, maxSourceBytes } = components
  if (federation?.fetchCode === undefined) {
    throw new SvcError('FEDERATION_UNREACHABLE', `the code of ${fn.rufid_short} v${fn.version} is held by federation peers and this node is not federated`, {
      details: { rufid_short: fn.rufid_short, content_digest: fn.content_digest },
    })
  }
  const source_code = await federation.fetchCode(fn.tenant_id, fn.rufid_short, fn.version, fn.content_digest)
  if (maxSourceBytes !== undefined && !fitsUtf8Bytes(source_code, maxSourceBytes)) {
    throw new SvcError('FEDERATION_UNREACHABLE', `the code delivered for ${fn.content_digest} is longer than registry.max_source_bytes (${maxSourceBytes})`, {
      details: { rufid_short: fn.rufid_short },
    })
  }
  if (computeRufid({ ...fn, source_code }).content_digest !== fn.content_digest) {
    throw new SvcError('FEDERATION_UNREACHABLE', `no provider delivered code matching ${fn.content_digest}`, { details: { rufid_short: fn.rufid_short } })
  }
  const full: FunctionVersion = { ...fn, source_code }
  const stored = await store.getFunction(fn.tenant_id, fn.rufid_short, fn.version)
  await store.putReplicatedVersion({ ...(stored ?? fn), source_code }, undefined)
  return full
}
