import http from 'node:http';
import { Readable } from 'node:stream';
import type { Knex } from 'knex';
import pg from 'pg';
import { createDb, migrateLatest } from '../../src/data/db';
import { loadNdjson } from '../../src/ingest/loader/loadNdjson';
import { generateSyntheticData } from '../../src/ingest/syntheticData';
import { basicAuth, uniq } from '../harness/testApp';
import { ALL_RIGHTS } from '../harness/world';
import { until } from '../harness/until';
import { startRestartablePostgres, RestartablePostgres } from '../harness/restartablePostgres';
import { startApiNode, ApiNode } from '../cluster/harness/apiNodes';

/**
 * Fault: the database server is restarted (a fast shutdown, then a start on the same folder
 * and port) while a client reads a large `/api/calls` export slowly, mid-stream, from an API
 * process (`lcm serve`) on a Postgres of this file's own. The export's 200 and its first rows
 * are already sent, so it must end visibly incomplete: the body cut without its closing `]`
 * (not valid JSON), or the connection reset. While the database is down, readiness says 503
 * and requests get a 503 problem with Retry-After; once it is back, the same process serves
 * readiness, a small window and a whole export again within a bounded time, and it never
 * exited.
 *
 * What breaks it: an export that ends its array on a database error (a truncated export that
 * looks complete), an unhandled 'error' of a pooled or exporting connection (the process
 * crashes), pooled connections of the old server handed out again (errors after the restart),
 * a refused database connection answered as a 500, or an export session that never gives its
 * connection back (the export pool runs dry after the restart).
 */
const ZONE = 'Europe/Copenhagen';
// Enough that the export's COPY cannot be done before the stop: the COPY's output waiting in the
// socket buffers between Postgres, the server and the slow reader holds about 60,000 calls.
const CALLS = 300_000;
/** The slow reader: one chunk, then this long before the next. */
const READ_PAUSE_MS = 20;
const RECOVERY_MS = 30_000;

