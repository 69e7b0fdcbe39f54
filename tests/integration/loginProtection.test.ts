import request from 'supertest';
import { createClient } from 'redis';
import { basicAuth, createTestApp, TestApp } from '../harness/testApp';
import { useTestApp, useTestWorld } from '../harness/useTestWorld';
import { freePort } from '../harness/freePort';
import { startRedisServer, RedisServer } from '../harness/redisServer';
import { hashPassword } from '../../src/domain/password';
import { loginFailureKeys } from '../../src/ratelimit/redisLoginFailures';

/**
 * Failed logins cost little and are limited (docs/decisions.md, Overload and timeouts): a
 * repeated failed credential is answered from memory, an address that fails too often gets a
 * 429 with Retry-After while other addresses log in as usual.
 */
describe('failed logins', () => {
  const { t, w } = useTestWorld({
    AUTH_CACHE_TTL_MS: '60000',
    TRUST_PROXY: 'true',
    LOGIN_FAILURES_PER_USER: '3',
    LOGIN_FAILURES_PER_ADDRESS: '5',
  });
  const from = (address: string, auth: string) =>
    request(t.app).get('/api/myaccount').set('Authorization', auth).set('X-Forwarded-For', address);
  const wrong = (n: number, username = w.accounts.full.username) => basicAuth(username, `wrong-${n}`);

  it('when the same wrong credentials come again, then they are refused from memory without a password check', async () => {
    const username = w.accounts.b2b.username;
    const guess = basicAuth(username, 'guessed-pass');
    expect((await from('10.0.0.1', guess)).status).toBe(401);
    // Make the guess the real password behind the server's back (no account-change notification):
    // a repeat that were checked again would now pass; the remembered failure answers 401.
    const original = (await t.db<{ username: string; password_hash: string }>('accounts').where({ username }).first('password_hash'))!
      .password_hash;
    const hash = await hashPassword('guessed-pass');
    await t.db.transaction(async (trx) => {
      // Triggers off for this transaction: the change notifies nobody.
      await trx.raw('set local session_replication_role = replica');
      await trx('accounts').where({ username }).update({ password_hash: hash });
    });
    try {
      expect((await from('10.0.0.2', guess)).status).toBe(401);
      // An account change forgets remembered failures: then the credentials are checked again.
      t.composed.app.credentials.invalidateAccount(0);
      expect((await from('10.0.0.3', guess)).status).toBe(200);
    } finally {
      await t.db('accounts').where({ username }).update({ password_hash: original });
      t.composed.app.credentials.clear();
    }
  });

  it('when one address fails too often against one username, then it gets a 429 with Retry-After, and other addresses still log in', async () => {
    for (let i = 0; i < 3; i++) expect((await from('10.1.0.1', wrong(i))).status).toBe(401);
    const limited = await from('10.1.0.1', wrong(99));
    expect(limited.status).toBe(429);
    expect((limited.body as { code: string }).code).toBe('rate_limited');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect((await from('10.1.0.2', w.accounts.full.auth)).status).toBe(200);
  });

  it('when one address fails too often across usernames, then even valid credentials not yet verified wait', async () => {
    for (let i = 0; i < 5; i++) expect((await from('10.2.0.1', wrong(i, `nobody-${i}-${w.id}`))).status).toBe(401);
    // Credentials verified before pass from the cache (a shared NAT); new ones wait.
    t.composed.app.credentials.clear();
    expect((await from('10.2.0.1', w.accounts.full.auth)).status).toBe(429);
    expect((await from('10.2.0.2', w.accounts.full.auth)).status).toBe(200);
  });

  it('when a login succeeds, then the failures of that address and username start again', async () => {
    for (let i = 0; i < 2; i++) expect((await from('10.3.0.1', wrong(i))).status).toBe(401);
    expect((await from('10.3.0.1', w.accounts.full.auth)).status).toBe(200);
    for (let i = 2; i < 4; i++) expect((await from('10.3.0.1', wrong(i))).status).toBe(401);
  });

  it('when refused for failures, then the metrics count it', async () => {
    const metrics = await request(t.app).get('/api/metrics');
    expect(metrics.text).toMatch(/lcm_overload_refused_total\{reason="login"\} [1-9]/);
  });
});

