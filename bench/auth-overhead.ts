/**
 * What authentication and request counting cost on the hot path (figures: docs/benchmarks.md).
 *
 *   npm run bench:auth            (node bin/run-ts.js bench/auth-overhead.ts)
 *
 * The same small authenticated request — GET /api/campaigns, four rows from Postgres — against
 * four server processes built from the same code:
 *   on:   the production app (composeApp): Basic auth (credential cache) → right → one Redis
 *         counting round trip → handler;
 *   pg:   the production app without REDIS_URL: the same, counted by one statement in Postgres
 *         (count_request, which locks the account's row of the service: one account's requests
 *         are counted one after the other);
 *   auth: the same chain in a bench-only app, with that endpoint not counted;
 *   off:  the same again, with authentication replaced by handing over the bench account.
 * autocannon drives each once per round in a rotated order, three rounds, after a warm-up; the
 * figures are the medians of the three runs of each. Real Redis (a throwaway redis-server) and
 * real Postgres (DATABASE_URL, else a throwaway embedded cluster). Production code has no
 * switch for any of this: the bench builds its own apps.
 *
 * Two passes: 1 connection (latency without queueing) and 10 connections (a saturated server,
 * where latency follows CPU per request). CPU time per request of the server process, of
 * redis-server and of Postgres (the postmaster and its backends, when it runs on this machine)
 * is reported too: unlike latency it does not move with other load on the machine.
 *
 * Environment: BENCH_CONNECTIONS (1,10), BENCH_DURATION_S (8), BENCH_WARMUP_S (3),
 * AUTH_CACHE_TTL_MS (the setting's default).
 */
import { spawn, ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import express from 'express';
import { createClient } from 'redis';
import { loadSettings } from '../src/config/settings';
import { createLogger } from '../src/config/logger';
import { createDb, migrateLatest } from '../src/data/db';
import { startEmbeddedPostgres } from '../src/app/embeddedPostgres';
import { loadNdjson } from '../src/ingest/loader/loadNdjson';
import { findAccountByUsername } from '../src/data/accountRepository';
import { composeApp } from '../src/app/compose';
import { listen } from '../src/app/server';
import { mountEndpoints } from '../src/http/mountEndpoints';
import { errorHandler } from '../src/http/middleware/errorHandler';
import { requestLogging } from '../src/http/middleware/requestLogging';
import { parseQueryString } from '../src/http/queryString';
import type { Endpoint } from '../src/http/endpoint';
import { createAuthenticator, loginProtectionFrom } from '../src/http/middleware/authenticate';
import { CredentialCache } from '../src/http/credentialCache';
import type { AppServices } from '../src/http/services';
import { ExportAdmission } from '../src/http/exportAdmission';
import { Metrics } from '../src/http/metrics';
import { freePort } from '../tests/harness/freePort';
import { parentPid, processCpuMs, processTreeCpuMs } from './support';
import { startRedisServer } from '../tests/harness/redisServer';
import autocannon from 'autocannon';

const PATH = '/api/campaigns';
const SERVICE = 'campaigns.list';
const PASSWORD = 'bench-password';

// ---- server side (child process) -----------------------------------------------------------

type Mode = 'off' | 'auth' | 'on' | 'pg';
const MODES: readonly [Mode, Mode, Mode, Mode] = ['off', 'auth', 'on', 'pg'];
const LABEL: Record<Mode, string> = {
  off: 'auth + counting off',
  auth: 'auth only',
  on: 'counting in Redis',
  pg: 'counting in Postgres',
};

/**
 * The bench-only apps: createApp's middleware (request id and logging, JSON body parsing, the
 * same endpoint chain and error handler) around the same endpoints, where the benchmarked
 * endpoint is not counted, and authentication is either the real one (`auth`) or a step that
 * hands over the bench account (`off`). The right check stays: it is a lookup either way.
 */
function benchApp(services: AppServices, endpoints: Endpoint[], authenticate: express.RequestHandler) {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', parseQueryString);
  // The request logging of app.ts, option for option: it costs the same in every mode.
  app.use(requestLogging(services.logger));
  const uncounted = endpoints.map((e) => (e.service === SERVICE ? { ...e, counted: false } : e));
  const admission = new ExportAdmission(services.settings.EXPORT_MAX_CONCURRENT, services.settings.EXPORT_MAX_PER_ACCOUNT);
  app.use('/api', mountEndpoints(uncounted, services, { authenticate, metrics: new Metrics(), admission }));
  app.use(errorHandler(services.logger));
  return app;
}

async function serve(mode: Mode): Promise<void> {
  const settings = loadSettings({
    DATABASE_URL: process.env.BENCH_DATABASE_URL,
    // `pg`: no Redis, so the production app counts in Postgres.
    REDIS_URL: mode === 'pg' ? undefined : process.env.BENCH_REDIS_URL,
    LOG_LEVEL: 'silent',
    HOST: '127.0.0.1',
    PORT: '0',
    // The production default unless the bench is asked otherwise.
    AUTH_CACHE_TTL_MS: process.env.AUTH_CACHE_TTL_MS,
  });
  const db = createDb({ url: settings.DATABASE_URL!, timezone: settings.PLATFORM_TIMEZONE, poolMax: settings.DB_POOL_MAX });
  const composed = await composeApp({ settings, db, logger: createLogger('silent') });
  let app = composed.app.express; // `on` and `pg`: the production app
  if (mode === 'auth') {
    app = benchApp(
      composed.services,
      composed.app.endpoints,
      createAuthenticator(
        db,
        new CredentialCache(settings.AUTH_CACHE_TTL_MS),
        loginProtectionFrom(settings, composed.services.loginFailures),
      ),
    );
  } else if (mode === 'off') {
    const account = await findAccountByUsername(db, process.env.BENCH_USERNAME!);
    if (!account) throw new Error('bench account missing');
    app = benchApp(composed.services, composed.app.endpoints, (req, _res, next) => {
      req.account = account;
      next();
    });
  }
  const running = await listen(app, settings);
  process.stdout.write(`LISTENING ${running.url}\n`);
  process.once('SIGTERM', () => {
    void running
      .close()
      .then(() => composed.close())
      .then(() => db.destroy())
      .finally(() => process.exit(0));
  });
}

// ---- driver ----------------------------------------------------------------------------------

function startServer(mode: Mode, env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [path.resolve(__dirname, '../bin/run-ts.js'), __filename, '--serve', mode], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /LISTENING (\S+)/.exec(out);
      if (m) resolve({ child, url: m[1]! });
    });
    child.once('exit', (code) => reject(new Error(`${mode} server exited with ${code}`)));
  });
}

