/**
 * The fault suite (tests/faults): servers killed, floods, restarts. Run by `npm test` after the
 * main suite, one file at a time and alone, so its timing checks (ratios against a baseline it
 * measures itself) are not disturbed by the main suite's parallel workers. Also
 * `npm run test:faults` on its own.
 */
const main = require('./jest.config');

module.exports = {
  ...main,
  roots: ['<rootDir>/tests/faults'],
  testPathIgnorePatterns: ['/node_modules/'],
  testTimeout: 240000,
  maxWorkers: 1,
  reporters: ['default', ['<rootDir>/tests/harness/summaryReporter.js', { stage: 'faults' }]],
};
