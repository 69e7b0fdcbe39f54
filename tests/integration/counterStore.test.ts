import { randomInt } from 'node:crypto';
import { ConsumeInput, CounterStore, DAY_MS, MINUTE_MS } from '../../src/ratelimit/counterStore';
import type { Knex } from 'knex';
import { PostgresCounterStore } from '../../src/ratelimit/postgresCounterStore';
import { RedisCounterStore, createCounterRedisClient, dailyKey } from '../../src/ratelimit/redisCounterStore';
import { CounterLogger, createFailoverCounterStore, outageScope } from '../../src/ratelimit/failoverCounterStore';
import { createDb } from '../../src/data/db';
import { deleteEndedRequestCounters } from '../../src/data/requestCounters';
import { testDatabaseUrl } from '../harness/testApp';
import { minuteLimit, requestWeight } from '../../src/ratelimit/requestWeight';
import { freePort } from '../harness/freePort';
import { startRedisServer } from '../harness/redisServer';
import { startRedisCluster } from '../harness/redisCluster';
import { until } from '../harness/until';

const HOUR_MS = 60 * MINUTE_MS;
/** 10:17 in Copenhagen (CET): inside production hours and deliberately not at midnight. */
const T0 = Date.parse('2030-03-04T09:17:00Z');
const ZONE = 'Europe/Copenhagen';

const newAccount = () => randomInt(1, 2 ** 47);
/** The periods a result reports for the standard RateLimit headers. */
const daily = (limit: number, remaining: number, resetSeconds: number) => ({
  name: 'daily',
  windowSeconds: 86400,
  limit,
  remaining,
  resetSeconds,
});
const minute = (limit: number, remaining: number, resetSeconds: number) => ({
  name: 'minute',
  windowSeconds: 60,
  limit,
  remaining,
  resetSeconds,
});
const newService = () => `svc${randomInt(1, 2 ** 47)}`;

async function connectedRedisStore(url: string): Promise<RedisCounterStore> {
  const client = createCounterRedisClient({ url });
  await client.connect();
  return new RedisCounterStore(client);
}

function redisUrl(): string {
  const url = process.env.TEST_REDIS_URL;
  if (!url) throw new Error('TEST_REDIS_URL is not set; run through the jest global setup');
  return url;
}

/** The Redis store on a 3-master Redis Cluster of its own; closing the store stops the cluster. */
async function redisClusterStore(): Promise<CounterStore> {
  const cluster = await startRedisCluster({ masters: 3 });
  try {
    const target = { cluster: true as const, rootUrls: [cluster.nodes[0]!.url] };
    const client = createCounterRedisClient({ url: target });
    await client.connect();
    const store = new RedisCounterStore(client, target);
    const close = store.close.bind(store);
    store.close = async () => {
      await close();
      await cluster.stop();
    };
    return store;
  } catch (err) {
    await cluster.stop();
    throw err;
  }
}

/** A pool of its own on the test database (as another process would have); closing the store closes it. */
function testPool(poolMax = 5): Knex {
  return createDb({ url: testDatabaseUrl(), timezone: ZONE, poolMax });
}

function postgresStore(): Promise<CounterStore> {
  const db = testPool();
  const store = new PostgresCounterStore(db);
  store.close = () => db.destroy();
  return Promise.resolve(store);
}

const stores: { name: string; make: () => Promise<CounterStore> }[] = [
  { name: 'Postgres store', make: postgresStore },
  { name: 'Redis store', make: () => connectedRedisStore(redisUrl()) },
  { name: 'Redis Cluster store', make: redisClusterStore },
];

