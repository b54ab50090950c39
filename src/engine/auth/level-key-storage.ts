import type { LevelDatabase } from '../storage/catalog-store.js'
import type { ApiKeyRecord, ApiKeyStorage } from './api-keys.js'

/** API key records in the `api_keys` sublevel (hashes only; the keys themselves are never stored). */
export function createLevelKeyStorage(db: LevelDatabase): ApiKeyStorage {
  const keys = db.sublevel<string, ApiKeyRecord>('api_keys', { valueEncoding: 'json' })
  return {
    async get(id) {
      return (await keys.get(id)) ?? undefined
    },
    async put(record) {
      await keys.put(record.key_id, record, { sync: true } as object)
    },
    async list(tenant) {
      const out: ApiKeyRecord[] = []
      for await (const r of keys.values()) if (tenant === undefined || r.tenant_id === tenant) out.push(r)
      return out
    },
  }
}
