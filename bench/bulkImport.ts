/**
 * Bulk import benchmark, run on demand:  npm run bench:bulk [-- --rows 100000 --formats csv,json,ndjson]
 *
 * For each format, one POST /api/leads/bulk with `--rows` leads against the real server
 * (`lcm serve` as a child process, Basic auth, request counting in process). The body is
 * generated as it is sent (never held in memory on either side) and the streamed answer is
 * read as it arrives, as a real client does. Reports rows/s, time to the first result, the
 * server's RSS (start, peak, growth) sampled every 50 ms, and checks that the database holds
 * one lead per successful row.
 *
 * Everything runs on a throwaway embedded Postgres on a free loopback port, removed at the
 * end. The machine is shared: run it once, at full size only when it is quiet.
 */
import { spawn, ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { Knex } from 'knex';
import { startEmbeddedPostgres } from '../src/app/embeddedPostgres';
import { createDb, migrateLatest } from '../src/data/db';
import { loadNdjson } from '../src/ingest/loader/loadNdjson';
import { textOption as option, freePort, waitFor, httpGet, rssMb, fmt, processCpuMs, processFamilyCpuMs, parentPid } from './support';

const ZONE = 'Europe/Copenhagen';
const ROOT = path.resolve(__dirname, '..');
type Format = 'csv' | 'json' | 'ndjson';

const settings = {
  rows: Number(option('rows', '100000')),
  formats: option('formats', 'csv,json,ndjson').split(',') as Format[],
  batchSize: option('batch', '1000'),
  /** BULK_PARALLEL_BATCHES of the server (its default when not given). */
  parallelBatches: option('parallel', ''),
  /** Node options for the server process, e.g. "--cpu-prof --cpu-prof-dir /tmp/prof" or "--trace-gc". */
  serverNodeArgs: option('server-node-args', '').split(' ').filter(Boolean),
};
if (!Number.isInteger(settings.rows) || settings.rows < 1) throw new Error('--rows needs a positive whole number');
for (const f of settings.formats) if (!['csv', 'json', 'ndjson'].includes(f)) throw new Error(`unknown format ${f}`);

/** Resident set size of a process in MB (Linux /proc). */

/** The body of `rows` leads in a format, generated a few hundred rows per chunk. */
function body(format: Format, rows: number, tag: string): Readable {
  const lead = (n: number) => ({ Name: `Lead ${n} Åse Ærø`, Telefon: `+45 ${String(10_000_000 + (n % 89_999_999))}`, Email: `lead${n}@example.com`, Customer: `${tag}-${n}` });
  const line = (n: number): string => {
    const l = lead(n);
    if (format === 'csv') return `${l.Name};${l.Telefon};${l.Email};${l.Customer}\r\n`;
    if (format === 'ndjson') return JSON.stringify(l) + '\n';
    return (n === 1 ? '' : ',') + JSON.stringify(l);
  };
  return Readable.from(
    (function* () {
      yield format === 'csv' ? 'Name;Telefon;Email;Customer\r\n' : format === 'json' ? '[' : '';
      for (let n = 1; n <= rows; n += 500) {
        let chunk = '';
        for (let k = n; k < Math.min(n + 500, rows + 1); k++) chunk += line(k);
        yield chunk;
      }
      if (format === 'json') yield ']';
    })(),
  );
}

interface Run {
  status: number;
  results: number;
  succeeded: number;
  seconds: number;
  firstResultMs: number;
  rss: { start: number; peak: number; end: number };
  /** CPU time per row, µs: the server process, Postgres (every process of the cluster), this client. */
  cpuUsPerRow: { server: number; postgres: number; client: number };
}

/** One bulk request: sends the generated body while reading the answer; counts the results. */
function runBulk(base: string, auth: string, format: Format, rows: number, tag: string, serverPid: number, postmasterPid: number): Promise<Run> {
  const contentType = { csv: 'text/csv; charset=utf-8', json: 'application/json', ndjson: 'application/x-ndjson' }[format];
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    // CPU time, not only rows/s: on a shared machine the rate moves with everyone's load, CPU per row does not.
    const cpu0 = { server: processCpuMs(serverPid), postgres: processFamilyCpuMs(postmasterPid), client: process.cpuUsage() };
    const rss = { start: rssMb(serverPid), peak: 0, end: 0 };
    rss.peak = rss.start;
    const sampler = setInterval(() => (rss.peak = Math.max(rss.peak, rssMb(serverPid))), 50);
    let firstResultMs = 0;
    let results = 0;
    let succeeded = 0;
    let carry = '';
    const req = http.request(
      `${base}/api/leads/bulk?CampaignCode=BENCH`,
      { method: 'POST', headers: { Authorization: auth, 'Content-Type': contentType } },
      (res) => {
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          if (firstResultMs === 0) firstResultMs = Number(process.hrtime.bigint() - started) / 1e6;
          const text = carry + chunk;
          // One result object per line: `{"row":…,"success":true|false…}`.
          let i = text.indexOf('{"row":');
          let last = 0;
          while (i >= 0) {
            const end = text.indexOf('\n', i);
            if (end < 0) break;
            results++;
            if (text.startsWith('"success":true', text.indexOf(',', i) + 1)) succeeded++;
            last = end;
            i = text.indexOf('{"row":', end);
          }
          carry = text.slice(last);
        });
        res.once('end', () => {
          clearInterval(sampler);
          rss.end = rssMb(serverPid);
          const client = process.cpuUsage(cpu0.client);
          const perRow = (ms: number) => (ms * 1000) / Math.max(1, results);
          const cpuUsPerRow = {
            server: perRow(processCpuMs(serverPid) - cpu0.server),
            postgres: perRow(processFamilyCpuMs(postmasterPid) - cpu0.postgres),
            client: perRow((client.user + client.system) / 1000),
          };
          resolve({ status: res.statusCode ?? 0, results, succeeded, seconds: Number(process.hrtime.bigint() - started) / 1e9, firstResultMs, rss, cpuUsPerRow });
        });
        res.once('error', reject);
      },
    );
    req.once('error', (err) => {
      clearInterval(sampler);
      reject(err);
    });
    body(format, rows, tag).pipe(req);
  });
}

