/**
 * Benchmark of the calls exports (figures: docs/benchmarks.md): `npm run bench:exports [-- --calls 1000000 --small 100000 --runs 3 --pg embedded,os15]`.
 *
 * On each server of `--pg` (default both): the embedded Postgres 17 (data generated once, kept
 * in .data/bench-postgres) and a throwaway Postgres 15 from the OS packages with JIT on, as on
 * most production servers (bench/osPostgres.ts; data generated per run). On a generated data set
 * (src/ingest/syntheticData.ts), measured side by side in one run, medians of `--runs` runs:
 * - `/api/calls/csv` and `/api/calls` (the binary COPY transcoder) rows per second against
 *   `psql` `COPY (the same SELECT) TO STDOUT` of the same rows, and against a naive buffered
 *   implementation (knex select → res.json) that is mounted only in this benchmark's server;
 * - the compressed JSON export (zstd, br, gzip): bytes and rows per second;
 * - time to first byte, and the CPU time per 1M rows of the server, Postgres (when it runs on
 *   this machine) and the client; from their sum, the most rows per second the machine's cores
 *   allow each export, were none of them ever idle (the ceiling a compressed export cannot pass);
 * - the compression settings side by side (the served ones and their alternatives) on the
 *   small JSON export's body, in this process: bytes and CPU time per 1M rows;
 * - the server's peak RSS (VmHWM of a fresh server process) for the small and the full size;
 * - a 2-hour window of one org unit (EXPLAIN shows the index; time).
 *
 * Database: BENCH_DATABASE_URL, or the servers above. The API server runs as a child process
 * (this file with `--server`): the real app plus the naive route. Clients are native programs
 * writing to /dev/null: curl for HTTP, psql for COPY, so on this two-core machine the client
 * does not take the server's CPU.
 */
