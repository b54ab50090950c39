// Drives a client made of openapi-typescript's types (schema.d.ts, generated from /openapi.json
// beside this file by test/contract/generated-clients.test.ts, never committed) and openapi-fetch,
// against a live daemon: create a function, resolve it, execute it, fetch the backup archive.
// Prints one JSON line of what it got; the test asserts on it. Type-checked with tsc --noEmit first.
//
// usage: tsx drive.ts BASE_URL API_KEY
import createClient from 'openapi-fetch'
import type { components, paths } from './schema.js'

type CreateResult = components['schemas']['CreateResult']
type ErrorBody = components['schemas']['Error']

function fail(what: string, detail: unknown): never {
  console.error(`${what}: ${JSON.stringify(detail)}`)
  process.exit(1)
}

const [baseUrl, apiKey] = process.argv.slice(2)
if (baseUrl === undefined || apiKey === undefined) fail('usage', 'tsx drive.ts BASE_URL API_KEY')
const client = createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${apiKey}` } })

const created = await client.POST('/api/v1/functions/create', {
  body: { function_name: 'add', language: 'javascript', signature: '(a, b)', source_code: 'function add(a, b) {\n  return a + b\n}\n' },
})
if (created.data === undefined) fail('create', created.error)
const made: CreateResult = created.data

const resolved = await client.POST('/api/v1/functions/resolve', { body: { rufid: made.rufid } })
if (resolved.data === undefined) fail('resolve', resolved.error)

const executed = await client.POST('/api/v1/functions/{rufid}/execute', {
  params: { path: { rufid: resolved.data.rufid_short } },
  body: { arguments: [2, 3] },
})
if (executed.data === undefined) fail('execute', executed.error)

// an unknown function answers the typed Error model
const missing = await client.POST('/api/v1/functions/resolve', { body: { rufid: '000000000000' } })
if (missing.error === undefined) fail('resolve of an unknown function', missing.data)
const refusal: ErrorBody = missing.error

const backup = await client.GET('/api/v1/admin/backup', { parseAs: 'arrayBuffer' })
if (backup.data === undefined) fail('backup', backup.error)

console.log(JSON.stringify({
  created: { status: created.response.status, rufid: made.rufid },
  resolved: { rufid_short: resolved.data.rufid_short, function_name: resolved.data.function_name, language: resolved.data.language },
  executed: { result: executed.data.result, status: executed.data.status, rufid_short: executed.data.rufid_short },
  missing: { code: refusal.error.code, name: refusal.error.name },
  backup_magic: [...new Uint8Array(backup.data).subarray(0, 2)],
}))
