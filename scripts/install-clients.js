#!/usr/bin/env node
// Installs the client packages' own locked dependencies (clients/typescript), run by `npm ci` at
// the root through `prepare` after the build, and again by the test command, which makes it a
// no-op when nothing changed. Skipped where the clients are not part of the tree (the image
// build leaves them out). docs/decisions.md, "TypeScript client and lcm-pull".
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const root = path.resolve(__dirname, '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

for (const dir of ['clients/typescript']) {
  const pkg = path.join(root, dir);
  const lock = path.join(pkg, 'package-lock.json');
  if (!fs.existsSync(lock)) continue;
  // npm writes node_modules/.package-lock.json after an install; it is up to date when it is
  // newer than the lock file it was installed from.
  const installed = path.join(pkg, 'node_modules', '.package-lock.json');
  if (fs.existsSync(installed) && fs.statSync(installed).mtimeMs >= fs.statSync(lock).mtimeMs) continue;
  process.stdout.write(`install-clients: npm ci in ${dir}\n`);
  const result = spawnSync(npm, ['ci', '--prefix', pkg, '--no-audit', '--no-fund'], { cwd: pkg, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
