/** Jest runs TypeScript through ts-jest; the global setup starts a throwaway Postgres and Redis. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/tests'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': 'ts-jest' },
  globalSetup: '<rootDir>/tests/harness/globalSetup.ts',
  globalTeardown: '<rootDir>/tests/harness/globalTeardown.ts',
  testTimeout: 60000,
  maxWorkers: 2,
  reporters: ['default', '<rootDir>/tests/harness/summaryReporter.js'],
};
