import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Writable } from 'node:stream';
import request from 'supertest';
import { createClient } from 'redis';
import type { Express } from 'express';
import { basicAuth, createTestApp, databaseUrlNamed, TestApp, uniq } from '../harness/testApp';
import { freePort } from '../harness/freePort';
import { startRedisServer, RedisServer } from '../harness/redisServer';
import { ALL_RIGHTS, World } from '../harness/world';
import { useTestWorld } from '../harness/useTestWorld';
import { until, untilValue } from '../harness/until';
import { createLogger } from '../../src/config/logger';
import { createDb } from '../../src/data/db';
import { composeApp } from '../../src/app/compose';
import { createAccount, setEnabled, setPassword } from '../../src/ingest/accountCommands';
import type { Endpoint } from '../../src/http/endpoint';
import { hashPassword } from '../../src/domain/password';
import type { z } from 'zod';
import type { myAccountBody, requestCountBody, requestLimitBody } from '../../src/http/schemas/myAccount';

const execFileAsync = promisify(execFile);
const WWW_AUTHENTICATE = 'Basic realm="lead-call-api", charset="UTF-8"';
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const myAccountOf = (res: request.Response) => res.body as z.infer<typeof myAccountBody>;
/** The counts of GET /myaccount/request/counts as [service, count] pairs. */
const countsOf = (res: request.Response) => (res.body as z.infer<typeof requestCountBody>[]).map((r) => [r.service, r.count]);

function expectUnauthorized(res: request.Response): void {
  expect(res.status).toBe(401);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.headers['www-authenticate']).toBe(WWW_AUTHENTICATE);
  expect(res.body).toMatchObject({ status: 401, code: 'unauthorized', title: 'Authentication required' });
  // A 401 is not an authenticated response: it carries no counter headers.
  expect(res.headers['x-rate-limit-limit']).toBeUndefined();
  expect(res.headers['x-rate-limit-remaining']).toBeUndefined();
  expect(res.headers['x-rate-limit-reset']).toBeUndefined();
}

function rateHeaders(res: request.Response) {
  return {
    limit: Number(res.headers['x-rate-limit-limit']),
    remaining: Number(res.headers['x-rate-limit-remaining']),
    reset: Number(res.headers['x-rate-limit-reset']),
  };
}

/** `/calls/{UniqueId}` → `/api/calls/x`; a 403 is decided before parameters are validated. */
const samplePath = (e: Endpoint) => '/api' + e.path.replace(/\{[^}]+\}/g, 'x');

