/**
 * Hook delivery benchmark, run on demand:
 *   npm run bench:hooks [-- --events 10000 --workers 1 --concurrency N --batch 500 --local-queue N --batch-delay MS]
 *   npm run bench:hooks [-- --events 10000 --rate 500 --workers 1 ...]
 *
 * A throwaway embedded Postgres; one account, campaign and hook to a local receiver (plain
 * HTTP on loopback, answering 200 at once and verifying nothing, so the figure is ours). The
 * events are `lead.created` of existing leads, written with the same recordLeadEvents the
 * sources use: as a burst, `--batch` per transaction as fast as possible, or paced with
 * `--rate N`, N events/s in a small transaction every 10 ms (each one takes the events due by
 * then, so the rate stays smooth and catches up after a late write). `--workers` delivery
 * worker pools (graphile-worker, each `--concurrency` sends at once, by default
 * HOOKS_CONCURRENCY's) run in this process. Reports the achieved write rate, deliveries/s
 * (first commit → last delivery), p50/p99/max from each event's commit to its arrival, and
 * the process's RSS and heap (sampled every 100 ms; RSS also at each quarter of the
 * deliveries, to show whether it grows). Two runs: `--workers 1` and `--workers 2`.
 */
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../src/app/embeddedPostgres';
import { createDb, migrateLatest } from '../src/data/db';
import { loadSettings } from '../src/config/settings';
import { createLogger } from '../src/config/logger';
import { recordLeadEvents } from '../src/data/hookEvents';
import { createHook } from '../src/data/hookRepository';
import { queueTuningOf, startHookWorker, HookWorker } from '../src/jobs/hookWorker';

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const n = Number(process.argv[i + 1]);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} needs a positive number`);
  return n;
}

const EVENTS = option('events', 10_000);
const WORKERS = option('workers', 1);
/** Sends at once per pool; unset: the HOOKS_CONCURRENCY default. */
const CONCURRENCY_OPTION = process.argv.includes('--concurrency') ? option('concurrency', 1) : undefined;
const BATCH = option('batch', 500);
/** Events per second when paced; undefined: the burst, `--batch` per transaction. */
const RATE = process.argv.includes('--rate') ? option('rate', 500) : undefined;
const TICK_MS = 10;
/** The queue's batching (src/jobs/hookWorker.ts QueueTuning); -1 switches a part off, unset keeps the default. */
function tuningOption(name: string): number | undefined {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return undefined;
  const n = Number(process.argv[i + 1]);
  if (!Number.isInteger(n) || n < -1) throw new Error(`--${name} needs an integer ≥ -1`);
  return n;
}
const LOCAL_QUEUE = tuningOption('local-queue');
const BATCH_DELAY = tuningOption('batch-delay');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** Counts the statements every pg client of this process sends (knex's and the queue's alike). */
let statements = 0;
const clientQuery = Reflect.get(pg.Client.prototype, 'query');
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  statements += 1;
  return (clientQuery as (...a: unknown[]) => unknown).apply(this, args);
} as typeof clientQuery;

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function main(): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-bench-hooks-'));
  fs.chmodSync(root, 0o755);
  const cluster = await startEmbeddedPostgres({
    dataDir: path.join(root, 'pg'),
    port: await freePort(),
    database: 'bench',
    persistent: false,
  });
  const arrivals = new Map<string, number>();
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data: { uniqueId: string } };
      if (!arrivals.has(body.data.uniqueId)) arrivals.set(body.data.uniqueId, at);
      res.end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  const receiverPort = (receiver.address() as net.AddressInfo).port;
  const base = { DATABASE_URL: cluster.url, LOG_LEVEL: 'warn', HOOKS_ALLOW_HTTP: 'true', HOOKS_ALLOWED_HOSTS: '127.0.0.1' };
  const CONCURRENCY = CONCURRENCY_OPTION ?? loadSettings(base).HOOKS_CONCURRENCY;
  const settings = loadSettings({
    ...base,
    HOOKS_CONCURRENCY: String(CONCURRENCY),
    DB_POOL_MAX: String(Math.max(10, CONCURRENCY * WORKERS + 4)),
  });
  const db = createDb({ url: cluster.url, timezone: settings.PLATFORM_TIMEZONE, poolMax: settings.DB_POOL_MAX });
  const workers: HookWorker[] = [];
  try {
    await migrateLatest(db);
    // One org unit, user, account, lead definition, campaign, pool and EVENTS leads, in SQL.
    await db.raw(`
      insert into org_units (unique_id, org_code, name, level) values ('ou', 'ROOT', 'Root', 0);
      insert into users (unique_id, org_code, username, name, parent_id, email) values ('u', 'agent', 'agent', 'Agent', 1, 'agent@example.com');
      insert into accounts (username, password_hash, user_id, project_patterns, rights) values ('bench', 'x', 1, '{*}', '{"Leads":["Get"],"WebHooks":["Get","Post"]}');
      insert into lead_definitions (unique_id, name) values ('def', 'Def');
      insert into lead_definition_fields (lead_definition_id, name, type) values (1, 'Name', 'text');
      insert into campaigns (unique_id, code, name, project, lead_definition_id, campaign_type) values ('c', 'BENCH', 'Bench', 'Bench', 1, 1);
      insert into lead_pools (campaign_id, name) values (1, 'pool');
      insert into leads (unique_id, campaign_id, pool_id, data, uploaded_by_user_id, last_modified_by_user_id)
        select 'lead-' || i, 1, 1, jsonb_build_object('Name', 'Lead ' || i), 1, 1 from generate_series(1, ${EVENTS}) i;
    `);
    const account = (await db<{ id: number }>('accounts').first('id'))!;
    await createHook(db, account.id, {
      name: 'bench',
      description: null,
      url: `http://127.0.0.1:${receiverPort}/in`,
      method: 'POST',
      format: 'Json',
      events: ['lead.created'],
      campaignCode: null,
      projects: null,
      leadStatus: null,
      leadReleaseType: null,
      contentTemplate: null,
      standardTemplate: 'Standard',
      enabled: true,
    });
    const logger = createLogger('warn');
    const queue = {
      ...(LOCAL_QUEUE !== undefined ? { localQueueSize: LOCAL_QUEUE } : {}),
      ...(BATCH_DELAY !== undefined ? { batchDelayMs: BATCH_DELAY } : {}),
    };
    for (let i = 0; i < WORKERS; i++) workers.push(await startHookWorker({ db, settings, logger, queue }));

    let peakRss = 0;
    let peakHeap = 0;
    // Connections open to Postgres (knex's and the queue's pools), read on a client of its own
    // that the statement count leaves out.
    const watcher = new pg.Client({ connectionString: cluster.url });
    await watcher.connect();
    let peakConnections = 0;
    const connections = setInterval(() => {
      (clientQuery as (q: string) => Promise<pg.QueryResult<{ n: number }>>)
        .call(
          watcher,
          `select count(*)::int - 1 as n from pg_stat_activity where backend_type = 'client backend' and datname = current_database()`,
        )
        .then(
          (r) => (peakConnections = Math.max(peakConnections, r.rows[0]!.n)),
          () => undefined,
        );
    }, 100);
    const rssAtQuarter: number[] = [];
    const sampler = setInterval(() => {
      const m = process.memoryUsage();
      peakRss = Math.max(peakRss, m.rss);
      peakHeap = Math.max(peakHeap, m.heapUsed);
      while (rssAtQuarter.length < 4 && arrivals.size >= ((rssAtQuarter.length + 1) * EVENTS) / 4) rssAtQuarter.push(m.rss);
    }, 100);
    const baseline = process.memoryUsage();
    const committed = new Map<string, number>();
    const ids = await db<{ id: number; unique_id: string }>('leads').orderBy('id').select('id', 'unique_id');
    const statementsBefore = statements;
    const started = performance.now();
    const write = async (batch: { id: number; unique_id: string }[]) => {
      await db.transaction((trx) =>
        recordLeadEvents(
          trx,
          'lead.created',
          batch.map((l) => ({ leadId: l.id })),
          new Date(),
        ),
      );
      const at = performance.now();
      for (const l of batch) committed.set(l.unique_id, at);
    };
    let transactions = 0;
    if (RATE === undefined) {
      for (let i = 0; i < ids.length; i += BATCH) {
        await write(ids.slice(i, i + BATCH));
        transactions += 1;
      }
    } else {
      // Every tick writes the events due by then (RATE × elapsed), so a late tick is made up by
      // the next one and the rate over any second stays RATE.
      let written = 0;
      while (written < ids.length) {
        const due = Math.min(ids.length, Math.floor(((performance.now() - started) / 1000) * RATE) + 1);
        if (due > written) {
          await write(ids.slice(written, due));
          written = due;
          transactions += 1;
        }
        const next = started + (written / RATE) * 1000;
        await new Promise((r) => setTimeout(r, Math.max(0, Math.min(TICK_MS, next - performance.now()))));
      }
    }
    const enqueued = performance.now();
    const deadline = Date.now() + 600_000;
    while (arrivals.size < EVENTS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 150));
    clearInterval(sampler);
    clearInterval(connections);
    await watcher.end();
    const deliveryStatements = statements - statementsBefore;
    const last = Math.max(...arrivals.values());
    const latencies = [...committed]
      .filter(([id]) => arrivals.has(id))
      .map(([id, at]) => arrivals.get(id)! - at)
      .sort((a, b) => a - b);
    const failed = await db('hook_deliveries').whereNot('status', 'delivered').count({ n: '*' });
    // Attempts that were not delivered (a retry comes HOOKS_RETRY_BASE_MS later: it shows as the max).
    const outcomes = (await db('hook_delivery_attempts')
      .groupBy('outcome')
      .select('outcome', db.raw('count(*)::int as n'), db.raw('min(error) as error'))
      .orderBy('outcome')) as { outcome: string; n: number; error: string | null }[];
    const mb = (b: number) => `${Math.round(b / 1024 / 1024)} MB`;
    process.stdout.write(
      [
        `hook deliveries: ${EVENTS} events, ${WORKERS} worker pool(s) × ${CONCURRENCY}, ${RATE === undefined ? `events committed ${BATCH} per transaction` : `events paced at ${RATE}/s`}, queue ${JSON.stringify(queueTuningOf(settings, queue))}`,
        `  events written in ${Math.round(enqueued - started)} ms (${Math.round((EVENTS / (enqueued - started)) * 1000)} events/s, ${transactions} transactions)`,
        `  delivered ${arrivals.size}/${EVENTS} (${Number(failed[0]!.n)} not delivered) in ${Math.round(last - started)} ms: ${Math.round((arrivals.size / (last - started)) * 1000)} deliveries/s`,
        `  SQL statements from the first event to the last delivery: ${deliveryStatements} (${(deliveryStatements / Math.max(1, arrivals.size)).toFixed(2)} per delivery: the queue's and the events' writes included)`,
        `  attempts: ${outcomes.map((o) => `${o.outcome} ${o.n}${o.error ? ` (${o.error})` : ''}`).join(', ')}`,
        `  commit → delivery: p50 ${Math.round(percentile(latencies, 50))} ms, p99 ${Math.round(percentile(latencies, 99))} ms, max ${Math.round(latencies[latencies.length - 1] ?? 0)} ms`,
        `  Postgres connections open at once (peak, every pool): ${peakConnections}`,
        `  memory: RSS ${mb(baseline.rss)} → peak ${mb(peakRss)} (at each quarter of the deliveries: ${rssAtQuarter.map(mb).join(', ')}); heap ${mb(baseline.heapUsed)} → peak ${mb(peakHeap)}`,
        '',
      ].join('\n'),
    );
  } finally {
    for (const w of workers) await w.stop();
    await db.destroy();
    receiver.close();
    await cluster.stop();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exitCode = 1;
});
