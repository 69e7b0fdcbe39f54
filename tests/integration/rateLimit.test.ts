import request from 'supertest';
import { basicAuth, createTestApp, TestApp, uniq } from '../harness/testApp';
import { ALL_RIGHTS, World } from '../harness/world';
import { useTestApp, useTestWorld } from '../harness/useTestWorld';
import { freePort } from '../harness/freePort';
import { startRedisServer, RedisServer } from '../harness/redisServer';
import { untilValue } from '../harness/until';
import { formatDateTime } from '../../src/domain/datetime';

const ZONE = 'Europe/Copenhagen';
const HOUR = 3600_000;
const DAY = 24 * HOUR;
const FAIR_USE = ['X-Rate-Limit-Fair-Use-Policy', 'Minute rated'] as const;
/** 10:00 in Copenhagen summer time (UTC+2): production hours. */
const PROD = Date.parse('2030-07-01T08:00:00Z');

interface Headers {
  limit: number;
  remaining: number;
  reset: number;
}

function rateHeaders(res: { headers: Record<string, string | string[] | undefined> }): Headers {
  const num = (name: string) => {
    const v = res.headers[name];
    if (typeof v !== 'string') throw new Error(`missing header ${name}`);
    return Number(v);
  };
  return { limit: num('x-rate-limit-limit'), remaining: num('x-rate-limit-remaining'), reset: num('x-rate-limit-reset') };
}

/** A new account (so counters start empty) with daily limit overrides per service; returns its Authorization value. */
async function newAccount(t: TestApp, w: World, limits: Record<string, number> = {}): Promise<string> {
  const username = uniq('rl-');
  await t.load(
    { type: 'account', username, password: 'pw', user: w.users.agent, projects: ['*'], rights: ALL_RIGHTS, entryAccess: 'Full' },
    ...Object.entries(limits).map(([service, dailyLimit]) => ({ type: 'requestLimit', account: username, service, dailyLimit })),
  );
  return basicAuth(username, 'pw');
}

interface RequestCount {
  service: string;
  count: number;
  periodStart: string;
  resetSeconds: number;
  minuteCount: number;
}

async function countsOf(
  t: TestApp,
  auth: string,
): Promise<Record<string, { count: number; periodStart: string; resetSeconds: number; minuteCount: number }>> {
  const res = await request(t.app).get('/api/myaccount/request/counts').set('Authorization', auth).expect(200);
  return Object.fromEntries((res.body as RequestCount[]).map((r) => [r.service, r]));
}

