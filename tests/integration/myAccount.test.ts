import request from 'supertest';
import type { z } from 'zod';
import { basicAuth, uniq } from '../harness/testApp';
import { ALL_RIGHTS } from '../harness/world';
import { useTestWorld } from '../harness/useTestWorld';
import { countedServices } from '../../src/http/endpoints/myAccount';
import { formatDateTime } from '../../src/domain/datetime';
import type { myAccountBody, requestCountBody, requestLimitBody } from '../../src/http/schemas/myAccount';

type MyAccount = z.infer<typeof myAccountBody>;
type RequestLimit = z.infer<typeof requestLimitBody>;
type RequestCount = z.infer<typeof requestCountBody>;

const ZONE = 'Europe/Copenhagen';
const OFFSET_DATETIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$/;

describe('GET /api/myaccount', () => {
  const { t, w } = useTestWorld();

  it('when the full account asks, then it sees its user, patterns, every right and Full access', async () => {
    const res = await request(t.app).get('/api/myaccount').set('Authorization', w.accounts.full.auth);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toEqual({
      username: w.accounts.full.username,
      userOrgCode: w.users.agent,
      orgCode: w.users.agent,
      dateTimeFormat: 'Offset',
      projectRights: ['*'],
      resourceRights: ALL_RIGHTS,
      leadDefinitionEntryAccess: 'Full',
      logRequestData: true,
    });
  });

  it('when the B2B account asks, then it sees its project pattern and Partner access', async () => {
    const res = await request(t.app).get('/api/myaccount').set('Authorization', w.accounts.b2b.auth);
    expect(res.status).toBe(200);
    const account = res.body as MyAccount;
    expect(account.projectRights).toEqual([`B2B-${w.id}*`]);
    expect(account.leadDefinitionEntryAccess).toBe('Partner');
  });

  it('when an account without any right asks, then it is answered with empty rights (any account may)', async () => {
    const res = await request(t.app).get('/api/myaccount').set('Authorization', w.accounts.none.auth);
    expect(res.status).toBe(200);
    const account = res.body as MyAccount;
    expect(account.resourceRights).toEqual({});
    expect(account.leadDefinitionEntryAccess).toBe('None');
  });

  it('when rights are stored in any order, then resource types and verbs come in canonical order and only granted ones', async () => {
    const username = uniq('order-');
    await t.load({
      type: 'account',
      username,
      password: 'pw',
      user: w.users.agent,
      projects: ['b*', 'A?c'],
      rights: { Leads: ['Post', 'Get'], Calls: ['Get'], Campaigns: [] },
      entryAccess: 'None',
    });
    const res = await request(t.app).get('/api/myaccount').set('Authorization', basicAuth(username, 'pw'));
    expect(res.status).toBe(200);
    const account = res.body as MyAccount;
    expect(JSON.stringify(account.resourceRights)).toBe('{"Calls":["Get"],"Leads":["Get","Post"]}');
    expect(account.projectRights).toEqual(['b*', 'A?c']);
  });

  it('when the answer is JSON, then it carries nothing but the eight documented properties (no hash, no ids)', async () => {
    const res = await request(t.app).get('/api/myaccount').set('Authorization', w.accounts.full.auth);
    expect(Object.keys(res.body as MyAccount).sort()).toEqual([
      'dateTimeFormat',
      'leadDefinitionEntryAccess',
      'logRequestData',
      'orgCode',
      'projectRights',
      'resourceRights',
      'userOrgCode',
      'username',
    ]);
    expect(res.text).not.toContain('scrypt');
  });

  it('when HTML is asked and values hold markup, then the page shows them escaped', async () => {
    const orgCode = `<b>&"'${uniq()}`;
    const username = uniq('html-');
    await t.load(
      { type: 'user', orgCode, username: uniq('u-'), name: 'Markup user', parent: w.units.team },
      {
        type: 'account',
        username,
        password: 'pw',
        user: orgCode,
        projects: ['<script>alert(1)</script>*'],
        rights: { Calls: ['Get'] },
        entryAccess: 'Partner',
      },
    );
    const res = await request(t.app).get('/api/myaccount').set('Authorization', basicAuth(username, 'pw')).set('Accept', 'text/html');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).not.toContain('<script>alert');
    expect(res.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;*');
    expect(res.text).not.toContain('<b>&');
    expect(res.text).toContain('&lt;b&gt;&amp;&quot;&#39;');
    expect(res.text).toContain(username);
    expect(res.text).toContain('Partner');
  });
});

