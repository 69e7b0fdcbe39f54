/**
 * Small requests at the platform's speed (figures: docs/benchmarks.md, "Small requests"), run on demand:
 *   npm run bench:small [-- --duration 8 --warmup 3 --rounds 3 --log-rounds 15 --connections 32
 *                          --rungs patch,calendar --server-node-args '--cpu-prof --cpu-prof-dir=DIR']
 *
 * One run, side by side, each rung driven by wrk (`--driver wrk`, the default; `--driver autocannon`
 * for the Node.js load generator the earlier figures used) with `--connections` keep-alive clients:
 *   bare node:http    a server answering {"status":"ok"} and nothing else: the ceiling;
 *   bare Express 5    the same in an Express app with one route: what Express itself costs;
 *   healthz           GET /api/healthz of `lcm serve`;
 *   myaccount         GET /api/myaccount, authenticated (Basic, the credential cache) and counted;
 *   import            POST /api/leads, one lead each;
 *   patch             PATCH /api/leads/{UniqueId}, a merge patch of one data field and the
 *                     priority, each request to the next of PATCH_LEADS leads loaded before
 *                     (row locks do not serialise the clients);
 *   calendar event    POST /api/calendars/events, one event each;
 * healthz, myaccount, import and patch with one HTTP worker and with WEB_CONCURRENCY=2, and
 * the small read twice more with one worker, the account request log on and off
 * (REQUEST_LOG=false), each round on two new server processes, to show what the log costs
 * (those two for `--log-rounds` rounds: a cost of a few per cent needs more than three).
 * With `--baseline DIR` (another checkout of the project, built: `npm ci` there), the small
 * read and the single import also run on that checkout's build, each round on a new server of
 * each build in turn, for `--log-rounds` rounds beside the log's rungs: the ratio of this build
 * to that one, round by round, is a before/after comparison of one run. The baseline serves a
 * database of its own on the same Postgres, migrated by its own `lcm migrate` and loaded alike, so
 * the two builds may differ in their migrations.
 * `--rungs` runs only the rungs whose names contain one of its comma-separated words (bare
 * Express always runs: the × column divides by it). With a `--duration` of at least twice
 * AUTH_CACHE_TTL_MS (60 s with the default), every run of the small read spans a refresh of its
 * credential, and its slowest request is judged (none over 1 s).
 * The servers run the production code (`lcm serve` as `npm start` runs it, LOG_LEVEL=info with
 * the lines written to /dev/null, request counting in a throwaway redis-server) on a throwaway
 * embedded Postgres. Each round drives every rung once, in a rotated order, so drift in the
 * machine's load is shared; the figures are medians of the rounds. CPU per request is read from
 * /proc: the server's process tree (supervisor, workers, jobs process), redis-server and Postgres.
 */
