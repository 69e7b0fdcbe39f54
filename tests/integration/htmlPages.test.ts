import request from 'supertest';
import { z } from 'zod';
import { uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import type { Endpoint } from '../../src/http/endpoint';
import { escapeHtml as escapeText } from '../../src/http/html';

/**
 * The text/html representation: every small service answers a
 * readable, fully escaped page when Accept prefers text/html; large-data services answer 406 to
 * a text/html-only Accept. The endpoint lists come from the app, so new endpoints are covered.
 */
describe('HTML pages', () => {
  const { t, w } = useTestWorld();
  let calendar: string;
  let leadId: string;
  let callId: string;
  const evil = '<script>alert(1)</script>';
  const evilNotes = '"><img src=x onerror=alert(2)>';

  beforeAll(async () => {
    calendar = `cal-html-${w.id}`;
    leadId = uniq('lead-html-');
    callId = uniq('call-html-');
    await t.load(
      { type: 'lead', uniqueId: leadId, campaign: w.campaigns.b2b, data: { Name: 'Lead <i>Ærø</i>', Phone: '+4512345678' } },
      { type: 'calendar', code: calendar, name: 'Html', project: w.projects.b2b },
      {
        type: 'call',
        uniqueId: callId,
        campaign: w.campaigns.b2b,
        user: w.users.agent,
        uniqueLeadId: leadId,
        leadPhoneNumber: '+4512345678',
        endCause: 'NormalDisconnect',
        inProgress: false,
        connected: true,
        incoming: false,
        startTime: '2026-05-04T10:00:00',
        connectTime: '2026-05-04T10:00:05',
        endTime: '2026-05-04T10:02:00',
        previewDuration: 'PT2S',
      },
      {
        type: 'recording',
        call: callId,
        startTime: '2026-05-04T10:00:05',
        recordingType: 'FullRecording',
        fileName: 'html <b>call</b>.wav',
      },
      {
        type: 'calendarEvent',
        uniqueId: uniq('ev-'),
        calendarCode: calendar,
        leadUniqueId: 'lead-1',
        title: evil,
        notes: evilNotes,
        start: '2026-05-04T09:00:00',
        end: '2026-05-04T09:30:00',
        source: 'crm',
        externalId: 'x1',
      },
      {
        type: 'calendarEvent',
        uniqueId: uniq('ev-'),
        calendarCode: calendar,
        leadUniqueId: 'lead-2',
        title: 'Call Ærø back',
        notes: 'two\nlines',
        start: '2026-05-05T14:00:00',
        end: '2026-05-05T14:15:00',
        source: 'crm',
        externalId: 'x2',
      },
    );
  });
  let hookId: string;
  let leadDefinitionId: string;
  beforeAll(async () => {
    leadDefinitionId = (await t
      .db<{ name: string; unique_id: string }>('lead_definitions')
      .where({ name: w.leadDefinition })
      .first('unique_id'))!.unique_id;
    const hook = await request(t.app)
      .post('/api/hooks')
      .set('Authorization', w.accounts.full.auth)
      .send({ name: 'Html <b>hook</b>', url: 'https://crm.example.com/in' });
    hookId = (hook.body as { uniqueId: string }).uniqueId;
  });

  /** Values for the parameters small services need; an endpoint needing another one fails by name. */
  function urlFor(e: Endpoint): string {
    const pathValues: Record<string, string> = {
      CalendarCode: calendar,
      OrgCode: e.path.startsWith('/users') ? w.users.agent : w.units.team,
      orgCode: w.units.team,
      Code: e.path.startsWith('/campaigns') ? w.campaigns.b2b : 'not_found',
      UniqueId: e.path.startsWith('/calls')
        ? callId
        : e.path.startsWith('/hooks')
          ? hookId
          : e.path.startsWith('/leaddefinitions')
            ? leadDefinitionId
            : leadId,
    };
    const queryValues: Record<string, string> = {
      FromDate: '2026-05-01',
      ToDate: '2026-06-01',
      StartTime: '2026-05-01',
      FromTime: '2026-05-01',
      TimeSpan: 'P1D',
      OrgCode: w.users.agent,
    };
    const path = e.path.replace(/\{([^}]+)\}/g, (_m, name: string) => {
      if (!(name in pathValues)) throw new Error(`no test value for path parameter ${name} of ${e.path}`);
      return encodeURIComponent(pathValues[name]!);
    });
    const query = new URLSearchParams();
    for (const [name, schema] of Object.entries(e.query?.shape ?? {})) {
      if ((schema as z.ZodType).safeParse(undefined).success) continue;
      if (!(name in queryValues)) throw new Error(`no test value for query parameter ${name} of ${e.path}`);
      query.set(name, queryValues[name]!);
    }
    return `/api${path}${query.size > 0 ? `?${query.toString()}` : ''}`;
  }

  const htmlEndpoints = () =>
    t.composed.app.endpoints.filter((e) => e.method === 'get' && e.representations.includes('html') && !e.ownMediaType);
  const nonHtmlEndpoints = () => t.composed.app.endpoints.filter((e) => !e.representations.includes('html') && !e.ownMediaType);

  const getHtml = (url: string, auth = w.accounts.full.auth) =>
    request(t.app).get(url).set('Authorization', auth).set('Accept', 'text/html');

  describe('every small service', () => {
    it('when a small service is asked for text/html, then it answers a complete HTML page with a heading and Vary: Accept', async () => {
      const endpoints = htmlEndpoints();
      expect(endpoints.map((e) => e.service)).toEqual(
        expect.arrayContaining(['calendars.events.list', 'calendars.events.bycalendar', 'myaccount']),
      );
      for (const e of endpoints) {
        const res = await getHtml(urlFor(e));
        expect({ service: e.service, status: res.status, type: res.headers['content-type'] }).toEqual({
          service: e.service,
          status: 200,
          type: 'text/html; charset=utf-8',
        });
        expect(res.text).toMatch(/^<!DOCTYPE html>/);
        expect(res.text).toMatch(/<h1>[^<]+<\/h1>/);
        expect(res.headers.vary).toMatch(/Accept/);
      }
    });

    it('when a browser-like Accept (text/html first, */* later) asks a small service, then HTML wins', async () => {
      const res = await request(t.app)
        .get('/api/myaccount')
        .set('Authorization', w.accounts.full.auth)
        .set('Accept', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8');
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.text).toContain(w.accounts.full.username);
    });

    it('when the Accept is the one Java’s HttpURLConnection sends unless told otherwise, then a small service answers JSON', async () => {
      const javaDefault = 'text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2';
      for (const path of ['/api/myaccount', '/api/users', '/api/myaccount/request/limits']) {
        const res = await request(t.app).get(path).set('Authorization', w.accounts.full.auth).set('Accept', javaDefault);
        expect([path, res.status, res.headers['content-type']]).toEqual([path, 200, 'application/json; charset=utf-8']);
      }
      // Asked for HTML in so many words, it is still the page.
      const html = await request(t.app)
        .get('/api/myaccount')
        .set('Authorization', w.accounts.full.auth)
        .set('Accept', 'text/html, */*; q=.2');
      expect(html.headers['content-type']).toBe('text/html; charset=utf-8');
    });

    it('when no Accept or application/json is sent, then a small service answers JSON', async () => {
      const none = await request(t.app).get('/api/myaccount').set('Authorization', w.accounts.full.auth);
      expect(none.headers['content-type']).toMatch(/^application\/json/);
      const json = await request(t.app).get('/api/myaccount').set('Authorization', w.accounts.full.auth).set('Accept', 'application/json');
      expect(json.headers['content-type']).toMatch(/^application\/json/);
    });
  });

  describe('large-data and write services', () => {
    it('when a service without an HTML representation is asked for text/html only, then 406 problem+json', async () => {
      const endpoints = nonHtmlEndpoints();
      expect(endpoints.map((e) => e.service)).toEqual(expect.arrayContaining(['calendars.events.create']));
      for (const e of endpoints) {
        const url = `/api${e.path.replace(/\{[^}]+\}/g, 'x')}`;
        const res = await request(t.app)[e.method](url).set('Authorization', w.accounts.full.auth).set('Accept', 'text/html');
        expect({ service: e.service, status: res.status, type: res.headers['content-type'] }).toEqual({
          service: e.service,
          status: 406,
          type: expect.stringMatching(/^application\/problem\+json/) as jest.AsymmetricMatcher,
        });
      }
    });
  });

  describe('GET /api/calendars/{CalendarCode}/events as HTML', () => {
    it('when the page is rendered, then each event is a table row with readable times in <time> elements', async () => {
      const res = await getHtml(`/api/calendars/${calendar}/events?FromDate=2026-05-01&ToDate=2026-06-01`);
      expect(res.status).toBe(200);
      expect(res.text).toContain('<p class="meta">2 items</p>');
      expect(res.text.match(/<tbody><tr>|<\/tr><tr>/g)).toHaveLength(2);
      expect(res.text).toContain(
        '<time datetime="2026-05-04T09:00:00.000+02:00" title="2026-05-04T09:00:00.000+02:00">Mon 4 May 2026, 09:00:00 <span class="offset">(+02:00)</span></time>',
      );
      expect(res.text).toContain('Call Ærø back');
      expect(res.text).toContain('<th scope="col">title</th>');
    });

    it('when an event title and notes hold markup, then they are escaped text and no markup of theirs reaches the page', async () => {
      const res = await getHtml(`/api/calendars/${calendar}/events?FromDate=2026-05-01&ToDate=2026-06-01`);
      expect(res.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
      expect(res.text).toContain('&quot;&gt;&lt;img src=x onerror=alert(2)&gt;');
      expect(res.text).not.toContain('<script');
      expect(res.text).not.toContain('<img');
    });

    it('when the page title carries a calendar code with markup-like characters, then it is escaped too', async () => {
      const code = `cal-<b>&-${w.id}`;
      await t.load({ type: 'calendar', code, project: w.projects.b2b });
      const res = await getHtml(`/api/calendars/${encodeURIComponent(code)}/events?FromDate=2026-05-01&ToDate=2026-06-01`);
      expect(res.status).toBe(200);
      expect(res.text).toContain(`<h1>Calendar cal-&lt;b&gt;&amp;-${w.id}: events</h1>`);
      expect(res.text).toContain('No items.');
    });
  });

  describe('account pages as HTML', () => {
    it('when /api/myaccount is asked for HTML, then the account’s fields are rows and its rights a nested table', async () => {
      const res = await getHtml('/api/myaccount', w.accounts.b2b.auth);
      expect(res.text).toContain(`<th scope="row">username</th><td>${w.accounts.b2b.username}</td>`);
      expect(res.text).toContain(`B2B-${w.id}*`);
      expect(res.text).toContain('<th scope="row">CalendarEvents</th>');
    });

    it('when /api/myaccount/request/limits is asked for HTML, then each counted service is a row', async () => {
      const res = await getHtml('/api/myaccount/request/limits');
      expect(res.text).toContain('<td data-field="service">calendars.events.list</td>');
      expect(res.text).toContain('<td data-field="service">calendars.events.create</td>');
    });

    it('when /api/myaccount/request/counts is asked for HTML after a request, then that service is a row with a readable period start', async () => {
      await request(t.app).get(`/api/calendars/events?FromDate=2026-05-01&ToDate=2026-05-02`).set('Authorization', w.accounts.b2b.auth);
      const res = await getHtml('/api/myaccount/request/counts', w.accounts.b2b.auth);
      expect(res.status).toBe(200);
      expect(res.text).toContain('<td data-field="service">calendars.events.list</td>');
      expect(res.text).toMatch(/<td data-field="periodStart"><time datetime="[^"]+"/);
    });
  });

  describe('organisation pages as HTML', () => {
    it('when /api/users is asked for HTML, then the world’s users are rows, with non-ASCII names intact', async () => {
      const res = await getHtml('/api/users');
      expect(res.status).toBe(200);
      expect(res.text).toContain(`<td data-field="orgCode">${w.users.agent}</td>`);
      expect(res.text).toContain('Agent Ærø');
    });

    it('when an org unit code with spaces, a slash and æøå is asked for HTML, then its page shows it', async () => {
      const res = await getHtml(`/api/orgunits/${encodeURIComponent(w.units.team)}`);
      expect(res.status).toBe(200);
      expect(res.text).toContain('Team Tryg');
      expect(res.text).toContain(w.units.team);
    });

    it('when a lead definition is asked for HTML by the Partner account, then its fields are rows and the Full field is absent', async () => {
      const res = await getHtml(`/api/leaddefinitions/${leadDefinitionId}`, w.accounts.b2b.auth);
      expect(res.status).toBe(200);
      expect(res.text).toContain(escapeText(w.leadDefinition));
      expect(res.text).toContain('Telefon');
      expect(res.text).toContain('Revenue');
      expect(res.text).not.toContain('Secret');
    });

    it('when /api/campaigns is asked for HTML by a B2B account, then only its project’s campaigns are rows', async () => {
      const res = await getHtml('/api/campaigns', w.accounts.b2b.auth);
      expect(res.status).toBe(200);
      expect(res.text).toContain(w.campaigns.b2b);
      expect(res.text).not.toContain(w.campaigns.retail);
    });
  });
});