async function load(db: Knex, records: Record<string, unknown>[]): Promise<void> {
  await loadNdjson(db, Readable.from(records.map((r) => JSON.stringify(r) + '\n')), { zone: ZONE });
}

async function main(): Promise<void> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-bench-bulk-'));
  fs.chmodSync(tmp, 0o755);
  const cleanups: (() => unknown)[] = [() => fs.rmSync(tmp, { recursive: true, force: true })];
  const cleanup = async () => {
    for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => undefined);
  };
  process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));

  try {
    console.log(`# bulk import benchmark — ${os.cpus().length} CPUs, Node ${process.version}, ${new Date().toISOString()}`);
    console.log(`rows per request ${fmt(settings.rows)}, BULK_BATCH_SIZE ${settings.batchSize}, BULK_PARALLEL_BATCHES ${settings.parallelBatches || 'default'}`);
    const pgPort = await freePort();
    const cluster = await startEmbeddedPostgres({ dataDir: path.join(tmp, 'pg'), port: pgPort, database: 'bench', persistent: false });
    cleanups.push(() => cluster.stop());
    const db = createDb({ url: cluster.url, timezone: ZONE, poolMax: 2 });
    cleanups.push(() => db.destroy());
    await migrateLatest(db);

    const username = 'bench';
    const password = 'bench-password';
    const auth = 'Basic ' + Buffer.from(`${username}:${password}`).toString('base64');
    await load(db, [
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
        ],
      },
      { type: 'campaign', code: 'BENCH', name: 'Bench', project: 'Bench project', leadDefinition: 'Bench definition', campaignType: 'PowerDialer' },
      { type: 'account', username, password, user: 'bench-user', projects: ['*'], rights: { Leads: ['Get', 'Post'] }, entryAccess: 'Full' },
    ]);

    const port = await freePort();
    const server: ChildProcess = spawn(
      process.execPath,
      [...settings.serverNodeArgs, path.join(ROOT, 'bin/lcm.js'), 'serve'],
      {
      cwd: ROOT,
      stdio: ['ignore', settings.serverNodeArgs.length > 0 ? 'inherit' : 'ignore', 'inherit'],
      env: {
        ...process.env,
        DATABASE_URL: cluster.url,
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        SWEEP_INTERVAL_MS: '0',
        HOOKS_WORKER: 'false',
        PLATFORM_TIMEZONE: ZONE,
        BULK_BATCH_SIZE: settings.batchSize,
        ...(settings.parallelBatches ? { BULK_PARALLEL_BATCHES: settings.parallelBatches } : {}),
      },
      },
    );
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          if (server.exitCode !== null) return resolve();
          server.once('exit', () => resolve());
          server.kill('SIGTERM');
        }),
    );
    const base = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await httpGet(`${base}/api/healthz`)) === 200, 'the server');
    const pid = server.pid!;
    const postmaster = parentPid(Number((await db.raw('select pg_backend_pid() as pid')).rows[0].pid));

    // Warm-up: the code paths and the connection pool, a few batches per format.
    for (const format of settings.formats) await runBulk(base, auth, format, 2000, `warm-${format}`, pid, postmaster);

    console.log(`load average before: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
    console.log('\n| format | rows | rows/s | first result | server RSS start → peak (growth) | CPU µs/row: server / Postgres / client | stored |');
    console.log('|---|---:|---:|---:|---|---|---:|');
    for (const format of settings.formats) {
      const tag = `bench-${format}`;
      const run = await runBulk(base, auth, format, settings.rows, tag, pid, postmaster);
      const stored = Number((await db('leads').whereLike('external_key', `${tag}-%`).count<{ count: string }[]>('* as count'))[0]!.count);
      console.log(
        `| ${format} | ${fmt(run.results)} | ${fmt(run.results / run.seconds)} | ${fmt(run.firstResultMs)} ms | ` +
          `${fmt(run.rss.start)} → ${fmt(run.rss.peak)} MB (+${fmt(run.rss.peak - run.rss.start)} MB) | ` +
          `${fmt(run.cpuUsPerRow.server, 1)} / ${fmt(run.cpuUsPerRow.postgres, 1)} / ${fmt(run.cpuUsPerRow.client, 1)} | ${fmt(stored)} |`,
      );
      if (run.status !== 200 || run.results !== settings.rows || run.succeeded !== settings.rows || stored !== settings.rows) {
        console.log(`WARNING: status ${run.status}, ${run.results} results, ${run.succeeded} succeeded, ${stored} stored; expected ${settings.rows}`);
        process.exitCode = 1;
      }
    }
  } finally {
    await cleanup();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
