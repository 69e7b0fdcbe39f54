import { Readable } from 'node:stream';
import type { Knex } from 'knex';
import { createDb, migrateLatest } from '../../src/data/db';
import { loadNdjson } from '../../src/ingest/loader/loadNdjson';
import { basicAuth, uniq } from '../harness/testApp';
import { until } from '../harness/until';
import { startRestartablePostgres, RestartablePostgres } from '../harness/restartablePostgres';
import { startApiNode, ApiNode } from '../cluster/harness/apiNodes';

/**
 * Fault: Postgres stops while an account keeps making requests that need no database (a cached
 * login, counting in Redis), so the request log's batches cannot be written. The process must
 * stay up and answer, hold at most REQUEST_LOG_MAX_PENDING entries, drop and count the rest,
 * and write what it held once Postgres is back.
 *
 * What breaks it: a failed batch that throws out of its timer (the process crashes), entries
 * kept without a bound (memory grows with the outage), a failed batch thrown away (the start
 * of the outage is lost), or drops that are not counted.
 */
const ZONE = 'Europe/Copenhagen';
const MAX_PENDING = 50;
const DURING_OUTAGE = 200;

describe('the request log while Postgres is down', () => {
  let pg: RestartablePostgres | undefined;
  let node: ApiNode | undefined;
  let db: Knex | undefined;
  afterAll(async () => {
    await node?.stop();
    await db?.destroy();
    await pg?.destroy();
  });

  const account = { username: uniq('log-outage-'), password: uniq('pw-') };
  const auth = { Authorization: basicAuth(account.username, account.password) };
  const started = new Date(Date.now() - 60_000);

  beforeAll(async () => {
    pg = await startRestartablePostgres();
    db = createDb({ url: pg.url, timezone: ZONE, poolMax: 2 });
    await migrateLatest(db);
    const records = [
      { type: 'orgUnit', orgCode: 'Outage root', name: 'Outage root' },
      { type: 'user', orgCode: 'outage-user', username: 'outage-user', name: 'Outage User', parent: 'Outage root' },
      { type: 'account', ...account, user: 'outage-user', projects: ['*'], rights: {}, entryAccess: 'None' },
    ];
    await loadNdjson(db, Readable.from(records.map((r) => JSON.stringify(r) + '\n')), { zone: ZONE });
    await db.destroy();
    db = undefined;
    node = await startApiNode('log-outage', {
      DATABASE_URL: pg.url,
      REDIS_URL: process.env.TEST_REDIS_URL ?? '',
      WEB_CONCURRENCY: '1',
      AUTH_CACHE_TTL_MS: '600000',
      REQUEST_LOG_FLUSH_MS: '100',
      REQUEST_LOG_MAX_PENDING: String(MAX_PENDING),
    });
  }, 180_000);

  async function loggedIds(): Promise<string[]> {
    const query = new URLSearchParams({ FromTime: started.toISOString(), TimeSpan: 'PT1H' });
    const res = await fetch(`${node!.url}/api/myaccount/requests?${query.toString()}`, { headers: auth });
    if (res.status !== 200) return [];
    return ((await res.json()) as { requestId: string }[]).map((e) => e.requestId);
  }

  /** Checks every 100 ms; a wait that runs out shows the server's output. */
  const within = (timeoutMs: number) => ({ timeoutMs, intervalMs: 100, detail: () => node!.output() });

  const metric = async (name: string, labels = '') => {
    const text = await (await fetch(`${node!.url}/api/metrics`)).text();
    const line = new RegExp(`^${name}${labels.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text);
    return line ? Number(line[1]) : NaN;
  };

  it('when Postgres is down, then requests are still answered, entries wait up to the cap, the rest are dropped and counted, and the kept ones are written once it is back', async () => {
    const warm = uniq('warm-');
    expect((await fetch(`${node!.url}/api/myaccount`, { headers: { ...auth, 'X-Request-Id': warm } })).status).toBe(200);
    await until('the warm request in the log', async () => (await loggedIds()).includes(warm), within(30_000));
    // The reads of the log are logged too: the outage starts with nothing pending (metrics are not logged).
    await until('nothing pending', async () => (await metric('lcm_request_log_pending')) === 0, within(30_000));

    await pg!.stop('fast');
    const ids = Array.from({ length: DURING_OUTAGE }, (_, i) => `outage-${i}-${uniq()}`);
    for (const id of ids) {
      const res = await fetch(`${node!.url}/api/myaccount`, { headers: { ...auth, 'X-Request-Id': id } });
      expect(res.status).toBe(200);
    }
    expect(await metric('lcm_request_log_pending')).toBe(MAX_PENDING);
    expect(await metric('lcm_request_log_dropped_total', '{reason="overflow"}')).toBe(DURING_OUTAGE - MAX_PENDING);
    expect(node!.running()).toBe(true);

    await pg!.start();
    await until('the kept entries in the log', async () => (await loggedIds()).includes(ids[MAX_PENDING - 1]!), within(60_000));
    const logged = new Set(await loggedIds());
    // The oldest entries were kept, the newest dropped.
    expect(ids.filter((id) => logged.has(id))).toEqual(ids.slice(0, MAX_PENDING));
    // Nothing stays pending (the last read of the log is an entry of its own, written within a flush).
    await until('nothing pending after the outage', async () => (await metric('lcm_request_log_pending')) === 0, within(30_000));
    expect(node!.output()).toContain('request log: the database cannot be reached');
    expect(node!.running()).toBe(true);
  }, 180_000);
});
