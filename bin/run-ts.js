#!/usr/bin/env node
// Runs a TypeScript file directly (tsx), like bin/lcm.js: `node bin/run-ts.js bench/exports.ts [args]`.
const path = require('node:path');

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: node bin/run-ts.js FILE.ts [args...]\n');
  process.exit(2);
}
require('tsx/cjs');
// The script sees its own arguments after its name, as if it were run directly.
process.argv.splice(1, 1);
require(path.resolve(file));
