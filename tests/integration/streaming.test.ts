import http from 'node:http';
import { AddressInfo } from 'node:net';
import { Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import express from 'express';
import { Knex } from 'knex';
import pg from 'pg';
import { createDb } from '../../src/data/db';
import { openCursor, timestampsAsText } from '../../src/data/cursorStream';
import { responseAbortSignal, streamToResponse } from '../../src/http/streamResponse';
import { csvFormatter } from '../../src/streams/csv';
import { encoderStream } from '../../src/streams/encoding';
import { jsonArrayText } from '../../src/streams/rowsToText';
import { untilValue } from '../harness/until';

type Handler = (req: express.Request, res: express.Response) => Promise<void>;

interface ClientResult {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  complete: boolean;
}

let db: Knex;
let admin: pg.Client;
let server: http.Server;
let baseUrl: string;
let handler: Handler;
let handled: Promise<void>;
const logger = { error: jest.fn(), info: jest.fn() };

function pool(): { numUsed(): number; numPendingAcquires(): number } {
  return (db.client as unknown as { pool: { numUsed(): number; numPendingAcquires(): number } }).pool;
}

/** Checks every 20 ms for up to 5 s. */
const inTime = { timeoutMs: 5000, intervalMs: 20 };

/** Waits until every connection is back in the pool; a wait that runs out shows how many are still out. */
const poolIdle = () =>
  untilValue(
    'every connection back in the pool',
    () => pool().numUsed(),
    (used) => used === 0,
    inTime,
  );

/** State of a backend as Postgres reports it, read over a connection outside the pool. */
async function backend(pid: number): Promise<{ state: string; xact_start: Date | null; query: string }> {
  const { rows } = await admin.query<{ state: string; xact_start: Date | null; query: string }>(
    'select state, xact_start, query from pg_stat_activity where pid = $1',
    [pid],
  );
  return rows[0]!;
}

async function expectCleanConnection(pid: number): Promise<void> {
  await poolIdle();
  const state = await backend(pid);
  // idle, not "active" (a running portal) nor "idle in transaction" (an unsynced cursor).
  expect(state.state).toBe('idle');
  expect(state.xact_start).toBeNull();
}

function get(path: string, onResponse?: (res: http.IncomingMessage, req: http.ClientRequest) => void): Promise<ClientResult> {
  return new Promise((resolve, reject) => {
    const req = http.get(baseUrl + path, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', () => undefined);
      res.on('close', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), complete: res.complete }),
      );
      onResponse?.(res, req);
    });
    req.on('error', reject);
  });
}

/** A route as the app's endpoints write it: open the cursor, then set headers and stream. */
function jsonRoute(query: string, bindings: unknown[] = [], batchSize = 100, beforeStreaming?: () => Promise<void>): Handler {
  return async (_req, res) => {
    const signal = responseAbortSignal(res);
    let rows: Readable;
    try {
      rows = await openCursor(db, { sql: query, bindings }, { batchSize, signal });
    } catch (err) {
      if (signal.aborted) return;
      res
        .status(500)
        .type('application/problem+json')
        .send({ status: 500, detail: (err as Error).message });
      return;
    }
    await beforeStreaming?.();
    res.type('application/json');
    await streamToResponse(res, jsonArrayText(rows, JSON.stringify), [], { logger });
  };
}

beforeAll(async () => {
  db = createDb({ url: process.env.TEST_DATABASE_URL!, timezone: 'Europe/Copenhagen', poolMax: 4 });
  admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await admin.connect();
  const app = express();
  app.get('/stream', (req, res) => {
    handled = handler(req, res);
    return handled;
  });
  server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await admin.end();
  await db.destroy();
});

beforeEach(() => {
  logger.error.mockClear();
  logger.info.mockClear();
});

