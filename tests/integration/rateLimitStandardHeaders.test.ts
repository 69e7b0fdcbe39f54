import request from 'supertest';
import { basicAuth, uniq } from '../harness/testApp';
import { ALL_RIGHTS } from '../harness/world';
import { useTestWorld } from '../harness/useTestWorld';

/**
 * The standard RateLimit-Policy and RateLimit fields (IETF httpapi draft syntax) beside the
 * X-Rate-Limit headers: the same periods, the daily one always, the minute one under fair use.
 */
const HOUR = 3600_000;
const FAIR_USE = ['X-Rate-Limit-Fair-Use-Policy', 'Minute rated'] as const;
/** 10:00 in Copenhagen summer time: production hours. */
const PROD = Date.parse('2030-07-01T08:00:00Z');

describe('RateLimit-Policy and RateLimit headers', () => {
  const { t, w } = useTestWorld({ AUTH_CACHE_TTL_MS: '600000' });

  async function newAccount(limits: Record<string, number> = {}, rights: Record<string, string[]> = ALL_RIGHTS): Promise<string> {
    const username = uniq('rlh-');
    await t.load(
      { type: 'account', username, password: 'pw', user: w.users.agent, projects: ['*'], rights, entryAccess: 'Full' },
      ...Object.entries(limits).map(([service, dailyLimit]) => ({ type: 'requestLimit', account: username, service, dailyLimit })),
    );
    return basicAuth(username, 'pw');
  }
  const get = (auth: string, path = '/api/myaccount') => request(t.app).get(path).set('Authorization', auth);

  it('when fair use is off, then both fields describe the daily period only, as X-Rate-Limit does', async () => {
    const auth = await newAccount({ myaccount: 5000 });
    t.setNow(new Date(PROD));
    await get(auth).expect(200);
    t.setNow(new Date(PROD + HOUR));
    const res = await get(auth).expect(200);
    expect(res.headers['ratelimit-policy']).toBe('"daily";q=5000;w=86400');
    expect(res.headers['ratelimit']).toBe('"daily";r=4998;t=82800');
    expect([res.headers['x-rate-limit-limit'], res.headers['x-rate-limit-remaining'], res.headers['x-rate-limit-reset']]).toEqual([
      '5000',
      '4998',
      '82800',
    ]);
  });

  it('when fair use is on, then the policy lists the daily and the minute period and RateLimit shows what is left of each', async () => {
    const auth = await newAccount({ myaccount: 20000 });
    t.setNow(new Date(PROD));
    await get(auth)
      .set(...FAIR_USE)
      .expect(200);
    t.setNow(new Date(PROD + 20_000));
    const res = await get(auth)
      .set(...FAIR_USE)
      .expect(200);
    expect(res.headers['ratelimit-policy']).toBe('"daily";q=20000;w=86400, "minute";q=240;w=60');
    expect(res.headers['ratelimit']).toBe('"daily";r=19998;t=86380, "minute";r=238;t=40');
    // The specification's headers describe the minute period under fair use.
    expect(res.headers['x-rate-limit-remaining']).toBe('238');
  });

  it('when the minute limit is used up, then the 429 names only the minute period and its t equals Retry-After', async () => {
    const auth = await newAccount({ myaccount: 20000 });
    t.setNow(new Date(PROD));
    for (let i = 0; i < 240; i++)
      await get(auth)
        .set(...FAIR_USE)
        .expect(200);
    t.setNow(new Date(PROD + 45_000));
    const refused = await get(auth)
      .set(...FAIR_USE)
      .expect(429);
    expect(refused.headers['ratelimit-policy']).toBe('"daily";q=20000;w=86400, "minute";q=240;w=60');
    expect(refused.headers['ratelimit']).toBe('"minute";r=0;t=15');
    expect(refused.headers['retry-after']).toBe('15');
  });

  it('when the daily limit is used up, then the 429 names the daily period', async () => {
    const auth = await newAccount({ myaccount: 2 });
    t.setNow(new Date(PROD));
    await get(auth).expect(200);
    await get(auth).expect(200);
    t.setNow(new Date(PROD + HOUR));
    const refused = await get(auth).expect(429);
    expect(refused.headers['ratelimit-policy']).toBe('"daily";q=2;w=86400');
    expect(refused.headers['ratelimit']).toBe('"daily";r=0;t=82800');
    expect(refused.headers['retry-after']).toBe('82800');
  });

  it('when a right is missing, then the 403 shows the current periods without spending', async () => {
    const auth = await newAccount({}, {});
    t.setNow(new Date(PROD));
    const res = await get(auth, `/api/calendars/none-${w.id}/events?FromDate=2030-07-01&ToDate=2030-07-02`).expect(403);
    expect(res.headers['ratelimit']).toMatch(/^"daily";r=\d+;t=86400$/);
  });

  it('when an endpoint is not counted, then neither field is sent', async () => {
    const res = await request(t.app).get('/api/healthz').expect(200);
    expect(res.headers['ratelimit-policy']).toBeUndefined();
    expect(res.headers['ratelimit']).toBeUndefined();
  });
});
