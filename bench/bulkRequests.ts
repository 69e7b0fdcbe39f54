import http from 'node:http';
import os from 'node:os';
import { Readable } from 'node:stream';
import type { Knex } from 'knex';
import { BENCH_CAMPAIGN } from './benchWorld';
import { rssMb, fmt, processCpuMs, processFamilyCpuMs } from './support';

/**
 * Bulk import requests as a real client sends them (npm run bench:bulk, and the bulk part of
 * npm run bench:leads): the body generated while it is sent, never held in memory on either
 * side, and the streamed answer read as it arrives.
 */

export type BulkFormat = 'csv' | 'json' | 'ndjson';
export const BULK_FORMATS: readonly BulkFormat[] = ['csv', 'json', 'ndjson'];

/** The body of `rows` leads in a format, generated a few hundred rows per chunk. */
export function bulkBody(format: BulkFormat, rows: number, tag: string, phoneOffset = 0): Readable {
  const lead = (n: number) => ({
    Name: `Lead ${n} Åse Ærø`,
    Telefon: `+45 ${String(10_000_000 + ((n + phoneOffset) % 89_999_999))}`,
    Email: `lead${n}@example.com`,
    Customer: `${tag}-${n}`,
  });
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

export interface BulkRun {
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
export function runBulk(
  base: string,
  auth: string,
  format: BulkFormat,
  rows: number,
  tag: string,
  serverPid: number,
  postmasterPid: number,
  /** Added to the URL (e.g. `&DuplicateCheck=Campaign`), and where the body's phone numbers start. */
  variant: { query: string; phoneOffset: number } = { query: '', phoneOffset: 0 },
): Promise<BulkRun> {
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
      `${base}/api/leads/bulk?CampaignCode=${BENCH_CAMPAIGN}${variant.query}`,
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
          resolve({
            status: res.statusCode ?? 0,
            results,
            succeeded,
            seconds: Number(process.hrtime.bigint() - started) / 1e9,
            firstResultMs,
            rss,
            cpuUsPerRow,
          });
        });
        res.once('error', reject);
      },
    );
    req.once('error', (err) => {
      clearInterval(sampler);
      reject(err);
    });
    bulkBody(format, rows, tag, variant.phoneOffset).pipe(req);
  });
}

/**
 * A warm-up of a few batches per format, then one request of `rows` rows per format, printed as
 * a table row each; checks that the database holds one lead per successful row. False when a
 * request did not answer and store every row.
 */
export async function bulkImportTable(
  target: { base: string; auth: string; serverPid: number; postmasterPid: number; db: Knex },
  formats: readonly BulkFormat[],
  rows: number,
  /**
   * Query parameters added to every request (`&DuplicateCheck=Campaign`). Each request then gets
   * phone numbers of its own, so that a check finds no duplicate and every row is stored.
   */
  query = '',
): Promise<boolean> {
  const { base, auth, serverPid, postmasterPid, db } = target;
  // Numbers of a run with a check start far from those of a run without one.
  let offset = query === '' ? 0 : 40_000_000;
  const variant = (n: number) => {
    const v = { query, phoneOffset: query === '' ? 0 : offset };
    offset += n;
    return v;
  };
  for (const format of formats) await runBulk(base, auth, format, 2000, `warm-${format}`, serverPid, postmasterPid, variant(2000));
  console.log(
    `load average before: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  console.log(
    '\n| format | rows | rows/s | first result | server RSS start → peak (growth) | CPU µs/row: server / Postgres / client | stored |',
  );
  console.log('|---|---:|---:|---:|---|---|---:|');
  let ok = true;
  for (const format of formats) {
    const tag = `bench-${format}-${Date.now()}`;
    const run = await runBulk(base, auth, format, rows, tag, serverPid, postmasterPid, variant(rows));
    const stored = Number((await db('leads').whereLike('external_key', `${tag}-%`).count<{ count: string }[]>('* as count'))[0]!.count);
    console.log(
      `| ${format} | ${fmt(run.results)} | ${fmt(run.results / run.seconds)} | ${fmt(run.firstResultMs)} ms | ` +
        `${fmt(run.rss.start)} → ${fmt(run.rss.peak)} MB (+${fmt(run.rss.peak - run.rss.start)} MB) | ` +
        `${fmt(run.cpuUsPerRow.server, 1)} / ${fmt(run.cpuUsPerRow.postgres, 1)} / ${fmt(run.cpuUsPerRow.client, 1)} | ${fmt(stored)} |`,
    );
    if (run.status !== 200 || run.results !== rows || run.succeeded !== rows || stored !== rows) {
      console.log(`WARNING: status ${run.status}, ${run.results} results, ${run.succeeded} succeeded, ${stored} stored; expected ${rows}`);
      ok = false;
    }
  }
  return ok;
}