describe('openCursor', () => {
  it('when the result is empty, then the stream ends at once and the connection is released', async () => {
    const rows = await openCursor(db, db.raw('select g from generate_series(1, 0) g'));
    const seen: unknown[] = [];
    for await (const row of rows) seen.push(row);
    expect(seen).toEqual([]);
    expect(pool().numUsed()).toBe(0);
  });

  it('when a knex query builder is given, then its bindings are used', async () => {
    const query = db.select('g').from(db.raw('generate_series(?::int, ?::int) as g', [3, 5]));
    const seen: unknown[] = [];
    for await (const row of await openCursor(db, query)) seen.push(row);
    expect(seen).toEqual([{ g: 3 }, { g: 4 }, { g: 5 }]);
  });

  it('when timestamps are asked for as text, then they arrive in platform time and other types as usual', async () => {
    const rows = await openCursor(db, db.raw("select timestamptz '2026-05-06 08:16:41.25Z' as t, 5::int8 as n, true as b"), {
      types: timestampsAsText,
    });
    const seen: unknown[] = [];
    for await (const row of rows) seen.push(row);
    expect(seen).toEqual([{ t: '2026-05-06 10:16:41.25+02', n: 5, b: true }]);
  });

  it('when many rows are read, then every row arrives in order as a plain object', async () => {
    const rows = await openCursor(db, db.raw('select g as n, md5(g::text) as h from generate_series(1, 10000) g'), { batchSize: 333 });
    const seen: Array<{ n: number; h: string }> = [];
    for await (const row of rows) seen.push(row as { n: number; h: string });
    expect(seen.map((r) => r.n)).toEqual(Array.from({ length: 10000 }, (_, i) => i + 1));
    expect(Object.getPrototypeOf(seen[0])).toBe(Object.prototype);
    expect(Object.keys(seen[0]!)).toEqual(['n', 'h']);
    await poolIdle();
  });

  it('when the stream is destroyed after some rows, then the cursor is closed and the connection is clean', async () => {
    const rows = await openCursor(db, db.raw('select pg_backend_pid() as pid, g from generate_series(1, 100000) g'), { batchSize: 100 });
    let pid = 0;
    let count = 0;
    await expect(
      pipeline(
        rows,
        new Writable({
          objectMode: true,
          write(row: { pid: number }, _enc, cb) {
            pid = row.pid;
            cb(++count === 250 ? new Error('enough') : null);
          },
        }),
      ),
    ).rejects.toThrow('enough');
    await new Promise((r) => (rows.closed ? r(null) : rows.once('close', r)));
    expect(pool().numUsed()).toBe(0);
    await expectCleanConnection(pid);
  });

  it('when the stream is destroyed before the first read, then the connection is still released once', async () => {
    const rows = await openCursor(db, db.raw('select pg_backend_pid() as pid, g from generate_series(1, 100000) g'), { batchSize: 50 });
    const { pid } = rows.read() as { pid: number };
    rows.destroy();
    await new Promise((r) => rows.once('close', r));
    expect(pool().numUsed()).toBe(0);
    await expectCleanConnection(pid);
    // A second destroy must not release the connection a second time.
    rows.destroy();
    const { rows: check } = await db.raw<{ rows: { one: number }[] }>('select 1 as one');
    expect(check).toEqual([{ one: 1 }]);
  });

  it('when the consumer does not read, then the cursor reads no more than a few batches ahead', async () => {
    const seq = `stream_seq_${process.pid}_${Date.now()}`;
    await admin.query(`create sequence ${seq}`);
    try {
      // nextval runs once per row Postgres actually produces, so the sequence counts rows fetched.
      const rows = await openCursor(db, db.raw(`select nextval('${seq}') as n from generate_series(1, 100000) g`), { batchSize: 100 });
      await new Promise((r) => setTimeout(r, 300));
      const produced = async () => Number((await admin.query<{ last_value: string }>(`select last_value from ${seq}`)).rows[0]!.last_value);
      const before = await produced();
      expect(before).toBeLessThanOrEqual(300);
      for (let i = 0; i < 150; i++) rows.read();
      await new Promise((r) => setTimeout(r, 200));
      expect(await produced()).toBeLessThanOrEqual(before + 300);
      rows.destroy();
      await new Promise((r) => rows.once('close', r));
    } finally {
      await admin.query(`drop sequence ${seq}`);
    }
  });

  it('when the query fails before its first row, then openCursor rejects and releases the connection', async () => {
    await expect(openCursor(db, db.raw('select 1/0 as x'))).rejects.toThrow(/division by zero/);
    await expect(openCursor(db, { sql: 'select nope from nowhere', bindings: [] })).rejects.toThrow(/nowhere/);
    expect(pool().numUsed()).toBe(0);
  });

  it('when a slow query is destroyed while it runs, then it is cancelled and the connection released', async () => {
    const rows = await openCursor(
      db,
      db.raw('select pg_backend_pid() as pid, g, pg_sleep(case when g = 2 then 30 else 0 end) from generate_series(1, 3) g'),
      {
        batchSize: 1,
      },
    );
    const { pid } = rows.read() as { pid: number };
    // The second fetch is now running pg_sleep(30).
    await untilValue(
      'the second fetch to run',
      () => backend(pid),
      (b) => b.state === 'active',
      inTime,
    );
    rows.destroy();
    await new Promise((r) => rows.once('close', r));
    // The same backend is idle again: its 30 s sleep was cancelled, not waited out, and the
    // connection was not given up (a close that timed out would have ended it).
    await expectCleanConnection(pid);
  });

  it('when the abort signal fires while the first batch is awaited, then openCursor rejects at once', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('client left')), 150);
    await expect(openCursor(db, db.raw('select pg_sleep(30)'), { signal: controller.signal })).rejects.toThrow('client left');
    // Back in the pool well before the 30 s sleep could have ended by itself: it was cancelled.
    await poolIdle();
    const { rows: sleeping } = await admin.query("select 1 from pg_stat_activity where query = 'select pg_sleep(30)' and state = 'active'");
    expect(sleeping).toEqual([]);
  });
});

