import request from 'supertest';
import type { OpenApiDocument } from '../../src/http/openapi';
import { basicAuth, TestApp, uniq } from '../harness/testApp';
import { ALL_RIGHTS } from '../harness/world';
import { useTestApp, useTestWorld } from '../harness/useTestWorld';
import { freePort } from '../harness/freePort';
import { startRedisServer, RedisServer } from '../harness/redisServer';
import { untilValue } from '../harness/until';

/**
 * GET /api/metrics carries what people alert on: rows exported and 429s by service, request
 * durations by service, the database pool (in use, waiting), Redis fallbacks; and with
 * METRICS_REQUIRE_AUTH it asks for an account.
 */

/** The value of one sample line, e.g. `lcm_export_rows_total{service="calls"}`; 0 when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? '').split(',').filter(Boolean);
    if (wanted.every((l) => have.includes(l)) && have.length === wanted.length) return Number(m[3]);
  }
  return 0;
}

async function scrape(t: TestApp, auth?: string): Promise<string> {
  const req = request(t.app).get('/api/metrics');
  if (auth) req.set('Authorization', auth);
  const res = await req.expect(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain/);
  return res.text;
}

describe('metrics', () => {
  const { t, w } = useTestWorld({ AUTH_CACHE_TTL_MS: '600000' });
  beforeAll(async () => {
    await t.load(
      ...Array.from({ length: 7 }, (_, i) => ({
        type: 'call',
        uniqueId: `${w.id}-m${i}`,
        campaign: w.campaigns.b2b,
        user: w.users.agent,
        uniqueLeadId: `lead-${w.id}-${i}`,
        leadPhoneNumber: '+4512345678',
        endCause: 'NoResponse',
        inProgress: false,
        connected: false,
        incoming: false,
        previewDuration: 'PT5S',
        startTime: `2026-05-06T10:0${i}:00+02:00`,
      })),
    );
  });

  it('when calls are exported as JSON and CSV, then the rows are counted under each service and the durations are timed by service', async () => {
    const before = await scrape(t);
    const window = `OrgCode=${encodeURIComponent(w.units.team)}&StartTime=2026-05-06T10:00:00%2B02:00&TimeSpan=PT1H`;
    const json = await request(t.app).get(`/api/calls?${window}`).set('Authorization', w.accounts.full.auth).expect(200);
    expect(json.body).toHaveLength(7);
    await request(t.app).get(`/api/calls/csv?${window}&Limit=5`).set('Authorization', w.accounts.full.auth).expect(200);
    const after = await scrape(t);
    expect(
      sample(after, 'lcm_export_rows_total', { service: 'calls' }) - sample(before, 'lcm_export_rows_total', { service: 'calls' }),
    ).toBe(7);
    expect(
      sample(after, 'lcm_export_rows_total', { service: 'calls.csv' }) - sample(before, 'lcm_export_rows_total', { service: 'calls.csv' }),
    ).toBe(5);
    const count = (text: string) => sample(text, 'lcm_http_request_duration_seconds_count', { service: 'calls', status: '200' });
    expect(count(after) - count(before)).toBe(1);
  });

  it('when a request limit is used up, then each 429 is counted under its service', async () => {
    const username = uniq('m-');
    await t.load(
      { type: 'account', username, password: 'pw', user: w.users.agent, projects: ['*'], rights: ALL_RIGHTS, entryAccess: 'Full' },
      { type: 'requestLimit', account: username, service: 'myaccount.limits', dailyLimit: 1 },
    );
    const auth = basicAuth(username, 'pw');
    const before = sample(await scrape(t), 'lcm_http_rate_limited_total', { service: 'myaccount.limits' });
    await request(t.app).get('/api/myaccount/request/limits').set('Authorization', auth).expect(200);
    await request(t.app).get('/api/myaccount/request/limits').set('Authorization', auth).expect(429);
    await request(t.app).get('/api/myaccount/request/limits').set('Authorization', auth).expect(429);
    expect(sample(await scrape(t), 'lcm_http_rate_limited_total', { service: 'myaccount.limits' }) - before).toBe(2);
  });

  it('when every pooled connection is checked out and one more is asked for, then the pool gauges show them used and one waiting', async () => {
    const client = t.db.client as { acquireConnection(): Promise<unknown>; releaseConnection(c: unknown): Promise<void> };
    const max = sample(await scrape(t), 'lcm_db_pool_max');
    expect(max).toBe(5);
    const held = await Promise.all(Array.from({ length: max }, () => client.acquireConnection()));
    const waiting = client.acquireConnection();
    try {
      const text = await scrape(t);
      expect(sample(text, 'lcm_db_pool_connections', { state: 'used' })).toBe(max);
      expect(sample(text, 'lcm_db_pool_connections', { state: 'free' })).toBe(0);
      // Ours, and possibly the app's own background work (the request log's flush, the scrape's
      // hook-queue query) that asked for a connection meanwhile.
      expect(sample(text, 'lcm_db_pool_waiting')).toBeGreaterThanOrEqual(1);
    } finally {
      for (const c of held) await client.releaseConnection(c);
      await client.releaseConnection(await waiting);
    }
    // A scrape's own hook-queue query (queued while the pool was exhausted) may still be running
    // right after the release: the pool settles once it has finished.
    let idle = await scrape(t);
    for (let i = 0; i < 50 && sample(idle, 'lcm_db_pool_connections', { state: 'used' }) !== 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      idle = await scrape(t);
    }
    expect(sample(idle, 'lcm_db_pool_connections', { state: 'used' })).toBe(0);
    expect(sample(idle, 'lcm_db_pool_waiting')).toBe(0);
  });
});

describe('metrics of the Redis fallback', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedisServer(await freePort());
  });
  const { t, w } = useTestWorld(() => ({ REDIS_URL: redis.url, AUTH_CACHE_TTL_MS: '600000' }));
  afterAll(() => redis.stop()); // declared after useTestWorld: runs once the app is closed

  it('when Redis stops, then lcm_redis_up drops to 0 and the fallback and the operations answered from Postgres are counted', async () => {
    const get = () => request(t.app).get('/api/myaccount').set('Authorization', w.accounts.full.auth).expect(200);
    await get();
    let text = await scrape(t);
    expect(sample(text, 'lcm_redis_up')).toBe(1);
    expect(sample(text, 'lcm_redis_fallbacks_total')).toBe(0);
    expect(sample(text, 'lcm_redis_fallback_operations_total')).toBe(0);

    await redis.stop();
    await get();
    await get();
    text = await scrape(t);
    expect(sample(text, 'lcm_redis_up')).toBe(0);
    expect(sample(text, 'lcm_redis_fallbacks_total')).toBe(1);
    expect(sample(text, 'lcm_redis_fallback_operations_total')).toBe(2);

    await redis.start();
    await untilValue(
      'lcm_redis_up to be 1',
      async () => sample(await scrape(t), 'lcm_redis_up'),
      (up) => up === 1,
      { timeoutMs: 15_000, intervalMs: 100 },
    );
    await get();
    text = await scrape(t);
    expect(sample(text, 'lcm_redis_up')).toBe(1);
    // Counted in Redis again: nothing more answered from Postgres.
    expect(sample(text, 'lcm_redis_fallback_operations_total')).toBe(2);
  });
});

describe('METRICS_REQUIRE_AUTH set', () => {
  const { t, w } = useTestWorld({ METRICS_REQUIRE_AUTH: 'true' });

  it('when set, then a scrape without credentials is a 401 and one with an account is answered, uncounted', async () => {
    const anonymous = await request(t.app).get('/api/metrics').expect(401);
    expect(anonymous.headers['www-authenticate']).toMatch(/^Basic /);
    const res = await request(t.app).get('/api/metrics').set('Authorization', w.accounts.none.auth).expect(200);
    expect(res.text).toContain('lcm_http_request_duration_seconds');
    expect(res.headers['x-rate-limit-limit']).toBeUndefined();
    const doc = await request(t.app).get('/api/openapi.json').expect(200);
    expect((doc.body as OpenApiDocument).paths!['/metrics']!.get!.security).toEqual([{ basicAuth: [] }]);
  });
});

describe('METRICS_REQUIRE_AUTH unset', () => {
  const open = useTestApp();

  it('when unset, then the metrics are public', async () => {
    await request(open.app).get('/api/metrics').expect(200);
    const doc = await request(open.app).get('/api/openapi.json').expect(200);
    expect((doc.body as OpenApiDocument).paths!['/metrics']!.get!.security).toEqual([]);
  });
});