/** Whether a COPY … TO STDOUT (an export) is running in the database at `url`. */
async function copyRunning(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity where state = 'active' and query ilike 'copy%to stdout%' and pid <> pg_backend_pid()`,
    );
    return rows[0]!.n > 0;
  } finally {
    await client.end();
  }
}

interface SlowRead {
  status: number;
  /** Bytes taken so far. */
  bytes(): number;
  /** Settles when the response ends or its connection is cut. */
  done: Promise<{ body: string; complete: boolean; error?: string }>;
}

/** A GET whose body is read one chunk at a time, READ_PAUSE_MS apart: a slow client, mid-stream for seconds. */
function readSlowly(url: string, headers: Record<string, string>): Promise<SlowRead> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      let complete = false;
      let error: string | undefined;
      const done = new Promise<{ body: string; complete: boolean; error?: string }>((settle) => {
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          bytes += chunk.length;
          res.pause();
          setTimeout(() => res.resume(), READ_PAUSE_MS);
        });
        res.once('end', () => (complete = true));
        res.once('error', (err) => (error = err.message));
        res.once('close', () => settle({ body: Buffer.concat(chunks).toString('utf8'), complete: complete && !res.aborted, error }));
      });
      resolve({ status: res.statusCode ?? 0, bytes: () => bytes, done });
    });
    req.once('error', reject);
  });
}

/** Checks every 250 ms; a check that fails (the server or Postgres away) counts as not yet. */
const within = (timeoutMs: number) => ({ timeoutMs, intervalMs: 250, ignoreErrors: true });

const isJson = (text: string): boolean => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

describe('Postgres restarted during an export', () => {
  let pg: RestartablePostgres | undefined;
  let node: ApiNode | undefined;
  let db: Knex | undefined;
  afterAll(async () => {
    await node?.stop();
    await db?.destroy();
    await pg?.destroy();
  });

  const accounts = {
    warm: { username: uniq('restart-warm-'), password: uniq('pw-') },
    cold: { username: uniq('restart-cold-'), password: uniq('pw-') },
  };
  const auth = (a: { username: string; password: string }) => ({ Authorization: basicAuth(a.username, a.password) });
  let exportPath = '';
  let smallPath = '';

  beforeAll(async () => {
    pg = await startRestartablePostgres();
    db = createDb({ url: pg.url, timezone: ZONE, poolMax: 2 });
    await migrateLatest(db);
    await generateSyntheticData(db, { calls: CALLS, leads: 5_000, days: 7, seed: 20, zone: ZONE });
    const user = (await db<{ id: number; org_code: string }>('users').orderBy('id').first('org_code'))!.org_code;
    await loadNdjson(
      db,
      Readable.from(
        Object.values(accounts).map(
          (a) => JSON.stringify({ type: 'account', ...a, user, projects: ['*'], rights: ALL_RIGHTS, entryAccess: 'Full' }) + '\n',
        ),
      ),
      { zone: ZONE },
    );
    // The root unit with the most calls: the export reads all of them.
    const top = (
      await db.raw<{ rows: { id: number; n: number; first: Date; last: Date }[] }>(
        `select ou0_id as id, count(*)::int as n, min(start_time) as first, max(start_time) as last from calls group by ou0_id order by n desc limit 1`,
      )
    ).rows[0]!;
    const orgCode = (await db<{ id: number; org_code: string }>('org_units').where({ id: top.id }).first('org_code'))!.org_code;
    const span = Math.ceil((top.last.getTime() - top.first.getTime()) / 1000) + 1;
    exportPath = `/api/calls?OrgCode=${encodeURIComponent(orgCode)}&StartTime=${encodeURIComponent(top.first.toISOString())}&TimeSpan=PT${span}S`;
    smallPath = `/api/calls?OrgCode=${encodeURIComponent(orgCode)}&StartTime=${encodeURIComponent(top.first.toISOString())}&TimeSpan=PT1M`;
    await db.destroy();
    db = undefined;

    node = await startApiNode('pg-restart', {
      DATABASE_URL: pg.url,
      REDIS_URL: process.env.TEST_REDIS_URL ?? '',
      AUTH_CACHE_TTL_MS: '600000',
      DEFAULT_BULK_DAILY_LIMIT: '100000000',
    });
    // 300,000 calls generated and loaded: about a minute alone, several on a loaded machine.
  }, 360_000);

  it('when Postgres restarts under a slowly read export, then the export ends visibly incomplete, requests meanwhile get 503, and the same process serves again once Postgres is back', async () => {
    const url = node!.url;
    // Warm: the first account's credentials are cached; the second's are never checked before the outage.
    expect((await fetch(url + '/api/myaccount', { headers: auth(accounts.warm) })).status).toBe(200);
    const small = await fetch(url + smallPath, { headers: auth(accounts.warm) });
    expect(small.status).toBe(200);
    expect(((await small.json()) as unknown[]).length).toBeGreaterThan(0);

    const exporting = await readSlowly(url + exportPath, auth(accounts.warm));
    expect(exporting.status).toBe(200);
    await until('the export to be well under way', () => exporting.bytes() > 256 * 1024, within(30_000));
    // The premise: Postgres is still sending the export's COPY (not done with it, its rows only
    // waiting in buffers, which would let the export end whole whatever happens to Postgres).
    expect(await copyRunning(pg!.url)).toBe(true);

    await pg!.stop('fast');
    const bytesAtStop = exporting.bytes();

    // While the database is down: readiness says so, and requests get a 503 problem, not a 500.
    const ready = await fetch(url + '/api/readyz');
    expect({ status: ready.status, body: await ready.json() }).toMatchObject({
      status: 503,
      body: { status: 'unavailable', database: 'down' },
    });
    for (const [name, path, account] of [
      ['a small window, credentials cached', smallPath, accounts.warm],
      ['my account, credentials not cached', '/api/myaccount', accounts.cold],
    ] as const) {
      const res = await fetch(url + path, { headers: auth(account) });
      const body = await res.text();
      expect({
        name,
        status: res.status,
        type: res.headers.get('content-type'),
        retryAfter: res.headers.get('retry-after') !== null,
      }).toEqual({
        name,
        status: 503,
        type: 'application/problem+json; charset=utf-8',
        retryAfter: true,
      });
      expect(JSON.parse(body)).toMatchObject({ code: 'service_unavailable' });
    }
    expect(node!.running()).toBe(true);

    await pg!.start();
    const restartedAt = Date.now();

    // Back (the cut export drains meanwhile): readiness, a small window and a whole (smaller) export from the same process.
    await until('readiness after the restart', async () => (await fetch(url + '/api/readyz')).status === 200, within(RECOVERY_MS));
    const readyMs = Date.now() - restartedAt;
    await until(
      'a small window after the restart',
      async () => {
        const res = await fetch(url + smallPath, { headers: auth(accounts.warm) });
        return res.status === 200 && ((await res.json()) as unknown[]).length > 0;
      },
      within(RECOVERY_MS),
    );
    const smallMs = Date.now() - restartedAt;
    const again = await fetch(`${url}${exportPath}&Limit=5000`, { headers: auth(accounts.cold) });
    expect(again.status).toBe(200);
    expect(((await again.json()) as unknown[]).length).toBe(5000);
    process.stdout.write(`postgres restart: after the start, ready at ${readyMs} ms, a small window served at ${smallMs} ms\n`);

    const cut = await exporting.done;
    process.stdout.write(
      `postgres restart: ${bytesAtStop} bytes read at the stop, ${Buffer.byteLength(cut.body)} in all, complete ${cut.complete}, ends ${JSON.stringify(cut.body.slice(-20))}${cut.error ? `, ${cut.error}` : ''}\n`,
    );
    expect(cut.body.startsWith('[')).toBe(true);
    expect(Buffer.byteLength(cut.body)).toBeGreaterThanOrEqual(bytesAtStop);
    // Incomplete, visibly: not a whole JSON array, and not a body that ended as HTTP says a body ends.
    expect(isJson(cut.body)).toBe(false);
    expect(cut.complete).toBe(false);
    expect(node!.output()).not.toMatch(/uncaught|unhandled/i);
    expect(node!.running()).toBe(true);
  }, 120_000);
});
