/**
 * Month-partitioned against unpartitioned schema, one command:
 *
 *   npm run bench:partitions [-- --calls 10000000 --export 1000000 --runs 3]
 *
 * On one generated data set (src/ingest/syntheticData.ts, seed 42, generated once and kept),
 * in two databases of one Postgres: `lcm_part` (the current, partitioned schema) and `lcm_flat`,
 * a copy of it with the partitioning migration rolled back (its down() moves the same rows into
 * plain tables). It reports, for both:
 * - sizes: heap and every index per call row, the registry (call_keys), and each month partition;
 * - a 2-hour window of the busiest level-4 unit: EXPLAIN (ANALYZE, BUFFERS) (the partitioned plan
 *   is printed: pruning), median time;
 * - lookups by unique id (what /calls/{UniqueId}/recordings does): registry probe + one
 *   partition, the flat unique index, and the rejected alternative (an index on unique_id in
 *   every partition, probed in all of them), measured on a temporary index;
 * - writing a call by unique id, as the loader does: the registry claim + insert against the
 *   flat `INSERT … ON CONFLICT (unique_id)`;
 * - `/api/calls/csv` and `/api/calls` of one root unit (`--export` rows), and `psql COPY` of
 *   the same SELECT, on a server (`lcm serve`) per schema, alternating, medians of `--runs`:
 *   the partitioned ÷ unpartitioned ratio of each.
 *
 * Database: BENCH_DATABASE_URL (a URL whose database is the maintenance database; the two
 * bench databases are created beside it), or an embedded cluster in .data/bench-partitions.
 * The machine should be quiet: run it once, alone.
 */