describe('request counting through the API', () => {
  // Cached credentials keep scrypt off the many requests below; counting is unaffected.
  const { t, w } = useTestWorld({ AUTH_CACHE_TTL_MS: '600000' });

  const get = (auth: string, path = '/api/myaccount') => request(t.app).get(path).set('Authorization', auth);
  const at = (ms: number) => t.setNow(new Date(ms));

  describe('periods', () => {
    it('when the first request arrives, then a 24-hour period starts at that moment (not at midnight)', async () => {
      const auth = await newAccount(t, w);
      const start = Date.parse('2030-03-04T09:17:23.456Z');
      at(start);
      expect(rateHeaders(await get(auth).expect(200))).toEqual({ limit: 5000, remaining: 4999, reset: 86400 });
      at(start + 3 * HOUR);
      expect(rateHeaders(await get(auth).expect(200))).toEqual({ limit: 5000, remaining: 4998, reset: 75600 });
      const counts = await countsOf(t, auth);
      expect(counts['myaccount']!.periodStart).toBe('2030-03-04T10:17:23.456+01:00');
      expect(counts['myaccount']!.count).toBe(2);
    });

    it('when 24 hours have passed since the first request, then the period resets and a new one starts at the next request', async () => {
      const auth = await newAccount(t, w);
      const start = Date.parse('2030-03-05T22:30:00Z');
      at(start);
      await get(auth).expect(200);
      at(start + DAY - 1000);
      expect(rateHeaders(await get(auth).expect(200))).toEqual({ limit: 5000, remaining: 4998, reset: 1 });
      at(start + DAY + 5 * 60_000);
      expect(rateHeaders(await get(auth).expect(200))).toEqual({ limit: 5000, remaining: 4999, reset: 86400 });
      const counts = await countsOf(t, auth);
      expect(counts['myaccount']).toMatchObject({ count: 1, periodStart: formatDateTime(start + DAY + 5 * 60_000, ZONE) });
    });

    it('when the daily limit is used up, then 429 problem+json with Retry-After, refused requests do not count, and the next period admits again', async () => {
      const auth = await newAccount(t, w, { myaccount: 3 });
      const start = Date.parse('2030-03-06T12:00:00Z');
      at(start);
      for (const remaining of [2, 1, 0]) expect(rateHeaders(await get(auth).expect(200)).remaining).toBe(remaining);
      at(start + HOUR);
      for (let i = 0; i < 3; i++) {
        const refused = await get(auth);
        expect(refused.status).toBe(429);
        expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(refused.body).toMatchObject({ status: 429, code: 'rate_limited', title: 'Too many requests' });
        expect((refused.body as { detail: string }).detail).toContain('myaccount');
        expect(rateHeaders(refused)).toEqual({ limit: 3, remaining: 0, reset: 82800 });
        expect(refused.headers['retry-after']).toBe('82800');
      }
      expect((await countsOf(t, auth))['myaccount']!.count).toBe(3);
      at(start + DAY);
      expect(rateHeaders(await get(auth).expect(200))).toEqual({ limit: 3, remaining: 2, reset: 86400 });
    });

    it('when services are used, then each has its own period and counter', async () => {
      const auth = await newAccount(t, w, { myaccount: 2 });
      at(PROD);
      await get(auth).expect(200);
      await get(auth).expect(200);
      await get(auth).expect(429);
      expect(rateHeaders(await get(auth, '/api/myaccount/request/limits').expect(200))).toEqual({
        limit: 5000,
        remaining: 4999,
        reset: 86400,
      });
    });
  });

  describe('weights', () => {
    const local = (iso: string) => Date.parse(iso); // ISO with the Copenhagen offset spelled out

    it('when a high-limit service is asked in production hours (08:00–21:00 platform time), then each request adds 8', async () => {
      const auth = await newAccount(t, w, { myaccount: 20000 });
      at(local('2030-07-01T08:00:00.000+02:00'));
      expect(rateHeaders(await get(auth)).remaining).toBe(19992);
      at(local('2030-07-01T20:59:59.999+02:00'));
      expect(rateHeaders(await get(auth)).remaining).toBe(19984);
    });

    it('when a high-limit service is asked outside production hours, then each request adds OFF_HOURS_WEIGHT (default 4)', async () => {
      const auth = await newAccount(t, w, { myaccount: 20000 });
      at(local('2030-07-01T07:59:59.999+02:00'));
      expect(rateHeaders(await get(auth)).remaining).toBe(19996);
      at(local('2030-07-01T21:00:00.000+02:00'));
      expect(rateHeaders(await get(auth)).remaining).toBe(19992);
      at(local('2030-07-02T03:00:00.000+02:00'));
      expect(rateHeaders(await get(auth)).remaining).toBe(19988);
    });

    it('when production hours are judged in winter time, then the platform offset (+01:00) applies', async () => {
      const auth = await newAccount(t, w, { myaccount: 20000 });
      at(Date.parse('2030-01-15T07:00:00Z')); // 08:00 CET
      expect(rateHeaders(await get(auth)).remaining).toBe(19992);
      at(Date.parse('2030-01-15T20:00:00Z')); // 21:00 CET
      expect(rateHeaders(await get(auth)).remaining).toBe(19988);
    });

    it('when the daily limit is 10000 (not above it), then the service is not high-limit and every request adds 1', async () => {
      const auth = await newAccount(t, w, { myaccount: 10000 });
      at(PROD);
      expect(rateHeaders(await get(auth)).remaining).toBe(9999);
    });

    it('when the caller opts in to fair use on a high-limit service in production hours, then each request adds 1', async () => {
      const auth = await newAccount(t, w, { myaccount: 20000 });
      at(PROD);
      await get(auth)
        .set(...FAIR_USE)
        .expect(200);
      await get(auth)
        .set(...FAIR_USE)
        .expect(200);
      expect((await countsOf(t, auth))['myaccount']).toMatchObject({ count: 2, minuteCount: 2 });
    });

    it('when a high-limit request would pass the limit by its weight, then it is refused although some units remain', async () => {
      const username = uniq('rl-');
      await t.load(
        { type: 'account', username, password: 'pw', user: w.users.agent, projects: ['*'], rights: {}, entryAccess: 'None' },
        { type: 'requestLimit', account: username, service: 'myaccount', dailyLimit: 10007 },
      );
      const auth = basicAuth(username, 'pw');
      const { id } = (await t.db<{ id: number; username: string }>('accounts').where({ username }).first('id'))!;
      const start = local('2030-07-01T22:00:00.000+02:00');
      // Arrange through the app's own counter store: 10000 units already spent in this period.
      await t.composed.services.counter.consume({
        accountId: id,
        service: 'myaccount',
        weight: 10000,
        dailyLimit: 10007,
        minuteLimit: null,
        now: start,
      });
      at(start + 60_000);
      expect(rateHeaders(await get(auth).expect(200)).remaining).toBe(3); // off hours: 4
      const refused = await get(auth);
      expect(refused.status).toBe(429);
      expect(rateHeaders(refused)).toEqual({ limit: 10007, remaining: 3, reset: 86400 - 60 });
      // Fair use weighs 1, so the last units can still be spent that way.
      expect(
        (
          await get(auth)
            .set(...FAIR_USE)
            .expect(200)
        ).status,
      ).toBe(200);
      expect((await countsOf(t, auth))['myaccount']!.count).toBe(10005);
    });

    it('when /counts is read after mixed requests, then it shows exactly what was spent', async () => {
      const auth = await newAccount(t, w, { myaccount: 20000, 'myaccount.limits': 3 });
      at(local('2030-07-01T10:00:00.000+02:00'));
      await get(auth).expect(200); // 8
      await get(auth).expect(200); // 8
      await get(auth)
        .set(...FAIR_USE)
        .expect(200); // 1
      at(local('2030-07-01T23:00:00.000+02:00'));
      await get(auth).expect(200); // 4
      for (let i = 0; i < 5; i++) await get(auth, '/api/myaccount/request/limits'); // 3 admitted, 2 refused
      const counts = await countsOf(t, auth);
      expect(counts['myaccount']).toEqual({
        service: 'myaccount',
        count: 21,
        periodStart: '2030-07-01T10:00:00.000+02:00',
        resetSeconds: 86400 - 13 * 3600,
        minuteCount: 0,
      });
      expect(counts['myaccount.limits']!.count).toBe(3);
      expect(counts['myaccount.counts']!.count).toBe(1);
    });
  });

  describe('OFF_HOURS_WEIGHT=1', () => {
    const t1 = useTestApp({ OFF_HOURS_WEIGHT: '1', AUTH_CACHE_TTL_MS: '600000' });

    it('when the setting is 1, then an off-hours high-limit request adds 1 and a production-hours one still 8', async () => {
      const auth = await newAccount(t1, w, { myaccount: 20000 });
      t1.setNow(new Date('2030-07-01T22:00:00.000+02:00'));
      expect(rateHeaders(await request(t1.app).get('/api/myaccount').set('Authorization', auth)).remaining).toBe(19999);
      t1.setNow(new Date('2030-07-02T09:00:00.000+02:00'));
      expect(rateHeaders(await request(t1.app).get('/api/myaccount').set('Authorization', auth)).remaining).toBe(19991);
    });
  });

  describe('fair use minute limit', () => {
    it.each([
      [5000, 240],
      [345600, 240],
      [345601, 241],
      [1000000, 695],
    ])('when the daily limit is %i, then the minute limit is %i (max(ceil(daily / 1440), 240))', async (daily, minute) => {
      const auth = await newAccount(t, w, { myaccount: daily });
      at(PROD);
      expect(
        rateHeaders(
          await get(auth)
            .set(...FAIR_USE)
            .expect(200),
        ),
      ).toEqual({ limit: minute, remaining: minute - 1, reset: 60 });
    });

    it('when the header value differs in case and blanks, then fair use still applies', async () => {
      const auth = await newAccount(t, w);
      at(PROD);
      expect(rateHeaders(await get(auth).set('X-Rate-Limit-Fair-Use-Policy', '  minute RATED ')).limit).toBe(240);
    });

    it('when the minute limit is used up, then 429 with headers and Retry-After of the minute period; the daily budget is untouched by refusals', async () => {
      const auth = await newAccount(t, w);
      at(PROD);
      // One after the other: this is about the window's semantics (races are tested below).
      const remaining: number[] = [];
      for (let i = 0; i < 240; i++)
        remaining.push(
          rateHeaders(
            await get(auth)
              .set(...FAIR_USE)
              .expect(200),
          ).remaining,
        );
      expect(remaining).toEqual(Array.from({ length: 240 }, (_, i) => 239 - i));

      at(PROD + 20_000);
      const refused = await get(auth).set(...FAIR_USE);
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({ code: 'rate_limited' });
      expect((refused.body as { detail: string }).detail).toContain('minute');
      expect(rateHeaders(refused)).toEqual({ limit: 240, remaining: 0, reset: 40 });
      expect(refused.headers['retry-after']).toBe('40');

      // Without the opt-in the same service answers by its daily budget.
      expect(rateHeaders(await get(auth).expect(200))).toEqual({ limit: 5000, remaining: 5000 - 241, reset: 86400 - 20 });

      at(PROD + 60_000);
      expect(
        rateHeaders(
          await get(auth)
            .set(...FAIR_USE)
            .expect(200),
        ),
      ).toEqual({ limit: 240, remaining: 239, reset: 60 });
      expect((await countsOf(t, auth))['myaccount']).toMatchObject({ count: 242, minuteCount: 1 });
    });

    it('when the daily limit is exceeded under fair use, then the headers and Retry-After describe the daily period', async () => {
      const auth = await newAccount(t, w, { myaccount: 3 });
      at(PROD);
      for (const remaining of [239, 238, 237]) {
        expect(
          rateHeaders(
            await get(auth)
              .set(...FAIR_USE)
              .expect(200),
          ),
        ).toEqual({ limit: 240, remaining, reset: 60 });
      }
      at(PROD + 30_000);
      const refused = await get(auth).set(...FAIR_USE);
      expect(refused.status).toBe(429);
      expect((refused.body as { detail: string }).detail).toContain('daily');
      expect(rateHeaders(refused)).toEqual({ limit: 3, remaining: 0, reset: 86400 - 30 });
      expect(refused.headers['retry-after']).toBe(String(86400 - 30));
    });
  });

  describe('headers on every authenticated response', () => {
    it('when a counted endpoint answers 406, then it carries the headers and counts', async () => {
      const auth = await newAccount(t, w);
      at(PROD);
      const res = await get(auth).set('Accept', 'text/csv');
      expect(res.status).toBe(406);
      expect(rateHeaders(res)).toEqual({ limit: 5000, remaining: 4999, reset: 86400 });
    });

    it('when a counted endpoint answers 400 for a bad parameter, then it carries the headers and counts', async () => {
      const auth = await newAccount(t, w);
      at(PROD);
      const res = await get(auth, '/api/calendars/events?FromDate=not-a-date&ToDate=2030-01-02');
      expect(res.status).toBe(400);
      expect(rateHeaders(res)).toEqual({ limit: 5000, remaining: 4999, reset: 86400 });
    });

    it('when a counted endpoint answers 404, then it carries the headers and counts', async () => {
      const auth = await newAccount(t, w);
      at(PROD);
      const res = await get(auth, `/api/calendars/${encodeURIComponent(uniq('no-such-'))}/events?FromDate=2030-01-01&ToDate=2030-01-02`);
      expect(res.status).toBe(404);
      expect(rateHeaders(res)).toEqual({ limit: 5000, remaining: 4999, reset: 86400 });
    });

    // The body is read inside the endpoint chain, after counting.
    it('when a counted endpoint answers 400 for a body that is not JSON, then it carries the headers and counts', async () => {
      const auth = await newAccount(t, w);
      at(PROD);
      const res = await request(t.app)
        .post('/api/leads')
        .set('Authorization', auth)
        .set('Content-Type', 'application/json')
        .send('{not json');
      expect(res.status).toBe(400);
      expect(rateHeaders(res)).toEqual({ limit: 5000, remaining: 4999, reset: 86400 });
    });

    it('when a large-data service is asked, then its headers show the bulk default limit', async () => {
      const auth = await newAccount(t, w);
      at(PROD);
      const res = await get(auth, '/api/calls/agentreadyperiods?FromTime=2030-01-01&TimeSpan=PT1H');
      expect(res.status).toBe(200);
      expect(rateHeaders(res)).toEqual({
        limit: t.settings.DEFAULT_BULK_DAILY_LIMIT,
        remaining: t.settings.DEFAULT_BULK_DAILY_LIMIT - 8,
        reset: 86400,
      });
    });

    // Every authenticated response carries the headers (docs/decisions.md, Wire); a 403 is decided before
    // counting (it must not spend), so it takes a read-only look at the counter.
    it('when an endpoint answers 403 for a missing verb, then it still carries the headers (without spending)', async () => {
      const username = uniq('rl-noright-');
      await t.load({ type: 'account', username, password: 'pw', user: w.users.agent, projects: ['*'], rights: {}, entryAccess: 'None' });
      const res = await get(basicAuth(username, 'pw'), '/api/calendars/events?FromDate=2030-01-01&ToDate=2030-01-02');
      expect(res.status).toBe(403);
      expect(rateHeaders(res)).toEqual({ limit: 5000, remaining: 5000, reset: 86400 });
    });
  });
});

