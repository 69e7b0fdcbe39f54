/**
 * GET /events with filters that match few of the kept events (figures: docs/benchmarks.md, "Live
 * events: filtered reads"), run on demand:
 *   npm run bench:event-reads [-- --events 1900000 --projects 20 --span 100000 --timeout 120 --base ../other-checkout]
 *
 * A throwaway embedded Postgres holding `--events` lead events spread over `--projects`
 * projects (copies of one imported lead's event, written by SQL, numbered by one sequencing
 * round, then VACUUM ANALYZE), and `lcm serve` with one HTTP worker and EVENTS_READ_SPAN
 * `--span` (default: the setting's). For each server (this checkout; with `--base DIR` that
 * checkout's build too, first), with the load average:
 * - JSON `Projects=NoSuchProject` from the oldest event: the first answer's time; then, while
 *   answers carry `Last-Event-ID`, polling with it up to the newest event (answers, total time,
 *   the slowest answer). An answer that takes longer than `--timeout` s is given up.
 * - JSON `Projects=Project-7` (one event in `--projects`), `Limit=1000`, from the oldest event.
 * - A stream with `Projects=Bench project` resumed with `Last-Event-ID: 0`: the time until the
 *   one event of that project written after the copies arrives.
 * Then EXPLAIN (ANALYZE, BUFFERS) of one read of this checkout's SQL (readEventsAfter) for both
 * filters from the oldest event, as the server sends it.
 */
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Knex } from 'knex';
import { benchRun, loadBenchWorld, startBenchDatabase, startBenchServer, BENCH_CAMPAIGN, BenchServer } from './benchWorld';
import { fmt, log, numberOption, textOption } from './support';
import { readEventsAfter } from '../src/data/liveEvents';
import { loadSettings } from '../src/config/settings';

const settings = {
  events: numberOption('events', 1_900_000),
  projects: Math.max(2, numberOption('projects', 20)),
  timeoutS: numberOption('timeout', 120),
  base: textOption('base', ''),
  span: numberOption('span', loadSettings({}).EVENTS_READ_SPAN),
};
const LEAD_EVENTS = ['lead.created', 'lead.updated', 'lead.statusChanged'];

const loadAverage = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

async function importLead(base: string, auth: string, name: string): Promise<string> {
  const res = await fetch(`${base}/api/leads`, {
    method: 'POST',
    headers: { Authorization: auth, 'Content-Type': 'application/json' },
    body: JSON.stringify({ CampaignCode: BENCH_CAMPAIGN, Data: { Name: name, Telefon: '+45 12 34 56 78' } }),
  });
  const body = (await res.json()) as { uniqueId?: string };
  if (!body.uniqueId) throw new Error(`import failed: ${res.status} ${JSON.stringify(body)}`);
  return body.uniqueId;
}

/** `n` copies of the event `like`, over the projects Project-0…, numbered, then analysed. */
async function writeEvents(db: Knex, like: number, n: number): Promise<void> {
  const batch = 200_000;
  for (let from = 1; from <= n; from += batch) {
    await db.raw(
      `insert into hook_events (type, occurred_time, project, campaign_code, resource_id, previous_status, snapshot, created_time)
       select e.type, e.occurred_time, 'Project-' || (g % ?), e.campaign_code, e.resource_id, e.previous_status, e.snapshot, now()
         from hook_events e, generate_series(?::int, ?::int) g where e.id = ?`,
      [settings.projects, from, Math.min(n, from + batch - 1), like],
    );
    await db.raw('select lcm_sequence_events(true)');
  }
  await db.raw('vacuum analyze hook_events');
  await db.raw('vacuum analyze event_stream');
}

interface Answer {
  ms: number;
  events: number;
  next: number | undefined;
}

async function listEvents(base: string, auth: string, query: string): Promise<Answer | undefined> {
  const started = performance.now();
  try {
    const res = await fetch(`${base}/api/events${query}`, {
      headers: { Authorization: auth, 'Accept-Encoding': 'identity' },
      signal: AbortSignal.timeout(settings.timeoutS * 1000),
    });
    const body = (await res.json()) as unknown[];
    if (res.status !== 200) throw new Error(`GET /api/events${query}: ${res.status} ${JSON.stringify(body)}`);
    const header = res.headers.get('last-event-id');
    return { ms: performance.now() - started, events: body.length, next: header === null ? undefined : Number(header) };
  } catch (err) {
    if ((err as Error).name === 'TimeoutError') return undefined;
    throw err;
  }
}

/** ms until a stream resumed from the start sends the event of `uniqueId`; undefined after the timeout. */
function streamUntil(base: string, auth: string, query: string, uniqueId: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.get(`${base}/api/events${query}`, {
      headers: { Authorization: auth, Accept: 'text/event-stream', 'Last-Event-ID': '0' },
    });
    const timer = setTimeout(() => {
      req.destroy();
      resolve(undefined);
    }, settings.timeoutS * 1000);
    req.once('response', (res) => {
      let tail = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        tail = (tail + chunk).slice(-4096);
        if (!tail.includes(uniqueId)) return;
        clearTimeout(timer);
        resolve(performance.now() - started);
        req.destroy();
      });
    });
    req.once('error', (err) => {
      clearTimeout(timer);
      if (!req.destroyed) reject(err);
    });
  });
}