describe('Basic authentication', () => {
  const { t, w } = useTestWorld();

  const cases: { name: string; header: (w: World) => string | undefined }[] = [
    { name: 'no Authorization header', header: () => undefined },
    { name: 'a scheme other than Basic', header: (w) => `Bearer ${b64(`${w.accounts.full.username}:full-pass`)}` },
    { name: 'Basic without credentials', header: () => 'Basic' },
    { name: 'credentials that are not base64', header: () => 'Basic %%%not*base64%%%' },
    { name: 'credentials without a colon', header: (w) => `Basic ${b64(w.accounts.full.username + 'full-pass')}` },
    { name: 'an empty password', header: (w) => basicAuth(w.accounts.full.username, '') },
    { name: 'a wrong password', header: (w) => basicAuth(w.accounts.full.username, 'wrong-pass') },
    { name: 'the password of another account', header: (w) => basicAuth(w.accounts.full.username, w.accounts.b2b.password) },
    { name: 'an unknown user', header: () => basicAuth(uniq('nobody-'), 'full-pass') },
  ];

  it.each(cases)('when the request has $name, then 401 problem+json with the Basic challenge', async ({ header }) => {
    const req = request(t.app).get('/api/myaccount');
    const value = header(w);
    if (value !== undefined) req.set('Authorization', value);
    expectUnauthorized(await req);
  });

  it('when the account is disabled, then its right password gets 401', async () => {
    const username = uniq('disabled-');
    await t.load({
      type: 'account',
      username,
      password: 'pw',
      user: w.users.agent,
      projects: ['*'],
      rights: ALL_RIGHTS,
      entryAccess: 'Full',
      enabled: false,
    });
    expectUnauthorized(await request(t.app).get('/api/myaccount').set('Authorization', basicAuth(username, 'pw')));
  });

  it('when the scheme is written in lower case, then the credentials are accepted (schemes are case-insensitive)', async () => {
    const header = 'basic ' + b64(`${w.accounts.full.username}:${w.accounts.full.password}`);
    const res = await request(t.app).get('/api/myaccount').set('Authorization', header);
    expect(res.status).toBe(200);
    expect(myAccountOf(res).username).toBe(w.accounts.full.username);
  });

  it('when username and password hold non-ASCII letters, then they are read as UTF-8, or as windows-1252 when they are not UTF-8', async () => {
    const username = uniq('æøå-Ærø-');
    await t.load({
      type: 'account',
      username,
      password: 'blåbærgrød',
      user: w.users.agent,
      projects: ['*'],
      rights: {},
      entryAccess: 'None',
    });
    const res = await request(t.app).get('/api/myaccount').set('Authorization', basicAuth(username, 'blåbærgrød'));
    expect(res.status).toBe(200);
    expect(myAccountOf(res).username).toBe(username);
    // As Java's and OkHttp's Basic encoders write them (ISO-8859-1), and a PowerShell header (windows-1252).
    const latin1 = `Basic ${Buffer.from(`${username}:blåbærgrød`, 'latin1').toString('base64')}`;
    const asLatin1 = await request(t.app).get('/api/myaccount').set('Authorization', latin1);
    expect(asLatin1.status).toBe(200);
    expect(myAccountOf(asLatin1).username).toBe(username);
    const wrong = `Basic ${Buffer.from(`${username}:blåbærgrøt`, 'latin1').toString('base64')}`;
    expect((await request(t.app).get('/api/myaccount').set('Authorization', wrong)).status).toBe(401);
  });

  // RFC 7617: the user-id ends at the first colon; the password may contain colons.
  it('when the password contains a colon, then it is accepted whole', async () => {
    const username = uniq('colon-');
    await t.load({
      type: 'account',
      username,
      password: 'pa:ss:word',
      user: w.users.agent,
      projects: ['*'],
      rights: {},
      entryAccess: 'None',
    });
    const res = await request(t.app).get('/api/myaccount').set('Authorization', basicAuth(username, 'pa:ss:word'));
    expect(res.status).toBe(200);
  });

  it('when the right password is followed by a colon and more, then 401 (the whole rest is the password)', async () => {
    const res = await request(t.app)
      .get('/api/myaccount')
      .set('Authorization', basicAuth(w.accounts.full.username, `${w.accounts.full.password}:anything`));
    expect(res.status).toBe(401);
  });

  // Authentication comes first: a client without valid credentials learns nothing about the
  // body handling (the body is read inside the endpoint chain, after counting).
  it('when an unauthenticated request has a body that is not JSON, then 401 rather than 400', async () => {
    const res = await request(t.app).post('/api/leads').set('Content-Type', 'application/json').send('{not json');
    expectUnauthorized(res);
  });

  it('when an unauthenticated request has a body over the size limit, then 401 rather than 413', async () => {
    const res = await request(t.app)
      .post('/api/leads')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ x: 'y'.repeat(200_000) }));
    expectUnauthorized(res);
  });

  it('when authentication fails, then nothing is counted for the account', async () => {
    const username = uniq('nocount-');
    await t.load({ type: 'account', username, password: 'pw', user: w.users.agent, projects: ['*'], rights: {}, entryAccess: 'None' });
    for (let i = 0; i < 3; i++) {
      expectUnauthorized(await request(t.app).get('/api/myaccount').set('Authorization', basicAuth(username, 'bad')));
    }
    const res = await request(t.app).get('/api/myaccount/request/counts').set('Authorization', basicAuth(username, 'pw'));
    expect(res.status).toBe(200);
    expect(countsOf(res)).toEqual([['myaccount.counts', 1]]);
  });
});