describe('exactness under concurrency', () => {
  // Two app instances on the same Redis; the world is loaded through the first.
  const { t: a, w } = useTestWorld({ AUTH_CACHE_TTL_MS: '600000' });
  const b = useTestApp({ AUTH_CACHE_TTL_MS: '600000' });

  it('when 500 requests race against a limit of 100 on two app instances sharing Redis, then exactly 100 are admitted', async () => {
    const auth = await newAccount(a, w, { myaccount: 100 });
    const servers = [await a.listen(), await b.listen()];
    try {
      // Warm each instance's credential cache on another service, so the race is about counting.
      for (const s of servers) {
        expect((await fetch(`${s.url}/api/myaccount/request/limits`, { headers: { Authorization: auth } })).status).toBe(200);
      }
      const responses = await Promise.all(
        Array.from({ length: 500 }, async (_, i) => {
          const res = await fetch(`${servers[i % 2]!.url}/api/myaccount`, { headers: { Authorization: auth } });
          await res.arrayBuffer();
          return { status: res.status, remaining: Number(res.headers.get('x-rate-limit-remaining')) };
        }),
      );
      const ok = responses.filter((r) => r.status === 200);
      // More than 100 means some requests were counted in Postgres: a failover during the burst.
      expect(ok.length).toBe(100);
      expect(responses.filter((r) => r.status === 429).length).toBe(400);
      // Each admitted request saw a distinct counter value: no lost or doubled increment.
      expect(ok.map((r) => r.remaining).sort((x, y) => x - y)).toEqual(Array.from({ length: 100 }, (_, i) => i));
      const counts = await countsOf(b, auth);
      expect(counts['myaccount']!.count).toBe(100);
    } finally {
      for (const s of servers) await s.close();
    }
  });
});

