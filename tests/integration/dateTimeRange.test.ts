import request from 'supertest';
import type { ProblemFieldError } from '../../src/http/problem';
import { useTestWorld } from '../harness/useTestWorld';

interface Problem {
  code: string;
  errors: ProblemFieldError[];
}

/**
 * DateTime inputs lie between 1900-01-01 and 9999-12-31 in platform time (docs/decisions.md,
 * DateTime and TimeSpan): outside, every endpoint answers a 400 naming the parameter or body
 * field, never a 500; DateTimes the API writes have four-digit years.
 */
describe('the range of DateTime inputs', () => {
  const { t, w } = useTestWorld();
  const calendar = () => `range-cal-${w.id}`;
  const lead = () => `range-lead-${w.id}`;
  const searchName = () => `range search ${w.id}`;

  beforeAll(async () => {
    await t.load(
      { type: 'calendar', code: calendar(), project: w.projects.b2b },
      { type: 'lead', campaign: w.campaigns.b2b, uniqueId: lead(), data: { Name: 'Range', Telefon: '+45 12 34 56 78' } },
      { type: 'savedSearch', user: w.users.agent, name: searchName(), campaigns: [w.campaigns.b2b] },
    );
  });

  /** Values outside the range: local mean time pushes year 1 into year 0, and -14:00 pushes 9999 into 10000. */
  const OUTSIDE = ['0001-01-01', '0000-01-01T00:00:00', '1899-12-31T23:59:59', '1899-12-31T22:59:59Z', '9999-12-31T23:59:59-14:00'];
  /** The first and the last instant of the range in Copenhagen, each written in two ways. */
  const FIRST = ['1900-01-01', '1899-12-31T23:00:00Z'];
  const LAST = ['9999-12-31T23:59:59.999', '9999-12-31T22:59:59.999Z'];
  const EDGES = [...FIRST, ...LAST];

  /** Every query that takes a DateTime, with `{}` where the value goes, and the edges it can take (a window's start before its end). */
  const queries = () => {
    const root = encodeURIComponent(w.units.root);
    const events = `/api/calendars/${encodeURIComponent(calendar())}/events`;
    const search = encodeURIComponent(searchName());
    const campaign = encodeURIComponent(w.campaigns.b2b);
    const project = encodeURIComponent(w.projects.b2b);
    return [
      ['StartTime', `/api/calls?OrgCode=${root}&StartTime={}&TimeSpan=PT1H`, EDGES],
      ['StartTime', `/api/calls/csv?OrgCode=${root}&StartTime={}&TimeSpan=PT1H`, EDGES],
      ['StartTime', `/api/users/${encodeURIComponent(w.users.agent)}/calls?StartTime={}&TimeSpan=PT1H`, EDGES],
      ['StartTime', `/api/organizationalunits/${root}/calls?StartTime={}&TimeSpan=PT1H`, EDGES],
      ['FromTime', `/api/calls/agentreadyperiods?OrgCode=${root}&FromTime={}&TimeSpan=PT1H`, EDGES],
      // The world's campaign and one lead: the whole range would otherwise export every file's leads.
      ['ModifiedFrom', `/api/simpleleads?Campaigns=${campaign}&Limit=1&ModifiedFrom={}`, EDGES],
      ['ModifiedTo', `/api/simpleleads?Campaigns=${campaign}&Limit=1&ModifiedTo={}`, EDGES],
      ['ModifiedTo', `/api/rawleads?Campaigns=${campaign}&Limit=1&ModifiedTo={}`, EDGES],
      ['modifiedFrom', `/api/leads?searchName=${search}&modifiedFrom={}`, EDGES],
      ['modifiedFrom', `/api/leads/csv?searchName=${search}&modifiedFrom={}`, EDGES],
      ['FromDate', `${events}?FromDate={}&ToDate=9999-12-31T23:59:59.999`, FIRST],
      ['ToDate', `${events}?FromDate=1900-01-01&ToDate={}`, LAST],
      ['ModifiedFrom', `/api/donotcallnumbers?Project=${project}&ModifiedFrom={}`, EDGES],
    ] as const;
  };

  it('when a query DateTime is outside the range, then every endpoint answers a 400 naming it', async () => {
    const wrong: string[] = [];
    for (const [name, path] of queries()) {
      for (const value of OUTSIDE) {
        const res = await request(t.app)
          .get(path.replace('{}', encodeURIComponent(value)))
          .set('Authorization', w.accounts.full.auth);
        const named = res.status === 400 && (res.body as Problem).errors?.some((e) => e.parameter === name);
        if (!named) wrong.push(`${path} ${value}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('when a query DateTime is at an edge of the range, then it is accepted', async () => {
    const wrong: string[] = [];
    for (const [, path, edges] of queries()) {
      for (const value of edges) {
        const res = await request(t.app)
          .get(path.replace('{}', encodeURIComponent(value)))
          .set('Authorization', w.accounts.full.auth);
        if (res.status !== 200) wrong.push(`${path} ${value}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('when a calendar event or a do-not-call entry names a time outside the range, then it is a 400 naming the field and nothing is stored', async () => {
    for (const value of OUTSIDE) {
      const event = await request(t.app).post('/api/calendars/events').set('Authorization', w.accounts.full.auth).send({
        calendarCode: calendar(),
        leadUniqueId: lead(),
        title: 'Range',
        notes: '',
        start: '2031-01-01T10:00:00',
        end: value,
        source: '',
        externalId: '',
      });
      expect({ value, status: event.status, field: (event.body as Problem).errors?.[0]?.field }).toEqual({
        value,
        status: 400,
        field: 'end',
      });
      const listed = await request(t.app)
        .post('/api/donotcallnumbers')
        .set('Authorization', w.accounts.full.auth)
        .send({ phoneNumber: '+45 20 30 40 99', project: w.projects.b2b, expiresTime: value });
      expect({ value, status: listed.status, field: (listed.body as Problem).errors?.[0]?.field }).toEqual({
        value,
        status: 400,
        field: 'expiresTime',
      });
    }
    const events = await request(t.app)
      .get(`/api/calendars/${encodeURIComponent(calendar())}/events?FromDate=1900-01-01&ToDate=9999-12-31`)
      .set('Authorization', w.accounts.full.auth);
    expect(events.body).toEqual([]);
  });

  it('when a calendar event ends at the last instant of the range, then it is stored and written with four-digit years', async () => {
    const res = await request(t.app).post('/api/calendars/events').set('Authorization', w.accounts.full.auth).send({
      calendarCode: calendar(),
      leadUniqueId: lead(),
      title: 'Last',
      notes: '',
      start: '9999-12-31T23:00:00',
      end: '9999-12-31T23:59:59.999',
      source: '',
      externalId: '',
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ start: '9999-12-31T23:00:00.000+01:00', end: '9999-12-31T23:59:59.999+01:00' });
  });
});