interface Run {
  p50: number;
  p99: number;
  /** Mean time a request takes, in ms: connections ÷ requests per second. */
  mean: number;
  rps: number;
  /** CPU time of the server process per request, in µs. */
  serverCpuUs: number;
  /** CPU time of redis-server per request, in µs. */
  redisCpuUs: number;
  /** CPU time of Postgres (every backend) per request, in µs; NaN when it runs elsewhere. */
  pgCpuUs: number;
}

/** The part of a node-redis client the bench reads Redis's CPU time with. */
interface RedisInfo {
  info(section: string): Promise<unknown>;
}

async function redisCpuMs(client: RedisInfo): Promise<number> {
  const info = String(await client.info('cpu'));
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? NaN);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1000;
}

async function drive(
  server: { url: string; child: ChildProcess },
  redis: RedisInfo,
  postmaster: number,
  auth: string,
  seconds: number,
  connections: number,
): Promise<Run> {
  const cpu0 = processCpuMs(server.child.pid!);
  const redis0 = await redisCpuMs(redis);
  const pg0 = processTreeCpuMs(postmaster);
  const result = await autocannon({ url: server.url + PATH, connections, duration: seconds, headers: { authorization: auth } });
  const cpu = processCpuMs(server.child.pid!) - cpu0;
  const redisCpu = (await redisCpuMs(redis)) - redis0;
  const pgCpu = processTreeCpuMs(postmaster) - pg0;
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${server.url}: ${result.non2xx} non-2xx answers and ${result.errors} errors; the figures would be meaningless`);
  }
  const n = result.requests.total;
  return {
    p50: result.latency.p50,
    p99: result.latency.p99,
    // autocannon's histogram keeps whole milliseconds; Little's law gives the mean exactly.
    mean: (connections * 1000) / result.requests.average,
    rps: result.requests.average,
    serverCpuUs: (cpu * 1000) / n,
    redisCpuUs: (redisCpu * 1000) / n,
    pgCpuUs: (pgCpu * 1000) / n,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const connectionCounts = (process.env.BENCH_CONNECTIONS ?? '1,10').split(',').map(Number);
  const duration = Number(process.env.BENCH_DURATION_S ?? 8);
  const warmup = Number(process.env.BENCH_WARMUP_S ?? 3);
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const redis = await startRedisServer(await freePort());
    cleanups.push(() => redis.stop());

    let databaseUrl = process.env.DATABASE_URL;
    if (!databaseUrl) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-bench-'));
      fs.chmodSync(dir, 0o755);
      const cluster = await startEmbeddedPostgres({
        dataDir: path.join(dir, 'pg'),
        port: await freePort(),
        database: 'lcm_bench',
        persistent: false,
      });
      cleanups.push(async () => {
        await cluster.stop();
        fs.rmSync(dir, { recursive: true, force: true });
      });
      databaseUrl = cluster.url;
    }

    // A few rows: four campaigns in one project, visible to an account limited to it.
    const id = Math.random().toString(36).slice(2, 10);
    const username = `bench-${id}`;
    const db = createDb({ url: databaseUrl, timezone: 'Europe/Copenhagen' });
    try {
      await migrateLatest(db);
      const records = [
        { type: 'orgUnit', orgCode: `Bench ${id}`, name: 'Bench' },
        { type: 'user', orgCode: `bench-user-${id}`, username: `bench-user-${id}`, name: 'Bench User', parent: `Bench ${id}` },
        { type: 'leadDefinition', name: `Bench def ${id}`, fields: [{ name: 'Phone', type: 'phone', required: true }] },
        ...[1, 2, 3, 4].map((n) => ({
          type: 'campaign',
          code: `BENCH-${id}-${n}`,
          name: `Bench campaign ${n}`,
          project: `Bench-${id}`,
          leadDefinition: `Bench def ${id}`,
          campaignType: 'PowerDialer',
        })),
        {
          type: 'account',
          username,
          password: PASSWORD,
          user: `bench-user-${id}`,
          projects: [`Bench-${id}*`],
          rights: { Campaigns: ['Get'] },
          entryAccess: 'None',
        },
        // Far more than the runs send, so no request is refused.
        { type: 'requestLimit', account: username, service: SERVICE, dailyLimit: 1_000_000_000 },
      ];
      await loadNdjson(db, Readable.from(records.map((r) => JSON.stringify(r) + '\n')), { zone: 'Europe/Copenhagen' });
    } finally {
      await db.destroy();
    }

    const env = { BENCH_DATABASE_URL: databaseUrl, BENCH_REDIS_URL: redis.url, BENCH_USERNAME: username };
    const servers = {} as Record<Mode, { child: ChildProcess; url: string }>;
    for (const mode of MODES) {
      const server = await startServer(mode, env);
      servers[mode] = server;
      // Registered one by one, so a server that fails to start does not orphan the others.
      cleanups.push(async () => {
        if (server.child.exitCode !== null) return;
        const exited = new Promise((r) => server.child.once('exit', r));
        server.child.kill('SIGTERM');
        await exited;
      });
    }
    const auth = 'Basic ' + Buffer.from(`${username}:${PASSWORD}`).toString('base64');

    // All answer the same body before anything is measured.
    const bodies = await Promise.all(
      MODES.map(async (m) => (await fetch(servers[m].url + PATH, { headers: { authorization: auth } })).text()),
    );
    if (new Set(bodies).size !== 1 || (JSON.parse(bodies[0]!) as unknown[]).length !== 4)
      throw new Error(`bodies differ or are not 4 rows: ${bodies.join(' / ')}`);

    const redisInfo = createClient({ url: redis.url });
    await redisInfo.connect();
    cleanups.push(() => redisInfo.close());
    // The postmaster, whose family of processes (the backends) does the Postgres side.
    const postmaster = await (async () => {
      const probe = createDb({ url: databaseUrl, timezone: 'Europe/Copenhagen', poolMax: 1 });
      try {
        const { rows } = await probe.raw<{ rows: { pid: number }[] }>('select pg_backend_pid() as pid');
        return parentPid(rows[0]?.pid ?? NaN);
      } catch {
        return NaN; // Postgres on another machine: its CPU is not measured
      } finally {
        await probe.destroy();
      }
    })();
    const pct = (a: number, b: number) => `${a >= b ? '+' : ''}${(((a - b) / b) * 100).toFixed(1)}%`;
    const load = () =>
      os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ');
    process.stdout.write(`GET ${PATH} (4 rows), ${duration} s a run, warm-up ${warmup} s per mode and pass; load average ${load()}\n`);
    for (const connections of connectionCounts) {
      process.stdout.write(`\n${connections} connection${connections === 1 ? '' : 's'}:\n`);
      for (const mode of MODES) await drive(servers[mode], redisInfo, postmaster, auth, warmup, connections);
      const runs: Record<Mode, Run[]> = { off: [], auth: [], on: [], pg: [] };
      // Each mode once per round, in a rotated order, so drift in the machine's load is shared.
      for (let round = 0; round < 3; round++) {
        for (const mode of [...MODES.slice(round), ...MODES.slice(0, round)]) {
          const run = await drive(servers[mode], redisInfo, postmaster, auth, duration, connections);
          runs[mode].push(run);
          process.stdout.write(
            `  ${LABEL[mode].padEnd(20)} p50 ${run.p50} ms  p99 ${run.p99} ms  mean ${run.mean.toFixed(3)} ms  ${Math.round(run.rps)} req/s  ` +
              `CPU/request: server ${Math.round(run.serverCpuUs)} µs, Redis ${Math.round(run.redisCpuUs)} µs, Postgres ${Math.round(run.pgCpuUs)} µs\n`,
          );
        }
      }
      const summary = (mode: Mode) => ({
        p50: median(runs[mode].map((r) => r.p50)),
        p99: median(runs[mode].map((r) => r.p99)),
        mean: median(runs[mode].map((r) => r.mean)),
        rps: median(runs[mode].map((r) => r.rps)),
        cpu: median(runs[mode].map((r) => r.serverCpuUs + r.redisCpuUs)),
        pgCpu: median(runs[mode].map((r) => r.pgCpuUs)),
      });
      const [off, authOnly, on, pg] = [summary('off'), summary('auth'), summary('on'), summary('pg')];
      const row = (
        name: string,
        value: (x: ReturnType<typeof summary>) => string,
        vs: (a: ReturnType<typeof summary>, b: ReturnType<typeof summary>) => string,
      ) => `| ${name} | ${[off, authOnly, on, pg].map(value).join(' | ')} | ${vs(on, off)} | ${vs(pg, on)} |`;
      process.stdout.write(
        [
          '',
          `| ${connections} connection${connections === 1 ? '' : 's'}, median of 3 runs | ${MODES.map((m) => LABEL[m]).join(' | ')} | Redis vs off | Postgres vs Redis |`,
          '|---|---|---|---|---|---|---|',
          row(
            'p50 latency',
            (x) => `${x.p50} ms`,
            (a, b) => pct(a.p50, b.p50),
          ),
          row(
            'p99 latency',
            (x) => `${x.p99} ms`,
            (a, b) => pct(a.p99, b.p99),
          ),
          row(
            'mean latency',
            (x) => `${x.mean.toFixed(3)} ms`,
            (a, b) => pct(a.mean, b.mean),
          ),
          row(
            'requests/s',
            (x) => String(Math.round(x.rps)),
            (a, b) => pct(a.rps, b.rps),
          ),
          row(
            'CPU per request (server + Redis)',
            (x) => `${Math.round(x.cpu)} µs`,
            (a, b) => pct(a.cpu, b.cpu),
          ),
          row(
            'CPU per request (Postgres)',
            (x) => `${Math.round(x.pgCpu)} µs`,
            (a, b) => pct(a.pgCpu, b.pgCpu),
          ),
          '',
          `target (auth + counting adds at most 30% latency): ${(on.mean - off.mean) / off.mean <= 0.3 ? 'met' : 'NOT met'} by mean latency (connections ÷ req/s; autocannon's p50 has 1 ms resolution)`,
          `load average: ${load()}`,
          '',
        ].join('\n'),
      );
    }
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch((err) => process.stderr.write(`cleanup: ${String(err)}\n`));
  }
}

const serveAt = process.argv.indexOf('--serve');
if (serveAt >= 0) {
  serve(process.argv[serveAt + 1] as Mode).catch((err) => {
    process.stderr.write(`bench server: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
} else {
  main().catch((err) => {
    process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  });
}
