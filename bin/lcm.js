#!/usr/bin/env node
// The `lcm` command line (docs/cli.md). It runs the compiled build in dist/, which `npm ci`
// makes (the `prepare` script) and `npm run build` remakes. Without dist/, in a checkout with
// the development dependencies, it runs the TypeScript sources through tsx instead; with
// LCM_FROM_SOURCE=1 it always does (development: no build step after each change).
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const compiled = path.join(__dirname, '..', 'dist', 'src', 'app', 'main.js');

function entry() {
  if (process.env.LCM_FROM_SOURCE !== '1' && fs.existsSync(compiled)) return require(compiled);
  try {
    require.resolve('tsx/cjs');
  } catch {
    const why = process.env.LCM_FROM_SOURCE === '1' ? 'LCM_FROM_SOURCE=1 needs tsx, a development dependency' : 'the compiled build (dist/) is missing';
    process.stderr.write(`lcm: ${why}; in a checkout run npm ci (or npm run build)\n`);
    process.exit(1);
  }
  require('tsx/cjs');
  return require('../src/app/main.ts');
}

entry().run(process.argv);