import { spawn, spawnSync, ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import autocannon from 'autocannon';
import { runWrk } from './wrkDriver';
import type { Knex } from 'knex';
import { loadSettings } from '../src/config/settings';
import { createDb } from '../src/data/db';
import { loadNdjson } from '../src/ingest/loader/loadNdjson';
import {
  numberOption as option,
  textOption,
  freePort,
  waitFor,
  httpGet,
  median,
  fmt,
  processCpuMs,
  processTreeCpuMs,
  log,
} from './support';
import {
  benchRun,
  loadBenchWorld,
  startBenchDatabase,
  startBenchServer,
  BENCH_CALENDAR,
  BENCH_CAMPAIGN,
  BENCH_ZONE,
  BenchRun,
} from './benchWorld';
import { startRedisServer } from '../tests/harness/redisServer';

const settings = {
  duration: option('duration', 8),
  warmup: option('warmup', 3),
  rounds: option('rounds', 3),
  /** Rounds of the rungs on new servers (the log on and off, the baseline's): a difference of a few per cent is within a round's spread. */
  logRounds: option('log-rounds', 15),
  connections: option('connections', 32),
  /** The load generator: wrk (C, a few µs a request) or autocannon (Node.js, about a core of its own). */
  driver: textOption('driver', 'wrk'),
  /** wrk's threads (each up to one core). */
  wrkThreads: option('wrk-threads', 1),
  rungs: textOption('rungs', '')
    .split(',')
    .map((w) => w.trim().toLowerCase())
    .filter((w) => w !== ''),
  /** A built checkout of another version: its small read and single import run beside this one's. */
  baseline: textOption('baseline', ''),
  /** Node.js options of each `lcm serve` and the processes it forks (a CPU profile of each). */
  serverNodeArgs: textOption('server-node-args', '').split(' ').filter(Boolean),
};
/** The leads the patch rung changes, one after the other. */
const PATCH_LEADS = 4000;
const ROOT = path.resolve(__dirname, '..');

// ---- the bare servers ---------------------------------------------------------------------------

const BARE_NODE = `
  const http = require('node:http');
  const body = JSON.stringify({ status: 'ok' });
  http.createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  }).listen(Number(process.env.PORT), '127.0.0.1');`;

const BARE_EXPRESS = `
  const express = require('express');
  const app = express();
  app.get('/api/healthz', (req, res) => void res.json({ status: 'ok' }));
  app.listen(Number(process.env.PORT), '127.0.0.1');`;

async function startBare(run: BenchRun, code: string): Promise<{ base: string; pid: number }> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, ['-e', code], {
    cwd: ROOT,
    stdio: 'ignore',
    env: { ...process.env, PORT: String(port) },
  });
  run.cleanups.push(() => child.kill('SIGTERM'));
  const base = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await httpGet(`${base}/api/healthz`)) === 200, 'a bare server');
  return { base, pid: child.pid! };
}

// ---- rungs --------------------------------------------------------------------------------------

interface RungServer {
  base: string;
  cpuMs: () => number;
}

interface Rung {
  name: string;
  /** Which server and how its CPU is read. */
  server: RungServer;
  /**
   * Serves each round from a new server process instead (started, warmed up, measured,
   * stopped): two processes of the same code differ by several µs of CPU a request, so a
   * comparison of two servers that each run for the whole benchmark would carry their
   * difference into every round.
   */
  fresh?: () => Promise<RungServer & { stop: () => Promise<void> }>;
  request: {
    path: string;
    method?: 'GET' | 'POST' | 'PATCH';
    headers?: Record<string, string>;
    body?: string;
    /** Changes each request before it is sent (autocannon's setupRequest). */
    setup?: (req: autocannon.Request) => autocannon.Request;
    /** The same change for wrk, as a Lua expression of the request's number `n` giving `path, body` (bench/wrkDriver.ts). */
    vary?: string;
  };
}

interface Run {
  rps: number;
  p50: number;
  p99: number;
  max: number;
  serverCpuUs: number;
  redisCpuUs: number;
  pgCpuUs: number;
}

async function drive(rung: Rung, seconds: number, redisPid: number, postmasterPid: number): Promise<Run> {
  const cpu0 = rung.server.cpuMs();
  const redis0 = processCpuMs(redisPid);
  const pg0 = processTreeCpuMs(postmasterPid);
  const load = settings.driver === 'wrk' ? await driveWrk(rung, seconds) : await driveAutocannon(rung, seconds);
  const n = load.requests;
  if (load.failed > 0 || n === 0) {
    throw new Error(`${rung.name}: ${load.failed} failed answers of ${n}; the figures would be meaningless`);
  }
  return {
    rps: load.rps,
    p50: load.p50,
    p99: load.p99,
    max: load.max,
    serverCpuUs: ((rung.server.cpuMs() - cpu0) * 1000) / n,
    redisCpuUs: ((processCpuMs(redisPid) - redis0) * 1000) / n,
    pgCpuUs: ((processTreeCpuMs(postmasterPid) - pg0) * 1000) / n,
  };
}

interface Load {
  requests: number;
  /** Answers that were not 2xx, and errors. */
  failed: number;
  rps: number;
  p50: number;
  p99: number;
  max: number;
}

