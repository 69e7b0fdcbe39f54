import http from 'node:http';
import type { Readable } from 'node:stream';
import { databaseUrlNamed, uniq } from '../harness/testApp';
import { abortMidStream } from '../harness/slowClient';
import { useTestDb, useTestWorld } from '../harness/useTestWorld';
import { untilValue } from '../harness/until';
import { createDb } from '../../src/data/db';
import { ExportSession, poolConnections } from '../../src/data/exportSession';
import { listen } from '../../src/app/server';

/**
 * The transcoded exports' connection lifecycle: clients that leave mid-stream (lead exports,
 * compressed and encoded bodies), a COPY cancelled while it runs or before its first row, and
 * a graceful shutdown during an export. Afterwards the pool is idle and Postgres shows no
 * query, transaction or connection of the app beyond its pool.
 */

const LEADS = 8000;
const CALLS = 8000;
const appName = uniq('lcm-exports-');

const { t, w } = useTestWorld(() => ({ DATABASE_URL: databaseUrlNamed(appName), AUTH_CACHE_TTL_MS: '600000', SHUTDOWN_GRACE_MS: '5000' }));
const observer = useTestDb({ poolMax: 1 });
let port: number;

beforeAll(async () => {
  const id = async (table: string, column: string, value: string) =>
    (
      await t
        .db(table)
        .where({ [column]: value })
        .first<{ id: number }>('id')
    ).id;
  const campaign = await id('campaigns', 'code', w.campaigns.b2b);
  const user = await id('users', 'org_code', w.users.agent);
  const [pool] = await t
    .db('lead_pools')
    .insert({ campaign_id: campaign, name: `bulk ${w.id}` })
    .returning<{ id: number }[]>('id');
  await t.db.raw(
    `insert into leads (unique_id, campaign_id, pool_id, status, data, upload_time, last_modified_time, status_changed_time, uploaded_by_user_id)
     select ? || '-lead-' || g, ?, ?, g % 3, jsonb_build_object('Name', 'Ærø ' || g, 'Telefon', '+45' || g, 'Secret', repeat('s', 200)),
       '2026-05-01T08:00:00Z'::timestamptz + g * interval '1 second', '2026-05-01T08:00:00Z'::timestamptz + g * interval '1 second',
       '2026-05-01T08:00:00Z'::timestamptz, ?
     from generate_series(1, ?) g`,
    [w.id, campaign, pool!.id, user, LEADS],
  );
  const unit = await id('org_units', 'org_code', w.units.root);
  await t.db.raw(
    `insert into calls (unique_id, campaign_id, unique_lead_id, user_id, ou0_id, lead_phone_number, end_cause, start_time, preview_ms)
     select ? || '-call-' || g, ?, 'lead-' || g, ?, ?, '+4512' || g, 1, '2026-05-06T08:00:00Z'::timestamptz + g * interval '1 second', 4000
     from generate_series(1, ?) g`,
    [w.id, campaign, user, unit, CALLS],
  );
  port = (await t.listen()).port;
}, 120_000);

const projects = () => `Projects=${encodeURIComponent(w.projects.b2b)}`;
const callsQuery = () => `OrgCode=${encodeURIComponent(w.units.root)}&StartTime=2026-05-06T08:00:00Z&TimeSpan=PT4H`;

const knexPool = (db: typeof t.db) => (db.client as { pool: { numUsed(): number; numPendingAcquires(): number } }).pool;

/** Connections of the app that are doing something: a query, a transaction. */
async function busy(name = appName): Promise<unknown[]> {
  return (
    await observer.raw<{ rows: unknown[] }>(
      `select pid, state, xact_start, query from pg_stat_activity
        where application_name = ? and (state <> 'idle' or xact_start is not null or backend_xid is not null)`,
      [name],
    )
  ).rows;
}

