#!/usr/bin/env node
// Runs the TypeScript sources directly (tsx), so `npm run lcm` works right after `npm ci`.
require('tsx/cjs');
require('../src/app/main.ts').run(process.argv);
