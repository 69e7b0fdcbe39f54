import { spawn, ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { Knex } from 'knex';
import { startEmbeddedPostgres } from '../src/app/embeddedPostgres';
import { createDb, migrateLatest } from '../src/data/db';
import { loadNdjson } from '../src/ingest/loader/loadNdjson';
import { freePort, waitFor, httpGet, parentPid } from './support';

/**
 * What the leads and bulk import benchmarks stand on: a throwaway embedded Postgres, a small
 * world (one campaign to import into, one account with every lead right and high limits) and
 * `lcm serve` as a child process, as `npm start` runs it. Everything is removed by `cleanup`.
 */

export const BENCH_ZONE = 'Europe/Copenhagen';
export const BENCH_CAMPAIGN = 'BENCH';
export const BENCH_CALENDAR = 'BENCH-CAL';
const ROOT = path.resolve(__dirname, '..');

export interface BenchRun {
  /** Runs the cleanups in reverse order (also on Ctrl-C). */
  cleanup(): Promise<void>;
  cleanups: (() => unknown)[];
  tmp: string;
}

/** A temporary folder and the cleanups that remove what the benchmark starts. */
export function benchRun(name: string): BenchRun {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), `lcm-bench-${name}-`));
  fs.chmodSync(tmp, 0o755);
  const cleanups: (() => unknown)[] = [() => fs.rmSync(tmp, { recursive: true, force: true })];
  const cleanup = async () => {
    for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => undefined);
  };
  process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));
  return { cleanup, cleanups, tmp };
}

export interface BenchDatabase {
  url: string;
  db: Knex;
  /** The postmaster's pid: the CPU time of every process of the cluster is read from it. */
  postmasterPid: number;
}

/** An embedded Postgres on a free loopback port, migrated. */
export async function startBenchDatabase(run: BenchRun, poolMax: number): Promise<BenchDatabase> {
  const cluster = await startEmbeddedPostgres({
    dataDir: path.join(run.tmp, 'pg'),
    port: await freePort(),
    database: 'bench',
    persistent: false,
  });
  run.cleanups.push(() => cluster.stop());
  const db = createDb({ url: cluster.url, timezone: BENCH_ZONE, poolMax });
  run.cleanups.push(() => db.destroy());
  await migrateLatest(db);
  const postmasterPid = parentPid(Number((await db.raw<{ rows: { pid: number }[] }>('select pg_backend_pid() as pid')).rows[0]!.pid));
  return { url: cluster.url, db, postmasterPid };
}

/**
 * The benchmark's world; returns the account's Authorization header. The lead definition has
 * Name, Phone (imported as Telefon), Email, Customer (the external key) and Revenue (Partner
 * access); the campaign's project has a calendar. The account may import, read and change leads
 * and create calendar events.
 */
export async function loadBenchWorld(db: Knex): Promise<string> {
  const username = 'bench';
  const password = 'bench-password';
  const records = [
    { type: 'orgUnit', orgCode: 'Bench root', name: 'Bench root' },
    { type: 'user', orgCode: 'bench-user', username: 'bench-user', name: 'Bench User', parent: 'Bench root' },
    {
      type: 'leadDefinition',
      name: 'Bench definition',
      fields: [
        { name: 'Name', type: 'text', required: true },
        { name: 'Phone', importName: 'Telefon', type: 'phone', required: true },
        { name: 'Email', type: 'email' },
        { name: 'Customer', type: 'text', externalKey: true },
        { name: 'Revenue', type: 'number', access: 'Partner' },
      ],
    },
    {
      type: 'campaign',
      code: BENCH_CAMPAIGN,
      name: 'Bench',
      project: 'Bench project',
      leadDefinition: 'Bench definition',
      campaignType: 'PowerDialer',
    },
    { type: 'calendar', code: BENCH_CALENDAR, name: 'Bench calendar', project: 'Bench project' },
    {
      type: 'account',
      username,
      password,
      user: 'bench-user',
      projects: ['*'],
      rights: { Leads: ['Get', 'Post', 'Put'], SimpleLeads: ['Get'], CalendarEvents: ['Post'] },
      entryAccess: 'Full',
    },
    { type: 'requestLimit', account: username, service: 'leads.import', dailyLimit: 2_000_000_000 },
    { type: 'requestLimit', account: username, service: 'simpleleads', dailyLimit: 2_000_000_000 },
  ];
  await loadNdjson(db, Readable.from(records.map((r) => JSON.stringify(r) + '\n')), { zone: BENCH_ZONE });
  return 'Basic ' + Buffer.from(`${username}:${password}`).toString('base64');
}

export interface BenchServer {
  base: string;
  pid: number;
  /** Stops the server (SIGTERM) and waits for it to exit. */
  stop: () => Promise<void>;
}

/**
 * `lcm serve` on a free loopback port against `databaseUrl`, with `env` on top (no sweeper, warn
 * logging, the benchmark's time zone); `nodeArgs` go to its node (a CPU profile, GC tracing);
 * `root` is the checkout whose build serves (another one for a before/after comparison).
 */
export async function startBenchServer(
  run: BenchRun,
  databaseUrl: string,
  env: NodeJS.ProcessEnv = {},
  nodeArgs: string[] = [],
  root = ROOT,
): Promise<BenchServer> {
  const port = await freePort();
  const server: ChildProcess = spawn(process.execPath, [...nodeArgs, path.join(root, 'bin/lcm.js'), 'serve'], {
    cwd: root,
    stdio: ['ignore', nodeArgs.length > 0 ? 'inherit' : 'ignore', 'inherit'],
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      SWEEP_INTERVAL_MS: '0',
      PLATFORM_TIMEZONE: BENCH_ZONE,
      ...env,
    },
  });
  const stop = () =>
    new Promise<void>((resolve) => {
      if (server.exitCode !== null || server.signalCode !== null) return resolve();
      server.once('exit', () => resolve());
      server.kill('SIGTERM');
    });
  run.cleanups.push(stop);
  const base = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await httpGet(`${base}/api/healthz`)) === 200, 'the server');
  return { base, pid: server.pid!, stop };
}