async function expectClean(): Promise<void> {
  for (const pool of [knexPool(t.db), knexPool(t.composed.services.exportDb)]) {
    const counts = () => ({ used: pool.numUsed(), pending: pool.numPendingAcquires() });
    await untilValue('the pool idle', counts, (c) => c.used === 0 && c.pending === 0, { timeoutMs: 10_000 });
  }
  await untilValue(
    'no busy connection of the app',
    () => busy(),
    (rows) => rows.length === 0,
    { timeoutMs: 10_000 },
  );
  const all = (
    await observer.raw<{ rows: { n: number }[] }>(`select count(*)::int as n from pg_stat_activity where application_name = ?`, [appName])
  ).rows[0]!.n;
  // Idle connections kept by the app's two pools (main and export, five each in the harness) and its listening connection, no more.
  expect(all).toBeLessThanOrEqual(11);
}

describe('transcoded exports when clients leave', () => {
  it('when 60 lead, call and compressed exports are cut mid-stream, then the pool is idle and Postgres shows nothing running', async () => {
    const paths: [string, Record<string, string>][] = [
      [`/api/simpleleads?${projects()}`, {}],
      [`/api/rawleads?${projects()}&Encoding=windows-1252`, {}],
      [`/api/simpleleads?${projects()}`, { 'Accept-Encoding': 'br' }],
      [`/api/calls?${callsQuery()}`, { 'Accept-Encoding': 'gzip' }],
      [`/api/calls/csv?${callsQuery()}&Encoding=utf-16le`, { 'Accept-Encoding': 'br' }],
      [`/api/rawleads?${projects()}`, { 'Accept-Encoding': 'gzip' }],
    ];
    const results: { status: number; bytes: number }[] = [];
    for (let i = 0; i < 60; i += 6)
      results.push(...(await Promise.all(paths.map(([p, h]) => abortMidStream(port, p, { Authorization: w.accounts.full.auth, ...h })))));
    expect(results.every((r) => r.status === 200 && r.bytes > 0)).toBe(true);
    await expectClean();
    // The app still answers whole exports afterwards.
    const res = await fetch(`http://127.0.0.1:${port}/api/simpleleads?${projects()}`, { headers: { Authorization: w.accounts.full.auth } });
    expect(((await res.json()) as unknown[]).length).toBe(LEADS);
  }, 120_000);
});

describe('ExportSession', () => {
  const db = useTestDb({ poolMax: 2 });
  const sessionName = uniq('lcm-session-');
  const named = createDb({ url: databaseUrlNamed(sessionName), timezone: 'Europe/Copenhagen', poolMax: 2 });
  afterAll(() => named.destroy());

  it('when a running COPY is destroyed mid-stream, then it is cancelled and the connection comes back clean and reusable', async () => {
    const session = await ExportSession.open(poolConnections(named));
    const copy: Readable = await session.copy(`select generate_series(1, 20000000) as g, repeat('x', 500) as pad`);
    await new Promise((resolve) => copy.once('readable', resolve));
    expect(copy.read()).not.toBeNull();
    const started = Date.now();
    copy.destroy();
    await session.closed;
    expect(Date.now() - started).toBeLessThan(3000);
    expect(knexPool(named).numUsed()).toBe(0);
    await untilValue(
      'no busy connection of the session',
      () => busy(sessionName),
      (rows) => rows.length === 0,
      { timeoutMs: 5000 },
    );
    // The same pool serves the next query on a clean connection.
    expect((await named.raw<{ rows: { one: number }[] }>('select 1 as one')).rows[0]!.one).toBe(1);
  });

  it('when the client leaves before the first row, then the COPY is cancelled at once', async () => {
    const controller = new AbortController();
    const session = await ExportSession.open(poolConnections(named), controller.signal);
    // A query that sorts for a long time before its first row.
    const pending = session.copy(`select g from generate_series(1, 30000000) g order by g desc`);
    setTimeout(() => controller.abort(new Error('client left')), 200);
    const started = Date.now();
    await expect(pending).rejects.toThrow();
    await session.closed;
    expect(Date.now() - started).toBeLessThan(3000);
    expect(knexPool(named).numUsed()).toBe(0);
    await untilValue(
      'no busy connection of the session',
      () => busy(sessionName),
      (rows) => rows.length === 0,
      { timeoutMs: 5000 },
    );
  });

  it('when the COPY fails in its first rows, then copy() rejects with the error and the session closes', async () => {
    const session = await ExportSession.open(poolConnections(db));
    await expect(session.copy(`select 1 / (g - 3) from generate_series(1, 5) g`)).rejects.toThrow(/division by zero/);
    await session.closed;
    expect(knexPool(db).numUsed()).toBe(0);
  });

  it('when an export session runs, then JIT and the statement timeout are off inside it only', async () => {
    const session = await ExportSession.open(poolConnections(db));
    const inside = (
      await session.db.raw<{ rows: { jit: string; st: string; ro: string }[] }>(
        `select current_setting('jit') as jit, current_setting('statement_timeout') as st, current_setting('transaction_read_only') as ro`,
      )
    ).rows[0];
    await session.close();
    expect(inside).toEqual({ jit: 'off', st: '0', ro: 'on' });
    const outside = (await db.raw<{ rows: { jit: string }[] }>(`select current_setting('jit') as jit`)).rows[0]!;
    expect(outside.jit).not.toBe('off');
  });
});

