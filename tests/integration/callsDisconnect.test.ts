import http from 'node:http';
import { createDb } from '../../src/data/db';
import { databaseUrlNamed, uniq } from '../harness/testApp';
import { insertCalls } from '../harness/bulkData';
import { abortMidStream } from '../harness/slowClient';
import { useTestWorld } from '../harness/useTestWorld';
import { untilValue } from '../harness/until';

/**
 * Clients that leave in the middle of large exports: every cursor closes and every pooled
 * connection comes back idle, with no query still running and no transaction left open.
 */

const CALLS = 10_000;
const EXPORTS = 100;
const AT_ONCE = 10;

const appName = uniq('lcm-disconnect-');

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
  await insertCalls(t, w, CALLS);
  port = (await t.listen()).port;
}, 120_000);

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

describe('GET /api/calls and /api/calls/csv when clients disconnect', () => {
  it('when 100 large exports are cut mid-stream, then the pool is idle and Postgres shows no running query or open transaction of the app', async () => {
    const query = `OrgCode=${encodeURIComponent(w.units.root)}&StartTime=2026-05-06T08:00:00Z&TimeSpan=PT4H`;
    const paths = [
      `/api/calls?${query}&Include=campaign,user`,
      `/api/calls/csv?${query}&Encoding=windows-1252`,
      `/api/organizationalunits/${encodeURIComponent(w.units.team)}/calls?${query.slice(query.indexOf('&') + 1)}`,
    ];
    const results: { status: number; bytes: number }[] = [];
    for (let i = 0; i < EXPORTS; i += AT_ONCE) {
      const batch = Array.from({ length: AT_ONCE }, (_, j) =>
        abortMidStream(port, paths[(i + j) % paths.length]!, { Authorization: w.accounts.full.auth }),
      );
      results.push(...(await Promise.all(batch)));
    }
    expect(results).toHaveLength(EXPORTS);
    expect(results.filter((r) => r.status !== 200 || r.bytes === 0)).toEqual([]);

    // Both pools: the small requests' one and the export pool the exports read through.
    for (const db of [t.db, t.composed.services.exportDb]) {
      const pool = (db.client as { pool: { numUsed(): number; numPendingAcquires(): number; numPendingCreates(): number } }).pool;
      const counts = () => ({ used: pool.numUsed(), pending: pool.numPendingAcquires(), creating: pool.numPendingCreates() });
      await untilValue('the pool idle', counts, (c) => c.used === 0 && c.pending === 0 && c.creating === 0, { timeoutMs: 10_000 });
    }

    // Looked at from a connection outside the app's pool.
    const observer = createDb({ url: process.env.TEST_DATABASE_URL!, timezone: 'Europe/Copenhagen', poolMax: 1 });
    try {
      const busy = async () =>
        (
          await observer.raw<{ rows: unknown[] }>(
            `select pid, state, xact_start, query from pg_stat_activity
              where application_name = ? and (state <> 'idle' or xact_start is not null or backend_xid is not null)`,
            [appName],
          )
        ).rows;
      await untilValue('no busy connection of the app', busy, (rows) => rows.length === 0, { timeoutMs: 10_000 });
      // The app's connections are no more than its two pools hold (5 + AT_ONCE).
      const all = (
        await observer.raw<{ rows: { n: number }[] }>(`select count(*)::int as n from pg_stat_activity where application_name = ?`, [
          appName,
        ])
      ).rows[0]!.n;
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
