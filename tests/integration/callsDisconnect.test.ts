import http from 'node:http';
import { testDatabaseUrl, uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';

/**
 * Clients that leave in the middle of large exports: every cursor closes and every pooled
 * connection comes back idle, with no query still running and no transaction left open.
 */

const CALLS = 10_000;
const EXPORTS = 100;
const AT_ONCE = 10;

const appName = uniq('lcm-disconnect-');
/** The test database, with an application name that marks this app's connections in pg_stat_activity. */
function databaseUrlNamed(name: string): string {
  const url = new URL(testDatabaseUrl());
  url.searchParams.set('application_name', name);
  return url.toString();
}

// Cached credentials: a password hash per request would dominate 100 requests.
// Ten exports at once from one account: admission lets all of them in (with room for the slots
// of a batch whose clients have left but whose closes the server has not seen yet), and they
// wait for a connection of the export pool rather than being refused.
const { t, w } = useTestWorld(() => ({
  DATABASE_URL: databaseUrlNamed(appName),
  AUTH_CACHE_TTL_MS: '600000',
  EXPORT_MAX_PER_ACCOUNT: String(2 * AT_ONCE),
  EXPORT_MAX_CONCURRENT: String(2 * AT_ONCE),
  EXPORT_POOL_MAX: String(AT_ONCE),
  EXPORT_ACQUIRE_TIMEOUT_MS: '20000',
}));
let port: number;

beforeAll(async () => {
  const unit = async (orgCode: string) => (await t.db('org_units').where({ org_code: orgCode }).first('id')).id as number;
  const [ou0, ou1, ou2] = [await unit(w.units.root), await unit(w.units.sales), await unit(w.units.team)];
  const user = (await t.db('users').where({ org_code: w.users.agent }).first('id')).id as number;
  const campaign = (await t.db('campaigns').where({ code: w.campaigns.b2b }).first('id')).id as number;
  await t.db.raw(
    `insert into calls (unique_id, campaign_id, unique_lead_id, user_id, ou0_id, ou1_id, ou2_id, lead_phone_number,
       lead_external_key, end_cause, connected, start_time, connect_time, end_time, preview_ms, dialing_ms,
       conversation_ms, wrap_up_ms, lead_status, pre_call_lead_status, campaign_type)
     select ? || '-' || g, ?, 'lead-' || g, ?, ?, ?, ?, '+4512' || lpad(g::text, 6, '0'), 'KEY-' || g, 1, true,
       '2026-05-06T08:00:00Z'::timestamptz + g * interval '1 second',
       '2026-05-06T08:00:05Z'::timestamptz + g * interval '1 second',
       '2026-05-06T08:03:00Z'::timestamptz + g * interval '1 second',
       4000, 5000, 175000, 30000, 200, 0, 1
     from generate_series(1, ?) g`,
    [w.id, campaign, user, ou0, ou1, ou2, CALLS],
  );
  port = (await t.listen()).port;
}, 120_000);

/**
 * Starts an export, waits for its first bytes, stops reading for a moment (the server is now
 * held by backpressure, mid-stream), and then cuts the connection.
 */
function abortMidStream(path: string): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, headers: { Authorization: w.accounts.full.auth } }, (res) => {
      res.once('data', (chunk: Buffer) => {
        res.pause();
        setTimeout(() => {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, bytes: chunk.length });
        }, 20);
      });
      res.once('error', () => undefined);
    });
    req.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ECONNRESET' && err.message !== 'socket hang up') reject(err);
    });
  });
}

function getAll(path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, headers: { Authorization: w.accounts.full.auth } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.once('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.once('error', reject);
      })
      .once('error', reject);
  });
}

async function until(condition: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('GET /api/calls and /api/calls/csv when clients disconnect', () => {
  it('when 100 large exports are cut mid-stream, then the pool is idle and Postgres shows no running query or open transaction of the app', async () => {
    const query = `OrgCode=${encodeURIComponent(w.units.root)}&StartTime=2026-05-06T08:00:00Z&TimeSpan=PT4H`;
    const paths = [`/api/calls?${query}&Include=campaign,user`, `/api/calls/csv?${query}&Encoding=windows-1252`, `/api/organizationalunits/${encodeURIComponent(w.units.team)}/calls?${query.slice(query.indexOf('&') + 1)}`];
    const results: { status: number; bytes: number }[] = [];
    for (let i = 0; i < EXPORTS; i += AT_ONCE) {
      const batch = Array.from({ length: AT_ONCE }, (_, j) => abortMidStream(paths[(i + j) % paths.length]!));
      results.push(...(await Promise.all(batch)));
    }
    expect(results).toHaveLength(EXPORTS);
    expect(results.filter((r) => r.status !== 200 || r.bytes === 0)).toEqual([]);

    // Both pools: the small requests' one and the export pool the exports read through.
    for (const db of [t.db, t.composed.services.exportDb]) {
      const pool = (db.client as { pool: { numUsed(): number; numPendingAcquires(): number; numPendingCreates(): number } }).pool;
      const poolIdle = await until(async () => pool.numUsed() === 0 && pool.numPendingAcquires() === 0 && pool.numPendingCreates() === 0, 10_000);
      expect({ used: pool.numUsed(), pending: pool.numPendingAcquires() }).toEqual({ used: 0, pending: 0 });
      expect(poolIdle).toBe(true);
    }

    // Looked at from a connection outside the app's pool.
    const { createDb } = await import('../../src/data/db');
    const observer = createDb({ url: process.env.TEST_DATABASE_URL!, timezone: 'Europe/Copenhagen', poolMax: 1 });
    try {
      const busy = async () =>
        (
          await observer.raw(
            `select pid, state, xact_start, query from pg_stat_activity
              where application_name = ? and (state <> 'idle' or xact_start is not null or backend_xid is not null)`,
            [appName],
          )
        ).rows as unknown[];
      await until(async () => (await busy()).length === 0, 10_000);
      expect(await busy()).toEqual([]);
      // The app's connections are no more than its two pools hold (5 + AT_ONCE).
      const all = (await observer.raw(`select count(*)::int as n from pg_stat_activity where application_name = ?`, [appName])).rows[0].n;
      expect(all).toBeLessThanOrEqual(5 + AT_ONCE);
    } finally {
      await observer.destroy();
    }

    // And the app still answers a whole export afterwards.
    const whole = await getAll(`/api/calls?${query}`);
    expect(whole.status).toBe(200);
    const body = JSON.parse(whole.body) as unknown[];
    expect(body).toHaveLength(CALLS);
  }, 180_000);
});
