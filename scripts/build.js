#!/usr/bin/env node
// Compiles src/, db/migrations and knexfile.ts into dist/ (tsconfig.build.json; `npm run build`,
// and `npm ci` through the `prepare` script), then removes compiled files whose source is gone:
// a renamed or deleted migration must not live on in dist/db/migrations. docs/cli.md, "Build".
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const root = path.resolve(__dirname, '..');
const dist = path.join(root, 'dist');

let tsc;
try {
  tsc = require.resolve('typescript/bin/tsc', { paths: [root] });
} catch {
  // A production install (npm ci --omit=dev) has no compiler; a dist/ copied in is used as it is.
  if (fs.existsSync(path.join(dist, 'src', 'app', 'main.js'))) process.exit(0);
  process.stderr.write(
    'build: TypeScript is not installed, so dist/ cannot be compiled; install the development dependencies (npm ci) and run npm run build\n',
  );
  process.exit(1);
}

const result = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json')], { cwd: root, stdio: 'inherit' });
if (result.status !== 0) process.exit(result.status ?? 1);

// Every dist/X.js needs X.ts (or X.js) in the checkout; dist/package.json is tsc's copy for src/http/openapi.ts.
function prune(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      prune(full);
      if (fs.readdirSync(full).length === 0) fs.rmdirSync(full);
      continue;
    }
    const match = /^(.*)\.js(\.map)?$/.exec(entry.name);
    if (!match) continue;
    const source = path.join(root, path.relative(dist, dir), match[1]);
    if (!fs.existsSync(`${source}.ts`) && !fs.existsSync(`${source}.js`)) fs.rmSync(full);
  }
}
prune(dist);
