import request from 'supertest';
import { createClient } from 'redis';
import { basicAuth, createTestApp, TestApp } from '../harness/testApp';
import { useTestApp, useTestWorld } from '../harness/useTestWorld';
import { freePort } from '../harness/freePort';
import { startRedisServer, RedisServer } from '../harness/redisServer';
import { untilValue } from '../harness/until';
import { hashPassword } from '../../src/domain/password';
import { loginFailureKeys } from '../../src/ratelimit/loginFailures';
import { ALL_RIGHTS } from '../harness/world';

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
    const original = (await t.db<{ username: string; password_hash: string }>('accounts').where({ username }).first('password_hash'))!
      .password_hash;
    // Any account change forgets every remembered failure, and other files change accounts of
    // the shared database at any moment: a repeat answered 200 may be such a change in between.
    // The memory is shown when one of a few tries keeps the failure; without it none could.
    const answers: number[] = [];
    for (let attempt = 0; attempt < 3 && answers.at(-1) !== 401; attempt++) {
      const password = `guessed-pass-${attempt}`;
      const guess = basicAuth(username, password);
      const hash = await hashPassword(password);
      expect((await from('10.0.0.1', guess)).status).toBe(401);
      // Make the guess the real password behind the server's back (no account-change notification):
      // a repeat that were checked again would now pass; the remembered failure answers 401.
      await t.db.transaction(async (trx) => {
        // Triggers off for this transaction: the change notifies nobody.
        await trx.raw('set local session_replication_role = replica');
        await trx('accounts').where({ username }).update({ password_hash: hash });
      });
      try {
        answers.push((await from('10.0.0.2', guess)).status);
        if (answers.at(-1) !== 401) continue;
        // An account change forgets remembered failures: then the credentials are checked again.
        t.composed.app.credentials.invalidateAccount(0);
        expect((await from('10.0.0.3', guess)).status).toBe(200);
      } finally {
        await t.db('accounts').where({ username }).update({ password_hash: original });
        t.composed.app.credentials.clear();
      }
    }
    expect(answers.at(-1)).toBe(401);
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
    // A password check that passes clears them (a cached login writes nothing).
    t.composed.app.credentials.clear();
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

  it('when Redis stops mid-way, then failures are counted in Postgres across instances (never a 5xx), and in Redis again once it is back', async () => {
    const username = w.accounts.full.username;
    const wrong = (n: number) => basicAuth(username, `down-${n}`);
    expect((await attempt(t, '10.30.0.1', wrong(0))).status).toBe(401);
    expect((await attempt(t, '10.30.0.1', wrong(1))).status).toBe(401);

    await redis.stop();
    let during: TestApp | undefined;
    try {
      // The Postgres store starts its own count (Redis's cannot be read): three failures, then the limit.
      for (let i = 2; i < 4; i++) expect((await attempt(t, '10.30.0.1', wrong(i))).status).toBe(401);
      expect(await redisState(t)).toBe('down');
      // A second instance counts on the same rows: its failure is the third.
      during = await createTestApp({ ...LIMITS, REDIS_URL: redis.url });
      expect((await attempt(during, '10.30.0.1', wrong(4))).status).toBe(401);
      expect((await attempt(t, '10.30.0.1', wrong(5))).status).toBe(429);
      t.composed.app.credentials.clear();
      expect((await attempt(t, '10.30.0.2', w.accounts.full.auth)).status).toBe(200);
    } finally {
      // Also when an expectation failed: closing the app waits for its Redis subscription.
      await redis.start();
      await during?.close();
    }
    await untilValue(
      'readyz to say Redis is up',
      () => redisState(t),
      (state) => state === 'up',
      { timeoutMs: 15_000, intervalMs: 100 },
    );
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

/** Password checks an app has run so far (its metrics). */
async function passwordChecks(app: TestApp): Promise<number> {
  const text = (await request(app.app).get('/api/metrics').expect(200)).text;
  let sum = 0;
  for (const m of text.matchAll(/^lcm_password_checks_total\{outcome="(?:passed|failed)"\} (\d+)$/gm)) sum += Number(m[1]);
  return sum;
}

/** Sends every request at once through real sockets; resolves with the statuses in order. */
async function allAtOnce(url: string, requests: { address: string; auth: string }[]): Promise<number[]> {
  return Promise.all(
    requests.map(async ({ address, auth }) => {
      const res = await fetch(`${url}/api/myaccount`, { headers: { Authorization: auth, 'X-Forwarded-For': address } });
      await res.arrayBuffer();
      return res.status;
    }),
  );
}

const count = (statuses: number[], status: number) => statuses.filter((s) => s === status).length;

describe.each<{ store: string; env: Record<string, string> }>([
  { store: 'Redis', env: {} },
  { store: 'Postgres (no REDIS_URL)', env: { REDIS_URL: '' } },
])('failed-login limits under concurrency, counted in $store', ({ env }) => {
  const CAPS = { TRUST_PROXY: 'true', LOGIN_FAILURES_PER_USER: '10', LOGIN_FAILURES_PER_ADDRESS: '30', AUTH_CACHE_TTL_MS: '60000' };
  const { t, w } = useTestWorld({ ...CAPS, ...env });
  // A second instance on the same stores (another worker process).
  const b = useTestApp({ ...CAPS, ...env });
  // An instance with a per-pair cap of 3, so the many-address flood needs fewer password checks.
  const small = useTestApp({ ...CAPS, LOGIN_FAILURES_PER_USER: '3', ...env });
  let url: string;
  let smallUrl: string;
  beforeAll(async () => {
    url = (await t.listen()).url;
    smallUrl = (await small.listen()).url;
  });
  const ip = (n: number) => `10.${40 + Math.floor(n / 250)}.${n % 250}.${Math.floor(Math.random() * 250) + 1}`;

  it('when 64 wrong passwords for one user come at once from one address, then at most 10 are checked and the rest get 429', async () => {
    const address = ip(1);
    const before = await passwordChecks(t);
    const statuses = await allAtOnce(
      url,
      Array.from({ length: 64 }, (_, i) => ({ address, auth: basicAuth(w.accounts.full.username, `parallel-${i}`) })),
    );
    expect(await passwordChecks(t)).toBe(before + 10);
    expect(count(statuses, 401)).toBe(10);
    expect(count(statuses, 429)).toBe(54);
  });

  it('when 80 wrong logins for 80 usernames come at once from one address, then at most 30 are checked (the per-address cap)', async () => {
    const address = ip(2);
    const before = await passwordChecks(t);
    const statuses = await allAtOnce(
      url,
      Array.from({ length: 80 }, (_, i) => ({ address, auth: basicAuth(`nobody-${i}-${w.id}`, `guess-${i}`) })),
    );
    expect(await passwordChecks(t)).toBe(before + 30);
    expect(count(statuses, 401)).toBe(30);
    expect(count(statuses, 429)).toBe(50);
  });

  it('when 40 addresses send 12 wrong passwords each for one user, all at once, then no address gets more than its 3 checked', async () => {
    const requests = Array.from({ length: 40 * 12 }, (_, i) => ({
      address: `10.60.${Math.floor(i / 12)}.7`,
      auth: basicAuth(w.accounts.b2b.username, `many-${i}`),
    }));
    const before = await passwordChecks(small);
    const statuses = await allAtOnce(smallUrl, requests);
    // A guess is checked (401), refused by the full queue of password checks (503, counted as a
    // failure all the same) or refused by its pair's cap (429).
    for (let a = 0; a < 40; a++) {
      const mine = statuses.slice(a * 12, a * 12 + 12);
      expect({ address: a, checkedOrQueued: count(mine, 401) + count(mine, 503), refused: count(mine, 429) }).toEqual({
        address: a,
        checkedOrQueued: 3,
        refused: 9,
      });
    }
    expect(await passwordChecks(small)).toBe(before + count(statuses, 401));
  }, 120_000);

  it('when an address is limited, then a credential that logged in from it before is still served (also by another instance), and a valid one it never used gets 429', async () => {
    const address = ip(3);
    const newcomer = { username: `newcomer-${w.id}-${Math.random().toString(36).slice(2, 8)}`, password: 'newcomer-pass' };
    await t.load({ type: 'account', ...newcomer, user: w.users.agent, projects: ['*'], rights: ALL_RIGHTS, entryAccess: 'None' });
    expect((await attempt(t, address, w.accounts.none.auth)).status).toBe(200);
    // Guesses at other usernames use up the address's 30.
    const guesses = await allAtOnce(
      url,
      Array.from({ length: 40 }, (_, i) => ({ address, auth: basicAuth(`guess-${i}-${w.id}`, 'x') })),
    );
    expect(count(guesses, 429)).toBe(10);
    for (const app of [t, b]) app.composed.app.credentials.clear();

    const before = await passwordChecks(t);
    expect((await attempt(t, address, w.accounts.none.auth)).status).toBe(200);
    expect((await attempt(b, address, w.accounts.none.auth)).status).toBe(200);
    // The known-good username with a wrong password is not let through, nor a valid newcomer.
    expect((await attempt(t, address, basicAuth(w.accounts.none.username, 'wrong'))).status).toBe(429);
    expect((await attempt(t, address, basicAuth(newcomer.username, newcomer.password))).status).toBe(429);
    expect(await passwordChecks(t)).toBe(before + 1); // b counts its own check
    // From an address without failures the newcomer logs in.
    expect((await attempt(t, ip(4), basicAuth(newcomer.username, newcomer.password))).status).toBe(200);
  });
});

describe('known-good records', () => {
  const { t, w } = useTestWorld({ TRUST_PROXY: 'true' });
  const pg = useTestApp({ TRUST_PROXY: 'true', REDIS_URL: '' });

  it('when a credential logs in, then its known-good record holds neither the password, the username nor the address', async () => {
    const address = '10.70.0.1';
    for (const app of [t, pg]) expect((await attempt(app, address, w.accounts.b2b.auth)).status).toBe(200);
    const keys = loginFailureKeys(address, w.accounts.b2b.username);

    const redis = createClient({ url: process.env.TEST_REDIS_URL });
    await redis.connect();
    let inRedis: string | null;
    try {
      inRedis = await redis.get(keys.knownGood);
    } finally {
      await redis.close();
    }
    const rows = (await t.db('login_known_good').where({ scope: '', key: keys.knownGood })) as { key: string; tag: string }[];
    expect(rows).toHaveLength(1);
    const inPostgres = rows[0]?.tag;
    for (const stored of [inRedis, inPostgres, keys.knownGood]) {
      expect(stored).toEqual(expect.any(String));
      for (const secret of [w.accounts.b2b.password, w.accounts.b2b.username, address]) expect(stored).not.toContain(secret);
    }
    // The same tag in both stores: keyed by the account's hash, not by anything of one process.
    expect(inRedis).toBe(inPostgres);
  });
});
