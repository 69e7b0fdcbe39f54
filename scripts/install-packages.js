#!/usr/bin/env node
// Installs the nested packages' own locked dependencies, run by `npm ci` at the root through
// `prepare` after the build, and again by the test command, which makes it a no-op when nothing
// changed:
//   clients/typescript      the typed client and lcm-pull (docs/decisions.md, "TypeScript client and lcm-pull")
//   packages/api-reference  the browser bundle of /api/docs (docs/decisions.md, "Runtime")
// npm runs here on the project's own Node (the `node` development dependency that `prepare`
// finds first on its PATH), so packages that need Node 24 install without engine warnings even
// where the machine's own Node is older. Skipped where a package is not part of the tree.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const root = path.resolve(__dirname, '..');

/** npm itself, run by this process's Node when npm started us (npm_execpath), else the npm on the PATH. */
function npmCommand(args) {
  const cli = process.env.npm_execpath;
  if (cli && /\.c?js$/.test(cli) && fs.existsSync(cli)) return [process.execPath, [cli, ...args]];
  return [process.platform === 'win32' ? 'npm.cmd' : 'npm', args];
}

for (const dir of ['clients/typescript', 'packages/api-reference']) {
  const pkg = path.join(root, dir);
  const lock = path.join(pkg, 'package-lock.json');
  if (!fs.existsSync(lock)) continue;
  // npm writes node_modules/.package-lock.json after an install; it is up to date when it is
  // newer than the lock file it was installed from.
  const installed = path.join(pkg, 'node_modules', '.package-lock.json');
  if (fs.existsSync(installed) && fs.statSync(installed).mtimeMs >= fs.statSync(lock).mtimeMs) continue;
  process.stdout.write(`install-packages: npm ci in ${dir}\n`);
  const [command, args] = npmCommand(['ci', '--prefix', pkg, '--no-audit', '--no-fund']);
  const result = spawnSync(command, args, { cwd: pkg, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
