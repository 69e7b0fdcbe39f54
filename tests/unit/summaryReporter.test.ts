import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');

/**
 * The closing line of every jest stage (tests/harness/summaryReporter.js): a file that fails to
 * run holds no failed test, and must still count, on the line and in the stage's summary record.
 */
describe('the summary line', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-reporter-'));
    fs.writeFileSync(path.join(dir, 'passes.test.js'), "it('passes', () => expect(1).toBe(1));\n");
    fs.writeFileSync(path.join(dir, 'fails.test.js'), "it('fails', () => expect(1).toBe(2));\n");
    fs.writeFileSync(path.join(dir, 'cannotRun.test.js'), "require('./no-such-module');\nit('never runs', () => undefined);\n");
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('when a file fails to run beside a passing and a failing test, then the line counts it and the run fails', async () => {
    const record = path.join(dir, 'summary.ndjson');
    const config = {
      rootDir: dir,
      testMatch: ['**/*.test.js'],
      reporters: [[path.join(ROOT, 'tests/harness/summaryReporter.js'), { stage: 'probe' }]],
    };
    const outcome = await run(
      process.execPath,
      [path.join(ROOT, 'node_modules/jest/bin/jest.js'), '--ci', '--config', JSON.stringify(config)],
      {
        cwd: dir,
        env: { ...process.env, LCM_TEST_SUMMARY: record },
      },
    ).then(
      (r) => ({ code: 0, stdout: r.stdout }),
      (err: { code: number; stdout: string }) => ({ code: err.code, stdout: err.stdout }),
    );
    expect(outcome.code).not.toBe(0);
    expect(outcome.stdout).toContain('tests: 1 passed, 1 failed, 1 file failed to run');
    expect(JSON.parse(fs.readFileSync(record, 'utf8'))).toEqual({ stage: 'probe', passed: 1, failed: 1, notRun: 1, skipped: 0 });
  }, 60_000);
});