import { spawn, ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import zlib from 'node:zlib';
import type { Transform } from 'node:stream';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { Knex } from 'knex';
import express from 'express';
import { DateTime } from 'luxon';
import { loadSettings } from '../src/config/settings';
import { createLogger } from '../src/config/logger';
import { createDb, migrateLatest } from '../src/data/db';
import { composeApp } from '../src/app/compose';
import { callWindowQuery } from '../src/data/callRepository';
import { callCopySql } from '../src/data/exportQueries';
import { startOsPostgres } from './osPostgres';
import { loadOrgSnapshot } from '../src/data/organizationRepository';
import { projectScope, whereCampaignVisible } from '../src/data/projectScope';
import { formatMillis } from '../src/domain/timespan';
import { callToJson, type CallRow } from '../src/domain/callSerializer';
import { CALL_FIELDS, type CallCopyColumn } from '../src/domain/callFields';
import { startEmbeddedPostgres } from '../src/app/embeddedPostgres';
import { loadNdjson } from '../src/ingest/loader/loadNdjson';
import { generateSyntheticData } from '../src/ingest/syntheticData';
import {
  numberOption as arg,
  freePort,
  median,
  fmt,
  log,
  processCpuMs,
  processTreeCpuMs,
  parentPid,
  endedChildrenCpuMs,
  threadCpuMs,
} from './support';
import { compressor } from '../src/http/compression';

const ROOT = path.resolve(__dirname, '..');
const ZONE = 'Europe/Copenhagen';
const USERNAME = 'bench-exports';
const PASSWORD = 'bench-exports-password';
const AUTH = 'Basic ' + Buffer.from(`${USERNAME}:${PASSWORD}`).toString('base64');

// ---- the server child process -----------------------------------------------------------------

/**
 * The real app, plus two buffered baselines:
 * - `/bench/naive-calls`: the same query and serializer as the endpoint, but the whole result
 *   in memory, then res.json (isolates buffering against streaming);
 * - `/bench/typical-calls`: what a typical service ships: `select c.*` (timestamps as Date),
 *   one object per row with Luxon formatting each DateTime, res.json.
 */
/** A pg result of `db.raw`: its rows, as the driver returns them. */
interface Rows<T> {
  rows: T[];
}

interface OrgUnitRow {
  id: number;
  unique_id: string;
  org_code: string;
  name: string;
  level: number;
  parent_id: number | null;
}

/**
 * A call as a typical service reads it (`select c.*`: more columns than these, which it does not
 * read): the columns of the calls field table and its references, as the driver returns them
 * (bigint as number, timestamps as Date).
 */
type TypicalCallRow = Record<CallCopyColumn, unknown>;

/** A field's value the typical way: Luxon for each DateTime, the enumeration's name lookup. */
function typicalValue(f: (typeof CALL_FIELDS)[number], v: unknown, zone: string): unknown {
  if (v === null) return undefined;
  switch (f.type.kind) {
    case 'dateTime':
      return DateTime.fromJSDate(v as Date, { zone }).toISO();
    case 'timeSpan':
      return formatMillis(v as number);
    case 'enum':
      return f.type.enumeration.toName(v as number);
    default:
      return v;
  }
}

async function runServer(): Promise<void> {
  const settings = loadSettings(process.env);
  const db = createDb({ url: settings.DATABASE_URL!, timezone: settings.PLATFORM_TIMEZONE, poolMax: 10 });
  const composed = await composeApp({ settings, db, logger: createLogger(settings.LOG_LEVEL) });
  const outer = express();
  outer.get('/bench/naive-calls', async (req, res) => {
    // What a typical service ships: the whole result in memory, then res.json.
    const q = req.query as Record<string, string>;
    const scope = projectScope(['*']);
    const window = {
      subject: { kind: 'unit' as const, unitId: Number(q.unitId), level: Number(q.level) },
      start: new Date(q.start!),
      end: new Date(q.end!),
      limit: Number(q.limit),
      scope,
    };
    const [org, rows] = await Promise.all([
      loadOrgSnapshot(db, scope, { users: false }),
      callWindowQuery(db, window) as Promise<CallRow[]>,
    ]);
    const toCall = callToJson({ zone: settings.PLATFORM_TIMEZONE, include: new Set(), org });
    res.json(rows.map(toCall));
  });
  outer.get('/bench/typical-calls', async (req, res) => {
    const q = req.query as Record<string, string>;
    const zone = settings.PLATFORM_TIMEZONE;
    const scope = projectScope(['*']);
    const units = new Map((await db<OrgUnitRow>('org_units').select('*')).map((u) => [u.id, u]));
    const query = db('calls as c')
      .select('c.*')
      .where(`c.ou${Number(q.level)}_id`, Number(q.unitId))
      .where('c.start_time', '>=', new Date(q.start!))
      .where('c.start_time', '<', new Date(q.end!))
      .orderBy([{ column: 'c.start_time' }, { column: 'c.unique_id' }])
      .limit(Number(q.limit));
    whereCampaignVisible(query, 'c.campaign_id', scope);
    const rows = (await query) as TypicalCallRow[];
    res.json(
      rows.map((r) => {
        const call: Record<string, unknown> = {
          organizationalUnits: [r.ou0_id, r.ou1_id, r.ou2_id, r.ou3_id, r.ou4_id]
            .filter((id) => id !== null)
            .map((id) => {
              const u = units.get(id as number)!;
              return { uniqueId: u.unique_id, name: u.name, orgCode: u.org_code, level: u.level };
            }),
        };
        for (const f of CALL_FIELDS) call[f.name] = typicalValue(f, r[f.column], zone);
        return call;
      }),
    );
  });
  outer.use(composed.app.express);
  const server = outer.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write(`ready ${process.pid}\n`));
  server.requestTimeout = 0;
  process.once('SIGTERM', () => {
    server.closeAllConnections();
    server.close(
      () =>
        void composed
          .close()
          .then(() => db.destroy())
          .then(() => process.exit(0)),
    );
  });
}

interface Server {
  port: number;
  child: ChildProcess;
  status(field: 'VmHWM' | 'VmRSS'): number;
  /** CPU time (user + system) the server process has used, in ms. */
  cpuMs(): number;
  /** The same by kind of thread (the event loop, libuv's thread pool, V8's helpers). */
  threadsMs(): Map<string, number>;
  stop(): Promise<void>;
}

