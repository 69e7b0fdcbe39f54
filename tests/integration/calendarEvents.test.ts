import request from 'supertest';
import { uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import type { z } from 'zod';
import type { calendarEventOut } from '../../src/http/schemas/calendarEvents';
import type { ProblemFieldError } from '../../src/http/problem';

type CalendarEvent = z.infer<typeof calendarEventOut>;
interface Problem {
  code: string;
  errors: ProblemFieldError[];
}
interface EventRow {
  unique_id: string;
  title: string;
  version: number;
}
const eventOf = (res: request.Response) => res.body as CalendarEvent;
const problemOf = (res: request.Response) => res.body as Problem;

/**
 * Calendar events (docs/decisions.md, Calendar events; the API in the OpenAPI document): lists with the overlap rule and the Project glob, writes
 * with their validation, and project isolation. Times are in March 2026 (CET, +01:00) unless
 * a test says otherwise.
 */
describe('calendar events', () => {
  const { t, w } = useTestWorld();
  let cal: { b2b: string; b2bOther: string; retail: string };

  const event = (calendarCode: string, start: string, end: string, extra: Record<string, unknown> = {}) => ({
    type: 'calendarEvent',
    uniqueId: uniq('ev-'),
    calendarCode,
    leadUniqueId: uniq('lead-'),
    title: 'Call back',
    notes: '',
    start,
    end,
    source: 'crm',
    externalId: uniq('x-'),
    ...extra,
  });

  const newEvent = (overrides: Record<string, unknown> = {}) => ({
    calendarCode: cal.b2b,
    leadUniqueId: `lead-${w.id}-1`,
    title: 'Follow up',
    notes: 'Ring after lunch',
    start: '2026-03-10T13:00:00+01:00',
    end: '2026-03-10T13:30:00+01:00',
    source: 'crm',
    externalId: 'ext-1',
    ...overrides,
  });

  const ids = (res: request.Response) => (res.body as CalendarEvent[]).map((e) => e.uniqueId);

  beforeAll(async () => {
    cal = { b2b: `cal-b2b-${w.id}`, b2bOther: `cal-b2b2/${w.id} æ`, retail: `cal-ret-${w.id}` };
    await t.load(
      { type: 'calendar', code: cal.b2b, name: 'B2B', project: w.projects.b2b },
      { type: 'calendar', code: cal.b2bOther, name: 'B2B two', project: w.projects.b2b },
      { type: 'calendar', code: cal.retail, name: 'Retail', project: w.projects.retail },
      // The leads the API-written events point at: an event may only name a lead the account sees.
      ...[1, 9].map((n) => ({
        type: 'lead',
        campaign: w.campaigns.b2b,
        uniqueId: `lead-${w.id}-${n}`,
        data: { name: `Lead ${n}`, telefon: '+45 12 34 56 78' },
      })),
    );
  });

  describe('GET /api/calendars/{CalendarCode}/events', () => {
    let edges: Record<'a' | 'b' | 'zero' | 'other', ReturnType<typeof event>>;
    beforeAll(async () => {
      edges = {
        a: event(cal.b2b, '2026-03-02T10:00:00+01:00', '2026-03-02T11:00:00+01:00'),
        b: event(cal.b2b, '2026-03-02T11:00:00+01:00', '2026-03-02T12:00:00+01:00'),
        zero: event(cal.b2b, '2026-03-02T11:00:00+01:00', '2026-03-02T11:00:00+01:00'),
        other: event(cal.b2bOther, '2026-03-02T10:00:00+01:00', '2026-03-02T11:00:00+01:00'),
      };
      await t.load(...Object.values(edges));
    });

    const get = (code: string, from: string, to: string, auth = w.accounts.full.auth) =>
      request(t.app)
        .get(`/api/calendars/${encodeURIComponent(code)}/events`)
        .query({ FromDate: from, ToDate: to })
        .set('Authorization', auth);

    it('when the interval starts where one event ends, then that event is left out and the next one and a zero-length event at the start are returned', async () => {
      const res = await get(cal.b2b, '2026-03-02T11:00:00+01:00', '2026-03-02T12:00:00+01:00');
      expect(res.status).toBe(200);
      expect(ids(res).sort()).toEqual([edges.b.uniqueId, edges.zero.uniqueId].sort());
    });

    it('when the interval ends where an event starts, then that event and a zero-length event there are left out', async () => {
      const res = await get(cal.b2b, '2026-03-02T10:00:00+01:00', '2026-03-02T11:00:00+01:00');
      expect(res.status).toBe(200);
      expect(ids(res)).toEqual([edges.a.uniqueId]);
    });

    it('when the interval lies inside an event, then the event is returned', async () => {
      const res = await get(cal.b2b, '2026-03-02T10:20:00+01:00', '2026-03-02T10:40:00+01:00');
      expect(ids(res)).toEqual([edges.a.uniqueId]);
    });

    it('when the interval covers several events, then they come ordered by start and only from that calendar', async () => {
      const res = await get(cal.b2b, '2026-03-02', '2026-03-03');
      expect(res.status).toBe(200);
      expect(ids(res)).toEqual([edges.a.uniqueId, ...[edges.b.uniqueId, edges.zero.uniqueId].sort()]);
    });

    it('when an event is returned, then it has every CalendarEvent field with platform-time offsets', async () => {
      const res = await get(cal.b2b, '2026-03-02T10:00:00', '2026-03-02T10:01:00');
      expect(res.body).toEqual([
        {
          uniqueId: edges.a.uniqueId,
          calendarCode: cal.b2b,
          leadUniqueId: edges.a.leadUniqueId,
          title: 'Call back',
          notes: '',
          start: '2026-03-02T10:00:00.000+01:00',
          end: '2026-03-02T11:00:00.000+01:00',
          source: 'crm',
          externalId: edges.a.externalId,
        },
      ]);
    });

    it('when the calendar code has a slash and non-ASCII letters, then the percent-encoded path works', async () => {
      const res = await get(cal.b2bOther, '2026-03-02', '2026-03-03');
      expect(res.status).toBe(200);
      expect(ids(res)).toEqual([edges.other.uniqueId]);
    });

    it('when parameter names are in another case, then they are accepted', async () => {
      const res = await request(t.app)
        .get(`/api/calendars/${cal.b2b}/events?fromdate=2026-03-02T10:00:00%2B01:00&TODATE=2026-03-02T11:00:00%2B01:00`)
        .set('Authorization', w.accounts.full.auth);
      expect(res.status).toBe(200);
      expect(ids(res)).toEqual([edges.a.uniqueId]);
    });

    it('when FromDate is missing, then a 400 names it', async () => {
      const res = await request(t.app).get(`/api/calendars/${cal.b2b}/events?ToDate=2026-03-03`).set('Authorization', w.accounts.full.auth);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'missing_parameter', errors: [{ parameter: 'FromDate' }] });
    });

    it('when ToDate is not a date, then a 400 names it', async () => {
      const res = await get(cal.b2b, '2026-03-02', 'tomorrow');
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'invalid_parameter', errors: [{ parameter: 'ToDate' }] });
    });

    it('when ToDate is not after FromDate, then a 400 names ToDate', async () => {
      const res = await get(cal.b2b, '2026-03-02', '2026-03-02');
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'invalid_parameter', errors: [{ parameter: 'ToDate', message: 'must be after FromDate' }] });
    });

    it('when the calendar does not exist, then 404', async () => {
      const res = await get(`no-such-${w.id}`, '2026-03-02', '2026-03-03');
      expect(res.status).toBe(404);
      expect(problemOf(res).code).toBe('not_found');
    });

    it('when the calendar is outside the account’s projects, then 404 as if it did not exist', async () => {
      const res = await get(cal.retail, '2026-03-02', '2026-03-03', w.accounts.b2b.auth);
      expect(res.status).toBe(404);
    });

    it('when the account lacks the CalendarEvents Get right, then 403', async () => {
      const res = await get(cal.b2b, '2026-03-02', '2026-03-03', w.accounts.none.auth);
      expect(res.status).toBe(403);
    });

    it('when no credentials are sent, then 401', async () => {
      const res = await request(t.app).get(`/api/calendars/${cal.b2b}/events?FromDate=2026-03-02&ToDate=2026-03-03`);
      expect(res.status).toBe(401);
    });

    it('when the request is answered, then it is counted under calendars.events.bycalendar', async () => {
      const res = await get(cal.b2b, '2026-03-02', '2026-03-03');
      expect(res.headers['x-rate-limit-limit']).toBeDefined();
      const counts = await request(t.app).get('/api/myaccount/request/counts').set('Authorization', w.accounts.full.auth);
      if (counts.status === 200) {
        expect((counts.body as { service: string }[]).map((c) => c.service)).toContain('calendars.events.bycalendar');
      }
    });
  });

  describe('GET /api/calendars/events', () => {
    let ev: Record<'b2b' | 'b2bOther' | 'retail' | 'outside', ReturnType<typeof event>>;
    const from = '2026-04-01T00:00:00+02:00';
    const to = '2026-04-02T00:00:00+02:00';
    beforeAll(async () => {
      ev = {
        b2b: event(cal.b2b, '2026-04-01T09:00:00+02:00', '2026-04-01T09:30:00+02:00'),
        b2bOther: event(cal.b2bOther, '2026-04-01T08:00:00+02:00', '2026-04-01T08:30:00+02:00'),
        retail: event(cal.retail, '2026-04-01T10:00:00+02:00', '2026-04-01T10:30:00+02:00'),
        outside: event(cal.b2b, '2026-04-02T09:00:00+02:00', '2026-04-02T09:30:00+02:00'),
      };
      await t.load(...Object.values(ev));
    });

    const list = (query: Record<string, string>, auth = w.accounts.full.auth) =>
      request(t.app)
        .get('/api/calendars/events')
        .query({ FromDate: from, ToDate: to, ...query })
        .set('Authorization', auth);

    it.each([
      ['the exact project name', () => w.projects.retail, () => [ev.retail.uniqueId]],
      ['a trailing *', () => `B2B-${w.id}*`, () => [ev.b2bOther.uniqueId, ev.b2b.uniqueId]],
      ['another letter case', () => `b2b-${w.id.toUpperCase()} sALES`, () => [ev.b2bOther.uniqueId, ev.b2b.uniqueId]],
      ['a ? for one character', () => `Retail-?${w.id.slice(1)}`, () => [ev.retail.uniqueId]],
      ['a ? too many', () => `Retail-${w.id}?`, () => []],
      ['no * (anchored at the end)', () => `B2B-${w.id}`, () => []],
      ['no leading * (anchored at the start)', () => `${w.id} Sales`, () => []],
      ['a leading *', () => `*${w.id} Sales`, () => [ev.b2bOther.uniqueId, ev.b2b.uniqueId]],
      ['an SQL wildcard _ taken literally', () => `B2B_${w.id}*`, () => []],
      ['an SQL wildcard % taken literally', () => `B2B-${w.id}%`, () => []],
    ])('when Project is %s, then only the matching projects’ events return', async (_name, pattern, expected) => {
      const res = await list({ Project: pattern() });
      expect(res.status).toBe(200);
      expect(ids(res)).toEqual(expected());
    });

    it('when Project names several patterns, comma-separated or repeated, then the events of each match return', async () => {
      const expected = [ev.b2bOther.uniqueId, ev.b2b.uniqueId, ev.retail.uniqueId];
      const commas = await list({ Project: `B2B-${w.id}*,${w.projects.retail}` });
      expect(commas.status).toBe(200);
      expect(ids(commas)).toEqual(expected);
      const repeated = await request(t.app)
        .get('/api/calendars/events')
        .query(
          `FromDate=${encodeURIComponent(from)}&ToDate=${encodeURIComponent(to)}&Project=B2B-${w.id}*&project=${encodeURIComponent(w.projects.retail)}`,
        )
        .set('Authorization', w.accounts.full.auth);
      expect(ids(repeated)).toEqual(expected);
    });

    it('when Project is absent, then events of every visible calendar in the interval return, ordered by start', async () => {
      const res = await list({});
      expect(res.status).toBe(200);
      const mine = ids(res).filter((id) => Object.values(ev).some((e) => e.uniqueId === id));
      expect(mine).toEqual([ev.b2bOther.uniqueId, ev.b2b.uniqueId, ev.retail.uniqueId]);
    });

    it('when a B2B-limited account lists, then Retail events are absent even when its Project asks for them', async () => {
      const all = await list({}, w.accounts.b2b.auth);
      expect(all.status).toBe(200);
      expect(ids(all)).toEqual([ev.b2bOther.uniqueId, ev.b2b.uniqueId]);
      const retail = await list({ Project: w.projects.retail }, w.accounts.b2b.auth);
      expect(retail.body).toEqual([]);
      const star = await list({ Project: '*' }, w.accounts.b2b.auth);
      expect(ids(star)).toEqual([ev.b2bOther.uniqueId, ev.b2b.uniqueId]);
    });

    it('when ToDate is missing, then a 400 names it', async () => {
      const res = await request(t.app).get(`/api/calendars/events?FromDate=2026-04-01`).set('Authorization', w.accounts.full.auth);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'missing_parameter', errors: [{ parameter: 'ToDate' }] });
    });

    it('when FromDate is after ToDate, then a 400', async () => {
      const res = await list({ FromDate: to, ToDate: from });
      expect(res.status).toBe(400);
      expect(problemOf(res).errors).toEqual([{ parameter: 'ToDate', message: 'must be after FromDate' }]);
    });

    it('when the account lacks the right, then 403', async () => {
      expect((await list({}, w.accounts.none.auth)).status).toBe(403);
    });
  });

  describe('POST /api/calendars/events', () => {
    const post = (body: unknown, auth = w.accounts.full.auth) =>
      request(t.app)
        .post('/api/calendars/events')
        .set('Authorization', auth)
        .send(body as object);

    it('when every field is valid, then 200 returns the event with a new uniqueId (no 201: the success status of every endpoint is 200), and it is stored', async () => {
      const res = await post(newEvent());
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        uniqueId: expect.any(String) as jest.AsymmetricMatcher,
        ...newEvent(),
        start: '2026-03-10T13:00:00.000+01:00',
        end: '2026-03-10T13:30:00.000+01:00',
      });
      const listed = await request(t.app)
        .get(`/api/calendars/${cal.b2b}/events?FromDate=2026-03-10&ToDate=2026-03-11`)
        .set('Authorization', w.accounts.full.auth);
      expect(listed.body).toContainEqual(res.body);
    });

    it('when property names are PascalCase and times are local, then they are read alike', async () => {
      const res = await post({
        CalendarCode: cal.b2b,
        LeadUniqueId: `lead-${w.id}-9`,
        Title: 'Summer',
        Notes: '',
        Start: '2026-07-01T10:00:00',
        End: '2026-07-01T10:00:00',
        Source: '',
        ExternalId: '',
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ title: 'Summer', start: '2026-07-01T10:00:00.000+02:00', end: '2026-07-01T10:00:00.000+02:00' });
    });

    it('when the body is the one the specification lists (no leadUniqueId), then the event is created about no lead, and a replacement may link one', async () => {
      const body: Record<string, unknown> = newEvent({ title: `No lead ${w.id}` });
      delete body.leadUniqueId;
      const res = await post(body);
      expect(res.status).toBe(200);
      const made = res.body as CalendarEvent;
      expect(made).toMatchObject({ title: `No lead ${w.id}`, leadUniqueId: '' });
      // .NET writes an empty Guid as the nil UUID.
      for (const leadUniqueId of [null, '', '00000000-0000-0000-0000-000000000000', '{00000000-0000-0000-0000-000000000000}'])
        expect((await post(newEvent({ leadUniqueId }))).body).toMatchObject({ leadUniqueId: '' });
      const linked = await request(t.app)
        .put(`/api/calendars/events/${made.uniqueId}`)
        .set('Authorization', w.accounts.full.auth)
        .send(newEvent({ title: `No lead ${w.id}` }));
      expect(linked.status).toBe(200);
      expect(linked.body).toMatchObject({ uniqueId: made.uniqueId, leadUniqueId: `lead-${w.id}-1` });
    });

    it('when a replacement is the body the specification lists (no leadUniqueId), then the event stays about its lead; an empty or null one unlinks it', async () => {
      const made = (await post(newEvent({ title: `Keeps its lead ${w.id}` }))).body as CalendarEvent;
      expect(made.leadUniqueId).toBe(`lead-${w.id}-1`);
      const put = (body: Record<string, unknown>) =>
        request(t.app).put(`/api/calendars/events/${made.uniqueId}`).set('Authorization', w.accounts.full.auth).send(body);
      const specBody: Record<string, unknown> = { uniqueId: made.uniqueId, ...newEvent({ title: `Moved ${w.id}` }) };
      delete specBody.leadUniqueId;
      const kept = await put(specBody);
      expect(kept.status).toBe(200);
      expect(kept.body).toMatchObject({ title: `Moved ${w.id}`, leadUniqueId: `lead-${w.id}-1` });
      const stored = await request(t.app)
        .get(`/api/calendars/${cal.b2b}/events`)
        .query({ FromDate: '2026-03-10T00:00:00+01:00', ToDate: '2026-03-11T00:00:00+01:00' })
        .set('Authorization', w.accounts.full.auth);
      expect((stored.body as CalendarEvent[]).find((e) => e.uniqueId === made.uniqueId)).toMatchObject({ leadUniqueId: `lead-${w.id}-1` });
      for (const leadUniqueId of [null, '', '00000000-0000-0000-0000-000000000000']) {
        const unlinked = await put({ ...specBody, leadUniqueId });
        expect(unlinked.status).toBe(200);
        expect(unlinked.body).toMatchObject({ leadUniqueId: '' });
      }
    });

    it.each(['calendarCode', 'title', 'notes', 'start', 'end', 'source', 'externalId'])(
      'when %s is missing, then a 400 names the field',
      async (field) => {
        const body: Record<string, unknown> = newEvent();
        delete body[field];
        const res = await post(body);
        expect(res.status).toBe(400);
        expect(problemOf(res).code).toBe('invalid_body');
        expect(problemOf(res).errors).toContainEqual({ field, message: 'is required' });
      },
    );

    it('when notes, source and externalId are null (as .NET clients send an empty string), then they are stored empty', async () => {
      const res = await post(newEvent({ notes: null, source: null, externalId: null }));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ notes: '', source: '', externalId: '' });
    });

    it('when the title is null or a number, then a 400 says it must be a string', async () => {
      for (const title of [null, 42]) {
        const res = await post(newEvent({ title }));
        expect(res.status).toBe(400);
        expect(problemOf(res).errors).toEqual([{ field: 'title', message: 'must be a string' }]);
      }
    });

    it('when the title is empty or not a string, then a 400 names it', async () => {
      for (const title of ['  ', 42]) {
        const res = await post(newEvent({ title }));
        expect(res.status).toBe(400);
        expect(problemOf(res).errors[0]!.field).toBe('title');
      }
    });

    it('when start is after end, then a 400 names end', async () => {
      const res = await post(newEvent({ start: '2026-03-10T14:00:00+01:00', end: '2026-03-10T13:59:59+01:00' }));
      expect(res.status).toBe(400);
      expect(problemOf(res).errors).toEqual([{ field: 'end', message: 'must not be before start' }]);
    });

    it('when start is not a date, then a 400 names it', async () => {
      const res = await post(newEvent({ start: '10/03/2026' }));
      expect(res.status).toBe(400);
      expect(problemOf(res).errors[0]!.field).toBe('start');
    });

    it('when the calendar does not exist, then a 400 names calendarCode', async () => {
      const res = await post(newEvent({ calendarCode: `nope-${w.id}` }));
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'invalid_body', errors: [{ field: 'calendarCode' }] });
    });

    it('when the calendar is outside the account’s projects, then 403 and nothing is stored', async () => {
      const title = uniq('forbidden-');
      const res = await post(newEvent({ calendarCode: cal.retail, title }), w.accounts.b2b.auth);
      expect(res.status).toBe(403);
      expect(await t.db('calendar_events').where({ title }).first()).toBeUndefined();
    });

    it('when the body is not JSON, then a 400', async () => {
      const res = await request(t.app)
        .post('/api/calendars/events')
        .set('Authorization', w.accounts.full.auth)
        .set('Content-Type', 'application/json')
        .send('{ nope');
      expect(res.status).toBe(400);
      expect(problemOf(res).code).toBe('invalid_body');
    });

    it('when the account lacks the Post right, then 403', async () => {
      expect((await post(newEvent(), w.accounts.none.auth)).status).toBe(403);
    });
  });

  describe('PUT /api/calendars/events/{UniqueId}', () => {
    const put = (id: string, body: unknown, auth = w.accounts.full.auth) =>
      request(t.app)
        .put(`/api/calendars/events/${encodeURIComponent(id)}`)
        .set('Authorization', auth)
        .send(body as object);

    async function created(overrides: Record<string, unknown> = {}): Promise<string> {
      const res = await request(t.app).post('/api/calendars/events').set('Authorization', w.accounts.full.auth).send(newEvent(overrides));
      expect(res.status).toBe(200);
      return eventOf(res).uniqueId;
    }

    it('when the whole event is sent, then every field is replaced and the updated event returns', async () => {
      const id = await created();
      const replacement = {
        uniqueId: id,
        calendarCode: cal.b2bOther,
        leadUniqueId: `lead-${w.id}-9`,
        title: 'Moved',
        notes: 'new notes',
        start: '2026-03-11T08:00:00Z',
        end: '2026-03-11T09:00:00Z',
        source: 'other',
        externalId: 'ext-9',
      };
      const res = await put(id, replacement);
      expect(res.status).toBe(200);
      const expected = { ...replacement, start: '2026-03-11T09:00:00.000+01:00', end: '2026-03-11T10:00:00.000+01:00' };
      expect(res.body).toEqual(expected);
      const listed = await request(t.app)
        .get(`/api/calendars/${encodeURIComponent(cal.b2bOther)}/events?FromDate=2026-03-11&ToDate=2026-03-12`)
        .set('Authorization', w.accounts.full.auth);
      expect(listed.body).toContainEqual(expected);
    });

    it('when the body uniqueId differs from the path, then a 400 names uniqueId and nothing changes', async () => {
      const id = await created({ title: 'Keep' });
      const res = await put(id, { ...newEvent({ title: 'Changed' }), uniqueId: 'other' });
      expect(res.status).toBe(400);
      expect(problemOf(res).errors).toEqual([{ field: 'uniqueId', message: 'must equal the UniqueId of the path' }]);
      expect((await t.db<EventRow>('calendar_events').where({ unique_id: id }).first())!.title).toBe('Keep');
    });

    it('when the body leaves uniqueId out, or sends it null or empty, then the path names the event and it is replaced', async () => {
      for (const uniqueId of [undefined, null, '']) {
        const id = await created({ title: 'Before' });
        const res = await put(id, {
          ...newEvent({ title: `After ${JSON.stringify(uniqueId) ?? 'absent'}` }),
          ...(uniqueId === undefined ? {} : { uniqueId }),
        });
        expect(res.status).toBe(200);
        expect(eventOf(res)).toMatchObject({ uniqueId: id, title: `After ${JSON.stringify(uniqueId) ?? 'absent'}` });
      }
    });

    it('when a field is missing, then a 400 names it (a PUT is a full replacement)', async () => {
      const id = await created();
      const body: Record<string, unknown> = { ...newEvent(), uniqueId: id };
      delete body.notes;
      const res = await put(id, body);
      expect(res.status).toBe(400);
      expect(problemOf(res).errors).toEqual([{ field: 'notes', message: 'is required' }]);
    });

    it('when start is after end, then 400', async () => {
      const id = await created();
      const res = await put(id, { ...newEvent({ start: '2026-03-10T15:00:00+01:00' }), uniqueId: id });
      expect(res.status).toBe(400);
      expect(problemOf(res).errors[0]!.field).toBe('end');
    });

    it('when the event does not exist, then 404', async () => {
      const id = `no-such-${w.id}`;
      const res = await put(id, { ...newEvent(), uniqueId: id });
      expect(res.status).toBe(404);
    });

    it('when the event is in a calendar outside the account’s projects, then 404 and nothing changes', async () => {
      const id = await created({ calendarCode: cal.retail, title: 'Retail event' });
      const res = await put(id, { ...newEvent({ title: 'Hijacked' }), uniqueId: id }, w.accounts.b2b.auth);
      expect(res.status).toBe(404);
      expect((await t.db<EventRow>('calendar_events').where({ unique_id: id }).first())!.title).toBe('Retail event');
    });

    it('when the event is moved into a calendar outside the account’s projects, then 403', async () => {
      const id = await created();
      const res = await put(id, { ...newEvent({ calendarCode: cal.retail }), uniqueId: id }, w.accounts.b2b.auth);
      expect(res.status).toBe(403);
    });

    it('when the new calendar does not exist, then a 400 names calendarCode', async () => {
      const id = await created();
      const res = await put(id, { ...newEvent({ calendarCode: `nope-${w.id}` }), uniqueId: id });
      expect(res.status).toBe(400);
      expect(problemOf(res).errors[0]!.field).toBe('calendarCode');
    });

    it('when many replacements of one event run at once, then each is applied in turn and the last committed stays', async () => {
      const id = await created();
      const before = (await t.db<EventRow>('calendar_events').where({ unique_id: id }).first())!.version;
      const titles = Array.from({ length: 8 }, (_, i) => `Concurrent ${i}`);
      const results = await Promise.all(titles.map((title) => put(id, { ...newEvent({ title }), uniqueId: id })));
      expect(results.map((r) => r.status)).toEqual(titles.map(() => 200));
      results.forEach((r, i) => expect(eventOf(r).title).toBe(titles[i]));
      const row = (await t.db<EventRow>('calendar_events').where({ unique_id: id }).first())!;
      expect(row.version).toBe(before + titles.length);
      expect(titles).toContain(row.title);
    });

    it('when the account lacks the Put right, then 403', async () => {
      const id = await created();
      expect((await put(id, { ...newEvent(), uniqueId: id }, w.accounts.none.auth)).status).toBe(403);
    });
  });

  describe('project isolation across the calendar endpoints', () => {
    // One Retail event per case, so the write cases do not disturb each other.
    async function retailEvent(): Promise<string> {
      const e = event(cal.retail, '2026-06-01T10:00:00+02:00', '2026-06-01T11:00:00+02:00');
      await t.load(e);
      return e.uniqueId;
    }
    const window = 'FromDate=2026-06-01&ToDate=2026-06-02';
    const cases: [string, (auth: string) => Promise<request.Response>, number, number][] = [
      [
        'GET /calendars/{Retail}/events',
        (auth) => request(t.app).get(`/api/calendars/${cal.retail}/events?${window}`).set('Authorization', auth),
        200,
        404,
      ],
      [
        'POST /calendars/events into Retail',
        (auth) =>
          request(t.app)
            .post('/api/calendars/events')
            .set('Authorization', auth)
            .send(newEvent({ calendarCode: cal.retail })),
        200,
        403,
      ],
      [
        'PUT /calendars/events/{Retail event}',
        async (auth) => {
          const id = await retailEvent();
          return request(t.app)
            .put(`/api/calendars/events/${id}`)
            .set('Authorization', auth)
            .send({ ...newEvent({ calendarCode: cal.retail }), uniqueId: id });
        },
        200,
        404,
      ],
      [
        'DELETE /calendars/events/{Retail event}',
        async (auth) => {
          const id = await retailEvent();
          return request(t.app).delete(`/api/calendars/events/${id}`).set('Authorization', auth).send({ uniqueId: id });
        },
        200,
        404,
      ],
    ];

    it.each(cases)(
      'when %s is asked by the all-projects account and by the B2B-limited one, then only the first reaches Retail',
      async (_name, send, allProjects, b2bOnly) => {
        expect((await send(w.accounts.full.auth)).status).toBe(allProjects);
        expect((await send(w.accounts.b2b.auth)).status).toBe(b2bOnly);
      },
    );

    it('when GET /calendars/events is asked by both accounts, then Retail events are listed only for the all-projects account', async () => {
      const id = await retailEvent();
      const listed = async (auth: string) => ids(await request(t.app).get(`/api/calendars/events?${window}`).set('Authorization', auth));
      expect(await listed(w.accounts.full.auth)).toContain(id);
      expect(await listed(w.accounts.b2b.auth)).not.toContain(id);
    });
  });

  describe('DELETE /api/calendars/events/{UniqueId}', () => {
    const del = (id: string, body: unknown, auth = w.accounts.full.auth) => {
      const r = request(t.app)
        .delete(`/api/calendars/events/${encodeURIComponent(id)}`)
        .set('Authorization', auth);
      return body === undefined ? r : r.send(body as object);
    };

    async function created(calendarCode = cal.b2b): Promise<string> {
      const res = await request(t.app)
        .post('/api/calendars/events')
        .set('Authorization', w.accounts.full.auth)
        .send(newEvent({ calendarCode }));
      return eventOf(res).uniqueId;
    }

    it('when the body names the event, then 200 names the event deleted and it is gone', async () => {
      const id = await created();
      const res = await del(id, { uniqueId: id });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ uniqueId: id });
      expect(await t.db('calendar_events').where({ unique_id: id }).first()).toBeUndefined();
      expect((await del(id, { uniqueId: id })).status).toBe(404);
    });

    it('when the body property is spelled UniqueId, then it is read alike', async () => {
      const id = await created();
      expect((await del(id, { UniqueId: id })).status).toBe(200);
    });

    it('when the body uniqueId differs from the path, then 400 and the event stays', async () => {
      const id = await created();
      const res = await del(id, { uniqueId: 'something-else' });
      expect(res.status).toBe(400);
      expect(problemOf(res).errors[0]!.field).toBe('uniqueId');
      expect(await t.db('calendar_events').where({ unique_id: id }).first()).toBeDefined();
    });

    it('when there is no body, or it names no uniqueId, then the path names the event: 200 and it is gone', async () => {
      for (const body of [undefined, {}, { uniqueId: null }, { uniqueId: '' }]) {
        const id = await created();
        const res = await del(id, body);
        expect(res.status).toBe(200);
        expect(await t.db('calendar_events').where({ unique_id: id }).first()).toBeUndefined();
      }
    });

    it('when the body is not a JSON object, then 400 and the event stays', async () => {
      const id = await created();
      const res = await request(t.app)
        .delete(`/api/calendars/events/${encodeURIComponent(id)}`)
        .set('Authorization', w.accounts.full.auth)
        .set('Content-Type', 'application/json')
        .send('"just a string"');
      expect(res.status).toBe(400);
      expect(problemOf(res).code).toBe('invalid_body');
      expect(await t.db('calendar_events').where({ unique_id: id }).first()).toBeDefined();
    });

    it('when the event does not exist, then 404', async () => {
      const id = `no-such-${w.id}`;
      expect((await del(id, { uniqueId: id })).status).toBe(404);
    });

    it('when the event is outside the account’s projects, then 404 and the event stays', async () => {
      const id = await created(cal.retail);
      const res = await del(id, { uniqueId: id }, w.accounts.b2b.auth);
      expect(res.status).toBe(404);
      expect(await t.db('calendar_events').where({ unique_id: id }).first()).toBeDefined();
    });

    it('when the account lacks the Delete right, then 403', async () => {
      const id = await created();
      expect((await del(id, { uniqueId: id }, w.accounts.none.auth)).status).toBe(403);
    });
  });
});