describe('openCursor, left at once', () => {
  it('when the cursor is destroyed after its fetch went out but before Postgres answered, then the connection’s next query gets its own result', async () => {
    // One connection, so every query after an abort runs on the connection the cursor used.
    const one = createDb({ url: process.env.TEST_DATABASE_URL!, timezone: 'Europe/Copenhagen', poolMax: 1 });
    const onePool = (one.client as unknown as { pool: { on(event: 'acquireSuccess', listener: () => void): void } }).pool;
    let abortNext: AbortController | undefined;
    // Right after the connection is handed over, the cursor sends its query and first fetch in
    // the same turn; the abort comes before the next turn reads Postgres's answer.
    onePool.on('acquireSuccess', () => {
      const controller = abortNext;
      abortNext = undefined;
      if (controller) setImmediate(() => controller.abort(new Error('client left')));
    });
    try {
      for (let i = 0; i < 20; i++) {
        abortNext = new AbortController();
        // An empty result: its CommandComplete comes with the first fetch.
        await openCursor(one, { sql: 'select 1 as n where $1::int < 0', bindings: [i] }, { signal: abortNext.signal }).then(
          (rows) => rows.destroy(),
          () => undefined,
        );
        const { rows } = await one.raw<{ rows: { answer: number }[] }>('select ?::int as answer', [i]);
        expect(rows).toEqual([{ answer: i }]);
      }
    } finally {
      await one.destroy();
    }
  });
});