async function startServer(url: string): Promise<Server> {
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(ROOT, 'bin/run-ts.js'), path.join(ROOT, 'bench/exports.ts'), '--server'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: url,
      REDIS_URL: '',
      PORT: String(port),
      LOG_LEVEL: 'warn',
      DEFAULT_BULK_DAILY_LIMIT: '100000000',
      DEFAULT_DAILY_LIMIT: '100000000',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('ready')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
  return {
    port,
    child,
    // kB from /proc/<pid>/status: the node process itself (run-ts requires the file in-process).
    status(field) {
      const text = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
      return m ? Number(m[1]) * 1024 : NaN;
    },
    cpuMs: () => processCpuMs(child.pid!),
    threadsMs: () => threadCpuMs(child.pid!),
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

// ---- HTTP client ------------------------------------------------------------------------------

interface Fetched {
  status: number;
  bytes: number;
  ttfbMs: number;
  totalMs: number;
  tail: string;
}

/**
 * GET with curl, body to /dev/null: a native client, as psql is for COPY, so the client's own
 * work does not take the CPU the server needs (the machine has two cores for Postgres, the
 * server and the client together).
 */
function fetchAll(port: number, pathAndQuery: string, acceptEncoding?: string): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const extra = acceptEncoding ? ['-H', `Accept-Encoding: ${acceptEncoding}`] : [];
    const curl = spawn(
      'curl',
      [
        '-s',
        '-o',
        '/dev/null',
        '-H',
        `Authorization: ${AUTH}`,
        ...extra,
        '-w',
        '%{http_code} %{size_download} %{time_starttransfer} %{time_total}',
        `http://127.0.0.1:${port}${pathAndQuery}`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    curl.stdout.on('data', (c: Buffer) => (out += c.toString()));
    curl.once('error', reject);
    curl.once('close', (code) => {
      const [status, bytes, ttfb, total] = out.trim().split(' ').map(Number);
      if (code !== 0 || status === undefined) reject(new Error(`curl exited with ${code}: ${out}`));
      else resolve({ status, bytes: bytes!, ttfbMs: ttfb! * 1000, totalMs: total! * 1000, tail: '' });
    });
  });
}

/** The whole body of a GET, in memory (for the compression settings below; the small size only). */
function fetchBody(port: number, pathAndQuery: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    http
      .get(`http://127.0.0.1:${port}${pathAndQuery}`, { headers: { Authorization: AUTH } }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.once('end', () =>
          res.statusCode === 200 ? resolve(Buffer.concat(parts)) : reject(new Error(`${pathAndQuery}: HTTP ${res.statusCode}`)),
        );
        res.once('error', reject);
      })
      .once('error', reject);
  });
}

/** The settings compared: what the API serves (its own `compressor`) and the alternatives. */
const COMPRESSION_SETTINGS: [string, () => Transform][] = [
  ['zstd as served (level 1, 128 KB window)', () => compressor('zstd')],
  ['zstd level 1 (its own 512 KB window)', () => zlib.createZstdCompress({ params: { [zlib.constants.ZSTD_c_compressionLevel]: 1 } })],
  ['zstd level 3', () => zlib.createZstdCompress({ params: { [zlib.constants.ZSTD_c_compressionLevel]: 3 } })],
  ['br as served (quality 1)', () => compressor('br')],
  ['gzip as served (level 1)', () => compressor('gzip')],
];

/** CPU time of one compression of `body`, written in 64 KB pieces as an export writes it. */
async function compressOnce(make: () => Transform, body: Buffer): Promise<{ cpuMs: number; bytes: number }> {
  const z = make();
  let bytes = 0;
  z.on('data', (c: Buffer) => (bytes += c.length));
  const ended = new Promise((resolve, reject) => z.once('end', resolve).once('error', reject));
  const t0 = process.cpuUsage();
  for (let i = 0; i < body.length; i += 65536) {
    if (!z.write(body.subarray(i, i + 65536))) await new Promise((r) => z.once('drain', r));
  }
  z.end();
  await ended;
  const cpu = process.cpuUsage(t0);
  return { cpuMs: (cpu.user + cpu.system) / 1000, bytes };
}

/**
 * Each setting compresses the same JSON body in turn, `rounds` × 3 rounds in rotated order
 * (the host's speed drifts); the compression runs on libuv's thread pool, whose CPU time is
 * this process's.
 */
async function compareCompressionSettings(body: Buffer, rows: number, rounds: number): Promise<void> {
  const cpu = new Map<string, number[]>();
  const sizes = new Map<string, number>();
  for (let r = 0; r < rounds * 3; r++) {
    for (let i = 0; i < COMPRESSION_SETTINGS.length; i++) {
      const [name, make] = COMPRESSION_SETTINGS[(i + r) % COMPRESSION_SETTINGS.length]!;
      const { cpuMs, bytes } = await compressOnce(make, body);
      (cpu.get(name) ?? cpu.set(name, []).get(name)!).push(cpuMs);
      sizes.set(name, bytes);
    }
  }
  log();
  log(`Compression settings on the JSON body of ${fmt(rows)} rows (${fmt(body.length / 1e6, 1)} MB), ${rounds * 3} rounds, medians:`);
  log();
  log('| setting | fewer bytes | CPU per 1M rows |');
  log('|---|---:|---:|');
  for (const [name] of COMPRESSION_SETTINGS) {
    log(`| ${name} | ${fmt(body.length / sizes.get(name)!, 1)}× | ${fmt((median(cpu.get(name)!) / rows) * 1000, 2)} s |`);
  }
}