describe('counting without Redis', () => {
  // Two app instances on the same database and no REDIS_URL: two worker processes of one node.
  const { t: a, w } = useTestWorld({ REDIS_URL: '', AUTH_CACHE_TTL_MS: '600000' });
  const b = useTestApp({ REDIS_URL: '', AUTH_CACHE_TTL_MS: '600000' });

  it('when 60 requests race against a daily limit of 5 on two instances without Redis, then exactly 5 are admitted, and the counts outlive both instances', async () => {
    expect(((await request(a.app).get('/api/readyz').expect(200)).body as { redis: string }).redis).toBe('not-configured');
    const auth = await newAccount(a, w, { myaccount: 5 });
    const servers = [await a.listen(), await b.listen()];
    try {
      // Warm each instance's credential cache on another service, so the race is about counting.
      for (const s of servers) {
        expect((await fetch(`${s.url}/api/myaccount/request/limits`, { headers: { Authorization: auth } })).status).toBe(200);
      }
      const responses = await Promise.all(
        Array.from({ length: 60 }, async (_, i) => {
          const res = await fetch(`${servers[i % 2]!.url}/api/myaccount`, { headers: { Authorization: auth } });
          await res.arrayBuffer();
          return { status: res.status, remaining: Number(res.headers.get('x-rate-limit-remaining')) };
        }),
      );
      const ok = responses.filter((r) => r.status === 200);
      expect(ok.map((r) => r.remaining).sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4]);
      expect(responses.filter((r) => r.status === 429)).toHaveLength(55);
    } finally {
      for (const s of servers) await s.close();
    }

    // Both instances end (a restart of the node); the next ones find the same counts.
    const again = [await createTestApp({ REDIS_URL: '' }), await createTestApp({ REDIS_URL: '' })];
    try {
      const counts = await countsOf(again[0]!, auth);
      expect(counts['myaccount']).toMatchObject({ count: 5 });
      const refused = await request(again[1]!.app).get('/api/myaccount').set('Authorization', auth);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(86000);
    } finally {
      await Promise.all(again.map((x) => x.close()));
    }
  });
});