describe.each(stores)('$name', ({ make }) => {
  let store: CounterStore;
  beforeAll(async () => {
    store = await make();
  });
  afterAll(async () => {
    await store.close();
  });

  /** One account and service per test, with defaults a test overrides per call. */
  function subject(defaults: Partial<ConsumeInput> = {}) {
    const base = { accountId: newAccount(), service: newService(), weight: 1, dailyLimit: 5000, minuteLimit: null, now: T0 };
    const consume = (over: Partial<ConsumeInput> = {}) => store.consume({ ...base, ...defaults, ...over });
    const counts = (now: number) => store.counts(base.accountId, now);
    return { ...base, consume, counts };
  }

  describe('periods', () => {
    it('when the first request arrives, then the 24-hour period starts at that request', async () => {
      const s = subject();
      expect(await s.consume()).toEqual({
        allowed: true,
        limit: 5000,
        remaining: 4999,
        resetSeconds: 86400,
        periods: [daily(5000, 4999, 86400)],
      });
      const later = T0 + 3 * HOUR_MS + 500;
      expect(await s.consume({ now: later })).toEqual({
        allowed: true,
        limit: 5000,
        remaining: 4998,
        resetSeconds: 75600,
        periods: [daily(5000, 4998, 75600)],
      });
      expect(await s.counts(later)).toEqual([
        { service: s.service, count: 2, periodStart: new Date(T0), resetSeconds: 75600, minuteCount: 0 },
      ]);
    });

    it('when 24 hours have passed since the first request, then the next request starts a new period', async () => {
      const s = subject({ dailyLimit: 3 });
      await s.consume();
      await s.consume({ now: T0 + HOUR_MS });
      expect(await s.consume({ now: T0 + DAY_MS - 1 })).toEqual({
        allowed: true,
        limit: 3,
        remaining: 0,
        resetSeconds: 1,
        periods: [daily(3, 0, 1)],
      });
      expect((await s.consume({ now: T0 + DAY_MS - 1 })).allowed).toBe(false);

      const next = T0 + DAY_MS;
      expect(await s.consume({ now: next })).toEqual({
        allowed: true,
        limit: 3,
        remaining: 2,
        resetSeconds: 86400,
        periods: [daily(3, 2, 86400)],
      });
      expect(await s.counts(next + 1000)).toEqual([
        { service: s.service, count: 1, periodStart: new Date(next), resetSeconds: 86399, minuteCount: 0 },
      ]);
    });

    it('when a period has ended and nothing came since, then counts leaves the service out', async () => {
      const s = subject();
      await s.consume();
      expect(await s.counts(T0 + DAY_MS - 1)).toHaveLength(1);
      expect(await s.counts(T0 + DAY_MS)).toEqual([]);
    });
  });

  describe('weights', () => {
    const weigh = (dailyLimit: number, now: number, offHoursWeight = 4) =>
      requestWeight({ dailyLimit, fairUse: false, now: new Date(now), zone: ZONE, offHoursWeight });

    it('when a high-limit service is used in and out of production hours, then it spends 8 and 4', async () => {
      const s = subject({ dailyLimit: 20000 });
      const offHours = T0 + 12 * HOUR_MS; // 22:17 local
      expect((await s.consume({ weight: weigh(20000, T0) })).remaining).toBe(20000 - 8);
      expect((await s.consume({ weight: weigh(20000, offHours), now: offHours })).remaining).toBe(20000 - 12);
      expect((await s.counts(offHours))[0]!.count).toBe(12);
    });

    it('when OFF_HOURS_WEIGHT is 1, then an off-hours request spends 1', async () => {
      const s = subject({ dailyLimit: 20000 });
      const offHours = T0 - 4 * HOUR_MS; // 06:17 local
      expect((await s.consume({ weight: weigh(20000, offHours, 1), now: offHours })).remaining).toBe(19999);
    });

    it('when the daily limit is 10000, then a production-hours request spends 1; at 10001 it spends 8', async () => {
      const s10000 = subject({ dailyLimit: 10000 });
      expect((await s10000.consume({ weight: weigh(10000, T0) })).remaining).toBe(9999);
      const s10001 = subject({ dailyLimit: 10001 });
      expect((await s10001.consume({ weight: weigh(10001, T0) })).remaining).toBe(9993);
    });
  });

  describe('headers', () => {
    it('when fair use is off, then the headers describe the daily period', async () => {
      const s = subject({ dailyLimit: 20000, weight: 8 });
      await s.consume();
      expect(await s.consume({ now: T0 + 90_500 })).toEqual({
        allowed: true,
        limit: 20000,
        remaining: 19984,
        resetSeconds: 86400 - 90,
        periods: [daily(20000, 19984, 86400 - 90)],
      });
    });

    it('when fair use is on, then the headers describe a minute window that starts at its first request', async () => {
      const s = subject({ dailyLimit: 20000, minuteLimit: minuteLimit(20000) });
      expect(await s.consume()).toEqual({
        allowed: true,
        limit: 240,
        remaining: 239,
        resetSeconds: 60,
        periods: [daily(20000, 19999, 86400), minute(240, 239, 60)],
      });
      expect(await s.consume({ now: T0 + 59_999 })).toEqual({
        allowed: true,
        limit: 240,
        remaining: 238,
        resetSeconds: 1,
        periods: [daily(20000, 19998, 86341), minute(240, 238, 1)],
      });
      expect(await s.counts(T0 + 59_999)).toEqual([
        { service: s.service, count: 2, periodStart: new Date(T0), resetSeconds: 86341, minuteCount: 2 },
      ]);

      // The window is fixed: 60 s after its first request a new one opens with the next request.
      const next = T0 + 75_000;
      expect(await s.consume({ now: next })).toEqual({
        allowed: true,
        limit: 240,
        remaining: 239,
        resetSeconds: 60,
        periods: [daily(20000, 19997, 86325), minute(240, 239, 60)],
      });
      expect(await s.counts(next)).toEqual([
        { service: s.service, count: 3, periodStart: new Date(T0), resetSeconds: 86325, minuteCount: 1 },
      ]);
    });

    it('when the minute limit would be exceeded, then the request is refused with the minute window in the headers', async () => {
      const s = subject({ dailyLimit: 20000, minuteLimit: 240 });
      for (let i = 0; i < 240; i++) {
        expect((await s.consume({ now: T0 + i * 100 })).allowed).toBe(true);
      }
      const refused = await s.consume({ now: T0 + 30_000 });
      expect(refused).toEqual({
        allowed: false,
        limit: 240,
        remaining: 0,
        resetSeconds: 30,
        retryAfterSeconds: 30,
        exceeded: 'minute',
        periods: [daily(20000, 19760, 86370), minute(240, 0, 30)],
      });
      // Neither counter moved for the refused request.
      expect(await s.counts(T0 + 30_000)).toEqual([
        { service: s.service, count: 240, periodStart: new Date(T0), resetSeconds: 86370, minuteCount: 240 },
      ]);
      expect(await s.consume({ now: T0 + 60_000 })).toEqual({
        allowed: true,
        limit: 240,
        remaining: 239,
        resetSeconds: 60,
        periods: [daily(20000, 19759, 86340), minute(240, 239, 60)],
      });
    });

    it('when the daily limit would be exceeded under fair use, then the headers describe the daily period', async () => {
      const s = subject({ dailyLimit: 3, minuteLimit: 240 });
      for (let i = 0; i < 3; i++) expect((await s.consume({ now: T0 + i })).allowed).toBe(true);
      expect(await s.consume({ now: T0 + 2 * HOUR_MS })).toEqual({
        allowed: false,
        limit: 3,
        remaining: 0,
        resetSeconds: 22 * 3600,
        retryAfterSeconds: 22 * 3600,
        exceeded: 'daily',
        // The minute window of the first requests has long ended: a full one would start.
        periods: [daily(3, 0, 22 * 3600), minute(240, 240, 60)],
      });
    });

    it('when the daily limit would be exceeded without fair use, then Retry-After is the rest of the period', async () => {
      const s = subject({ dailyLimit: 2 });
      await s.consume();
      await s.consume();
      expect(await s.consume({ now: T0 + 1500 })).toEqual({
        allowed: false,
        limit: 2,
        remaining: 0,
        resetSeconds: 86399,
        retryAfterSeconds: 86399,
        exceeded: 'daily',
        periods: [daily(2, 0, 86399)],
      });
    });

    it('when both limits would be exceeded, then the daily period is reported', async () => {
      const s = subject({ dailyLimit: 240, minuteLimit: 240 });
      await Promise.all(Array.from({ length: 240 }, () => s.consume()));
      const refused = await s.consume({ now: T0 + 1000 });
      expect(refused).toMatchObject({ allowed: false, exceeded: 'daily', limit: 240, retryAfterSeconds: 86399 });
    });
  });

  describe('refusals', () => {
    it('when a weighted request is refused, then nothing is counted and a lighter request still fits', async () => {
      const s = subject({ dailyLimit: 10 });
      expect((await s.consume({ weight: 8 })).remaining).toBe(2);
      expect(await s.consume({ weight: 8 })).toMatchObject({ allowed: false, remaining: 2, exceeded: 'daily' });
      expect(await s.consume({ weight: 4 })).toMatchObject({ allowed: false, remaining: 2 });
      expect(await s.consume({ weight: 1 })).toMatchObject({ allowed: true, remaining: 1 });
      expect(await s.consume({ weight: 1 })).toMatchObject({ allowed: true, remaining: 0 });
      expect((await s.counts(T0))[0]!.count).toBe(10);
    });

    it('when the daily limit is 0, then every request is refused and no period starts', async () => {
      const s = subject({ dailyLimit: 0 });
      expect(await s.consume()).toEqual({
        allowed: false,
        limit: 0,
        remaining: 0,
        resetSeconds: 86400,
        retryAfterSeconds: 86400,
        exceeded: 'daily',
        periods: [daily(0, 0, 86400)],
      });
      expect(await s.counts(T0)).toEqual([]);
    });

    it('when 500 requests arrive at once against a daily limit of 100, then exactly 100 are admitted', async () => {
      const s = subject({ dailyLimit: 100 });
      const results = await Promise.all(Array.from({ length: 500 }, (_, i) => s.consume({ now: T0 + i })));
      expect(results.filter((r) => r.allowed)).toHaveLength(100);
      expect((await s.counts(T0 + 500))[0]!.count).toBe(100);
    });
  });

  describe('counts', () => {
    it('when several services were used, then counts lists what each spent in its current period', async () => {
      const accountId = newAccount();
      const base = { accountId, dailyLimit: 20000, minuteLimit: null, now: T0 };
      const [a, b, c] = ['a', 'b', 'c'].map((x) => `${newService()}.${x}`).sort() as [string, string, string];
      await store.consume({ ...base, service: c, weight: 1, now: T0 - DAY_MS - HOUR_MS }); // ended
      for (let i = 0; i < 3; i++) await store.consume({ ...base, service: a, weight: 8, now: T0 + i * 1000 });
      for (let i = 0; i < 5; i++) {
        await store.consume({ ...base, service: b, weight: 1, minuteLimit: 240, now: T0 + 10_000 + i * 1000 });
      }
      const otherAccount = newAccount();
      await store.consume({ ...base, accountId: otherAccount, service: a, weight: 1 });

      const now = T0 + 20_000;
      expect(await store.counts(accountId, now)).toEqual([
        { service: a, count: 24, periodStart: new Date(T0), resetSeconds: 86380, minuteCount: 0 },
        { service: b, count: 5, periodStart: new Date(T0 + 10_000), resetSeconds: 86390, minuteCount: 5 },
      ]);
      expect(await store.counts(otherAccount, now)).toEqual([
        { service: a, count: 1, periodStart: new Date(T0), resetSeconds: 86380, minuteCount: 0 },
      ]);
    });
  });

  describe('timers', () => {
    it("when requests are counted, then no command arms a timer of its own (the deadline is the caller's)", async () => {
      const s = subject();
      await s.consume();
      const timeouts = jest.spyOn(AbortSignal, 'timeout');
      try {
        for (let i = 0; i < 5; i++) await s.consume({ now: T0 + i });
        await s.counts(T0 + 10);
        expect(timeouts).not.toHaveBeenCalled();
      } finally {
        timeouts.mockRestore();
      }
    });
  });
});

