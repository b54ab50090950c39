// The vitest configuration StrykerJS runs (stryker.config.mjs): the tests that kill src/core's
// mutants. Stryker's vitest runner runs them in worker threads, where the main configuration's
// `--no-node-snapshot` (needed by isolated-vm, which no test here loads) cannot be passed.
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    include: ['test/core/**/*.test.ts'],
    // its child process imports the instrumented core but never runs an active mutant: only cost
    exclude: ['test/core/signature-linear-time.test.ts'],
    setupFiles: ['./src/polyfill.ts'],
    testTimeout: 30_000,
  },
})
