// Mutation testing of src/core (issue 28): `npm run mutation`. StrykerJS 9.6 with the vitest
// runner (pinned devDependencies; 10.x needs Node 22). See docs/mutation-testing.md.
//
// Incremental: the results of the last run are committed in reports/stryker-incremental.json, and
// a run re-tests only the mutants whose code or covering tests changed since (a clean clone that
// changed nothing in src/core or test/core re-tests nothing). `npm run mutation -- --force` runs
// everything again and rewrites the file.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  plugins: ['@stryker-mutator/vitest-runner'],
  vitest: { configFile: 'test/mutation/vitest.config.ts', related: false },
  mutate: ['src/core/**/*.ts', '!src/core/index.ts'],
  coverageAnalysis: 'perTest',
  // the machine is shared; 2 runners keep the run to a few minutes incrementally
  concurrency: 2,
  // a mutant that loops forever (a lexer that never advances) is a timeout, which counts as
  // detected; the tests of core take milliseconds, so 3 s over the measured time is plenty
  timeoutMS: 3000,
  incremental: true,
  incrementalFile: 'reports/stryker-incremental.json',
  reporters: ['clear-text', 'progress-append-only', 'json'],
  jsonReporter: { fileName: 'reports/mutation/core.json' },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
  // the goal of issue 28 is 90 %; measured 83.55 % on 2026-11-28 (docs/mutation-testing.md): the run
  // fails when the score drops below what is reached; raise `break` as survivors are killed or marked
  thresholds: { high: 95, low: 90, break: 83 },
}