describe('graceful shutdown during a transcoded export', () => {
  it('when the server closes during an export, then the export finishes whole and the connection is released', async () => {
    const running = await listen(t.app, { ...t.settings, PORT: 0, HOST: '127.0.0.1', SHUTDOWN_GRACE_MS: 5000 });
    const body: Buffer[] = [];
    const done = new Promise<{ status: number }>((resolve, reject) => {
      http.get(`${running.url}/api/calls?${callsQuery()}`, { headers: { Authorization: w.accounts.full.auth } }, (res) => {
        // A slow reader: the export is held by backpressure while the server closes.
        res.pause();
        setTimeout(() => res.resume(), 300);
        res.on('data', (c: Buffer) => body.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
        res.on('error', reject);
      });
    });
    await new Promise((r) => setTimeout(r, 100));
    const closed = running.close();
    const res = await done;
    await closed;
    expect(res.status).toBe(200);
    expect((JSON.parse(Buffer.concat(body).toString('utf8')) as unknown[]).length).toBe(CALLS);
    await expectClean();
  });

  it('when an export outlasts the grace period, then it is cut at the deadline and its COPY released', async () => {
    // A deadline shorter than the export takes to render: the few MB of 8,000 leads fit in the
    // sockets' buffers of a paused client, so a fast machine could finish them within a longer one.
    const running = await listen(t.app, { ...t.settings, PORT: 0, HOST: '127.0.0.1', SHUTDOWN_GRACE_MS: 1 });
    let bytes = 0;
    let ended = false;
    let firstBytes!: () => void;
    let response!: http.IncomingMessage;
    const started = new Promise<void>((resolve) => (firstBytes = resolve));
    const done = new Promise<void>((resolve) => {
      const req = http.get(`${running.url}/api/simpleleads?${projects()}`, { headers: { Authorization: w.accounts.full.auth } }, (res) => {
        response = res;
        res.once('data', (c: Buffer) => {
          bytes += c.length;
          res.pause(); // never reads on: the export stays mid-stream
          firstBytes();
        });
        res.on('end', () => (ended = true));
        res.on('error', () => undefined);
      });
      req.on('error', () => undefined);
      req.on('close', () => resolve());
    });
    await started;
    const closing = Date.now();
    await running.close();
    // Without the deadline the close would wait for a client that never reads on; the bound is
    // loose so that a loaded machine's scheduling does not decide the test.
    expect(Date.now() - closing).toBeLessThan(10_000);
    // A paused socket does not notice its end: read on to see the body cut short.
    response.resume();
    await done;
    expect(bytes).toBeGreaterThan(0);
    expect(ended).toBe(false);
    await expectClean();
  });
});