describe('Redis outage', () => {
  // A Redis of this block's own, which the test stops and starts; the app uses it.
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedisServer(await freePort());
  });
  const { t, w } = useTestWorld(() => ({ REDIS_URL: redis.url, AUTH_CACHE_TTL_MS: '600000' }));
  afterAll(() => redis.stop()); // declared after useTestWorld: runs once the app is closed

  async function readyRedis(app: TestApp): Promise<string> {
    const res = await request(app.app).get('/api/readyz');
    expect(res.status).toBe(200);
    return (res.body as { redis: string }).redis;
  }

  /** Asks /readyz every 100 ms until it says Redis is `state`; fails with the last answer after 15 s. */
  const untilRedis = (app: TestApp, state: 'up' | 'down') =>
    untilValue(
      `readyz to say Redis is ${state}`,
      () => readyRedis(app),
      (now) => now === state,
      { timeoutMs: 15_000, intervalMs: 100 },
    );

  it('when Redis stops, then requests are counted in Postgres across instances and readyz says down; when it is back, the outage counts are in Redis and the limit holds', async () => {
    const auth = await newAccount(t, w, { myaccount: 6 });
    const get = (app: TestApp) => request(app.app).get('/api/myaccount').set('Authorization', auth);
    const remaining = async (app: TestApp) => {
      const res = await get(app);
      expect(res.status).toBe(200);
      return rateHeaders(res).remaining;
    };
    expect(await readyRedis(t)).toBe('up');
    expect(await remaining(t)).toBe(5);

    await redis.stop();
    let other: TestApp | undefined;
    try {
      // Counted in Postgres during the outage (a budget of its own: Redis's count cannot be read).
      expect(await remaining(t)).toBe(5);
      expect(await remaining(t)).toBe(4);
      expect(await readyRedis(t)).toBe('down');
      // An instance that starts during the outage counts on the same Postgres rows.
      other = await createTestApp({ REDIS_URL: redis.url, AUTH_CACHE_TTL_MS: '600000' });
      expect(await readyRedis(other)).toBe('down');
      expect(await remaining(other)).toBe(3);
      const counts = await countsOf(t, auth);
      expect(counts['myaccount']?.count).toBe(3);
    } finally {
      await redis.start();
    }
    try {
      await untilRedis(t, 'up');
      await untilRedis(other, 'up');
      // The restarted Redis lost its own count (no persistence) and holds the outage's 3.
      const counts = await countsOf(other, auth);
      expect(counts['myaccount']?.count).toBe(3);
      expect(await remaining(t)).toBe(2);
      expect(await remaining(other)).toBe(1);
      expect(await remaining(t)).toBe(0);
      expect((await get(other)).status).toBe(429);
    } finally {
      await other.close();
    }
  }, 60_000);
});