import { spawn, ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { Knex } from 'knex';
import type { Client as PgClient } from 'pg';
import { DateTime } from 'luxon';
import { createDb, migrateLatest } from '../src/data/db';
import { startEmbeddedPostgres } from '../src/app/embeddedPostgres';
import { generateSyntheticData } from '../src/ingest/syntheticData';
import { loadNdjson } from '../src/ingest/loader/loadNdjson';
import { callWindowQuery } from '../src/data/callRepository';
import { projectScope } from '../src/data/projectScope';
import { numberOption as arg, freePort, median, fmt, log } from './support';

const ROOT = path.resolve(__dirname, '..');
const ZONE = 'Europe/Copenhagen';
const USERNAME = 'bench-partitions';
const PASSWORD = 'bench-partitions-password';
const AUTH = 'Basic ' + Buffer.from(`${USERNAME}:${PASSWORD}`).toString('base64');
const PARTITIONING = '20261123300001_partition_calls_by_month';

const mb = (bytes: number) => fmt(bytes / 2 ** 20, 1);

const withDatabase = (url: string, name: string) => url.replace(/\/[^/?]+(\?|$)/, `/${name}$1`);

/** A pg result of `db.raw`: its rows, as the driver returns them (bigint as number). */
interface Rows<T> {
  rows: T[];
}

/** The org_units columns the targets read. */
interface OrgUnitRow {
  id: number;
  org_code: string;
  level: number;
}

/** The part of knex's client (db.client) the statement timings use: one connection of its pool. */
interface KnexClient {
  acquireConnection(): Promise<PgClient>;
  releaseConnection(conn: PgClient): Promise<void>;
}

// ---- databases --------------------------------------------------------------------------------

async function cluster(): Promise<{ admin: string; stop: () => Promise<void> }> {
  if (process.env.BENCH_DATABASE_URL) return { admin: process.env.BENCH_DATABASE_URL, stop: () => Promise.resolve() };
  const c = await startEmbeddedPostgres({
    dataDir: path.join(ROOT, '.data/bench-partitions'),
    port: await freePort(),
    database: 'postgres',
    persistent: true,
  });
  return { admin: c.url, stop: () => c.stop() };
}

async function databaseExists(admin: Knex, name: string): Promise<boolean> {
  return (await admin.raw<Rows<unknown>>('select 1 from pg_database where datname = ?', [name])).rows.length > 0;
}

const callCount = async (db: Knex) => Number((await db.raw<Rows<{ n: number }>>('select count(*)::bigint as n from calls')).rows[0]!.n);

/** lcm_part with `calls` generated calls (kept between runs), and the account the exports use. */
async function preparePartitioned(admin: Knex, url: string, calls: number): Promise<void> {
  if (!(await databaseExists(admin, 'lcm_part'))) await admin.raw('create database lcm_part');
  const db = createDb({ url, timezone: ZONE, poolMax: 4 });
  try {
    await migrateLatest(db);
    const have = await callCount(db);
    if (have < calls) {
      log(`generating ${fmt(calls - have)} calls into lcm_part (once; kept) ...`);
      const summary = await generateSyntheticData(db, {
        calls: calls - have,
        leads: Math.ceil((calls - have) / 4),
        seed: 42,
        zone: ZONE,
        days: 180,
      });
      const copyMs = summary.timings.calls! + summary.timings.recordings!;
      log(
        `generated in ${fmt(Object.values(summary.timings).reduce((a, b) => a + b, 0) / 1000, 1)} s; calls + recordings COPY ${fmt(copyMs / 1000, 1)} s = ${fmt(((summary.counts.calls! + summary.counts.recordings!) / copyMs) * 1000)} rows/s (with the registry's statement trigger)`,
      );
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
  } finally {
    await db.destroy();
  }
}

/** lcm_flat: a copy of lcm_part with the partitioning migration (and every later one) rolled back. */
async function prepareFlat(admin: Knex, partUrl: string, flatUrl: string): Promise<void> {
  if (await databaseExists(admin, 'lcm_flat')) {
    const [part, flat] = [createDb({ url: partUrl, timezone: ZONE }), createDb({ url: flatUrl, timezone: ZONE })];
    try {
      // A run cut during the roll-back leaves a copy that is still partitioned: make it again.
      const plain =
        (
          await flat.raw<Rows<{ relkind: string }>>(
            "select relkind from pg_class where relname = 'calls' and relnamespace = 'public'::regnamespace",
          )
        ).rows[0]?.relkind === 'r';
      if (plain && (await callCount(part)) === (await callCount(flat))) return;
    } finally {
      await part.destroy();
      await flat.destroy();
    }
    await admin.raw('drop database lcm_flat with (force)');
  }
  log('copying lcm_part to lcm_flat and rolling its partitioning back (once; kept) ...');
  const t0 = Date.now();
  await admin.raw('create database lcm_flat template lcm_part');
  const flat = createDb({ url: flatUrl, timezone: ZONE, poolMax: 4 });
  try {
    for (;;) {
      const [done] = (await flat.migrate.list()) as [{ name: string }[], unknown[]];
      const last = done[done.length - 1]?.name;
      if (last === undefined || last < PARTITIONING) break;
      await flat.migrate.down();
    }
    // Recorded as applied (its tables stay plain), so `lcm serve`, which migrates at start,
    // leaves the flat schema as it is; the later migrations are applied again.
    await flat('knex_migrations').insert({ name: PARTITIONING, batch: 0, migration_time: new Date() });
    await migrateLatest(flat);
  } finally {
    await flat.destroy();
  }
  log(`lcm_flat ready in ${fmt((Date.now() - t0) / 1000, 1)} s`);
}

// ---- measurements -----------------------------------------------------------------------------

interface Sizes {
  rows: number;
  heap: number;
  indexes: { name: string; bytes: number }[];
  extra: { name: string; bytes: number }[];
}

/** Heap and per-index bytes of `calls` summed over its partitions (or of the plain table). */
async function sizes(db: Knex): Promise<Sizes> {
  const rows = await callCount(db);
  const { rows: tables } = await db.raw<Rows<{ heap: number }>>(`
    select coalesce(sum(pg_relation_size(relid)), pg_relation_size('calls'))::bigint as heap
      from pg_partition_tree('calls') where isleaf`);
  // Partition indexes are named <parent index>_p<month>|_default; sum them per parent.
  const { rows: idx } = await db.raw<Rows<{ name: string; bytes: number; tbl: string }>>(`
    select i.indexrelid::regclass::text as name, pg_relation_size(i.indexrelid)::bigint as bytes, c.relname as tbl
      from pg_index i join pg_class c on c.oid = i.indrelid
     where c.relname = 'calls' or c.relname ~ '^calls_(p\\d{4}_\\d{2}|default)$'`);
  const byParent = new Map<string, number>();
  for (const r of idx) {
    const parent = r.tbl === 'calls' ? r.name : r.name.replace(/_(p\d{4}_\d{2}|default)$/, '');
    byParent.set(parent, (byParent.get(parent) ?? 0) + Number(r.bytes));
  }
  const extra: { name: string; bytes: number }[] = [];
  if ((await db.raw<Rows<{ ok: boolean }>>(`select to_regclass('call_keys') is not null as ok`)).rows[0]!.ok) {
    const { rows: k } = await db.raw<Rows<{ heap: number; idx: number }>>(
      `select pg_relation_size('call_keys')::bigint as heap, pg_indexes_size('call_keys')::bigint as idx`,
    );
    extra.push(
      { name: 'call_keys heap', bytes: Number(k[0]!.heap) },
      { name: 'call_keys indexes (primary key, brin)', bytes: Number(k[0]!.idx) },
    );
  }
  return {
    rows,
    heap: Number(tables[0]!.heap),
    indexes: [...byParent].map(([name, bytes]) => ({ name, bytes })).sort((a, b) => a.name.localeCompare(b.name)),
    extra,
  };
}

async function partitionSizes(db: Knex): Promise<{ name: string; rows: number; heap: number; indexes: number }[]> {
  const { rows } = await db.raw<Rows<{ name: string; rows: number; heap: number; indexes: number }>>(`
    select c.relname as name, c.reltuples::bigint as rows, pg_relation_size(c.oid)::bigint as heap, pg_indexes_size(c.oid)::bigint as indexes
      from pg_partition_tree('calls') t join pg_class c on c.oid = t.relid where t.isleaf order by c.relname`);
  return rows.map((r) => ({
    name: r.name,
    rows: Number(r.rows),
    heap: Number(r.heap),
    indexes: Number(r.indexes),
  }));
}

interface Target {
  unitId: number;
  level: number;
  orgCode: string;
  start: Date;
  end: Date;
}

async function twoHourTarget(db: Knex): Promise<Target> {
  const mid = (await db.raw<Rows<{ t: Date }>>(`select percentile_disc(0.5) within group (order by start_time) as t from calls`)).rows[0]!
    .t;
  let day = DateTime.fromJSDate(mid, { zone: ZONE }).startOf('day');
  while (day.weekday >= 6) day = day.plus({ days: 1 });
  const start = day.set({ hour: 10 }).toJSDate();
  const end = day.set({ hour: 12 }).toJSDate();
  const row = (
    await db.raw<Rows<{ id: number }>>(
      `select ou4_id as id from calls where start_time >= ? and start_time < ? and ou4_id is not null group by ou4_id order by count(*) desc limit 1`,
      [start, end],
    )
  ).rows[0]!;
  const unit = (await db<OrgUnitRow>('org_units').where({ id: row.id }).first('org_code', 'level'))!;
  return { unitId: row.id, level: unit.level, orgCode: unit.org_code, start, end };
}

async function rootTarget(db: Knex): Promise<Target> {
  const row = (
    await db.raw<Rows<{ id: number; first: Date; last: Date }>>(
      `select ou0_id as id, min(start_time) as first, max(start_time) as last from calls group by ou0_id order by count(*) desc limit 1`,
    )
  ).rows[0]!;
  const unit = (await db<OrgUnitRow>('org_units').where({ id: row.id }).first('org_code', 'level'))!;
  return { unitId: row.id, level: unit.level, orgCode: unit.org_code, start: row.first, end: new Date(row.last.getTime() + 1) };
}

const windowSql = (db: Knex, t: Target, limit: number) =>
  callWindowQuery(db, {
    subject: { kind: 'unit', unitId: t.unitId, level: t.level },
    start: t.start,
    end: t.end,
    limit,
    scope: projectScope(['*']),
  }).toQuery();

async function explainAnalyze(db: Knex, sql: string): Promise<{ ms: number; plan: string[] }> {
  const plan = (await db.raw<Rows<{ 'QUERY PLAN': string }>>(`explain (analyze, buffers, costs off) ${sql}`)).rows.map(
    (r) => r['QUERY PLAN'],
  );
  const ms = Number(/Execution Time: ([\d.]+) ms/.exec(plan.join('\n'))?.[1]);
  return { ms, plan };
}

/** Mean µs per statement over `ids`, one statement at a time on one connection. */
/** µs per id of `sql` (and, with `then`, of `then` run with the first row's values). */
async function perStatement(db: Knex, ids: string[], sql: string, options: { then?: string } = {}): Promise<number> {
  const client = db.client as KnexClient;
  const conn = await client.acquireConnection();
  const lookup = async (id: string) => {
    const { rows } = await conn.query<Record<string, unknown>>(sql, [id]);
    if (options.then && rows[0]) await conn.query(options.then, Object.values(rows[0]));
  };
  try {
    for (const id of ids.slice(0, 50)) await lookup(id); // warm-up
    const t0 = process.hrtime.bigint();
    for (const id of ids) await lookup(id);
    return Number(process.hrtime.bigint() - t0) / 1e3 / ids.length;
  } finally {
    await client.releaseConnection(conn);
  }
}

// ---- HTTP and psql ----------------------------------------------------------------------------

interface Server {
  port: number;
  stop(): Promise<void>;
}

async function startServer(url: string): Promise<Server> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [path.join(ROOT, 'bin/lcm.js'), 'serve'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: url,
      DATABASE_READ_URL: '',
      REDIS_URL: '',
      PORT: String(port),
      LOG_LEVEL: 'warn',
      DEFAULT_BULK_DAILY_LIMIT: '100000000',
      DEFAULT_DAILY_LIMIT: '100000000',
      SWEEP_INTERVAL_MS: '0',
      MAINTENANCE_INTERVAL_MS: '0',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('listening on')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)));
  });
  return {
    port,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

function curl(port: number, pathAndQuery: string): Promise<{ status: number; ms: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const c = spawn(
      'curl',
      [
        '-s',
        '-o',
        '/dev/null',
        '-H',
        `Authorization: ${AUTH}`,
        '-w',
        '%{http_code} %{size_download} %{time_total}',
        `http://127.0.0.1:${port}${pathAndQuery}`,
      ],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.once('error', reject);
    c.once('close', () => {
      const [status, bytes, total] = out.trim().split(' ').map(Number);
      resolve({ status: status!, bytes: bytes!, ms: total! * 1000 });
    });
  });
}