describe('Redis store shared by two clients', () => {
  it('when 500 requests arrive at once through two clients against a limit of 100, then exactly 100 are admitted', async () => {
    const [one, two] = await Promise.all([connectedRedisStore(redisUrl()), connectedRedisStore(redisUrl())]);
    try {
      const input = { accountId: newAccount(), service: newService(), weight: 1, dailyLimit: 100, minuteLimit: null };
      const results = await Promise.all(Array.from({ length: 500 }, (_, i) => (i % 2 ? one : two).consume({ ...input, now: T0 + i })));
      expect(results.filter((r) => r.allowed)).toHaveLength(100);
      expect(results.filter((r) => !r.allowed).every((r) => r.exceeded === 'daily' && r.remaining === 0)).toBe(true);
      expect((await one.counts(input.accountId, T0 + 500))[0]!.count).toBe(100);
      expect((await two.counts(input.accountId, T0 + 500))[0]!.count).toBe(100);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });
});

describe('Postgres store shared by two pools (two processes)', () => {
  it('when 500 requests arrive at once through two pools against a limit of 100, then exactly 100 are admitted, each seeing its own count', async () => {
    const [one, two] = [await postgresStore(), await postgresStore()];
    try {
      const input = { accountId: newAccount(), service: newService(), weight: 1, dailyLimit: 100, minuteLimit: null };
      const results = await Promise.all(Array.from({ length: 500 }, (_, i) => (i % 2 ? one : two).consume({ ...input, now: T0 + i })));
      const admitted = results.filter((r) => r.allowed);
      expect(admitted).toHaveLength(100);
      // No lost or doubled increment: every admitted request saw a different remainder.
      expect(admitted.map((r) => r.remaining).sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i));
      expect(results.filter((r) => !r.allowed).every((r) => r.exceeded === 'daily' && r.remaining === 0)).toBe(true);
      expect((await one.counts(input.accountId, T0 + 500))[0]?.count).toBe(100);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });

  it('when the store is closed and a new one made (a restart), then the counts and periods go on', async () => {
    const input = { accountId: newAccount(), service: newService(), weight: 1, dailyLimit: 3, minuteLimit: 240 };
    const before = await postgresStore();
    try {
      for (let i = 0; i < 2; i++) expect((await before.consume({ ...input, now: T0 + i * 1000 })).allowed).toBe(true);
    } finally {
      await before.close();
    }
    const after = await postgresStore();
    try {
      expect(await after.counts(input.accountId, T0 + 5000)).toEqual([
        { service: input.service, count: 2, periodStart: new Date(T0), resetSeconds: 86395, minuteCount: 2 },
      ]);
      expect(await after.consume({ ...input, now: T0 + 6000 })).toMatchObject({ allowed: true, remaining: 237 });
      expect(await after.consume({ ...input, now: T0 + 7000 })).toMatchObject({ allowed: false, exceeded: 'daily' });
    } finally {
      await after.close();
    }
  });

  it('when the sweep deletes ended counters, then rows whose periods all ended go and running ones stay', async () => {
    const db = testPool(2);
    const store = new PostgresCounterStore(db);
    try {
      const accountId = newAccount();
      const base = { accountId, weight: 1, dailyLimit: 10, minuteLimit: null };
      const [ended, running] = [newService(), newService()];
      await store.consume({ ...base, service: ended, now: T0 - DAY_MS - 120_000 });
      await store.consume({ ...base, service: running, now: T0 - HOUR_MS });
      const deleted = await deleteEndedRequestCounters(db, T0);
      expect(deleted).toBeGreaterThanOrEqual(1);
      const left = await db('request_counters').where({ account_id: accountId }).pluck('service');
      expect(left).toEqual([running]);
    } finally {
      await db.destroy();
    }
  });
});

describe('failover store', () => {
  function recordingLogger() {
    const lines: { level: 'info' | 'warn'; msg: string }[] = [];
    const logger: CounterLogger = {
      info: (_obj, msg) => lines.push({ level: 'info', msg }),
      warn: (_obj, msg) => lines.push({ level: 'warn', msg }),
    };
    return { logger, lines };
  }

  /** Time for a store's probe to find Redis answering again. */
  const inTime = { timeoutMs: 15_000 };

  /** Reads what Redis itself holds, through a separate client. */
  async function countsInRedis(url: string, accountId: number, now = T0 + HOUR_MS) {
    const observer = await connectedRedisStore(url);
    try {
      return await observer.counts(accountId, now);
    } finally {
      await observer.close();
    }
  }

  /** A failover store with a pool of its own (one API process); closing it closes the pool. */
  async function failoverStore(
    url: Parameters<typeof createFailoverCounterStore>[0]['url'],
    options: {
      logger?: CounterLogger;
      startupWaitMs?: number;
      now?: () => number;
      probeIntervalMs?: number;
      commandTimeoutMs?: number;
    } = {},
  ) {
    const db = testPool();
    const store = await createFailoverCounterStore({
      url,
      db,
      logger: options.logger ?? recordingLogger().logger,
      probeIntervalMs: options.probeIntervalMs ?? 100,
      maxReconnectDelayMs: 200,
      ...(options.startupWaitMs === undefined ? {} : { startupWaitMs: options.startupWaitMs }),
      ...(options.now ? { now: options.now } : {}),
      ...(options.commandTimeoutMs === undefined ? {} : { commandTimeoutMs: options.commandTimeoutMs }),
    });
    const close = store.close.bind(store);
    store.close = async () => {
      await close();
      await db.destroy();
    };
    return { store, db };
  }

  it('when its Redis stops, then it counts in Postgres and reports unhealthy; when Redis is back, the outage counts are added to Redis and it counts there again', async () => {
    const server = await startRedisServer(await freePort());
    const { logger, lines } = recordingLogger();
    const { store, db } = await failoverStore(server.url, { logger, now: () => T0 + 20 });
    const input = { accountId: newAccount(), service: newService(), weight: 1, dailyLimit: 100, minuteLimit: null };
    try {
      expect(store.redisHealthy).toBe(true);
      // A caller's bad input is its own error, not a sign that Redis is down.
      await expect(store.consume({ ...input, weight: 0, now: T0 })).rejects.toThrow(TypeError);
      expect(store.redisHealthy).toBe(true);
      expect((await store.consume({ ...input, now: T0 })).remaining).toBe(99);
      expect(await countsInRedis(server.url, input.accountId)).toMatchObject([{ count: 1 }]);

      await server.stop();
      for (let i = 1; i <= 3; i++) {
        expect(await store.consume({ ...input, now: T0 + i })).toMatchObject({ allowed: true, limit: 100, remaining: 100 - i });
      }
      expect(store.redisHealthy).toBe(false);
      // Postgres knows what was counted during the outage, under the Redis's scope.
      expect(await store.counts(input.accountId, T0 + HOUR_MS)).toMatchObject([{ count: 3, periodStart: new Date(T0 + 1) }]);
      expect(
        await db('request_counters')
          .where({ scope: outageScope({ cluster: false, url: server.url }), account_id: input.accountId })
          .pluck('daily_count'),
      ).toEqual([3]);
      expect(lines).toEqual([
        { level: 'warn', msg: expect.stringMatching(/Redis unreachable: counting requests in Postgres/) as jest.AsymmetricMatcher },
      ]);

      await server.start();
      await until('the store back on Redis', () => store.redisHealthy, inTime);
      expect(lines.map((l) => l.msg)).toEqual([
        expect.stringMatching(/Redis unreachable/) as jest.AsymmetricMatcher,
        expect.stringMatching(/added to Redis/) as jest.AsymmetricMatcher,
        expect.stringMatching(/Redis reachable again/) as jest.AsymmetricMatcher,
      ]);
      // The restarted server lost its own data (no persistence) but has the outage's three.
      expect(await countsInRedis(server.url, input.accountId)).toMatchObject([{ count: 3, periodStart: new Date(T0 + 1) }]);
      expect(await db('request_counters').where({ account_id: input.accountId })).toEqual([]);
      expect((await store.consume({ ...input, now: T0 + 10 })).remaining).toBe(96);
      expect(store.redisHealthy).toBe(true);
    } finally {
      await store.close();
      await server.stop();
    }
  });

  it('when Redis stops answering with the connection open, then a count is made in Postgres after the command time-out, and in Redis again once it answers', async () => {
    const server = await startRedisServer(await freePort());
    const { logger, lines } = recordingLogger();
    const { store } = await failoverStore(server.url, { logger, now: () => T0 + 20, commandTimeoutMs: 300 });
    const input = { accountId: newAccount(), service: newService(), weight: 1, dailyLimit: 100, minuteLimit: null };
    try {
      expect((await store.consume({ ...input, now: T0 })).remaining).toBe(99);
      server.pause();
      // The command is sent and never answered: the deadline, not the connection, ends the wait.
      expect(await store.consume({ ...input, now: T0 + 1 })).toMatchObject({ allowed: true, limit: 100 });
      expect(store.redisHealthy).toBe(false);
      expect(lines).toEqual([{ level: 'warn', msg: expect.stringMatching(/Redis unreachable/) as jest.AsymmetricMatcher }]);
      server.resume();
      await until('the store back on Redis', () => store.redisHealthy, inTime);
      expect(lines.map((l) => l.msg)).toContainEqual(expect.stringMatching(/Redis reachable again/));
    } finally {
      await store.close();
      await server.stop();
    }
  });

  it('when two processes count during an outage, then the limit holds across both, and once Redis is back their counts are added once', async () => {
    const server = await startRedisServer(await freePort());
    const [a, b] = [await failoverStore(server.url, { now: () => T0 }), await failoverStore(server.url, { now: () => T0 })];
    const input = { accountId: newAccount(), service: newService(), weight: 1, dailyLimit: 5, minuteLimit: null };
    try {
      await server.stop();
      const results = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).store.consume({ ...input, now: T0 + i })));
      expect(results.filter((r) => r.allowed)).toHaveLength(5);
      expect(a.store.redisHealthy || b.store.redisHealthy).toBe(false);

      await server.start();
      await until('both stores back on Redis', () => a.store.redisHealthy && b.store.redisHealthy, inTime);
      // Both recovered; the rows were taken by one of them only.
      expect(await countsInRedis(server.url, input.accountId)).toMatchObject([{ count: 5 }]);
      expect((await a.store.consume({ ...input, now: T0 + 100 })).allowed).toBe(false);
    } finally {
      await Promise.all([a.store.close(), b.store.close()]);
      await server.stop();
    }
  });

  it('when outage counts are merged into counts Redis kept, then both add up under the earlier period start; ended windows are dropped', async () => {
    const server = await startRedisServer(await freePort());
    // `kept` stays on Redis throughout; `cut` loses it (as a process that lost its connection) and counts in Postgres.
    const kept = await failoverStore(server.url);
    // Its probe comes after the counts below (a few ms), so they are all made in Postgres.
    const cut = await failoverStore(server.url, { now: () => T0 + 2000, probeIntervalMs: 1500 });
    const accountId = newAccount();
    const [earlierInPostgres, earlierInRedis, endedInPostgres] = [newService(), newService(), newService()];
    const base = { accountId, weight: 1, dailyLimit: 100 };
    try {
      cut.store.markDown(new Error('test: connection lost'));
      expect(cut.store.redisHealthy).toBe(false);
      await cut.store.consume({ ...base, service: earlierInPostgres, minuteLimit: 240, now: T0 });
      await cut.store.consume({ ...base, service: earlierInPostgres, minuteLimit: 240, now: T0 + 100 });
      await kept.store.consume({ ...base, service: earlierInPostgres, minuteLimit: 240, now: T0 + 500 });
      await kept.store.consume({ ...base, service: earlierInRedis, minuteLimit: null, now: T0 });
      await cut.store.consume({ ...base, service: earlierInRedis, minuteLimit: null, now: T0 + 700 });
      await cut.store.consume({ ...base, service: endedInPostgres, minuteLimit: null, now: T0 - DAY_MS });

      expect((await cut.db('request_counters').where({ account_id: accountId }).pluck('service')).sort()).toEqual(
        [earlierInPostgres, earlierInRedis, endedInPostgres].sort(),
      );

      // The probe finds Redis answering and merges before switching back.
      await until('the cut store back on Redis', () => cut.store.redisHealthy, inTime);
      expect(await countsInRedis(server.url, accountId, T0 + 2000)).toEqual(
        [
          { service: earlierInPostgres, count: 3, periodStart: new Date(T0), resetSeconds: 86398, minuteCount: 3 },
          { service: earlierInRedis, count: 2, periodStart: new Date(T0), resetSeconds: 86398, minuteCount: 0 },
        ].sort((x, y) => (x.service < y.service ? -1 : 1)),
      );
      // The merged minute window keeps the earlier start too: it ends 60 s after T0.
      expect(await kept.store.consume({ ...base, service: earlierInPostgres, minuteLimit: 3, now: T0 + 59_000 })).toMatchObject({
        allowed: false,
        exceeded: 'minute',
        retryAfterSeconds: 1,
      });
    } finally {
      await Promise.all([kept.store.close(), cut.store.close()]);
      await server.stop();
    }
  });

  it('when two stores take the outage rows at the same moment, then every row goes to exactly one of them', async () => {
    const scope = `test:${newService()}`;
    const [db1, db2] = [testPool(2), testPool(2)];
    const [one, two] = [new PostgresCounterStore(db1, scope), new PostgresCounterStore(db2, scope)];
    try {
      const accountId = newAccount();
      for (let i = 0; i < 20; i++)
        await one.consume({ accountId, service: `s${i}`, weight: 1, dailyLimit: 10, minuteLimit: null, now: T0 });
      const taken: string[][] = [[], []];
      const slowly = (into: string[]) => async (entries: { service: string }[]) => {
        into.push(...entries.map((e) => e.service));
        await new Promise((r) => setTimeout(r, 200));
        return [];
      };
      const [first = [], second = []] = taken;
      const placed = await Promise.all([one.takeAll(slowly(first)), two.takeAll(slowly(second))]);
      expect(placed[0] + placed[1]).toBe(20);
      expect([...first, ...second].sort()).toEqual(Array.from({ length: 20 }, (_, i) => `s${i}`).sort());
    } finally {
      await Promise.all([db1.destroy(), db2.destroy()]);
    }
  });

  it('when the rows could not all be placed, then those left go back and are taken next time', async () => {
    const scope = `test:${newService()}`;
    const db = testPool(2);
    const store = new PostgresCounterStore(db, scope);
    try {
      const accountId = newAccount();
      for (const service of ['a', 'b', 'c'])
        await store.consume({ accountId, service, weight: 2, dailyLimit: 10, minuteLimit: null, now: T0 });
      expect(await store.takeAll((entries) => Promise.resolve(entries.filter((e) => e.service !== 'b')))).toBe(1);
      expect(await store.counts(accountId, T0 + 1)).toMatchObject([
        { service: 'a', count: 2 },
        { service: 'c', count: 2 },
      ]);
      const second: string[] = [];
      expect(
        await store.takeAll((entries) => {
          second.push(...entries.map((e) => e.service));
          return Promise.resolve([]);
        }),
      ).toBe(2);
      expect(second.sort()).toEqual(['a', 'c']);
      expect(await store.counts(accountId, T0 + 1)).toEqual([]);
    } finally {
      await db.destroy();
    }
  });

  it('when a process left outage counts in Postgres, then the next store to start on that Redis adds them to it', async () => {
    const server = await startRedisServer(await freePort());
    const input = { accountId: newAccount(), service: newService(), weight: 1, dailyLimit: 100, minuteLimit: null };
    const first = await failoverStore(server.url);
    try {
      first.store.markDown(new Error('test: connection lost'));
      for (let i = 0; i < 4; i++) await first.store.consume({ ...input, now: T0 + i });
    } finally {
      await first.store.close(); // as a process that ends before its probe brought it back
    }
    const next = await failoverStore(server.url, { now: () => T0 + 10 });
    try {
      expect(next.store.redisHealthy).toBe(true);
      expect(await countsInRedis(server.url, input.accountId)).toMatchObject([{ count: 4, periodStart: new Date(T0) }]);
    } finally {
      await next.store.close();
      await server.stop();
    }
  });

  it('when the cluster master holding an account is killed, then it reports unhealthy before any count fails, and counts on in Redis after the fail-over', async () => {
    const cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 1 });
    const target = { cluster: true as const, rootUrls: [cluster.nodes[0]!.url] };
    const { store } = await failoverStore(target);
    const input = { accountId: newAccount(), service: newService(), weight: 1, dailyLimit: 100, minuteLimit: null };
    try {
      for (let i = 0; i < 5; i++) await store.consume({ ...input, now: T0 + i });
      expect(store.redisHealthy).toBe(true);
      const master = await cluster.masterOfSlot(Number(await store.redisClient.clusterKeySlot(dailyKey(input.accountId, input.service))));
      // Replication is asynchronous: give the replica the five counts before the master goes.
      await new Promise((r) => setTimeout(r, 500));
      await cluster.kill(master);
      // Known from the lost connection alone: /readyz must not say "up" until a request fails.
      await until('the store to report Redis unhealthy', () => !store.redisHealthy, { timeoutMs: 2000 });

      await cluster.waitHealthy(30000);
      await until('the store back on Redis', () => store.redisHealthy, inTime);
      expect((await store.consume({ ...input, now: T0 + 10 })).remaining).toBe(94);
    } finally {
      await store.close();
      await cluster.stop();
    }
  });

  it('when Redis is down at start-up, then it starts on Postgres and moves to Redis, with what it counted, once it is up', async () => {
    const port = await freePort();
    const { logger, lines } = recordingLogger();
    const { store } = await failoverStore(`redis://127.0.0.1:${port}`, { logger, startupWaitMs: 300, now: () => T0 });
    let server: Awaited<ReturnType<typeof startRedisServer>> | undefined;
    try {
      expect(store.redisHealthy).toBe(false);
      expect(lines).toEqual([{ level: 'warn', msg: expect.stringMatching(/Redis unreachable/) as jest.AsymmetricMatcher }]);
      const input = { accountId: newAccount(), service: newService(), weight: 1, dailyLimit: 5, minuteLimit: null, now: T0 };
      expect((await store.consume(input)).remaining).toBe(4);

      server = await startRedisServer(port);
      await until('the store back on Redis', () => store.redisHealthy, inTime);
      expect((await store.consume(input)).remaining).toBe(3);
      expect(await countsInRedis(server.url, input.accountId)).toMatchObject([{ count: 2 }]);
    } finally {
      await store.close();
      await server?.stop();
    }
  });
});
