/**
 * `npm run test:cluster` (scripts/test-cluster.sh): the scale-out test on real engines, apart
 * from `npm test`. The test file starts everything it needs itself (tests/cluster/harness).
 */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/tests/cluster'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': 'ts-jest' },
  testTimeout: 120000,
  maxWorkers: 1,
  reporters: ['default', ['<rootDir>/tests/harness/summaryReporter.js', { stage: 'cluster' }]],
};