// ---- database and data set --------------------------------------------------------------------

type ServerKind = 'embedded' | 'os15';

/**
 * The database of one run: the embedded Postgres 17 (kept in .data/bench-postgres, data
 * generated once), or a throwaway Postgres 15 from the OS packages with JIT on (bench/osPostgres.ts;
 * data generated per run), or BENCH_DATABASE_URL.
 */
async function benchDatabase(kind: ServerKind): Promise<{ url: string; label: string; stop: () => Promise<void> }> {
  if (process.env.BENCH_DATABASE_URL)
    return { url: process.env.BENCH_DATABASE_URL, label: 'BENCH_DATABASE_URL', stop: () => Promise.resolve() };
  if (kind === 'os15') {
    const cluster = await startOsPostgres({ version: 15, port: await freePort(), database: 'lcm_bench' });
    return { url: cluster.url, label: `OS Postgres ${cluster.version} (Debian package, JIT on)`, stop: () => cluster.stop() };
  }
  const cluster = await startEmbeddedPostgres({
    dataDir: path.join(ROOT, '.data/bench-postgres'),
    port: await freePort(),
    database: 'lcm_bench',
    persistent: true,
  });
  return { url: cluster.url, label: 'embedded Postgres 17', stop: () => cluster.stop() };
}

async function ensureData(db: Knex, calls: number): Promise<void> {
  const have = Number((await db.raw<Rows<{ n: number }>>('select count(*) as n from calls')).rows[0]!.n);
  if (have < calls) {
    log(`generating ${fmt(calls - have)} calls (once; kept in the bench database) ...`);
    const t0 = Date.now();
    await generateSyntheticData(db, { calls: calls - have, leads: Math.ceil((calls - have) / 4), seed: 42, zone: ZONE });
    log(`generated in ${fmt((Date.now() - t0) / 1000, 1)} s`);
  }
  const user = (await db<{ id: number; org_code: string }>('users').orderBy('id').first('org_code'))!.org_code;
  await loadNdjson(
    db,
    Readable.from([
      JSON.stringify({
        type: 'account',
        username: USERNAME,
        password: PASSWORD,
        user,
        projects: ['*'],
        rights: { Calls: ['Get'] },
        entryAccess: 'Full',
      }) + '\n',
    ]),
    { zone: ZONE },
  );
}

// ---- the benchmark ----------------------------------------------------------------------------

interface Target {
  unitId: number;
  level: number;
  orgCode: string;
  start: Date;
  end: Date;
}

/** The root unit with the most calls, and a window holding all of them. */
async function bigTarget(db: Knex): Promise<Target> {
  const row = (
    await db.raw<
      Rows<{ id: number; n: number; first: Date; last: Date }>
    >(`select ou0_id as id, count(*)::int as n, min(start_time) as first, max(start_time) as last
                    from calls group by ou0_id order by n desc limit 1`)
  ).rows[0]!;
  const unit = (await db<OrgUnitRow>('org_units').where({ id: row.id }).first('org_code', 'level'))!;
  return { unitId: row.id, level: unit.level, orgCode: unit.org_code, start: row.first, end: new Date(row.last.getTime() + 1) };
}

/** A busy 2-hour window (weekday, 10:00 local) of one squad (level 4), in the middle of the data. */
async function twoHourTarget(db: Knex): Promise<Target> {
  const mid = (await db.raw<Rows<{ t: Date }>>(`select percentile_disc(0.5) within group (order by start_time) as t from calls`)).rows[0]!
    .t;
  let day = DateTime.fromJSDate(mid, { zone: ZONE }).startOf('day');
  while (day.weekday >= 6) day = day.plus({ days: 1 });
  const start = day.set({ hour: 10 }).toJSDate();
  const end = day.set({ hour: 12 }).toJSDate();
  const row = (
    await db.raw<Rows<{ id: number; n: number }>>(
      `select ou4_id as id, count(*)::int as n from calls where start_time >= ? and start_time < ? and ou4_id is not null
        group by ou4_id order by n desc limit 1`,
      [start, end],
    )
  ).rows[0]!;
  const unit = (await db<OrgUnitRow>('org_units').where({ id: row.id }).first('org_code', 'level'))!;
  return { unitId: row.id, level: unit.level, orgCode: unit.org_code, start, end };
}

function apiQuery(t: Target, limit: number): string {
  return `OrgCode=${encodeURIComponent(t.orgCode)}&StartTime=${encodeURIComponent(t.start.toISOString())}&TimeSpan=PT${(t.end.getTime() - t.start.getTime()) / 1000}S&Limit=${limit}`;
}