async function measure(name: string, server: BenchServer, auth: string, marker: string): Promise<void> {
  log();
  log(`### ${name} (load ${loadAverage()})`);
  const first = await listEvents(server.base, auth, '?Projects=NoSuchProject');
  if (first === undefined) {
    log(`- JSON Projects=NoSuchProject from the oldest event: no answer in ${settings.timeoutS} s`);
  } else {
    log(
      `- JSON Projects=NoSuchProject, first answer: ${fmt(first.ms)} ms, ${first.events} events, Last-Event-ID ${first.next ?? 'absent'} (load ${loadAverage()})`,
    );
    if (first.next !== undefined) {
      let answers = 1;
      let total = first.ms;
      let slowest = first.ms;
      let next = first.next;
      for (;;) {
        const answer = await listEvents(server.base, auth, `?Projects=NoSuchProject&After=${next}`);
        if (answer === undefined || answer.next === undefined) throw new Error('an answer was lost on the way');
        answers += 1;
        total += answer.ms;
        slowest = Math.max(slowest, answer.ms);
        if (answer.next === next) break;
        next = answer.next;
      }
      log(
        `- JSON Projects=NoSuchProject polled to the newest event (${fmt(next)}): ${answers} answers (the last one at the newest), ${fmt(total / 1000, 1)} s in all, slowest ${fmt(slowest)} ms (load ${loadAverage()})`,
      );
    }
  }
  const some = await listEvents(server.base, auth, '?Projects=Project-7&Limit=1000');
  log(
    some === undefined
      ? `- JSON Projects=Project-7 Limit=1000: no answer in ${settings.timeoutS} s`
      : `- JSON Projects=Project-7 Limit=1000: ${fmt(some.ms)} ms, ${some.events} events (load ${loadAverage()})`,
  );
  const streamed = await streamUntil(server.base, auth, `?Projects=${encodeURIComponent('Bench project')}`, marker);
  log(
    streamed === undefined
      ? `- stream Projects=Bench project from Last-Event-ID 0: the last event not there in ${settings.timeoutS} s`
      : `- stream Projects=Bench project from Last-Event-ID 0: the last event after ${fmt(streamed)} ms (load ${loadAverage()})`,
  );
}

/** EXPLAIN (ANALYZE, BUFFERS) of the statement readEventsAfter sends, as it sends it. */
async function explainRead(db: Knex, label: string, projects: string[]): Promise<void> {
  let plan: string[] = [];
  const explaining = {
    raw: async (sql: string, bindings: readonly Knex.RawBinding[]) => {
      const { rows } = await db.raw<{ rows: { 'QUERY PLAN': string }[] }>(`explain (analyze, buffers) ${sql}`, bindings);
      plan = rows.map((r) => r['QUERY PLAN']);
      return { rows: [] };
    },
  } as unknown as Knex;
  await readEventsAfter(explaining, 0, 1000, { types: LEAD_EVENTS, projectRights: ['*'], projects }, settings.span);
  log();
  log(`EXPLAIN ANALYZE of one read, ${label} (load ${loadAverage()}):`);
  log('```');
  for (const line of plan) log(line);
  log('```');
}

async function main(): Promise<void> {
  const run = benchRun('event-reads');
  try {
    const database = await startBenchDatabase(run, 4);
    const auth = await loadBenchWorld(database.db);
    const servers: [string, string][] = [['this checkout', path.resolve(__dirname, '..')]];
    if (settings.base) servers.unshift([`base ${path.basename(path.resolve(settings.base))}`, path.resolve(settings.base)]);
    const started: [string, BenchServer][] = [];
    for (const [name, root] of servers)
      started.push([
        name,
        await startBenchServer(run, database.url, { WEB_CONCURRENCY: '1', EVENTS_READ_SPAN: String(settings.span) }, [], root),
      ]);
    const base = started.at(-1)![1].base;

    const template = await importLead(base, auth, 'Template');
    const like = (await database.db('hook_events').where({ resource_id: template, type: 'lead.created' }).first<{ id: number }>('id')).id;
    const writing = performance.now();
    await writeEvents(database.db, like, settings.events);
    const marker = await importLead(base, auth, 'Marker');
    const { rows } = await database.db.raw<{ rows: { n: number; size: string }[] }>(
      `select count(*)::int as n, pg_size_pretty(pg_total_relation_size('hook_events')) as size from event_stream`,
    );
    log(
      `${fmt(rows[0]!.n)} events kept (hook_events ${rows[0]!.size}), written in ${fmt((performance.now() - writing) / 1000, 1)} s; ` +
        `${settings.projects} projects; EVENTS_READ_SPAN ${fmt(settings.span)}; ${os.cpus().length} cores`,
    );
    for (const [name, server] of started) await measure(name, server, auth, marker);
    await explainRead(database.db, 'Projects=NoSuchProject from the oldest event', ['NoSuchProject']);
    await explainRead(database.db, 'Projects=Project-7 from the oldest event', ['Project-7']);
  } finally {
    await run.cleanup();
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
