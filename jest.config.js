/** Jest runs TypeScript through ts-jest; the global setup starts a throwaway Postgres and Redis. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/tests'],
  testMatch: ['**/*.test.ts'],
  // tests/cluster is `npm run test:cluster` (jest.cluster.config.js): it starts a whole cluster.
  // tests/faults runs after this suite, alone (jest.faults.config.js, from scripts/test.sh).
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/tests/cluster/', '<rootDir>/tests/faults/'],
  transform: { '^.+\\.ts$': 'ts-jest' },
  globalSetup: '<rootDir>/tests/harness/globalSetup.ts',
  globalTeardown: '<rootDir>/tests/harness/globalTeardown.ts',
  testTimeout: 60000,
  maxWorkers: 2,
  // A worker that has finished may take longer than jest's default 500 ms to be gone: the kernel
  // frees a heap of 500-700 MB after its last line has run, slowly on a loaded machine. A worker
  // kept alive by an open handle never ends and is still forced, with jest's warning, after 5 s
  // (docs/decisions.md, "Testing").
  workerGracefulExitTimeout: 5000,
  reporters: ['default', ['<rootDir>/tests/harness/summaryReporter.js', { stage: 'main' }]],
};