/** The SELECT the transcoded endpoints COPY (one for JSON and CSV), values inlined: psql COPY reads the same rows. */
async function endpointSql(db: Knex, t: Target, limit: number): Promise<string> {
  const campaigns = (await db<{ id: number }>('campaigns').select('id')).map((c) => c.id);
  return callCopySql(db, { subject: { kind: 'unit', unitId: t.unitId, level: t.level }, start: t.start, end: t.end, limit }, campaigns);
}

/**
 * Marks the CPU time used so far by Postgres (`postmaster` and its backends) and by this
 * process's ended children (curl, psql); the function returned gives what each used since.
 */
function cpuSince(postmaster: number): () => { pgCpuMs: number; clientCpuMs: number } {
  const pg0 = processTreeCpuMs(postmaster);
  const client0 = endedChildrenCpuMs();
  return () => ({ pgCpuMs: processTreeCpuMs(postmaster) - pg0, clientCpuMs: endedChildrenCpuMs() - client0 });
}

/**
 * psql `COPY (sql) TO STDOUT` to /dev/null, timed, with the CPU it took Postgres (`postmaster`'s
 * processes) and psql; the byte count comes from a second, untimed COPY.
 */
function copyMs(
  url: string,
  sql: string,
  format: 'csv' | 'text',
  postmaster: number,
): Promise<{ ms: number; bytes: number; pgCpuMs: number; clientCpuMs: number }> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const cpu = cpuSince(postmaster);
    const psql = spawn(
      '/usr/bin/psql',
      [url, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-o', '/dev/null', '-c', `COPY (${sql}) TO STDOUT WITH (FORMAT ${format})`],
      {
        env: { ...process.env, PGTZ: ZONE },
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    psql.once('error', reject);
    psql.once('close', (code) => {
      if (code !== 0) return reject(new Error(`psql exited with ${code}`));
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      const used = cpu();
      const wc = spawn('sh', ['-c', `/usr/bin/psql "$0" -X -q -c "$1" | wc -c`, url, `COPY (${sql}) TO STDOUT WITH (FORMAT ${format})`], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      wc.stdout.on('data', (c: Buffer) => (out += c.toString()));
      wc.once('close', () => resolve({ ms, bytes: Number(out.trim()), ...used }));
    });
  });
}

function kinds(): ServerKind[] {
  const i = process.argv.indexOf('--pg');
  const list = (i > 0 ? process.argv[i + 1]! : 'embedded,os15').split(',');
  for (const k of list)
    if (k !== 'embedded' && k !== 'os15') throw new Error(`--pg takes embedded, os15 or both comma-separated, not ${k}`);
  return list as ServerKind[];
}

async function main(): Promise<void> {
  if (process.argv.includes('--server')) return runServer();
  for (const kind of kinds()) await runOn(kind);
}

async function runOn(kind: ServerKind): Promise<void> {
  const calls = arg('calls', 1_000_000);
  const small = Math.min(arg('small', 100_000), calls);
  const runs = arg('runs', 3);
  const database = await benchDatabase(kind);
  log(`## ${database.label}`);
  log();
  const db = createDb({ url: database.url, timezone: ZONE, poolMax: 2 });
  try {
    await migrateLatest(db);
    await ensureData(db, calls);
    await db.raw('vacuum analyze calls');
    if (process.argv.includes('--prepare')) return;
    const jit = (
      await db.raw<Rows<{ jit: string; cost: string; v: string }>>(
        `select current_setting('jit') as jit, current_setting('jit_above_cost') as cost, version() as v`,
      )
    ).rows[0]!;
    log(`server: ${jit.v.split(',')[0]}; jit = ${jit.jit}, jit_above_cost = ${jit.cost}`);
    const big = await bigTarget(db);
    const total = Number((await db.raw<Rows<{ n: number }>>('select count(*) as n from calls')).rows[0]!.n);
    log(
      `data set: ${fmt(total)} calls; export target: org unit "${big.orgCode}" (level ${big.level}), ${fmt(calls)} and ${fmt(small)} rows`,
    );
    log(`node ${process.version}, ${os.cpus().length} cores, runs per figure: ${runs} (median)`);
    const N = fmt(calls);
    const S = fmt(small);
    // The root may hold a little less than the nominal size (calls of other roots).
    const bigRows = Math.min(
      calls,
      Number((await db.raw<Rows<{ n: number }>>(`select count(*) as n from calls where ou0_id = ?`, [big.unitId])).rows[0]!.n),
    );
    log();

    let naiveAtFullSize = '';
    let smallJsonBody: Buffer | undefined;
    const server = await startServer(database.url);
    const results: Record<
      string,
      {
        rows: number;
        ms: number[];
        ttfb: number[];
        cpu: number[];
        pgCpu: number[];
        clientCpu: number[];
        threads: Map<string, number[]>;
        bytes: number;
      }
    > = {};
    const record = (
      name: string,
      rows: number,
      f: {
        ms: number;
        ttfb?: number;
        bytes: number;
        cpuMs?: number;
        pgCpuMs?: number;
        clientCpuMs?: number;
        threadsMs?: Map<string, number>;
      },
    ) => {
      const r = (results[name] ??= { rows, ms: [], ttfb: [], cpu: [], pgCpu: [], clientCpu: [], threads: new Map(), bytes: f.bytes });
      for (const [thread, ms] of f.threadsMs ?? []) (r.threads.get(thread) ?? r.threads.set(thread, []).get(thread)!).push(ms);
      r.ms.push(f.ms);
      if (f.ttfb !== undefined) r.ttfb.push(f.ttfb);
      if (f.cpuMs !== undefined) r.cpu.push(f.cpuMs);
      if (f.pgCpuMs !== undefined) r.pgCpu.push(f.pgCpuMs);
      if (f.clientCpuMs !== undefined) r.clientCpu.push(f.clientCpuMs);
    };
    // Postgres's CPU (the postmaster and its backends) and the client's around each transfer: with
    // the server's, all that the machine's cores had to do for it.
    const postmaster = parentPid((await db.raw<{ rows: { pid: number }[] }>('select pg_backend_pid() as pid')).rows[0]!.pid);
    try {
      // Warm-up: code paths, plans and the page cache.
      await fetchAll(server.port, `/api/calls/csv?${apiQuery(big, 20_000)}`);
      await fetchAll(server.port, `/api/calls?${apiQuery(big, 20_000)}`);
      const sql = await endpointSql(db, big, calls);
      const naiveQuery = (limit: number) =>
        `/bench/naive-calls?unitId=${big.unitId}&level=${big.level}&start=${big.start.toISOString()}&end=${big.end.toISOString()}&limit=${limit}`;
      for (let i = 0; i < runs; i++) {
        record(`COPY (same SELECT) TO STDOUT, csv format, ${N}`, bigRows, await copyMs(database.url, sql, 'csv', postmaster));
        record(`COPY (same SELECT) TO STDOUT, text format, ${N}`, bigRows, await copyMs(database.url, sql, 'text', postmaster));
        for (const [name, p, rows, encoding] of [
          [`/api/calls/csv, ${N}`, `/api/calls/csv?${apiQuery(big, calls)}`, bigRows],
          [`/api/calls (JSON), ${N}`, `/api/calls?${apiQuery(big, calls)}`, bigRows],
          [`/api/calls (JSON), zstd, ${N}`, `/api/calls?${apiQuery(big, calls)}`, bigRows, 'zstd'],
          [`/api/calls (JSON), br, ${N}`, `/api/calls?${apiQuery(big, calls)}`, bigRows, 'br'],
          [`/api/calls (JSON), gzip, ${N}`, `/api/calls?${apiQuery(big, calls)}`, bigRows, 'gzip'],
          [`/api/calls/csv, ${S}`, `/api/calls/csv?${apiQuery(big, small)}`, small],
          [`/api/calls (JSON), ${S}`, `/api/calls?${apiQuery(big, small)}`, small],
          [`naive buffered (knex → res.json), ${S}`, naiveQuery(small), small],
          [
            `typical buffered (select *, Luxon per DateTime, res.json), ${S}`,
            naiveQuery(small).replace('naive-calls', 'typical-calls'),
            small,
          ],
        ] as [string, string, number, string?][]) {
          const cpu0 = server.cpuMs();
          const threads0 = server.threadsMs();
          const cpu = cpuSince(postmaster);
          const f = await fetchAll(server.port, p, encoding);
          const used = cpu();
          if (f.status !== 200) throw new Error(`${p}: HTTP ${f.status}`);
          const threadsMs = new Map([...server.threadsMs()].map(([thread, ms]) => [thread, ms - (threads0.get(thread) ?? 0)]));
          record(name, rows, { ms: f.totalMs, ttfb: f.ttfbMs, bytes: f.bytes, cpuMs: server.cpuMs() - cpu0, threadsMs, ...used });
        }
        record(
          `COPY (same SELECT) TO STDOUT, text format, ${S}`,
          small,
          await copyMs(database.url, await endpointSql(db, big, small), 'text', postmaster),
        );
      }
      smallJsonBody = await fetchBody(server.port, `/api/calls?${apiQuery(big, small)}`);
      // Once: the naive implementation at the full size (it holds every row and the whole body).
      try {
        const f = await fetchAll(server.port, naiveQuery(calls));
        const peak = server.status('VmHWM');
        naiveAtFullSize = `HTTP ${f.status} after ${fmt(f.totalMs / 1000, 1)} s, ${fmt(f.bytes / 1e6, 1)} MB, server peak RSS ${fmt(peak / 2 ** 20)} MB`;
      } catch (err) {
        naiveAtFullSize = `failed: ${(err as Error).message}`;
      }
    } finally {
      await server.stop();
    }

    log('| what | rows | median time | rows/s | MB | TTFB (median) | CPU per 1M rows: server · Postgres · client |');
    log('|---|---:|---:|---:|---:|---:|---:|');
    /** Median CPU seconds per 1M rows of one kind, or undefined where it was not measured. */
    const perMillion = (r: { rows: number }, xs: number[]) => (xs.length ? (median(xs) / r.rows) * 1000 : undefined);
    const seconds = (x: number | undefined) => (x === undefined ? '—' : `${fmt(x, 2)} s`);
    for (const [name, r] of Object.entries(results)) {
      const ms = median(r.ms);
      const cpu = [r.cpu, r.pgCpu, r.clientCpu].map((xs) => seconds(perMillion(r, xs))).join(' · ');
      log(
        `| ${name} | ${fmt(r.rows)} | ${fmt(ms / 1000, 2)} s | ${fmt((r.rows / ms) * 1000)} | ${fmt(r.bytes / 1e6, 1)} | ${r.ttfb.length ? fmt(median(r.ttfb), 1) + ' ms' : '—'} | ${cpu} |`,
      );
    }
    const rate = (name: string) => {
      const r = results[name]!;
      return r.rows / median(r.ms);
    };
    /**
     * a's rows/s over b's within each repetition, median over the repetitions: the two are
     * measured seconds apart, so a change of the host's speed between repetitions (which moves
     * both) does not move the ratio. The ratio of the medians is printed beside it.
     */
    const ratio = (a: string, b: string) => {
      const ra = results[a]!;
      const rb = results[b]!;
      const paired = median(ra.ms.map((ms, i) => ra.rows / ms / (rb.rows / rb.ms[i]!)));
      return `${fmt(paired, 2)}× (of the medians: ${fmt(rate(a) / rate(b), 2)}×)`;
    };
    const copyCsv = `COPY (same SELECT) TO STDOUT, csv format, ${N}`;
    const copyText = `COPY (same SELECT) TO STDOUT, text format, ${N}`;
    const csv = `/api/calls/csv, ${N}`;
    const json = `/api/calls (JSON), ${N}`;
    log();
    log(`Ratios: median over the runs of each run's own ratio (the ratio of the medians in brackets).`);
    log(`CSV / COPY csv format (${N}): ${ratio(csv, copyCsv)} (target ≥ 0.9); against COPY text format: ${ratio(csv, copyText)}`);
    log(`JSON / COPY csv format (${N}): ${ratio(json, copyCsv)} (target ≥ 0.8); against COPY text format: ${ratio(json, copyText)}`);
    for (const coding of ['zstd', 'br', 'gzip']) {
      const compressed = `/api/calls (JSON), ${coding}, ${N}`;
      log(
        `JSON ${coding} (${N}): ${fmt(results[json]!.bytes / results[compressed]!.bytes, 1)}× fewer bytes (target ≥ 8), ${ratio(compressed, json)} the uncompressed rows/s (target ≥ 0.7)`,
      );
    }
    // What the machine's cores allow at most: every CPU-second the export needs (server, its
    // compressor thread, Postgres, the client), spread over all cores with none idle.
    const cores = os.cpus().length;
    for (const name of [json, ...['zstd', 'br', 'gzip'].map((c) => `/api/calls (JSON), ${c}, ${N}`)]) {
      const r = results[name]!;
      const parts = [r.cpu, r.pgCpu, r.clientCpu].map((xs) => perMillion(r, xs));
      if (parts.some((x) => x === undefined || Number.isNaN(x))) continue;
      const total = parts.reduce((a, b) => a! + b!, 0)!;
      const ceiling = (cores * 1e6) / total;
      const threads = ['MainThread', 'libuv-worker', 'V8Worker'].map((t) => seconds(perMillion(r, r.threads.get(t) ?? [])));
      log(
        `${name}: ${fmt(total, 2)} CPU-s per 1M rows in all; on ${cores} cores at most ${fmt(ceiling)} rows/s, ${fmt(ceiling / rate(json) / 1000, 2)}× the uncompressed JSON's measured rows/s; the server's event loop · thread pool · V8 helpers ${threads.join(' · ')} per 1M rows`,
      );
    }
    log(
      `JSON / naive buffered (${S}): ${fmt(rate(`/api/calls (JSON), ${S}`) / rate(`naive buffered (knex → res.json), ${S}`), 2)}× (target ≥ 3)`,
    );
    log(`CSV / naive buffered JSON (${S}): ${fmt(rate(`/api/calls/csv, ${S}`) / rate(`naive buffered (knex → res.json), ${S}`), 2)}×`);
    log(
      `JSON / typical buffered (${S}): ${fmt(rate(`/api/calls (JSON), ${S}`) / rate(`typical buffered (select *, Luxon per DateTime, res.json), ${S}`), 2)}×`,
    );
    log(`naive buffered at ${N} rows (once): ${naiveAtFullSize}`);
    if (smallJsonBody) await compareCompressionSettings(smallJsonBody, small, runs);

    // Peak RSS of a fresh server per size.
    log();
    log('| server peak RSS (VmHWM), fresh process | after warm-up | after export | growth |');
    log('|---|---:|---:|---:|');
    const peaks: Record<string, number> = {};
    for (const [label, rows, kind] of [
      [`${S} rows JSON`, small, 'json'],
      [`${N} rows JSON`, calls, 'json'],
      [`${S} rows CSV`, small, 'csv'],
      [`${N} rows CSV`, calls, 'csv'],
    ] as [string, number, 'json' | 'csv'][]) {
      const s = await startServer(database.url);
      try {
        await fetchAll(s.port, `/api/calls${kind === 'csv' ? '/csv' : ''}?${apiQuery(big, 20_000)}`);
        const before = s.status('VmHWM');
        await fetchAll(s.port, `/api/calls${kind === 'csv' ? '/csv' : ''}?${apiQuery(big, rows)}`);
        const after = s.status('VmHWM');
        peaks[label] = after;
        log(`| ${label} | ${fmt(before / 2 ** 20, 1)} MB | ${fmt(after / 2 ** 20, 1)} MB | ${fmt((after - before) / 2 ** 20, 1)} MB |`);
      } finally {
        await s.stop();
      }
    }
    log();
    log(
      `RSS growth from ${S} to ${N} rows: JSON ${fmt((peaks[`${N} rows JSON`]! - peaks[`${S} rows JSON`]!) / 2 ** 20, 1)} MB, CSV ${fmt((peaks[`${N} rows CSV`]! - peaks[`${S} rows CSV`]!) / 2 ** 20, 1)} MB (target < 64 MB)`,
    );

    // A 2-hour window of one org unit.
    const two = await twoHourTarget(db);
    const sql = await endpointSql(db, two, 1_000_000_000);
    const plan = (await db.raw<Rows<{ 'QUERY PLAN': string }>>(`explain (analyze, buffers, costs off) ${sql}`)).rows.map(
      (r) => r['QUERY PLAN'],
    );
    log();
    log(`2-hour window of org unit "${two.orgCode}" (level ${two.level}), ${two.start.toISOString()} .. ${two.end.toISOString()}:`);
    log('```');
    for (const line of plan) log(line);
    log('```');
    const s = await startServer(database.url);
    try {
      const times: number[] = [];
      let bytes = 0;
      for (let i = 0; i < runs + 1; i++) {
        const q = `OrgCode=${encodeURIComponent(two.orgCode)}&StartTime=${encodeURIComponent(two.start.toISOString())}&TimeSpan=PT2H`;
        const f = await fetchAll(s.port, `/api/calls?${q}`);
        bytes = f.bytes;
        if (i > 0) times.push(f.totalMs);
      }
      const n = Number((await db.raw<Rows<{ n: number }>>(`select count(*)::int as n from (${sql}) q`)).rows[0]!.n);
      log(
        `GET /api/calls for that window: ${fmt(n)} calls, ${fmt(bytes / 1e3, 1)} kB, median ${fmt(median(times), 1)} ms over ${runs} runs (after one warm-up)`,
      );
    } finally {
      await s.stop();
    }
  } finally {
    await db.destroy();
    await database.stop();
  }
  log();
}

main().catch((err) => {
  process.stderr.write(`bench: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
});