describe('Resource rights', () => {
  const { t, w } = useTestWorld();

  const rightEndpoints = () =>
    t.composed.app.endpoints.filter((e): e is Endpoint & { access: { kind: 'right' } } => e.access.kind === 'right');

  it('when the API is built, then data endpoints are guarded by rights (the table below is not empty)', () => {
    expect(rightEndpoints().length).toBeGreaterThan(0);
  });

  it('when an account lacks exactly the verb an endpoint needs, then every such endpoint answers 403 problem+json and counts nothing', async () => {
    const checked: string[] = [];
    // One account per right, holding every right but that one: proves the check is per verb.
    const lacking = new Map<string, string>();
    for (const e of rightEndpoints()) {
      const { resource, verb } = e.access;
      const key = `${resource}:${verb}`;
      if (lacking.has(key)) continue;
      const rights = { ...ALL_RIGHTS, [resource]: ALL_RIGHTS[resource]!.filter((v) => v !== verb) };
      const username = uniq('lacks-');
      await t.load({ type: 'account', username, password: 'pw', user: w.users.agent, projects: ['*'], rights, entryAccess: 'Full' });
      lacking.set(key, basicAuth(username, 'pw'));
    }
    for (const e of rightEndpoints()) {
      const { resource, verb } = e.access;
      const auth = lacking.get(`${resource}:${verb}`)!;
      const res = await request(t.app)[e.method](samplePath(e)).set('Authorization', auth);
      expect({ endpoint: `${e.method} ${e.path}`, status: res.status }).toEqual({ endpoint: `${e.method} ${e.path}`, status: 403 });
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 403, code: 'forbidden' });
      expect((res.body as { detail: string }).detail).toContain(`${verb} right on ${resource}`);
      checked.push(e.service);
    }
    // None of the refusals was counted: only the counts requests themselves appear.
    for (const auth of lacking.values()) {
      const counts = await request(t.app).get('/api/myaccount/request/counts').set('Authorization', auth);
      expect(countsOf(counts)).toEqual([['myaccount.counts', 1]]);
    }
    expect(checked.length).toBe(rightEndpoints().length);
  });

  it('when an account has no rights at all, then right-guarded endpoints answer 403 while /myaccount answers 200', async () => {
    for (const e of rightEndpoints()) {
      const res = await request(t.app)[e.method](samplePath(e)).set('Authorization', w.accounts.none.auth);
      expect({ endpoint: `${e.method} ${e.path}`, status: res.status }).toEqual({ endpoint: `${e.method} ${e.path}`, status: 403 });
    }
    const res = await request(t.app).get('/api/myaccount').set('Authorization', w.accounts.none.auth);
    expect(res.status).toBe(200);
  });
});

describe('Credentials in logs', () => {
  const { t, w } = useTestWorld();

  it('when requests succeed or fail authentication at the most verbose level, then no password or Authorization value is logged', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    // The same composition as the server, with its log captured.
    const settings = { ...t.settings, LOG_LEVEL: 'trace' as const, AUTH_CACHE_TTL_MS: 60000 };
    const db = createDb({ url: settings.DATABASE_URL!, timezone: settings.PLATFORM_TIMEZONE, poolMax: 2 });
    const composed = await composeApp({ settings, db, logger: createLogger('trace', sink) });
    try {
      const username = uniq('logged-');
      const password = `Secret-${uniq()}`;
      const wrong = `Wrong-${uniq()}`;
      await t.load({ type: 'account', username, password, user: w.users.agent, projects: ['*'], rights: {}, entryAccess: 'None' });
      const good = basicAuth(username, password);
      const bad = basicAuth(username, wrong);
      const app = composed.app.express;
      await request(app).get('/api/myaccount').set('Authorization', good).expect(200);
      await request(app).get('/api/myaccount').set('Authorization', good).expect(200); // from the cache
      await request(app).get('/api/myaccount').set('Authorization', bad).expect(401);
      await request(app).get('/api/myaccount/request/counts').set('Authorization', good).set('Accept', 'text/csv').expect(406);
      await request(app).get('/api/no-such-route').set('Authorization', good).expect(404);
      await request(app)
        .get('/api/myaccount')
        .set('Authorization', `Basic ${b64(username)}`)
        .expect(401);

      const log = lines.join('');
      expect(log).toContain('/api/myaccount'); // the requests were logged at all
      expect(lines.length).toBeGreaterThanOrEqual(6);
      for (const secret of [password, wrong, good.slice('Basic '.length), bad.slice('Basic '.length), b64(username)]) {
        expect(log).not.toContain(secret);
      }
      expect(log).not.toMatch(/Basic [A-Za-z0-9+/=]{8,}/);
    } finally {
      await composed.close();
      await db.destroy();
    }
  });
});

/**
 * Logs in until the app has the credentials cached. The notification of the account's own
 * creation arrives asynchronously: when it comes in during the first login's password check,
 * that login is not cached (an account changed meanwhile), and the next one is.
 */