async function driveAutocannon(rung: Rung, seconds: number): Promise<Load> {
  const result = await autocannon({
    url: rung.server.base + rung.request.path,
    method: rung.request.method ?? 'GET',
    headers: rung.request.headers,
    body: rung.request.body,
    ...(rung.request.setup ? { requests: [{ setupRequest: rung.request.setup }] } : {}),
    connections: settings.connections,
    duration: seconds,
  });
  const { p50, p99, max } = result.latency;
  return { requests: result.requests.total, failed: result.non2xx + result.errors, rps: result.requests.average, p50, p99, max };
}

async function driveWrk(rung: Rung, seconds: number): Promise<Load> {
  const { method, headers, body, vary } = rung.request;
  const result = await runWrk(
    rung.server.base,
    {
      path: rung.request.path,
      ...(method ? { method } : {}),
      ...(headers ? { headers } : {}),
      ...(body ? { body } : {}),
      ...(vary ? { vary } : {}),
    },
    { connections: settings.connections, seconds, threads: settings.wrkThreads },
  );
  // wrk counts 4xx and 5xx answers as errors; a 3xx would not be one, and none of these paths redirects.
  return { ...result, failed: result.statusErrors + result.socketErrors };
}

const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

/** The world, request limits no run reaches (every request is counted) and the leads the patch rung changes. */
async function loadBenchData(db: Knex): Promise<string> {
  const auth = await loadBenchWorld(db);
  const limits = ['myaccount', 'leads.patch', 'calendars.events.create'].map((service) => ({
    type: 'requestLimit',
    account: 'bench',
    service,
    dailyLimit: 2_000_000_000,
  }));
  const patchLeads = Array.from({ length: PATCH_LEADS }, (_, i) => ({
    type: 'lead',
    campaign: BENCH_CAMPAIGN,
    uniqueId: `bench-patch-${i}`,
    data: { Name: `Patched ${i}`, Phone: `+45 2${String(i).padStart(7, '0')}`, Customer: `P-${i}` },
  }));
  await loadNdjson(db, Readable.from([...limits, ...patchLeads].map((r) => JSON.stringify(r) + '\n')), { zone: BENCH_ZONE });
  return auth;
}

/** What a server runs: a checkout's build (this one when `root` is unset) on a database. */
interface Build {
  root?: string;
  url: string;
}

/**
 * The baseline's build on a database of its own on the run's Postgres, migrated by the
 * baseline's `lcm migrate` and loaded like the run's: a build refuses a database that has
 * migrations it does not know, so the baseline cannot share this build's.
 */
async function baselineBuild(run: BenchRun, admin: Knex, url: string): Promise<Build> {
  const root = path.resolve(settings.baseline);
  const name = 'bench_baseline';
  await admin.raw(`create database ${name}`);
  const own = new URL(url);
  own.pathname = `/${name}`;
  const migrated = spawnSync(process.execPath, [path.join(root, 'bin/lcm.js'), 'migrate'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, DATABASE_URL: own.toString(), PLATFORM_TIMEZONE: BENCH_ZONE },
  });
  if (migrated.status !== 0) throw new Error(`the baseline's lcm migrate failed (exit ${migrated.status})`);
  const db = createDb({ url: own.toString(), timezone: BENCH_ZONE, poolMax: 2 });
  run.cleanups.push(() => db.destroy());
  await loadBenchData(db);
  return { root, url: own.toString() };
}