describe('GET /api/myaccount/request/limits', () => {
  const { t, w } = useTestWorld();

  it('when asked, then every counted service of the API has one row with the default limits', async () => {
    const res = await request(t.app).get('/api/myaccount/request/limits').set('Authorization', w.accounts.full.auth);
    expect(res.status).toBe(200);
    const expected = countedServices(t.composed.app.endpoints);
    const limits = res.body as RequestLimit[];
    expect(limits.map((r) => r.service)).toEqual(expected.map((s) => s.service));
    expect(limits.map((r) => r.service)).toEqual(expect.arrayContaining(['myaccount', 'myaccount.limits', 'myaccount.counts']));
    for (const row of limits) {
      const bulk = expected.find((s) => s.service === row.service)!.bulk;
      const daily = bulk ? t.settings.DEFAULT_BULK_DAILY_LIMIT : t.settings.DEFAULT_DAILY_LIMIT;
      expect(row).toEqual({
        service: row.service,
        dailyLimit: daily,
        highLimit: daily > 10000,
        minuteLimit: Math.max(Math.ceil(daily / 1440), 240),
      });
    }
  });

  it('when health, metrics and other uncounted services exist, then they are not listed', async () => {
    const res = await request(t.app).get('/api/myaccount/request/limits').set('Authorization', w.accounts.full.auth);
    const services = (res.body as RequestLimit[]).map((r) => r.service);
    for (const uncounted of ['healthz', 'readyz', 'metrics']) expect(services).not.toContain(uncounted);
  });

  it('when the account has its own limits, then they replace the defaults with high-limit and minute limit derived', async () => {
    const username = uniq('limits-');
    await t.load(
      { type: 'account', username, password: 'pw', user: w.users.agent, projects: ['*'], rights: {}, entryAccess: 'None' },
      { type: 'requestLimit', account: username, service: 'myaccount', dailyLimit: 1000000 },
      { type: 'requestLimit', account: username, service: 'myaccount.counts', dailyLimit: 10000 },
      { type: 'requestLimit', account: username, service: 'myaccount.limits', dailyLimit: 10001 },
    );
    const res = await request(t.app).get('/api/myaccount/request/limits').set('Authorization', basicAuth(username, 'pw'));
    const byService = Object.fromEntries((res.body as RequestLimit[]).map((r) => [r.service, r]));
    expect(byService['myaccount']).toEqual({ service: 'myaccount', dailyLimit: 1000000, highLimit: true, minuteLimit: 695 });
    expect(byService['myaccount.counts']).toEqual({ service: 'myaccount.counts', dailyLimit: 10000, highLimit: false, minuteLimit: 240 });
    expect(byService['myaccount.limits']).toEqual({ service: 'myaccount.limits', dailyLimit: 10001, highLimit: true, minuteLimit: 240 });
  });

  it('when HTML is asked, then the limits render as a table', async () => {
    const res = await request(t.app)
      .get('/api/myaccount/request/limits')
      .set('Authorization', w.accounts.full.auth)
      .set('Accept', 'text/html');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('<th scope="col">dailyLimit</th>');
    expect(res.text).toMatch(/<td[^>]*>myaccount\.limits<\/td>/);
  });
});

describe('GET /api/myaccount/request/counts', () => {
  const { t, w } = useTestWorld();

  async function freshAccount(): Promise<string> {
    const username = uniq('counts-');
    await t.load({ type: 'account', username, password: 'pw', user: w.users.agent, projects: ['*'], rights: {}, entryAccess: 'None' });
    return basicAuth(username, 'pw');
  }

  it('when services were used, then each has its count, period start with offset, reset and minute count (this request included)', async () => {
    const auth = await freshAccount();
    const start = new Date('2030-07-01T10:00:00Z');
    t.setNow(start);
    await request(t.app).get('/api/myaccount').set('Authorization', auth).expect(200);
    t.setNow(new Date(start.getTime() + 60_000));
    await request(t.app).get('/api/myaccount').set('Authorization', auth).set('X-Rate-Limit-Fair-Use-Policy', 'Minute rated').expect(200);
    const res = await request(t.app).get('/api/myaccount/request/counts').set('Authorization', auth);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      { service: 'myaccount', count: 2, periodStart: '2030-07-01T12:00:00.000+02:00', resetSeconds: 86340, minuteCount: 1 },
      {
        service: 'myaccount.counts',
        count: 1,
        periodStart: formatDateTime(start.getTime() + 60_000, ZONE),
        resetSeconds: 86400,
        minuteCount: 0,
      },
    ]);
    for (const row of res.body as RequestCount[]) expect(row.periodStart).toMatch(OFFSET_DATETIME);
  });

  it('when a period has ended, then its service is no longer listed', async () => {
    const auth = await freshAccount();
    const start = new Date('2030-01-10T08:00:00Z');
    t.setNow(start);
    await request(t.app).get('/api/myaccount').set('Authorization', auth).expect(200);
    t.setNow(new Date(start.getTime() + 24 * 3600_000));
    const res = await request(t.app).get('/api/myaccount/request/counts').set('Authorization', auth);
    const counts = res.body as RequestCount[];
    expect(counts.map((r) => r.service)).toEqual(['myaccount.counts']);
    expect(counts[0]!.periodStart).toBe('2030-01-11T09:00:00.000+01:00');
  });

  it('when HTML is asked, then the counts render as a table', async () => {
    const auth = await freshAccount();
    const res = await request(t.app).get('/api/myaccount/request/counts').set('Authorization', auth).set('Accept', 'text/html');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('<th scope="col">periodStart</th>');
    expect(res.text).toMatch(/<td[^>]*>myaccount\.counts<\/td>/);
  });
});