async function loginCached(app: TestApp, auth: string, path = '/api/myaccount'): Promise<void> {
  const credentials = app.composed.app.credentials;
  await until(
    'the credentials cached',
    async () => {
      await request(app.app).get(path).set('Authorization', auth).expect(200);
      return credentials.get(credentials.key(auth)) !== undefined;
    },
    { timeoutMs: 5000 },
  );
}

describe('Credential cache', () => {
  // A long TTL: only an invalidation can explain a changed answer within the test.
  const { t, w } = useTestWorld({ AUTH_CACHE_TTL_MS: String(60 * 60 * 1000) });

  async function newAccount(password: string): Promise<{ username: string; id: number }> {
    const username = uniq('cached-');
    const { id } = await createAccount(t.db, {
      username,
      password,
      userOrgCode: w.users.agent,
      projects: ['*'],
      rights: {},
      entryAccess: 'None',
    });
    return { username, id };
  }

  /** Runs `lcm load` in its own process on the test database and Redis. */
  async function lcmLoad(...records: Record<string, unknown>[]): Promise<void> {
    const file = path.join(os.tmpdir(), `${uniq('lcm-load-')}.ndjson`);
    fs.writeFileSync(file, records.map((r) => JSON.stringify(r) + '\n').join(''));
    try {
      await execFileAsync(process.execPath, [path.resolve(__dirname, '../../bin/lcm.js'), 'load', file], {
        env: { ...process.env, DATABASE_URL: t.settings.DATABASE_URL, REDIS_URL: t.settings.REDIS_URL, LOG_LEVEL: 'silent' },
      });
    } finally {
      fs.rmSync(file, { force: true });
    }
  }

  /**
   * Asks until the running app answers `status`: a notification arrives asynchronously, within
   * milliseconds. Fails with the last status when 3 s go by without it.
   */
  const untilStatus = (auth: string, status: number): Promise<number> =>
    untilValue(
      `GET /api/myaccount to answer ${status}`,
      async () => (await request(t.app).get('/api/myaccount').set('Authorization', auth)).status,
      (answered) => answered === status,
      { timeoutMs: 3000 },
    );

  /** Changes an account's password without the notification its trigger would send (triggers off for this transaction). */
  async function setPasswordQuietly(username: string, password: string): Promise<void> {
    const hash = await hashPassword(password);
    await t.db.transaction(async (trx) => {
      await trx.raw('set local session_replication_role = replica');
      await trx('accounts').where({ username }).update({ password_hash: hash });
    });
  }

  it('when the password changes, then the old password gets 401 at once (the change notifies every process) and the new one works', async () => {
    const { username } = await newAccount('old-pass');
    const oldAuth = basicAuth(username, 'old-pass');
    await request(t.app).get('/api/myaccount').set('Authorization', oldAuth).expect(200);
    await setPassword(t.db, username, 'new-pass');
    await untilStatus(oldAuth, 401);
    await request(t.app).get('/api/myaccount').set('Authorization', basicAuth(username, 'new-pass')).expect(200);
  });

  it('when the account is disabled, then its cached credentials get 401 at once, and work again once it is enabled', async () => {
    const { username } = await newAccount('pw');
    const auth = basicAuth(username, 'pw');
    await request(t.app).get('/api/myaccount').set('Authorization', auth).expect(200);
    await setEnabled(t.db, username, false);
    await untilStatus(auth, 401);
    await setEnabled(t.db, username, true);
    await untilStatus(auth, 200);
  });

  it('when `lcm load` in another process changes the password, then the running app honours it at once', async () => {
    const { username } = await newAccount('before');
    const oldAuth = basicAuth(username, 'before');
    await request(t.app).get('/api/myaccount').set('Authorization', oldAuth).expect(200);
    await lcmLoad({ type: 'account', username, password: 'after', user: w.users.agent, projects: ['*'], rights: {}, entryAccess: 'None' });
    // The change's notification travels through Postgres: allow it a moment, far below the TTL.
    const res = await untilValue(
      'the old password refused',
      () => request(t.app).get('/api/myaccount').set('Authorization', oldAuth),
      (r) => r.status === 401,
      { timeoutMs: 3000 },
    );
    expectUnauthorized(res);
    await request(t.app).get('/api/myaccount').set('Authorization', basicAuth(username, 'after')).expect(200);
  }, 60_000);

  it('when `lcm load` in another process sets a request limit, then the running app applies it at once', async () => {
    const { username } = await newAccount('pw');
    const auth = basicAuth(username, 'pw');
    const limitOf = async () => {
      const res = await request(t.app).get('/api/myaccount/request/limits').set('Authorization', auth).expect(200);
      return (res.body as z.infer<typeof requestLimitBody>[]).find((r) => r.service === 'myaccount')!.dailyLimit;
    };
    expect(await limitOf()).toBe(t.settings.DEFAULT_DAILY_LIMIT);
    await lcmLoad({ type: 'requestLimit', account: username, service: 'myaccount', dailyLimit: 7 });
    await untilValue('the daily limit of 7', limitOf, (limit) => limit === 7, { timeoutMs: 3000 });
    expect(rateHeaders(await request(t.app).get('/api/myaccount').set('Authorization', auth))).toMatchObject({ limit: 7, remaining: 6 });
  }, 60_000);

  it('when another account changes, then this account stays cached; when its own change is announced, it is dropped', async () => {
    const a = await newAccount('pw-a');
    const b = await newAccount('pw-b');
    const authA = basicAuth(a.username, 'pw-a');
    await loginCached(t, authA);
    // Only the cache can still accept the old password now.
    await setPasswordQuietly(a.username, 'changed');
    await setPassword(t.db, b.username, 'changed-too');
    await new Promise((r) => setTimeout(r, 300));
    await request(t.app).get('/api/myaccount').set('Authorization', authA).expect(200);
    await t.db.raw(`select pg_notify('lcm_account_changed', ?)`, [String(a.id)]);
    await untilStatus(authA, 401);
  });

  it('when the listening connection is lost and comes back, then every cached credential is dropped (changes meanwhile may have been missed)', async () => {
    const name = uniq('lcm-listener-');
    const own = await createTestApp({ DATABASE_URL: databaseUrlNamed(name), AUTH_CACHE_TTL_MS: String(60 * 60 * 1000) });
    try {
      const a = await newAccount('pw-gap');
      const authA = basicAuth(a.username, 'pw-gap');
      await loginCached(own, authA);
      await setPasswordQuietly(a.username, 'changed');
      await request(own.app).get('/api/myaccount').set('Authorization', authA).expect(200);
      // Postgres ends the app's listening connection, as a restart would; the listener comes back on its own.
      const ended = await t.db.raw<{ rows: unknown[] }>(
        `select pg_terminate_backend(pid) from pg_stat_activity where application_name = ? and query ilike 'LISTEN%'`,
        [name],
      );
      expect(ended.rows).toHaveLength(1);
      await untilValue(
        'the cached credential dropped',
        async () => (await request(own.app).get('/api/myaccount').set('Authorization', authA)).status,
        (status) => status === 401,
        { timeoutMs: 5000, intervalMs: 100 },
      );
    } finally {
      await own.close();
    }
  });
});

