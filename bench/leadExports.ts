/**
 * The lead exports' CPU (figures: docs/benchmarks.md, Leads), run on demand:
 *   npm run bench:lead-exports [-- --leads 200000 --runs 5 --base ../other-checkout --cursor 1 --http 1 --render 1]
 *
 * `lcm generate`'s leads on a throwaway embedded Postgres, then two measures:
 * - HTTP (`--http 1`, the default): `lcm serve` with one HTTP worker serves /api/simpleleads
 *   (JSON), /api/leads/csv (the saved-search CSV) and /api/rawleads, each fetched by curl into a
 *   hash (a native client: the two cores stay the server's and Postgres's). Per request the
 *   server's CPU time (the serve process and its worker); medians over `--runs` rounds. With
 *   `--cursor 1` also the cursor path (EXPORT_TRANSCODER=false). With `--base DIR`, the same
 *   requests go to `lcm serve` of that checkout too (its build: run `npm run build` there),
 *   taking turns request by request. Every server's body of a path must be the same bytes.
 * - Rendering alone (`--render 1`): the lead COPY's bytes and the cursor's rows are read once
 *   into memory, then this process renders them again and again with the transcoders and the
 *   cursor path's serializers (of this checkout and, with `--base`, of that one's sources,
 *   taking turns), timing its own CPU: no Postgres, socket or other process in the figure, so
 *   it holds on a machine shared with other work. The outputs must be the same bytes.
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { generateSyntheticData } from '../src/ingest/syntheticData';
import { loadNdjson } from '../src/ingest/loader/loadNdjson';
import { Readable } from 'node:stream';
import { numberOption as option, textOption, median, fmt, log, processFamilyCpuMs } from './support';

const ROOT = path.resolve(__dirname, '..');
import {
  benchRun,
  loadBenchWorld,
  startBenchDatabase,
  startBenchServer,
  BENCH_ZONE,
  BenchDatabase,
  BenchRun,
  BenchServer,
} from './benchWorld';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Knex } from 'knex';
import { ExportSession, poolConnections } from '../src/data/exportSession';
import { leadCopySql, rawLeadCopySql } from '../src/data/exportQueries';
import { loadLeadLookups, openLeadCursor, openRawLeadCursor } from '../src/data/leadRepository';
import { projectScope } from '../src/data/projectScope';
import { dataColumns, leadVisibilityByCampaign, visibleFieldsByDefinition } from '../src/domain/leadSerializer';
import type { LeadLookups, LeadRow, RawLeadRow } from '../src/domain/leadRecords';
import type { TupleRenderer } from '../src/export/byteWriter';
import { BufferPool } from '../src/streams/bufferPool';

const settings = {
  leads: option('leads', 200_000),
  runs: option('runs', 5),
  cursor: option('cursor', 0) > 0,
  base: textOption('base', ''),
  http: option('http', 1) > 0,
  render: option('render', 0) > 0,
};

const SEARCH = 'Bench every lead';
const PATHS: Record<string, string> = {
  'simpleleads JSON': '/api/simpleleads',
  'leads/csv': `/api/leads/csv?searchName=${encodeURIComponent(SEARCH)}&modifiedFrom=1900-01-01`,
  rawleads: '/api/rawleads',
};

interface Fetch {
  bytes: number;
  seconds: number;
  hash: string;
}

/** curl of one export into sha256sum: bytes, seconds and the body's hash. */
function fetchHashed(url: string, auth: string): Promise<Fetch> {
  return new Promise((resolve, reject) => {
    const script = `set -o pipefail; curl -sS --fail -H "Authorization: $AUTH" -w '%{size_download} %{time_total}\\n' -o >(sha256sum >&2) "$URL"`;
    const child = spawn('bash', ['-c', script], { env: { ...process.env, AUTH: auth, URL: url }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      const [bytes, seconds] = out.trim().split(' ').map(Number);
      const hash = /^[0-9a-f]{64}/m.exec(err)?.[0];
      if (code !== 0 || hash === undefined) return reject(new Error(`${url}: curl exit ${code}: ${err.trim()}`));
      resolve({ bytes: bytes!, seconds: seconds!, hash });
    });
  });
}

const loadAverage = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

