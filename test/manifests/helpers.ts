import { MemoryLevel } from 'memory-level'
import { SvcError } from '../../src/core/errors.js'
import {
  createCatalogStore, createEngine, createMetrics, EventBus, type EngineComponents, type LevelDatabase, type LockfileGeneratorInit,
} from '../../src/engine/index.js'
import { noSandbox, type TestEngine } from '../fixtures/engine.js'

/**
 * The whole engine on memory-level, as test/fixtures/engine.ts builds it, with lockfile
 * generation pointed at a fixture index.
 */
export async function createManifestTestEngine(
  lockfile: LockfileGeneratorInit,
  options: { sandbox?: EngineComponents['sandbox']; db?: LevelDatabase } = {},
): Promise<TestEngine> {
  const db = options.db ?? (new MemoryLevel<string, unknown>({ valueEncoding: 'json' }) as unknown as LevelDatabase)
  const engine = createEngine(
    {
      registry: { cache: { maxEntries: 1000, ttlMs: 60_000 }, maxSourceBytes: 64 * 1024, shareBase: 'https://share.test/f/' },
      execution: {
        defaults: { timeoutMs: 1000, memoryMb: 32, cpuMs: 1000 },
        max: { timeoutMs: 2000, memoryMb: 64, cpuMs: 2000 },
      },
      auth: { mode: 'standard', defaultTenant: 'default', keys: { defaultExpiresDays: 90, maxExpiresDays: 3650 } },
      rateLimits: {
        perKey: { points: 0, windowSeconds: 1 },
        perTenant: { points: 0, windowSeconds: 1 },
        perIpUnauthenticated: { points: 0, windowSeconds: 1 },
      },
      audit: { retentionDays: 0, sweepIntervalMs: 60_000 },
      lockfile,
    },
    { db, store: createCatalogStore({ db }), sandbox: options.sandbox ?? noSandbox, metrics: createMetrics(), events: new EventBus() },
  )
  await engine.start()
  return { engine, db }
}

/** The SvcError a promise rejects with (fails the test when it resolves or throws anything else). */
export async function rejectionOf(p: Promise<unknown>): Promise<SvcError> {
  try {
    await p
  } catch (err) {
    if (err instanceof SvcError) return err
    throw err
  }
  throw new Error('expected a rejection')
}

export const pointersOf = (err: SvcError): string[] => ((err.details.problems ?? []) as Array<{ pointer: string }>).map((p) => p.pointer)

/** A manifest of §2.4 with pip and npm dependencies. */
export function sampleManifest(name = 'add'): Record<string, unknown> {
  return {
    schemaVersion: '1.0',
    name,
    description: 'adds two numbers',
    entrypoint: `main:${name}`,
    runtime: { language: 'javascript', version: '20' },
    dependencies: {
      pip: [{ name: 'requests', version: '>=2.28,<3' }, { name: 'numpy' }],
      npm: [{ name: 'lodash', version: '^4.17.0' }],
      system: ['zlib', 'libpq-dev'],
    },
    environment: { API_TOKEN: 'required' },
    scripts: { post_install: 'echo done' },
    metadata: { owner: 'team-math', tier: 'gold' },
  }
}