/** Password checks an app has run so far (its metrics). */
async function passwordChecks(app: Express): Promise<number> {
  const text = (await request(app).get('/api/metrics').expect(200)).text;
  let sum = 0;
  for (const m of text.matchAll(/^lcm_password_checks_total\{outcome="(?:passed|failed)"\} (\d+)$/gm)) sum += Number(m[1]);
  return sum;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

describe('Credential checks without a stampede', () => {
  const TTL_MS = 1500;
  const { t, w } = useTestWorld({ AUTH_CACHE_TTL_MS: String(TTL_MS) });
  let url: string;
  beforeAll(async () => {
    url = (await t.listen()).url;
  });

  async function newAuth(): Promise<string> {
    const username = uniq('flight-');
    await t.load({
      type: 'account',
      username,
      password: 'flight-pass',
      user: w.users.agent,
      projects: ['*'],
      rights: {},
      entryAccess: 'None',
    });
    return basicAuth(username, 'flight-pass');
  }

  async function timedGet(auth: string): Promise<{ status: number; ms: number }> {
    const start = performance.now();
    const res = await fetch(`${url}/api/myaccount`, { headers: { Authorization: auth } });
    await res.arrayBuffer();
    return { status: res.status, ms: performance.now() - start };
  }

  it('when 32 requests of one credential arrive just after its cache entry expired, then one password check serves them all and none waits much longer than one uncached login', async () => {
    // The time of one uncached login on this machine now (each the first of a new account).
    const normal: number[] = [];
    for (let i = 0; i < 5; i++) normal.push((await timedGet(await newAuth())).ms);
    const auth = await newAuth();
    expect((await timedGet(auth)).status).toBe(200);
    await sleep(TTL_MS + 100); // expired, and no request came in its last fifth

    const before = await passwordChecks(t.app);
    const results = await Promise.all(Array.from({ length: 32 }, () => timedGet(auth)));
    expect(results.map((r) => r.status)).toEqual(Array.from({ length: 32 }, () => 200));
    expect((await passwordChecks(t.app)) - before).toBe(1);
    // The time of one uncached login again: the machine's load may have changed meanwhile.
    for (let i = 0; i < 5; i++) normal.push((await timedGet(await newAuth())).ms);
    // Checked one after the other, the last would wait 32 checks; one check for all, about one.
    const slowest = Math.max(...results.map((r) => r.ms));
    process.stdout.write(`single flight: uncached login ${median(normal).toFixed(1)} ms, slowest of 32 ${slowest.toFixed(1)} ms\n`);
    expect(slowest).toBeLessThan(8 * median(normal) + 200);
  });

  it('when a cached credential is used in the last fifth of its time to live, then it is served at once and checked again in the background, and the renewed entry outlives the first', async () => {
    const auth = await newAuth();
    expect((await timedGet(auth)).status).toBe(200);
    const cachedAt = Date.now();
    const before = await passwordChecks(t.app);
    await sleep(TTL_MS * 0.85);
    expect((await timedGet(auth)).status).toBe(200);
    await until('the check in the background', async () => (await passwordChecks(t.app)) !== before, { timeoutMs: 5000, intervalMs: 20 });
    expect((await passwordChecks(t.app)) - before).toBe(1);

    // Past the first entry's end: the renewed one answers, without a further check.
    await sleep(Math.max(0, cachedAt + TTL_MS + 100 - Date.now()));
    const results = await Promise.all(Array.from({ length: 8 }, () => timedGet(auth)));
    expect(results.map((r) => r.status)).toEqual(Array.from({ length: 8 }, () => 200));
    expect((await passwordChecks(t.app)) - before).toBe(1);
  });

  it('when 16 requests of one wrong credential arrive at once, then one password check answers them all with 401', async () => {
    const before = await passwordChecks(t.app);
    const results = await Promise.all(Array.from({ length: 16 }, () => timedGet(basicAuth(w.accounts.full.username, 'not-it'))));
    expect(results.map((r) => r.status)).toEqual(Array.from({ length: 16 }, () => 401));
    expect((await passwordChecks(t.app)) - before).toBe(1);
  });
});

describe('Cached logins and Redis', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedisServer(await freePort());
  });
  // /api/metrics with METRICS_REQUIRE_AUTH is authenticated but not counted: only the login could write.
  const { t, w } = useTestWorld(() => ({ REDIS_URL: redis.url, METRICS_REQUIRE_AUTH: 'true', AUTH_CACHE_TTL_MS: '600000' }));
  afterAll(() => redis.stop()); // declared after useTestWorld: runs once the app is closed

  it('when cached credentials are used, then nothing is sent to Redis', async () => {
    await loginCached(t, w.accounts.full.auth, '/api/metrics');
    const observer = createClient({ url: redis.url });
    await observer.connect();
    try {
      // The first login's own writes (its known-good record) go out after its answer: let them land.
      const calls = async () =>
        [...String(await observer.info('commandstats')).matchAll(/^cmdstat_(?!info|config)\w+:calls=(\d+)/gm)].reduce(
          (n, m) => n + Number(m[1]),
          0,
        );
      let seen = -1;
      await until(
        'the commands sent to Redis to settle',
        async () => {
          const now = await calls();
          const settled = now === seen;
          seen = now;
          return settled;
        },
        { timeoutMs: 5000, intervalMs: 300 },
      );
      await observer.configResetStat();
      for (let i = 0; i < 20; i++) await request(t.app).get('/api/metrics').set('Authorization', w.accounts.full.auth).expect(200);
      const stats = String(await observer.info('commandstats'));
      const commands = [...stats.matchAll(/^cmdstat_(\w+):/gm)].map((m) => m[1]);
      expect(commands.filter((c) => c !== 'info' && c !== 'config')).toEqual([]);
      // The first, uncached login did write (its known-good record): the observer sees writes.
      await request(t.app).get('/api/metrics').set('Authorization', w.accounts.none.auth).expect(200);
      const after = String(await observer.info('commandstats'));
      expect(after).toMatch(/^cmdstat_evalsha:/m);
    } finally {
      await observer.close();
    }
  });
});