function psqlCopy(url: string, sql: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const p = spawn(
      'psql',
      [url, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-o', '/dev/null', '-c', `COPY (${sql}) TO STDOUT WITH (FORMAT csv)`],
      {
        env: { ...process.env, PGTZ: ZONE },
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    p.once('error', reject);
    p.once('close', (code) =>
      code === 0 ? resolve(Number(process.hrtime.bigint() - t0) / 1e6) : reject(new Error(`psql exited with ${code}`)),
    );
  });
}

const apiQuery = (t: Target, limit: number) =>
  `OrgCode=${encodeURIComponent(t.orgCode)}&StartTime=${encodeURIComponent(t.start.toISOString())}&TimeSpan=PT${Math.ceil((t.end.getTime() - t.start.getTime()) / 1000)}S&Limit=${limit}`;

// ---- main -------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const calls = arg('calls', 1_000_000);
  const exportLimit = arg('export', 1_000_000);
  const runs = arg('runs', 3);
  const lookups = arg('lookups', 2000);
  const server = await cluster();
  const admin = createDb({ url: server.admin, timezone: ZONE, poolMax: 2 });
  const partUrl = withDatabase(server.admin, 'lcm_part');
  const flatUrl = withDatabase(server.admin, 'lcm_flat');
  try {
    await preparePartitioned(admin, partUrl, calls);
    await prepareFlat(admin, partUrl, flatUrl);
    const dbs = {
      partitioned: createDb({ url: partUrl, timezone: ZONE, poolMax: 4 }),
      unpartitioned: createDb({ url: flatUrl, timezone: ZONE, poolMax: 4 }),
    };
    try {
      for (const db of Object.values(dbs)) await db.raw('vacuum analyze');
      const total = await callCount(dbs.partitioned);
      const { rows: load } = await admin.raw<Rows<{ part: string; flat: string }>>(
        `select pg_size_pretty(pg_database_size('lcm_part')) as part, pg_size_pretty(pg_database_size('lcm_flat')) as flat`,
      );
      log(
        `# bench:partitions: ${fmt(total)} calls; node ${process.version}, ${os.cpus().length} cores, load average ${os
          .loadavg()
          .map((l) => fmt(l, 1))
          .join(' ')}`,
      );
      log(`databases: lcm_part ${load[0]!.part}, lcm_flat ${load[0]!.flat}`);

      // ---- sizes --------------------------------------------------------------------------------
      log('\n## Bytes per call row\n');
      log('| relation | partitioned | unpartitioned |');
      log('|---|---:|---:|');
      const s = { p: await sizes(dbs.partitioned), f: await sizes(dbs.unpartitioned) };
      const per = (bytes: number, rows: number) => fmt(bytes / rows, 1);
      log(`| calls heap | ${per(s.p.heap, s.p.rows)} | ${per(s.f.heap, s.f.rows)} |`);
      const names = [...new Set([...s.p.indexes, ...s.f.indexes].map((i) => i.name))].sort();
      for (const name of names) {
        const p = s.p.indexes.find((i) => i.name === name);
        const f = s.f.indexes.find((i) => i.name === name);
        log(`| ${name} | ${p ? per(p.bytes, s.p.rows) : '—'} | ${f ? per(f.bytes, s.f.rows) : '—'} |`);
      }
      for (const e of s.p.extra) log(`| ${e.name} | ${per(e.bytes, s.p.rows)} | — |`);
      const sum = (x: Sizes) => x.heap + x.indexes.reduce((a, b) => a + b.bytes, 0) + x.extra.reduce((a, b) => a + b.bytes, 0);
      log(`| **total** | **${per(sum(s.p), s.p.rows)}** | **${per(sum(s.f), s.f.rows)}** |`);
      log(
        `\nindexes ÷ heap: partitioned ${fmt((sum(s.p) - s.p.heap) / s.p.heap, 2)}×, unpartitioned ${fmt((sum(s.f) - s.f.heap) / s.f.heap, 2)}×`,
      );

      log('\n## Month partitions of calls\n');
      log('| partition | rows | heap MB | indexes MB |');
      log('|---|---:|---:|---:|');
      for (const p of await partitionSizes(dbs.partitioned))
        if (p.rows > 0 || p.name.endsWith('default')) log(`| ${p.name} | ${fmt(p.rows)} | ${mb(p.heap)} | ${mb(p.indexes)} |`);

      // ---- the 2-hour window --------------------------------------------------------------------
      const two = await twoHourTarget(dbs.partitioned);
      log(`\n## 2-hour window of unit "${two.orgCode}" (level ${two.level}), ${two.start.toISOString()} .. ${two.end.toISOString()}\n`);
      const times: Record<string, number[]> = { partitioned: [], unpartitioned: [] };
      let partPlan: string[] = [];
      let flatPlan: string[] = [];
      for (let i = 0; i < runs + 1; i++) {
        for (const [name, db] of Object.entries(dbs)) {
          const r = await explainAnalyze(db, windowSql(db, two, 1_000_000_000));
          if (i > 0) times[name]!.push(r.ms);
          if (name === 'partitioned') partPlan = r.plan;
          else flatPlan = r.plan;
        }
      }
      log(
        `median execution: partitioned ${fmt(median(times.partitioned!), 2)} ms, unpartitioned ${fmt(median(times.unpartitioned!), 2)} ms`,
      );
      log('\npartitioned plan:\n```');
      for (const line of partPlan) log(line);
      log('```\nunpartitioned plan:\n```');
      for (const line of flatPlan) log(line);
      log('```');

      // ---- lookups by unique id -------------------------------------------------------------
      const ids = (
        await dbs.partitioned.raw<Rows<{ unique_id: string }>>(`select unique_id from call_keys tablesample system (1) limit ?`, [lookups])
      ).rows.map((r) => r.unique_id);
      log(`\n## Lookup of a call by unique id (${fmt(ids.length)} random ids, one at a time)\n`);
      log('| how | µs per lookup | extra bytes per call |');
      log('|---|---:|---:|');
      // As findVisibleCall does it: the registry, then the call by its literal partition key.
      const registry = await perStatement(dbs.partitioned, ids, `select call_id, start_time from call_keys where unique_id = $1`, {
        then: `select id, start_time from calls where id = $1 and start_time = $2`,
      });
      log(
        `| registry probe, then one partition (this schema) | ${fmt(registry, 1)} | ${per(
          s.p.extra.reduce((a, b) => a + b.bytes, 0),
          s.p.rows,
        )} |`,
      );
      const joined = await perStatement(
        dbs.partitioned,
        ids,
        `select c.id, c.start_time from call_keys k join calls c on c.id = k.call_id and c.start_time = k.start_time where k.unique_id = $1`,
      );
      log(`| registry joined to calls in one statement (plans every partition) | ${fmt(joined, 1)} | — |`);
      const flat = await perStatement(dbs.unpartitioned, ids, `select id, start_time from calls where unique_id = $1`);
      const flatUnique = s.f.indexes.find((i) => i.name === 'calls_unique_id_key');
      log(`| unpartitioned unique index | ${fmt(flat, 1)} | ${flatUnique ? per(flatUnique.bytes, s.f.rows) : '—'} |`);
      log('building a unique_id index in every partition (the alternative, measured and dropped) ...');
      await dbs.partitioned.raw('create index bench_calls_unique_id on calls (unique_id)');
      try {
        await dbs.partitioned.raw('analyze calls');
        const probeAll = await perStatement(dbs.partitioned, ids, `select id, start_time from calls where unique_id = $1`);
        const { rows: b } = await dbs.partitioned.raw<Rows<{ bytes: number }>>(
          `select sum(pg_relation_size(indexrelid))::bigint as bytes from pg_index where indexrelid::regclass::text like 'calls_%unique_id%idx' or indexrelid::regclass::text like 'bench_calls_unique_id%'`,
        );
        const parts = (await partitionSizes(dbs.partitioned)).length;
        log(
          `| alternative: unique_id index in each of ${parts} partitions, all probed | ${fmt(probeAll, 1)} | ${per(Number(b[0]!.bytes), s.p.rows)} |`,
        );
      } finally {
        await dbs.partitioned.raw('drop index bench_calls_unique_id');
      }

      // ---- writing a call by unique id -----------------------------------------------------
      const writes = arg('writes', 5000);
      log(`\n## Writing calls by unique id (${fmt(writes)} new calls, one statement each, one transaction)\n`);
      const writeRate = async (db: Knex, partitioned: boolean): Promise<number> => {
        const template = (
          await db.raw<Rows<Record<string, unknown>>>(`select * from calls where ou4_id is not null order by id desc limit 1`)
        ).rows[0]!;
        const cols = Object.keys(template).filter((k) => k !== 'id' && k !== 'unique_id');
        const values = cols.map((c) => template[c]);
        const tag = `bw${Date.now()}`;
        const client = db.client as KnexClient;
        const conn = await client.acquireConnection();
        try {
          await conn.query('begin');
          const t0 = process.hrtime.bigint();
          for (let i = 0; i < writes; i++) {
            const uid = `${tag}-${i}`;
            const ph = cols.map((_, j) => `$${j + 2}`).join(', ');
            if (partitioned) {
              // What the loader does (src/data/uniqueIdRegistry.ts): claim, then insert with that id.
              const { rows } = await conn.query<{ call_id: number }>(
                `insert into call_keys (unique_id, call_id, start_time) values ($1, nextval('calls_id_seq'), $2) on conflict (unique_id) do nothing returning call_id`,
                [uid, template.start_time],
              );
              await conn.query(`insert into calls (id, unique_id, ${cols.join(', ')}) values ($${cols.length + 2}, $1, ${ph})`, [
                uid,
                ...values,
                rows[0]!.call_id,
              ]);
            } else {
              // What the loader did before: one upsert on the unique index.
              await conn.query(
                `insert into calls (unique_id, ${cols.join(', ')}) values ($1, ${ph}) on conflict (unique_id) do update set start_time = excluded.start_time returning id`,
                [uid, ...values],
              );
            }
          }
          const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
          await conn.query('rollback');
          return writes / seconds;
        } finally {
          await client.releaseConnection(conn);
        }
      };
      const wp: number[] = [];
      const wf: number[] = [];
      for (let i = 0; i < runs; i++) {
        wp.push(await writeRate(dbs.partitioned, true));
        wf.push(await writeRate(dbs.unpartitioned, false));
      }
      log(
        `partitioned (registry claim + insert): ${fmt(median(wp))} calls/s; unpartitioned (upsert on the unique index): ${fmt(median(wf))} calls/s; ratio ${fmt(median(wp) / median(wf), 2)}×`,
      );

      // ---- exports ----------------------------------------------------------------------------
      const big = await rootTarget(dbs.partitioned);
      const inRoot = Number(
        (await dbs.partitioned.raw<Rows<{ n: number }>>('select count(*)::bigint as n from calls where ou0_id = ?', [big.unitId])).rows[0]!
          .n,
      );
      const exportRows = Math.min(exportLimit, inRoot);
      log(`\n## Exports of unit "${big.orgCode}", ${fmt(exportRows)} rows, median of ${runs} (servers and psql alternate)\n`);
      const results: Record<string, number[]> = {};
      const record = (name: string, ms: number) => (results[name] ??= []).push(ms);
      const servers = { partitioned: await startServer(partUrl), unpartitioned: await startServer(flatUrl) };
      try {
        for (const [, srv] of Object.entries(servers)) await curl(srv.port, `/api/calls/csv?${apiQuery(big, 20_000)}`);
        for (let i = 0; i < runs; i++) {
          for (const [name, srv] of Object.entries(servers)) {
            const url = name === 'partitioned' ? partUrl : flatUrl;
            const db = dbs[name as keyof typeof dbs];
            record(`COPY (same SELECT) csv|${name}`, await psqlCopy(url, windowSql(db, big, exportRows)));
            for (const [label, p] of [
              ['/api/calls/csv', `/api/calls/csv?${apiQuery(big, exportRows)}`],
              ['/api/calls (JSON)', `/api/calls?${apiQuery(big, exportRows)}`],
            ] as const) {
              const r = await curl(srv.port, p);
              if (r.status !== 200) throw new Error(`${name} ${p}: HTTP ${r.status}`);
              record(`${label}|${name}`, r.ms);
            }
          }
        }
      } finally {
        for (const srv of Object.values(servers)) await srv.stop();
      }
      log('| what | partitioned rows/s | unpartitioned rows/s | partitioned ÷ unpartitioned |');
      log('|---|---:|---:|---:|');
      for (const what of ['COPY (same SELECT) csv', '/api/calls/csv', '/api/calls (JSON)']) {
        const p = exportRows / (median(results[`${what}|partitioned`]!) / 1000);
        const f = exportRows / (median(results[`${what}|unpartitioned`]!) / 1000);
        log(`| ${what} | ${fmt(p)} | ${fmt(f)} | **${fmt(p / f, 2)}×** |`);
      }
    } finally {
      for (const db of Object.values(dbs)) await db.destroy();
    }
  } finally {
    await admin.destroy();
    await server.stop();
  }
}

main().catch((err) => {
  process.stderr.write(`bench: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
});
