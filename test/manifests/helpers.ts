import { SvcError } from '../../src/core/errors.js'
import type { EngineComponents, LevelDatabase, LockfileGeneratorInit } from '../../src/engine/index.js'
import { createTestEngine, rejectionOf, type TestEngine } from '../fixtures/engine.js'

export { rejectionOf }

/** The shared test engine with lockfile generation pointed at a fixture index. */
export function createManifestTestEngine(
  lockfile: LockfileGeneratorInit,
  options: { sandbox?: EngineComponents['sandbox']; db?: LevelDatabase } = {},
): Promise<TestEngine> {
  return createTestEngine({ ...options, lockfile })
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