/** Each path from each server, taking turns; the servers' CPU per request. */
async function httpPart(run: BenchRun, database: BenchDatabase, auth: string, total: number): Promise<void> {
  const roots: [string, string][] = [['this checkout', ROOT]];
  if (settings.base) roots.unshift([`base ${path.basename(path.resolve(settings.base))}`, path.resolve(settings.base)]);
  const variants: { name: string; server: BenchServer }[] = [];
  for (const [label, root] of roots) {
    for (const transcoder of settings.cursor ? [true, false] : [true]) {
      const env = { WEB_CONCURRENCY: '1', ...(transcoder ? {} : { EXPORT_TRANSCODER: 'false' }) };
      const server = await startBenchServer(run, database.url, env, [], root);
      variants.push({ name: `${label}${transcoder ? '' : ', cursor path'}`, server });
    }
  }
  const cpu = new Map<string, number[]>();
  const wall = new Map<string, number[]>();
  const hashes = new Map<string, Set<string>>();
  const bytes = new Map<string, number>();
  for (let round = 0; round <= settings.runs; round++) {
    for (const [pathName, p] of Object.entries(PATHS)) {
      for (const v of variants) {
        const before = processFamilyCpuMs(v.server.pid);
        const f = await fetchHashed(v.server.base + p, auth);
        const used = processFamilyCpuMs(v.server.pid) - before;
        const key = `${pathName} | ${v.name}`;
        hashes.set(pathName, (hashes.get(pathName) ?? new Set<string>()).add(f.hash));
        bytes.set(pathName, f.bytes);
        if (round === 0) continue; // warm-up
        cpu.set(key, [...(cpu.get(key) ?? []), used]);
        wall.set(key, [...(wall.get(key) ?? []), f.seconds]);
      }
    }
  }
  log();
  log(`| export (${fmt(total)} leads) | server | CPU s per 1M rows (median of ${settings.runs}) | runs | wall s (median) | MB |`);
  log('|---|---|---:|---|---:|---:|');
  for (const [key, xs] of cpu) {
    const [pathName, variant] = key.split(' | ') as [string, string];
    const perMillion = (ms: number) => fmt((ms / total) * 1000, 2);
    log(
      `| ${pathName} | ${variant} | ${perMillion(median(xs))} | ${xs.map(perMillion).join(', ')} | ${fmt(median(wall.get(key)!), 2)} | ${fmt(bytes.get(pathName)! / 1e6, 1)} |`,
    );
  }
  log();
  for (const [pathName, h] of hashes) {
    log(`${pathName}: ${h.size === 1 ? `the same bytes from every server` : `DIFFERENT bodies: ${[...h].join(', ')}`}`);
  }
}

/** The modules a checkout renders leads with (the same API before and after a change). */
interface Renderers {
  transcoder: typeof import('../src/export/leadTranscoder');
  copy: typeof import('../src/export/copyTranscode');
  serializer: typeof import('../src/domain/leadSerializer');
}

/** A checkout's modules through the require hook this process runs under (tsx), so its own imports resolve in that checkout. */
const load = createRequire(__filename);

function renderersOf(root: string): Renderers {
  return {
    transcoder: load(path.join(root, 'src/export/leadTranscoder')) as Renderers['transcoder'],
    copy: load(path.join(root, 'src/export/copyTranscode')) as Renderers['copy'],
    serializer: load(path.join(root, 'src/domain/leadSerializer')) as Renderers['serializer'],
  };
}

/** All of a COPY's bytes, read once. */
async function copyBytes(db: Knex, sql: (lookups: LeadLookups) => string): Promise<Buffer[]> {
  const session = await ExportSession.open(poolConnections(db));
  const chunks: Buffer[] = [];
  try {
    const lookups = await loadLeadLookups(session.db, {}, projectScope(['*']));
    for await (const c of await session.copy(sql(lookups))) chunks.push(c as Buffer);
  } finally {
    await session.close();
  }
  return chunks;
}

async function rowsOf<T>(stream: Promise<NodeJS.ReadableStream>): Promise<T[]> {
  const rows: T[] = [];
  for await (const r of await stream) rows.push(r as T);
  return rows;
}

