import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { createOwnDatabase, createTestApp, type TestApp, uniq, basicAuth } from '../harness/testApp';
import { createWorld, type World } from '../harness/world';
import { createAccount, setEnabled } from '../../src/ingest/accountCommands';
import { openEventStream, type OpenedStream } from '../harness/eventStreamClient';
import { until } from '../harness/until';

/**
 * `lcm serve` as it runs in production: a supervisor, WEB_CONCURRENCY=2 HTTP workers sharing the
 * port, and a jobs process, on a database of this file's own and without Redis (counts in
 * Postgres). What the processes must share they share; a worker that dies is replaced; SIGTERM
 * ends them all.
 */
const LCM = path.resolve(__dirname, '../../bin/lcm.js');
jest.setTimeout(240_000);

/** One request on a connection of its own, so the kernel may hand it to either worker. */
function get(port: number, p: string, auth?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: p, agent: false, headers: auth ? { Authorization: auth } : {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('timed out')));
  });
}

/** The processes forked by `pid` (Linux), with the role each was given. */
function childrenOf(pid: number): { pid: number; role: string | undefined }[] {
  const text = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
  return text === ''
    ? []
    : text.split(/\s+/).flatMap((s) => {
        const child = Number(s);
        try {
          const env = fs.readFileSync(`/proc/${child}/environ`, 'utf8').split('\0');
          const role = env.find((e) => e.startsWith('LCM_WORKER_ROLE='))?.slice('LCM_WORKER_ROLE='.length);
          return [{ pid: child, role }];
        } catch {
          return []; // gone meanwhile
        }
      });
}