async function main(): Promise<void> {
  const run = benchRun('small');
  try {
    const database = await startBenchDatabase(run, 4);
    const auth = await loadBenchData(database.db);
    const thisBuild: Build = { url: database.url };
    const baseline = settings.baseline === '' ? undefined : await baselineBuild(run, database.db, database.url);
    const redis = await startRedisServer(await freePort());
    run.cleanups.push(() => redis.stop());
    const redisPid = Number(/process_id:(\d+)/.exec(await redisInfo(redis.url))?.[1]);

    // A server as `lcm serve` runs it; `serveFresh(env)` starts a new one each time it is called.
    const serveFresh = (env: Record<string, string>, build?: Build) => async () => {
      const { url, root } = build ?? thisBuild;
      const server = await startBenchServer(run, url, { LOG_LEVEL: 'info', REDIS_URL: redis.url, ...env }, settings.serverNodeArgs, root);
      return { base: server.base, cpuMs: () => processTreeCpuMs(server.pid), stop: server.stop };
    };
    const serve = (env: Record<string, string>) => serveFresh(env)();
    const bareNode = await startBare(run, BARE_NODE);
    const bareExpress = await startBare(run, BARE_EXPRESS);
    const one = await serve({ WEB_CONCURRENCY: '1' });
    const two = await serve({ WEB_CONCURRENCY: '2' });

    const lead = JSON.stringify({
      CampaignCode: BENCH_CAMPAIGN,
      Data: { Name: 'Bench Lead', Telefon: '+45 12 34 56 78', Customer: 'C-1' },
    });
    const healthz = { path: '/api/healthz' };
    const myaccount = { path: '/api/myaccount', headers: { authorization: auth } };
    const importLead = {
      path: '/api/leads',
      method: 'POST' as const,
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: lead,
    };
    let patches = 0;
    const patchLead = {
      path: '/api/leads/bench-patch-0',
      method: 'PATCH' as const,
      headers: { authorization: auth, 'content-type': 'application/merge-patch+json' },
      setup: (req: autocannon.Request) => {
        const n = patches++;
        return {
          ...req,
          path: `/api/leads/bench-patch-${n % PATCH_LEADS}`,
          body: JSON.stringify({ data: { Email: `patch${n}@example.com` }, priority: n % 100 }),
        };
      },
      vary: `"/api/leads/bench-patch-" .. (n % ${PATCH_LEADS}), '{"data":{"Email":"patch' .. n .. '@example.com"},"priority":' .. (n % 100) .. '}'`,
    };
    const calendarEvent = {
      path: '/api/calendars/events',
      method: 'POST' as const,
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify({
        calendarCode: BENCH_CALENDAR,
        leadUniqueId: 'bench-patch-0',
        title: 'Call back',
        notes: 'Bench',
        start: '2031-01-06T10:00:00',
        end: '2031-01-06T10:30:00',
        source: 'bench',
        externalId: 'bench',
      }),
    };
    const allRungs: Rung[] = [
      { name: 'bare node:http', server: { base: bareNode.base, cpuMs: () => processCpuMs(bareNode.pid) }, request: healthz },
      { name: 'bare Express 5', server: { base: bareExpress.base, cpuMs: () => processCpuMs(bareExpress.pid) }, request: healthz },
      { name: 'healthz, 1 worker', server: one, request: healthz },
      { name: 'myaccount, 1 worker', server: one, request: myaccount },
      // The request log's cost: the read with the log on and off, each round on two new servers.
      { name: 'myaccount, 1 worker, log on, new', server: one, fresh: serveFresh({ WEB_CONCURRENCY: '1' }), request: myaccount },
      {
        name: 'myaccount, 1 worker, log off, new',
        server: one,
        fresh: serveFresh({ WEB_CONCURRENCY: '1', REQUEST_LOG: 'false' }),
        request: myaccount,
      },
      { name: 'import, 1 worker', server: one, request: importLead },
      ...(baseline === undefined
        ? []
        : [
            { name: 'import, 1 worker, new', server: one, fresh: serveFresh({ WEB_CONCURRENCY: '1' }), request: importLead },
            {
              name: 'myaccount, 1 worker, baseline, new',
              server: one,
              fresh: serveFresh({ WEB_CONCURRENCY: '1' }, baseline),
              request: myaccount,
            },
            {
              name: 'import, 1 worker, baseline, new',
              server: one,
              fresh: serveFresh({ WEB_CONCURRENCY: '1' }, baseline),
              request: importLead,
            },
          ]),
      { name: 'healthz, 2 workers', server: two, request: healthz },
      { name: 'myaccount, 2 workers', server: two, request: myaccount },
      { name: 'import, 2 workers', server: two, request: importLead },
      { name: 'patch, 1 worker', server: one, request: patchLead },
      { name: 'patch, 2 workers', server: two, request: patchLead },
      { name: 'calendar event, 1 worker', server: one, request: calendarEvent },
    ];
    const rungs = allRungs.filter(
      (r) => settings.rungs.length === 0 || r.name === 'bare Express 5' || settings.rungs.some((w) => r.name.toLowerCase().includes(w)),
    );

    log(
      `bench:small: ${settings.driver}, ${settings.connections} keep-alive connections, ${settings.duration} s a run, ${settings.rounds} rounds (rotated; ` +
        `the rungs on new servers ${Math.max(settings.rounds, settings.logRounds)}), ` +
        `warm-up ${settings.warmup} s per rung; ${os.availableParallelism()} cores; load average ${load()}`,
    );
    for (const rung of rungs) if (!rung.fresh) await drive(rung, settings.warmup, redisPid, database.postmasterPid);
    const runs = new Map<string, Run[]>(rungs.map((r) => [r.name, []]));
    /** One measured run of a rung; a rung with `fresh` gets a new server, warmed up first. */
    const measure = async (rung: Rung): Promise<Run> => {
      if (!rung.fresh) return drive(rung, settings.duration, redisPid, database.postmasterPid);
      const server = await rung.fresh();
      try {
        const onIt = { ...rung, server };
        await drive(onIt, settings.warmup, redisPid, database.postmasterPid);
        return await drive(onIt, settings.duration, redisPid, database.postmasterPid);
      } finally {
        await server.stop();
      }
    };
    /** The rungs on new servers (the log's and the baseline's) run `--log-rounds` rounds. */
    const onNewServers = (rung: Rung) => rung.name.endsWith(', new');
    const rounds = rungs.some(onNewServers) ? Math.max(settings.rounds, settings.logRounds) : settings.rounds;
    for (let round = 0; round < rounds; round++) {
      const shift = round % rungs.length;
      for (const rung of [...rungs.slice(shift), ...rungs.slice(0, shift)]) {
        // Past --rounds only the rungs on new servers run on, to --log-rounds.
        if (round >= settings.rounds && !onNewServers(rung)) continue;
        const r = await measure(rung);
        runs.get(rung.name)!.push(r);
        log(
          `  round ${round + 1} ${rung.name.padEnd(34)} ${fmt(r.rps).padStart(7)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  max ${r.max} ms  ` +
            `CPU/request: server ${fmt(r.serverCpuUs)} µs, Redis ${fmt(r.redisCpuUs)} µs, Postgres ${fmt(r.pgCpuUs)} µs`,
        );
      }
    }

    const m = (name: string, key: keyof Run) => median(runs.get(name)!.map((r) => r[key]));
    const express = m('bare Express 5', 'rps');
    log('');
    log(
      `| rung (${settings.connections} connections, medians of the rounds) | rounds | req/s | × Express | p50 | p99 | max | server CPU/req | Redis CPU/req | Postgres CPU/req |`,
    );
    log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const rung of rungs) {
      const n = rung.name;
      log(
        `| ${n} | ${runs.get(n)!.length} | ${fmt(m(n, 'rps'))} | ${(m(n, 'rps') / express).toFixed(2)}× | ${m(n, 'p50')} ms | ${m(n, 'p99')} ms | ${m(n, 'max')} ms | ` +
          `${fmt(m(n, 'serverCpuUs'))} µs | ${fmt(m(n, 'redisCpuUs'))} µs | ${fmt(m(n, 'pgCpuUs'))} µs |`,
      );
    }
    const ratio = (a: string, b: string) => m(a, 'rps') / m(b, 'rps');
    const target = (what: string, value: number, goal: number, extra = '') =>
      log(`- ${what}: ${value.toFixed(2)} (target ${goal})${extra} — ${value >= goal ? 'met' : 'NOT met'}`);
    /** A target is judged when its rungs ran (see --rungs). */
    const ran = (...names: string[]) => names.every((n) => runs.has(n));
    log('');
    if (ran('healthz, 1 worker')) target('healthz ÷ bare Express, 1 worker', ratio('healthz, 1 worker', 'bare Express 5'), 0.8);
    if (ran('myaccount, 1 worker')) {
      target('authenticated small read ÷ bare Express, 1 worker', ratio('myaccount, 1 worker', 'bare Express 5'), 0.6);
    }
    if (ran('import, 1 worker')) {
      const importP99 = m('import, 1 worker', 'p99');
      log(
        `- single import ÷ bare Express, 1 worker: ${ratio('import, 1 worker', 'bare Express 5').toFixed(2)} (target 0.25) — ` +
          `${ratio('import, 1 worker', 'bare Express 5') >= 0.25 ? 'met' : 'NOT met'}; p99 ${importP99} ms (target < 50) — ${importP99 < 50 ? 'met' : 'NOT met'}`,
      );
    }
    if (ran('myaccount, 1 worker')) {
      // The servers get this process's environment: the same credential cache lifetime.
      const ttlMs = loadSettings(process.env).AUTH_CACHE_TTL_MS;
      const slowest = Math.max(...runs.get('myaccount, 1 worker')!.map((r) => r.max));
      if (ttlMs > 0 && settings.duration * 1000 >= 2 * ttlMs) {
        log(
          `- slowest authenticated read in ${settings.duration} s runs, each spanning a credential refresh (AUTH_CACHE_TTL_MS ${ttlMs}): ` +
            `${slowest} ms (target: none over 1,000 ms) — ${slowest <= 1000 ? 'met' : 'NOT met'}`,
        );
      } else {
        log(`- credential refreshes: not judged (a run spans one with --duration ${Math.ceil((2 * ttlMs) / 1000)} or more)`);
      }
    }
    if (ran('healthz, 1 worker', 'healthz, 2 workers')) {
      target('healthz, 2 workers ÷ 1 worker', ratio('healthz, 2 workers', 'healthz, 1 worker'), 1.6);
    }
    if (ran('myaccount, 1 worker, log on, new', 'myaccount, 1 worker, log off, new')) {
      // Each round's own ratio, the median over the rounds: a drift of the host's speed between
      // rounds moves both servers of a round alike (as bench:exports pairs its runs).
      const on = runs.get('myaccount, 1 worker, log on, new')!;
      const off = runs.get('myaccount, 1 worker, log off, new')!;
      const logCost = 1 - median(on.map((r, i) => r.rps / off[i]!.rps));
      const ofMedians = 1 - ratio('myaccount, 1 worker, log on, new', 'myaccount, 1 worker, log off, new');
      log(
        `- request log cost on the small read: ${(logCost * 100).toFixed(1)}% of its throughput (median of the rounds' own ratios; ` +
          `of the medians: ${(ofMedians * 100).toFixed(1)}%) (target at most 5%) — ${logCost <= 0.05 ? 'met' : 'NOT met'}`,
      );
    }
    /** This build ÷ the baseline's, the median of the rounds' own ratios. */
    const againstBaseline = (what: string, mine: string, theirs: string) => {
      if (!ran(mine, theirs)) return;
      const a = runs.get(mine)!;
      const b = runs.get(theirs)!;
      const perRound = a.map((r, i) => r.rps / b[i]!.rps);
      const faster = perRound.filter((x) => x > 1).length;
      const cpu = m(mine, 'serverCpuUs') - m(theirs, 'serverCpuUs');
      log(
        `- ${what}, this build ÷ the baseline (${settings.baseline}): ${median(perRound).toFixed(3)} (median of the rounds' own ratios; ` +
          `faster in ${faster} of ${perRound.length}); server CPU per request ${cpu >= 0 ? '+' : ''}${fmt(cpu)} µs`,
      );
    };
    againstBaseline('small read', 'myaccount, 1 worker, log on, new', 'myaccount, 1 worker, baseline, new');
    againstBaseline('single import', 'import, 1 worker, new', 'import, 1 worker, baseline, new');
    log(`load average at the end: ${load()}`);
  } finally {
    await run.cleanup();
  }
}

/** redis-server's INFO server section (its process id is read from it). */
async function redisInfo(url: string): Promise<string> {
  const { createClient } = await import('redis');
  const client = createClient({ url });
  await client.connect();
  try {
    return String(await client.info('server'));
  } finally {
    await client.close();
  }
}

main().catch((err) => {
  process.stderr.write(`bench: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
});
