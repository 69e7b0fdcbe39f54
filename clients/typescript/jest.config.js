/**
 * The client's tests. Those that pull from the API run it in process on a throwaway Postgres
 * and redis-server, started by the repository's test harness (tests/harness at the root).
 */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/tests'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.json' }] },
  globalSetup: '<rootDir>/../../tests/harness/globalSetup.ts',
  globalTeardown: '<rootDir>/../../tests/harness/globalTeardown.ts',
  testTimeout: 120000,
  maxWorkers: 2,
  reporters: ['default', ['<rootDir>/../../tests/harness/summaryReporter.js', { stage: 'client' }]],
};