/** Renders in this process: the transcoders over the COPY's bytes, the serializers over the rows. */
async function renderPart(db: Knex, total: number): Promise<void> {
  const scope = projectScope(['*']);
  const lookups = await loadLeadLookups(db, {}, scope);
  const visible = visibleFieldsByDefinition(lookups.definitions, 'Full');
  const columns = dataColumns(lookups.definitions, 'Full');
  const leadCopy = await copyBytes(db, () => leadCopySql(db, {}, leadVisibilityByCampaign(lookups, 'Full')));
  const rawCopy = await copyBytes(db, (l) => rawLeadCopySql(db, {}, [...l.campaigns.keys()]));
  const rows = await rowsOf<LeadRow>(openLeadCursor(db, {}, scope, 'Full'));
  const rawRows = await rowsOf<RawLeadRow>(openRawLeadCursor(db, {}, scope));
  const options = { zone: BENCH_ZONE, lookups };
  const pool = new BufferPool(272 * 1024, 64);

  /** Takes the output: its hash in the warm-up round (compared across checkouts), else its length only. */
  interface Sink {
    add(chunk: string | Buffer): void;
    end(): string;
  }
  const sink = (hashed: boolean): Sink => {
    const hash = createHash('sha256');
    let bytes = 0;
    return {
      add: (chunk) => (hashed ? hash.update(chunk) : (bytes += chunk.length)),
      end: () => (hashed ? hash.digest('hex') : String(bytes)),
    };
  };
  /** The renderer over the bytes, through the checkout's own transcodeCopy. */
  const transcode = async (r: Renderers, copy: Buffer[], renderer: TupleRenderer, out: Sink): Promise<string> => {
    const stream = r.copy.transcodeCopy(Readable.from(copy, { objectMode: false }), renderer, pool);
    for await (const chunk of stream) {
      out.add(chunk as Buffer);
      stream.recycle(chunk as Buffer);
    }
    return out.end();
  };
  const lines = <T>(items: T[], render: (item: T) => string, out: Sink): string => {
    for (const item of items) out.add(render(item));
    return out.end();
  };
  const tasks: Record<string, (r: Renderers, out: Sink) => Promise<string> | string> = {
    'JSON transcoder': (r, out) => transcode(r, leadCopy, r.transcoder.leadJsonTranscoder({ ...options, visible }), out),
    'CSV transcoder': (r, out) => transcode(r, leadCopy, r.transcoder.leadCsvTranscoder({ ...options, separator: ';', columns }), out),
    'RawLeads transcoder': (r, out) => transcode(r, rawCopy, r.transcoder.rawLeadTranscoder({ ...options, separator: ';', visible }), out),
    'JSON text (cursor path)': (r, out) => lines(rows, r.serializer.leadToJsonText(BENCH_ZONE, visible, lookups), out),
    'CSV line (cursor path)': (r, out) => lines(rows, r.serializer.leadToCsvLine({ ...options, separator: ';', columns }), out),
    'RawLeads lines (cursor path)': (r, out) => lines(rawRows, r.serializer.rawLeadLines({ separator: ';', visible, lookups }), out),
  };

  const trees: [string, Renderers][] = [['this checkout', renderersOf(ROOT)]];
  if (settings.base) trees.unshift(['base', renderersOf(path.resolve(settings.base))]);
  const cpu = new Map<string, number[]>();
  const hashes = new Map<string, Set<string>>();
  for (let round = 0; round <= settings.runs; round++) {
    for (const [task, render] of Object.entries(tasks)) {
      // Each checkout first in every other round: neither pays the other's garbage collection throughout.
      for (const [tree, r] of round % 2 === 0 ? trees : [...trees].reverse()) {
        const before = process.cpuUsage();
        const result = await render(r, sink(round === 0));
        const used = process.cpuUsage(before);
        if (round === 0) {
          // Warm-up, and the outputs' hashes.
          hashes.set(task, (hashes.get(task) ?? new Set<string>()).add(result));
          continue;
        }
        const key = `${task} | ${tree}`;
        cpu.set(key, [...(cpu.get(key) ?? []), (used.user + used.system) / 1000]);
      }
    }
  }
  log();
  log(
    `Rendering in this process, ${fmt(total)} leads (${fmt(rawRows.length)} for RawLeads), CPU s per 1M leads, median of ${settings.runs}:`,
  );
  log();
  log(`| rendering | ${trees.map(([t]) => t).join(' | ')} |${trees.length > 1 ? ' change |' : ''}`);
  log(`|---|${trees.map(() => '---:').join('|')}|${trees.length > 1 ? '---:|' : ''}`);
  for (const task of Object.keys(tasks)) {
    const medians = trees.map(([tree]) => (median(cpu.get(`${task} | ${tree}`)!) / total) * 1000);
    const change = medians.length > 1 ? ` ${fmt((medians[1]! / medians[0]! - 1) * 100, 1)}% |` : '';
    log(`| ${task} | ${medians.map((m) => fmt(m, 2)).join(' | ')} |${change}`);
  }
  log();
  for (const [task, h] of hashes)
    log(`${task}: ${h.size === 1 ? 'the same bytes from every checkout' : `DIFFERENT outputs: ${[...h].join(', ')}`}`);
}

async function main(): Promise<void> {
  const run = benchRun('lead-exports');
  try {
    log(`# lead exports — ${os.cpus().length} CPUs, Node ${process.version}, ${new Date().toISOString()}, load ${loadAverage()}`);
    const database = await startBenchDatabase(run, 4);
    const { db } = database;
    const auth = await loadBenchWorld(db);
    const records = [
      { type: 'savedSearch', user: 'bench-user', name: SEARCH, projects: ['*'] },
      { type: 'requestLimit', account: 'bench', service: 'leads.csv', dailyLimit: 2_000_000_000 },
      { type: 'requestLimit', account: 'bench', service: 'rawleads', dailyLimit: 2_000_000_000 },
    ];
    await loadNdjson(db, Readable.from(records.map((r) => JSON.stringify(r) + '\n')), { zone: BENCH_ZONE });
    await generateSyntheticData(db, { calls: 0, leads: settings.leads, seed: 5, zone: BENCH_ZONE, days: 30 });
    await db.raw('VACUUM ANALYZE leads');
    const total = Number((await db('leads').count<{ count: string }[]>('* as count'))[0]!.count);
    log(`${fmt(total)} leads`);
    if (settings.http) await httpPart(run, database, auth, total);
    if (settings.render) await renderPart(db, total);
    log();
    log(`load average at the end: ${loadAverage()}`);
  } finally {
    await run.cleanup();
  }
}

main().catch((err) => {
  process.stderr.write(`bench: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
});
