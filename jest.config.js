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
  reporters: ['default', ['<rootDir>/tests/harness/summaryReporter.js', { stage: 'main' }]],
};