/** Listening TCP sockets on `port` (Linux /proc/net/tcp: state 0A is LISTEN). */
function listeningSockets(port: number): number {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  return fs
    .readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .filter((line) => {
      const fields = line.trim().split(/\s+/);
      return fields[1]?.endsWith(`:${hexPort}`) && fields[3] === '0A';
    }).length;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('lcm serve with two HTTP workers and no Redis', () => {
  let own: Awaited<ReturnType<typeof createOwnDatabase>>;
  let t: TestApp;
  let w: World;
  let server: ChildProcess;
  let port: number;
  let output = '';

  beforeAll(async () => {
    own = await createOwnDatabase('worker_processes');
    t = await createTestApp({ DATABASE_URL: own.url, REDIS_URL: '' });
    w = await createWorld(t);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: own.url,
      PORT: '0',
      WEB_CONCURRENCY: '2',
      LOG_LEVEL: 'warn',
      SHUTDOWN_GRACE_MS: '3000',
      AUTH_CACHE_TTL_MS: String(60 * 60 * 1000),
    };
    delete env.REDIS_URL;
    server = spawn(process.execPath, [LCM, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    server.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    server.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    await until(
      'lcm serve to listen',
      () => {
        if (server.exitCode !== null) throw new Error(`lcm serve exited: ${output}`);
        return /listening on http:\/\/127\.0\.0\.1:(\d+)\/api/.test(output) && /HTTP worker processes/.test(output);
      },
      { timeoutMs: 120_000 },
    );
    port = Number(/listening on http:\/\/127\.0\.0\.1:(\d+)\/api/.exec(output)![1]);
  }, 240_000);

  afterAll(async () => {
    if (server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((r) => server.once('exit', r));
      server.kill('SIGKILL');
      await exited;
    }
    await t.close();
    await own.drop();
  });

  it('when started, then it says how many workers run, and a supervisor holds two HTTP workers and a jobs process', () => {
    expect(output).toContain('2 HTTP worker processes and a jobs process');
    const roles = childrenOf(server.pid!).map((c) => c.role);
    expect(roles.filter((r) => r === 'http')).toHaveLength(2);
    expect(roles.filter((r) => r === 'jobs')).toHaveLength(1);
  });

  it('when /api/metrics is scraped, then one scrape shows the figures of every worker', async () => {
    const requests = 40;
    for (let i = 0; i < requests; i++) expect((await get(port, '/api/healthz')).status).toBe(200);
    const text = (await get(port, '/api/metrics')).body;
    // Each HTTP worker's pool reports its DB_POOL_MAX (10): summed over both.
    expect(text).toMatch(/^lcm_db_pool_max 20$/m);
    const healthz = /^lcm_http_request_duration_seconds_count\{service="healthz",status="200"\} (\d+)$/m.exec(text);
    expect(Number(healthz?.[1])).toBe(requests);
  });

  it('when 60 requests arrive at once at a daily limit of 5, then exactly 5 are admitted across both workers', async () => {
    const username = uniq('limit5-');
    const { id } = await createAccount(t.db, {
      username,
      password: 'pw',
      userOrgCode: w.users.agent,
      projects: ['*'],
      rights: {},
      entryAccess: 'None',
    });
    await t.db('request_limits').insert({ account_id: id, service: 'myaccount', daily_limit: 5 });
    const auth = basicAuth(username, 'pw');
    const answers = await Promise.all(Array.from({ length: 60 }, () => get(port, '/api/myaccount', auth)));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(55);
  });

  it('when an account is disabled, then every worker refuses its cached credentials at once', async () => {
    const username = uniq('disable-');
    await createAccount(t.db, { username, password: 'pw', userOrgCode: w.users.agent, projects: ['*'], rights: {}, entryAccess: 'None' });
    const auth = basicAuth(username, 'pw');
    // Cached in both workers: enough fresh connections reach each of them.
    for (let i = 0; i < 20; i++) expect((await get(port, '/api/myaccount', auth)).status).toBe(200);
    await setEnabled(t.db, username, false);
    await new Promise((r) => setTimeout(r, 500));
    const after = await Promise.all(Array.from({ length: 20 }, () => get(port, '/api/myaccount', auth)));
    expect(after.map((a) => a.status)).toEqual(Array(20).fill(401));
  });

  it('when an HTTP worker is killed while a client loops, then at least 95% of its requests are answered and the worker is replaced within 5 s', async () => {
    const before = childrenOf(server.pid!).filter((c) => c.role === 'http');
    expect(before).toHaveLength(2);
    let answered = 0;
    let failed = 0;
    let looping = true;
    const loop = (async () => {
      while (looping) {
        try {
          if ((await get(port, '/api/healthz')).status === 200) answered++;
          else failed++;
        } catch {
          failed++;
        }
      }
    })();
    await new Promise((r) => setTimeout(r, 500));
    const victim = before[0]!.pid;
    const killedAt = Date.now();
    process.kill(victim, 'SIGKILL');
    await until(
      'a replacement worker',
      () => {
        const http = childrenOf(server.pid!).filter((c) => c.role === 'http');
        return http.length === 2 && !http.some((c) => c.pid === victim);
      },
      { timeoutMs: 5000 },
    );
    const replacedInMs = Date.now() - killedAt;
    await new Promise((r) => setTimeout(r, 1500));
    looping = false;
    await loop;
    expect(replacedInMs).toBeLessThan(5000);
    expect(answered + failed).toBeGreaterThan(20);
    expect(answered / (answered + failed)).toBeGreaterThanOrEqual(0.95);
  });

  it('when an HTTP worker stops, then its event streams end cleanly at once and their clients resume on the other worker, nothing lost', async () => {
    const url = `http://127.0.0.1:${port}`;
    const query = `/api/events?Campaigns=${encodeURIComponent(w.campaigns.b2b)}`;
    const auth = w.accounts.full.auth;
    const importLead = async (name: string) => {
      const imported = await new Promise<string>((resolve, reject) => {
        const body = JSON.stringify({ CampaignCode: w.campaigns.b2b, Data: { Name: name, Telefon: '+4511223344' } });
        const req = http.request(
          {
            host: '127.0.0.1',
            port,
            path: '/api/leads',
            method: 'POST',
            agent: false,
            headers: { Authorization: auth, 'Content-Type': 'application/json' },
          },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (d: string) => (text += d));
            res.on('end', () => resolve((JSON.parse(text) as { uniqueId: string }).uniqueId));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
      return imported;
    };
    // Both workers listen (a replacement started by the test before may still be starting).
    await until('both HTTP workers to listen (LISTEN_SOCKETS, 4 each)', () => listeningSockets(port) >= 2 * 4, { timeoutMs: 60_000 });
    // Connections of their own: the kernel spreads them over both workers.
    const streams: OpenedStream[] = await Promise.all(
      Array.from({ length: 10 }, () => openEventStream(url, query, { Authorization: auth })),
    );
    try {
      expect(streams.map((s) => s.status)).toEqual(Array(10).fill(200));
      const first = await importLead('Before the stop');
      await Promise.all(streams.map((s) => s.until((x) => x.events.some((e) => e.data.data.uniqueId === first), 'the first event')));
      const victim = childrenOf(server.pid!).find((c) => c.role === 'http')!.pid;
      const stoppedAt = Date.now();
      process.kill(victim, 'SIGTERM');
      await until('the worker to end', () => !alive(victim), { timeoutMs: 10_000 });
      // Ended by the worker at once (SHUTDOWN_GRACE_MS is 3 s: a stream left to the deadline would be cut).
      const endings = await Promise.all(
        streams.map((s) => Promise.race([s.ended, new Promise<'open'>((r) => setTimeout(() => r('open'), 500))])),
      );
      expect(endings).not.toContain('cut');
      const ended = streams.filter((_, i) => endings[i] === 'ended');
      expect(ended.length).toBeGreaterThan(0);
      expect(Date.now() - stoppedAt).toBeLessThan(3000);
      const second = await importLead('After the stop');
      const resumed = await Promise.all(
        ended.map((s) => openEventStream(url, query, { Authorization: auth, 'Last-Event-ID': String(s.events.at(-1)!.id) })),
      );
      try {
        for (const r of resumed) {
          expect(r.status).toBe(200);
          await r.until((x) => x.events.length >= 1, 'the event after the stop');
          expect(r.events.map((e) => e.data.data.uniqueId)).toEqual([second]);
        }
      } finally {
        for (const r of resumed) r.close();
      }
      // The supervisor replaces the stopped worker.
      await until(
        'a replacement worker',
        () => {
          const workers = childrenOf(server.pid!).filter((c) => c.role === 'http');
          return workers.length === 2 && !workers.some((c) => c.pid === victim);
        },
        { timeoutMs: 10_000 },
      );
    } finally {
      for (const s of streams) s.close();
    }
  });

  it('when SIGTERM arrives, then every process ends', async () => {
    const processes = [server.pid!, ...childrenOf(server.pid!).map((c) => c.pid)];
    expect(processes.length).toBeGreaterThanOrEqual(4);
    const exited = new Promise<number | null>((r) => server.once('exit', (code) => r(code)));
    server.kill('SIGTERM');
    expect(await exited).toBe(0);
    await until('every worker to end', () => processes.every((pid) => !alive(pid)), { timeoutMs: 10_000 });
  });
});
