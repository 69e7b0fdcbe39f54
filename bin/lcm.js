#!/usr/bin/env node
// Runs the TypeScript sources directly (tsx), so `npm run lcm` works right after `npm ci`.
require('tsx/cjs');
require('../src/app/main.ts').main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`lcm: ${err && err.message ? err.message : 'failed without a reason (' + String(err) + ')'}\n`);
    process.exitCode = 1;
  },
);
