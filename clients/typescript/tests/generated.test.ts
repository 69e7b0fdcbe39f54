import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * The committed types are what openapi-typescript makes of the document the API of this
 * checkout serves: an endpoint, parameter or schema changed without `npm run generate` fails
 * here. The generator runs as a child process (openapi-typescript loads ES modules, which jest
 * cannot), composing the app in process as `npm run generate` does.
 */
const PACKAGE = path.resolve(__dirname, '..');
const TYPES = path.join(PACKAGE, 'src/generated/openapi.ts');

function check(dir = 'src/generated'): { status: number | null; output: string } {
  const run = spawnSync(process.execPath, [path.resolve(PACKAGE, '../../bin/run-ts.js'), 'scripts/generate.ts', '--check', '--dir', dir], {
    cwd: PACKAGE,
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

describe('src/generated', () => {
  it('when the API document is generated afresh, then the committed document and types are identical to it', () => {
    const result = check();
    expect(result.output).toContain('up to date: src/generated/openapi.json');
    expect(result.output).toContain('up to date: src/generated/openapi.ts');
    expect(result.status).toBe(0);
  });

  it('when a committed file differs from the document, then the check fails and names it', () => {
    const copy = mkdtempSync(path.join(os.tmpdir(), 'lcm-generated-'));
    try {
      cpSync(path.join(PACKAGE, 'src/generated'), copy, { recursive: true });
      const types = path.join(copy, 'openapi.ts');
      writeFileSync(types, readFileSync(types, 'utf8').replace('"/calls": {', '"/callz": {'));
      const result = check(copy);
      expect(result.status).toBe(1);
      expect(result.output).toContain('openapi.ts drifted from GET /api/openapi.json');
      expect(result.output).toMatch(/up to date: .*openapi\.json/);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });

  it('when the types are generated, then they name the operations the pull tool calls', () => {
    const types = readFileSync(TYPES, 'utf8');
    expect(types).toContain('"/calls": {');
    expect(types).toContain('"/simpleleads": {');
    expect(types).toContain('RateLimit: components["headers"]["RateLimit"]');
  });
});
