// Prints one plain closing line that any CI log reader understands:
//   "tests: N passed, N failed, N files failed to run"
// A test file that fails to run (a syntax error, a crash in its set-up, a worker killed under it)
// holds no failed test, yet the run failed: it is counted on the line, not only in jest's own
// summary. With LCM_TEST_SUMMARY set, the counts are also appended to that file as one JSON line
// (scripts/test.sh adds up its stages from it).
const fs = require('node:fs');

class SummaryReporter {
  constructor(_globalConfig, options = {}) {
    this.stage = options.stage;
  }

  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    // Failed to run: jest's testExecError, or a file-level failure (an afterAll that threw) with no failing test to show for it.
    const notRun = results.testResults.filter((r) => r.testExecError != null || (r.failureMessage && r.numFailingTests === 0)).length;
    const counts = { stage: this.stage, passed: results.numPassedTests, failed: results.numFailedTests, notRun, skipped };
    process.stdout.write(
      `\ntests: ${counts.passed} passed, ${counts.failed} failed, ${notRun} ${notRun === 1 ? 'file' : 'files'} failed to run` +
        (skipped ? `, ${skipped} skipped` : '') +
        '\n',
    );
    if (process.env.LCM_TEST_SUMMARY) fs.appendFileSync(process.env.LCM_TEST_SUMMARY, JSON.stringify(counts) + '\n');
  }
}

module.exports = SummaryReporter;