const LIMITS = { TRUST_PROXY: 'true', LOGIN_FAILURES_PER_USER: '3', LOGIN_FAILURES_PER_ADDRESS: '5' };
const attempt = (app: TestApp, address: string, auth: string) =>
  request(app.app).get('/api/myaccount').set('Authorization', auth).set('X-Forwarded-For', address);

describe('failed logins across instances', () => {
  // Two app instances on the harness's Redis, as two API nodes behind a load balancer.
  const { t: a, w } = useTestWorld(LIMITS);
  const b = useTestApp(LIMITS);

  it('when failures alternate between two instances, then the limit is reached as on one (counted in Redis, under hashed keys)', async () => {
    const username = w.accounts.full.username;
    const address = '10.20.0.1';
    // Counted in each process, b would have seen 2 failures and answer 401 below.
    for (let i = 0; i < 3; i++) expect((await attempt(i % 2 ? b : a, address, basicAuth(username, `wrong-${i}`))).status).toBe(401);
    const limited = await attempt(b, address, basicAuth(username, 'wrong-9'));
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect((await attempt(a, address, basicAuth(username, 'wrong-10'))).status).toBe(429);

    const redis = createClient({ url: process.env.TEST_REDIS_URL });
    await redis.connect();
    try {
      const keys = loginFailureKeys(address, username);
      expect(Number(await redis.get(keys.pair))).toBe(3);
      expect(Number(await redis.get(keys.address))).toBe(3);
      // Neither the username, nor the address, nor a password is written to Redis.
      const written = (await redis.keys('lf:*')).join('\n') + (await redis.mGet([keys.pair, keys.address])).join('\n');
      for (const secret of [username, address, 'wrong-1']) expect(written).not.toContain(secret);
    } finally {
      await redis.close();
    }
  });
});

describe('failed logins while Redis is down', () => {
  // A Redis of this block's own, which the test stops and starts.
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedisServer(await freePort());
  });
  const { t, w } = useTestWorld(() => ({ ...LIMITS, REDIS_URL: redis.url }));
  afterAll(() => redis.stop()); // declared after useTestWorld: runs once the app is closed

  const redisState = async (app: TestApp) => ((await request(app.app).get('/api/readyz')).body as { redis: string }).redis;

  it('when Redis stops mid-way, then failures are counted in process (never a 5xx), and in Redis again once it is back', async () => {
    const username = w.accounts.full.username;
    const wrong = (n: number) => basicAuth(username, `down-${n}`);
    expect((await attempt(t, '10.30.0.1', wrong(0))).status).toBe(401);
    expect((await attempt(t, '10.30.0.1', wrong(1))).status).toBe(401);

    await redis.stop();
    try {
      // The in-process store starts its own count: three failures, then the limit.
      for (let i = 2; i < 5; i++) expect((await attempt(t, '10.30.0.1', wrong(i))).status).toBe(401);
      expect((await attempt(t, '10.30.0.1', wrong(5))).status).toBe(429);
      expect(await redisState(t)).toBe('down');
      t.composed.app.credentials.clear();
      expect((await attempt(t, '10.30.0.2', w.accounts.full.auth)).status).toBe(200);
    } finally {
      // Also when an expectation failed: closing the app waits for its Redis subscription.
      await redis.start();
    }
    const deadline = Date.now() + 15_000;
    while ((await redisState(t)) !== 'up' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(await redisState(t)).toBe('up');
    // Back in Redis: three failures on this instance limit the address on a second instance.
    for (let i = 6; i < 9; i++) expect((await attempt(t, '10.30.0.3', wrong(i))).status).toBe(401);
    const other = await createTestApp({ ...LIMITS, REDIS_URL: redis.url });
    try {
      expect((await attempt(other, '10.30.0.3', wrong(20))).status).toBe(429);
    } finally {
      await other.close();
    }
  }, 60_000);
});
