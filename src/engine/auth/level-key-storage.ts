import type { CatalogStore, LevelDatabase } from '../storage/catalog-store.js'
import type { ApiKeyRecord, ApiKeyStorage } from './api-keys.js'

/** What the key storage needs to count keys in their tenant's storage (CatalogStore.keyUsage). */
export type KeyUsage = Pick<CatalogStore, 'keyUsage'>

/**
 * API key records in the `api_keys` sublevel (hashes only; the keys themselves are never stored).
 * With `usage`, each record's usage entry is written in its batch (storage per tenant): a new key
 * that would take its tenant past its storage quota is refused with 1005 `tenant_quota`.
 */
export function createLevelKeyStorage(db: LevelDatabase, usage?: KeyUsage): ApiKeyStorage {
  const keys = db.sublevel<string, ApiKeyRecord>('api_keys', { valueEncoding: 'json' })
  const prefix = (keys as unknown as { prefix: string }).prefix
  return {
    async get(id) {
      return (await keys.get(id)) ?? undefined
    },
    async put(record) {
      if (usage === undefined) {
        await keys.put(record.key_id, record, { sync: true } as object)
        return
      }
      const bytes = prefix.length + Buffer.byteLength(record.key_id) + Buffer.byteLength(JSON.stringify(record))
      const isNew = (await keys.get(record.key_id)) === undefined
      const charged = await usage.keyUsage(record.tenant_id, record.key_id, bytes, isNew)
      await db.batch([{ type: 'put', sublevel: keys, key: record.key_id, value: record }, ...charged.ops] as never, { sync: true } as object)
      charged.apply()
    },
    async list(tenant) {
      const out: ApiKeyRecord[] = []
      for await (const r of keys.values()) if (tenant === undefined || r.tenant_id === tenant) out.push(r)
      return out
    },
  }
}
