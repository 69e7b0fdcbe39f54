import request from 'supertest';
import { useTestWorld } from '../harness/useTestWorld';
import type { ProblemFieldError } from '../../src/http/problem';

/** Inputs that reached Postgres or the date arithmetic as-is once, and came back as 500s. */
describe('bad input never becomes a 500', () => {
  const { t, w } = useTestWorld();

  const get = (url: string) => request(t.app).get(url).set('Authorization', w.accounts.full.auth);
  const expect400 = (res: request.Response, code: string, named?: string) => {
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const problem = res.body as { code: string; errors?: ProblemFieldError[] };
    expect(problem.code).toBe(code);
    if (named) expect(JSON.stringify(problem.errors)).toContain(named);
  };

  it.each([
    ['/api/calls?OrgCode=%00&StartTime=2026-01-01&TimeSpan=P1D', 'OrgCode'],
    ['/api/users/%00/calls?StartTime=2026-01-01&TimeSpan=P1D', 'OrgCode'],
    ['/api/simpleleads?UniqueId=a%00b', 'UniqueId'],
    ['/api/calendars/events?FromDate=2026-01-01&ToDate=2026-02-01&Project=%00', 'Project'],
  ])('when %s carries a NUL character, then 400 naming the parameter', async (url, name) => {
    expect400(await get(url), 'invalid_parameter', name);
  });

  it('when a JSON body string carries a NUL character, then 400 invalid_body naming the field', async () => {
    const res = await request(t.app)
      .post('/api/leads')
      .set('Authorization', w.accounts.full.auth)
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ CampaignCode: w.campaigns.b2b, Data: { Name: 'a\u0000b', Phone: '12345678' } }));
    expect400(res, 'invalid_body', 'Data.Name');
  });

  it('when a path segment is not valid percent-encoding, then 400 invalid_parameter', async () => {
    expect400(await get('/api/leads/%FF'), 'invalid_parameter');
  });

  it('when the TimeSpan reaches beyond the year 9999, then 400 naming TimeSpan', async () => {
    expect400(
      await get(`/api/calls?OrgCode=${encodeURIComponent(w.units.root)}&StartTime=2026-01-01&TimeSpan=P99999999Y`),
      'invalid_parameter',
      'TimeSpan',
    );
  });
});