describe('streamToResponse', () => {
  it('when the query has no rows, then the body is []', async () => {
    handler = jsonRoute('select g from generate_series(1, 0) g');
    const res = await get('/stream');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    expect(res.body.toString()).toBe('[]');
    expect(res.complete).toBe(true);
  });

  it('when the query has many rows, then the body is a JSON array equal to the rows', async () => {
    handler = jsonRoute("select g as id, 'name ' || g as name, g % 2 = 0 as even from generate_series(1, 20000) g", [], 500);
    const res = await get('/stream');
    const expected = Array.from({ length: 20000 }, (_, i) => ({ id: i + 1, name: `name ${i + 1}`, even: (i + 1) % 2 === 0 }));
    expect(JSON.parse(res.body.toString())).toEqual(expected);
    expect(res.headers['transfer-encoding']).toBe('chunked');
    await poolIdle();
    expect(logger.error).not.toHaveBeenCalled();
  });

  it('when the client disconnects mid-stream, then the cursor is closed and the connection is clean', async () => {
    handler = jsonRoute("select pg_backend_pid() as pid, g, repeat('x', 500) as pad from generate_series(1, 200000) g");
    let firstChunk = '';
    await get('/stream', (res, req) => {
      res.once('data', (chunk: Buffer) => {
        firstChunk = chunk.toString();
        req.destroy();
      });
    });
    await handled;
    // streamToResponse settles only after the cursor has closed and released its connection.
    expect(pool().numUsed()).toBe(0);
    const pid = Number(/"pid":(\d+)/.exec(firstChunk)![1]);
    await expectCleanConnection(pid);
    expect(logger.error).not.toHaveBeenCalled();
    expect(logger.info).toHaveBeenCalled();
  });

  it('when the client leaves while the first rows are awaited, then the query is cancelled at once', async () => {
    handler = jsonRoute("select pg_sleep(31), 'late' as v");
    const req = http.get(baseUrl + '/stream');
    req.on('error', () => undefined);
    // Wait until the sleeping query runs, then leave.
    const sleeper = await untilValue(
      'the sleeping query to run',
      async () => {
        const { rows } = await admin.query<{ pid: number }>(
          "select pid from pg_stat_activity where query like '%pg_sleep(31)%' and state = 'active' and pid <> pg_backend_pid()",
        );
        return rows[0]?.pid ?? 0;
      },
      (pid) => pid !== 0,
      inTime,
    );
    req.destroy();
    await handled;
    // The same backend is idle again: the 31 s sleep was cancelled, not waited out.
    await expectCleanConnection(sleeper);
  });

  it('when the client leaves before streaming starts, then nothing is logged as an error and the connection is released', async () => {
    let leave: () => void = () => undefined;
    const left = new Promise<void>((resolve) => (leave = resolve));
    handler = jsonRoute('select g from generate_series(1, 100000) g', [], 100, async () => {
      leave();
      await new Promise((r) => setTimeout(r, 100));
    });
    const req = http.get(baseUrl + '/stream');
    req.on('error', () => undefined);
    await left;
    req.destroy();
    await handled;
    expect(pool().numUsed()).toBe(0);
    expect(logger.error).not.toHaveBeenCalled();
  });

  it('when the client reads slowly, then the cursor is paused instead of read ahead', async () => {
    const seq = `stream_seq_http_${process.pid}_${Date.now()}`;
    await admin.query(`create sequence ${seq}`);
    const total = 200000;
    try {
      handler = jsonRoute(`select nextval('${seq}') as n, repeat('x', 1000) as pad from generate_series(1, ${total}) g`);
      const produced = async () => Number((await admin.query<{ last_value: string }>(`select last_value from ${seq}`)).rows[0]!.last_value);
      let settled = 0;
      let memoryGrowth = 0;
      await get('/stream', (res, req) => {
        res.once('data', () => {
          res.pause();
          void (async () => {
            const rssAtPause = process.memoryUsage().rss;
            // Socket buffers take what they can (how fast depends on the machine's load); then
            // the cursor must stop: readings 300 ms apart that agree four times in a row (a busy
            // machine can pause a running query for a moment, never for over a second).
            let last = -1;
            let same = 0;
            for (let i = 0; i < 120 && same < 4; i++) {
              await new Promise((r) => setTimeout(r, 300));
              const now = await produced();
              same = now === last ? same + 1 : 0;
              last = now;
            }
            settled = last;
            await new Promise((r) => setTimeout(r, 1000));
            expect(await produced()).toBe(settled);
            memoryGrowth = process.memoryUsage().rss - rssAtPause;
            req.destroy();
          })();
        });
      });
      await handled;
      // Socket buffers hold some megabytes; everything else is a few batches.
      expect(settled).toBeGreaterThan(0);
      expect(settled).toBeLessThan(total / 4);
      expect(memoryGrowth).toBeLessThan(20 * 1024 * 1024);
      await poolIdle();
    } finally {
      await admin.query(`drop sequence ${seq}`);
    }
  });

  it('when the query fails mid-stream, then the response is aborted and never a complete array', async () => {
    handler = jsonRoute(
      'select pg_backend_pid() as pid, case when g = 3000 then 1 / (g - g) else g end as v from generate_series(1, 5000) g',
    );
    const res = await get('/stream');
    expect(res.status).toBe(200);
    expect(res.complete).toBe(false);
    const body = res.body.toString();
    expect(body.startsWith('[')).toBe(true);
    expect(body.endsWith(']')).toBe(false);
    expect((): unknown => JSON.parse(body)).toThrow();
    await handled;
    expect(logger.error).toHaveBeenCalledTimes(1);
    const pid = Number(/"pid":(\d+)/.exec(body)![1]);
    await expectCleanConnection(pid);
  });

  it('when the query fails before the first row, then the route can still answer with a problem', async () => {
    handler = jsonRoute('select 1 / (g - g) from generate_series(1, 10) g');
    const res = await get('/stream');
    expect(res.status).toBe(500);
    expect(res.headers['content-type']).toMatch(/problem\+json/);
    expect(res.complete).toBe(true);
    await poolIdle();
  });

  it('when a CSV export is in windows-1252, then the bytes are windows-1252 with CRLF lines', async () => {
    handler = async (_req, res) => {
      const rows = await openCursor(db, db.raw("select 'æøåé' as name, 'a;b' as note, true as ok, null as nothing"));
      res.type('text/csv; charset=windows-1252');
      const toArray = new Transform({
        objectMode: true,
        transform(row: Record<string, unknown>, _e, cb) {
          cb(null, [row.name, row.note, row.ok, row.nothing]);
        },
      });
      await streamToResponse(
        res,
        rows,
        [toArray, csvFormatter({ headers: ['name', 'note', 'ok', 'nothing'], separator: ';' }), encoderStream('windows-1252')],
        { logger },
      );
    };
    const res = await get('/stream');
    expect(res.headers['content-type']).toBe('text/csv; charset=windows-1252');
    expect(res.body).toEqual(
      Buffer.concat([Buffer.from('name;note;ok;nothing\r\n'), Buffer.from([0xe6, 0xf8, 0xe5, 0xe9]), Buffer.from(';"a;b";true;\r\n')]),
    );
  });

  it('when rows arrive, then the first bytes go out while the query is still running', async () => {
    // Speed is measured in bench/; what this proves is the behaviour behind a short time to first
    // byte: the response starts with the first batch, not after the whole result. Rows past 2000
    // wait for a lock the test holds, so the query cannot finish before the client has its first bytes.
    const key = 7_000_000 + (process.pid % 100_000);
    await admin.query('select pg_advisory_lock($1)', [key]);
    try {
      handler = jsonRoute(
        'select g from generate_series(1, 1000000) g where g <= 2000 or (select true from pg_advisory_xact_lock_shared($1::bigint))',
        [key],
        1000,
      );
      let firstRows = '';
      let queryState: { state: string; wait_event_type: string | null } | undefined;
      await get('/stream', (res, req) => {
        res.once('data', (chunk: Buffer) => {
          res.pause();
          firstRows = chunk.toString('utf8');
          void admin
            .query<{ state: string; wait_event_type: string | null }>(
              `select state, wait_event_type from pg_stat_activity
                where query like '%pg_advisory_xact_lock_shared%' and pid <> pg_backend_pid()`,
            )
            .then(({ rows }) => {
              queryState = rows[0];
              req.destroy();
            });
        });
      });
      await handled;
      expect(firstRows.startsWith('[{"g":1},{"g":2}')).toBe(true);
      // The first bytes were out while the query was still open: a suspended portal ('idle in
      // transaction') or a fetch waiting for the lock; it could not have got past row 2000.
      expect(['active', 'idle in transaction']).toContain(queryState?.state);
      await poolIdle();
    } finally {
      await admin.query('select pg_advisory_unlock($1)', [key]);
    }
  });
});
