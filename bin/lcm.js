#!/usr/bin/env node
// The `lcm` command line (docs/cli.md). It runs the compiled build in dist/, which `npm ci`
// makes (the `prepare` script) and `npm run build` remakes. Without dist/, in a checkout with
// the development dependencies, it runs the TypeScript sources through tsx instead; with
// LCM_FROM_SOURCE=1 it always does (development: no build step after each change).
//
// The project runs on Node.js 24 or later. Started by an older Node (a machine's own, when lcm
// is run directly rather than through npm), it runs itself again on the project's Node (the
// `node` development dependency), or stops with a one-line reason (docs/decisions.md, "Runtime").
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const REQUIRED_MAJOR = 24;

/** True when this Node may run lcm; false when lcm now runs in a child on the project's Node. */
function onRequiredNode() {
  if (Number(process.versions.node.split('.')[0]) >= REQUIRED_MAJOR) return true;
  const own = path.join(__dirname, '..', 'node_modules', 'node', 'bin', 'node');
  if (!fs.existsSync(own)) {
    process.stderr.write(
      `lcm: needs Node.js ${REQUIRED_MAJOR} or later (this is ${process.version}); run it through npm (npm run lcm -- ...) after npm ci, or install Node.js ${REQUIRED_MAJOR}\n`,
    );
    process.exit(1);
  }
  // The child is this command: signals sent to this process are passed on, and its exit is ours.
  const { spawn } = require('node:child_process');
  const child = spawn(own, [__filename, ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('error', (err) => {
    process.stderr.write(`lcm: cannot start Node.js ${REQUIRED_MAJOR} from ${own}: ${err.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 + (require('node:os').constants.signals[signal] ?? 0) : 1)));
  return false;
}

const compiled = path.join(__dirname, '..', 'dist', 'src', 'app', 'main.js');

function entry() {
  if (process.env.LCM_FROM_SOURCE !== '1' && fs.existsSync(compiled)) return require(compiled);
  try {
    require.resolve('tsx/cjs');
  } catch {
    const why =
      process.env.LCM_FROM_SOURCE === '1'
        ? 'LCM_FROM_SOURCE=1 needs tsx, a development dependency'
        : 'the compiled build (dist/) is missing';
    process.stderr.write(`lcm: ${why}; in a checkout run npm ci (or npm run build)\n`);
    process.exit(1);
  }
  require('tsx/cjs');
  return require('../src/app/main.ts');
}

if (onRequiredNode()) entry().run(process.argv);
