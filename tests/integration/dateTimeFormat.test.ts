import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import request from 'supertest';
import { basicAuth, testDatabaseUrl, uniq } from '../harness/testApp';
import { ALL_RIGHTS } from '../harness/world';
import { useTestWorld } from '../harness/useTestWorld';

/**
 * The DateTime output mode through the HTTP stack: an account writes DateTimes as `Offset`
 * (default) or `Local`, a request overrides it with `Prefer: datetime=local|offset`, an
 * honoured preference comes back in `Preference-Applied`, and every such answer varies by
 * Prefer. Each family below is asked the four ways; the values are on DST days.
 */

const run = promisify(execFile);
const LCM = path.resolve(__dirname, '../../bin/lcm.js');

type Format = 'Offset' | 'Local';
interface Family {
  name: string;
  ask: () => request.Test;
  read: (res: request.Response) => unknown;
  expected: Record<Format, string>;
}

// The second 02:30 of the autumn change (winter time) and an instant after the spring gap.
const AUTUMN = { at: '2026-10-25T02:30:00.123+01:00', Offset: '2026-10-25T02:30:00.123+01:00', Local: '2026-10-25T02:30:00.1230000' };
const AUTUMN_SUMMER = { at: '2026-10-25T02:30:00+02:00', Offset: '2026-10-25T02:30:00.000+02:00', Local: '2026-10-25T02:30:00.0000000' };
const SPRING = { at: '2026-03-29T03:00:00.5+02:00', Offset: '2026-03-29T03:00:00.500+02:00', Local: '2026-03-29T03:00:00.5000000' };
// The fixed clock of this file: the first request to a service starts its period then.
const NOW = { at: new Date('2026-10-25T01:30:00.250Z'), Offset: '2026-10-25T02:30:00.250+01:00', Local: '2026-10-25T02:30:00.2500000' };

/** A JSON answer's object, or the first of its array. */
const bodyObject = (res: request.Response) => res.body as Record<string, unknown>;
const firstItem = (res: request.Response) => (res.body as Record<string, unknown>[])[0]!;

/** CSV text → the cell of `column` in the first data row. */
function csvCell(text: string, column: string): string {
  const [header, first] = text.split('\r\n');
  const names = header!.split(';').map((h) => h.replace(/^"|"$/g, ''));
  return first!.split(';')[names.indexOf(column)]!.replace(/^"|"$/g, '');
}

describe('DateTime output mode', () => {
  const { t, w } = useTestWorld();
  let local: { username: string; auth: string };
  let callId: string;
  let leadId: string;
  let search: string;
  const offsetAuth = () => w.accounts.full.auth;

  // The harness returns to real time after each test.
  beforeEach(() => t.setNow(NOW.at));
  beforeAll(async () => {
    local = { username: `local-${w.id}`, auth: basicAuth(`local-${w.id}`, 'local-pass') };
    callId = `call-${w.id}`;
    leadId = `lead-${w.id}`;
    search = `search ${w.id}`;
    await t.load(
      {
        type: 'account',
        username: local.username,
        password: 'local-pass',
        user: w.users.agent,
        projects: ['*'],
        rights: ALL_RIGHTS,
        entryAccess: 'Full',
        dateTimeFormat: 'local',
      },
      {
        type: 'lead',
        campaign: w.campaigns.b2b,
        uniqueId: leadId,
        data: { Name: 'Dst', Telefon: '+45 11 22 33 44' },
        uploadTime: SPRING.at,
        lastModifiedTime: AUTUMN.at,
      },
      {
        type: 'call',
        campaign: w.campaigns.b2b,
        user: w.users.agent,
        uniqueId: callId,
        uniqueLeadId: leadId,
        leadPhoneNumber: '+45 11 22 33 44',
        endCause: 'NormalDisconnect',
        inProgress: false,
        connected: true,
        incoming: false,
        startTime: AUTUMN.at,
        connectTime: AUTUMN.at,
        endTime: AUTUMN.at,
        previewDuration: 'PT0S',
        dialingDuration: 'PT0S',
        conversationDuration: 'PT0S',
        wrapUpDuration: 'PT0S',
        leadStatus: 'UserProcessed',
        leadClosure: 'Success',
      },
      { type: 'recording', call: callId, startTime: AUTUMN.at, endTime: AUTUMN.at, recordingType: 'FullRecording', fileName: 'a.wav' },
      { type: 'readyPeriod', orgCode: w.users.agent, campaign: w.campaigns.b2b, startTime: AUTUMN_SUMMER.at, seconds: 60 },
      { type: 'calendar', code: `cal-${w.id}`, project: w.projects.b2b },
      {
        type: 'calendarEvent',
        calendarCode: `cal-${w.id}`,
        leadUniqueId: leadId,
        title: 'Call back',
        notes: '',
        start: AUTUMN.at,
        end: AUTUMN.at,
        source: '',
        externalId: '',
      },
      { type: 'savedSearch', user: w.users.agent, name: search, campaigns: [w.campaigns.b2b] },
    );
  });

  const window = { StartTime: '2026-10-25', TimeSpan: 'P1D' };
  const api = (p: string) => request(t.app).get(`/api${p}`);
  /** One family: how to ask for it and where its DateTime is in the answer. */
  const families: Family[] = [
    {
      name: 'calls JSON',
      ask: () => api('/calls').query({ OrgCode: w.users.agent, ...window }),
      read: (r) => firstItem(r).startTime,
      expected: AUTUMN,
    },
    {
      name: 'calls JSON with includes',
      ask: () => api('/calls').query({ OrgCode: w.units.root, ...window, Include: 'user,parent' }),
      read: (r) => firstItem(r).endTime,
      expected: AUTUMN,
    },
    {
      name: 'user calls',
      ask: () => api(`/users/${encodeURIComponent(w.users.agent)}/calls`).query(window),
      read: (r) => firstItem(r).connectTime,
      expected: AUTUMN,
    },
    {
      name: 'org unit calls',
      ask: () => api(`/organizationalunits/${encodeURIComponent(w.units.team)}/calls`).query(window),
      read: (r) => firstItem(r).startTime,
      expected: AUTUMN,
    },
    {
      name: 'calls CSV',
      ask: () => api('/calls/csv').query({ OrgCode: w.users.agent, ...window }),
      read: (r) => csvCell(r.text, 'endTime'),
      expected: AUTUMN,
    },
    { name: 'recordings', ask: () => api(`/calls/${callId}/recordings`), read: (r) => firstItem(r).startTime, expected: AUTUMN },
    {
      name: 'agent ready periods',
      ask: () => api('/calls/agentreadyperiods').query({ FromTime: '2026-10-25', TimeSpan: 'P1D' }),
      read: (r) => (r.body as { orgCode: string; startTime: string }[]).find((p) => p.orgCode === w.users.agent)!.startTime,
      expected: AUTUMN_SUMMER,
    },
    {
      name: 'simpleleads',
      ask: () => api('/simpleleads').query({ UniqueId: leadId }),
      read: (r) => firstItem(r).uploadTime,
      expected: SPRING,
    },
    {
      name: 'simpleleads with includes',
      ask: () => api('/simpleleads').query({ UniqueId: leadId, Include: 'campaign' }),
      read: (r) => firstItem(r).lastModifiedTime,
      expected: AUTUMN,
    },
    { name: 'one lead', ask: () => api(`/leads/${leadId}`), read: (r) => bodyObject(r).uploadTime, expected: SPRING },
    {
      name: 'saved search',
      ask: () => api('/leads').query({ searchName: search, modifiedFrom: '2026-01-01' }),
      read: (r) => firstItem(r).lastModifiedTime,
      expected: AUTUMN,
    },
    {
      name: 'saved search CSV',
      ask: () => api('/leads/csv').query({ searchName: search, modifiedFrom: '2026-01-01' }),
      read: (r) => csvCell(r.text, 'uploadTime'),
      expected: SPRING,
    },
    {
      name: 'calendar events',
      ask: () => api('/calendars/events').query({ FromDate: '2026-10-25', ToDate: '2026-10-26' }),
      read: (r) => firstItem(r).start,
      expected: AUTUMN,
    },
    {
      name: 'one calendar',
      ask: () => api(`/calendars/cal-${w.id}/events`).query({ FromDate: '2026-10-25', ToDate: '2026-10-26' }),
      read: (r) => firstItem(r).end,
      expected: AUTUMN,
    },
    { name: 'myaccount counts', ask: () => api('/myaccount/request/counts'), read: (r) => firstItem(r).periodStart, expected: NOW },
    {
      name: 'an HTML page (calendar events)',
      ask: () => api('/calendars/events').query({ FromDate: '2026-10-25', ToDate: '2026-10-26' }).set('Accept', 'text/html'),
      read: (r) => [AUTUMN.Offset, AUTUMN.Local].find((v) => r.text.includes(v)) ?? 'neither form',
      expected: AUTUMN,
    },
  ];

  describe.each(families)('$name', ({ ask, read, expected }) => {
    it('when the account is Offset and the request prefers nothing, then Offset, no Preference-Applied, Vary: Prefer', async () => {
      const res = await ask().set('Authorization', offsetAuth());
      expect(res.status).toBe(200);
      expect(read(res)).toBe(expected.Offset);
      expect(res.headers['preference-applied']).toBeUndefined();
      expect(res.headers['vary']).toMatch(/\bPrefer\b/);
    });

    it('when the account is Local and the request prefers nothing, then Local', async () => {
      const res = await ask().set('Authorization', local.auth);
      expect(res.status).toBe(200);
      expect(read(res)).toBe(expected.Local);
      expect(res.headers['preference-applied']).toBeUndefined();
    });

    it('when the account is Offset and the request prefers datetime=local, then Local and Preference-Applied says so', async () => {
      const res = await ask().set('Authorization', offsetAuth()).set('Prefer', 'datetime=local');
      expect(res.status).toBe(200);
      expect(read(res)).toBe(expected.Local);
      expect(res.headers['preference-applied']).toBe('datetime=local');
    });

    it('when the account is Local and the request prefers datetime=offset, then Offset and Preference-Applied says so', async () => {
      const res = await ask().set('Authorization', local.auth).set('Prefer', 'datetime=offset');
      expect(res.status).toBe(200);
      expect(read(res)).toBe(expected.Offset);
      expect(res.headers['preference-applied']).toBe('datetime=offset');
    });
  });

  describe('Prefer handling', () => {
    const calls = () => api('/calls').query({ OrgCode: w.users.agent, ...window });

    it('when the preference is quoted, mixed case and among others, then it is honoured', async () => {
      const res = await calls().set('Authorization', offsetAuth()).set('Prefer', 'respond-async, DateTime="Local"; x=1, wait=5');
      expect(firstItem(res).startTime).toBe(AUTUMN.Local);
      expect(res.headers['preference-applied']).toBe('datetime=local');
    });

    it('when the value is unknown, then the account format applies and nothing is reported applied', async () => {
      const res = await calls().set('Authorization', local.auth).set('Prefer', 'datetime=utc');
      expect(firstItem(res).startTime).toBe(AUTUMN.Local);
      expect(res.headers['preference-applied']).toBeUndefined();
    });

    it('when the endpoint writes no DateTimes, then the preference is not applied and the answer does not vary by it', async () => {
      const res = await api('/campaigns').set('Authorization', offsetAuth()).set('Prefer', 'datetime=local');
      expect(res.status).toBe(200);
      expect(res.headers['preference-applied']).toBeUndefined();
      expect(res.headers['vary'] ?? '').not.toMatch(/\bPrefer\b/);
    });

    it('when the request is refused with a problem, then no Preference-Applied is sent', async () => {
      const bad = await api('/calls')
        .query({ OrgCode: w.users.agent, StartTime: 'yesterday', TimeSpan: 'P1D' })
        .set('Authorization', offsetAuth())
        .set('Prefer', 'datetime=local');
      expect(bad.status).toBe(400);
      expect(bad.headers['preference-applied']).toBeUndefined();
      const unknown = await api('/calls')
        .query({ OrgCode: `nobody-${w.id}`, ...window })
        .set('Authorization', offsetAuth())
        .set('Prefer', 'datetime=local');
      expect(unknown.status).toBe(400);
      expect(unknown.headers['preference-applied']).toBeUndefined();
    });

    it('when a calendar event is created or replaced, then the answer follows the preference too', async () => {
      const body = {
        calendarCode: `cal-${w.id}`,
        leadUniqueId: leadId,
        title: 'New',
        notes: '',
        start: SPRING.at,
        end: SPRING.at,
        source: '',
        externalId: '',
      };
      const created = await request(t.app)
        .post('/api/calendars/events')
        .set('Authorization', offsetAuth())
        .set('Prefer', 'datetime=local')
        .send(body);
      expect(created.status).toBe(200);
      const event = created.body as { uniqueId: string; start: string };
      expect(event.start).toBe(SPRING.Local);
      expect(created.headers['preference-applied']).toBe('datetime=local');
      const replaced = await request(t.app)
        .put(`/api/calendars/events/${event.uniqueId}`)
        .set('Authorization', local.auth)
        .send({ ...body, uniqueId: event.uniqueId });
      expect(replaced.status).toBe(200);
      expect((replaced.body as { end: string }).end).toBe(SPRING.Local);
    });

    it('when the OpenAPI document describes an endpoint that writes DateTimes, then it documents Prefer', async () => {
      const doc = (await api('/openapi.json')).body as { paths: Record<string, Record<string, { parameters?: { name?: string }[] }>> };
      const params = (p: string, m = 'get') => (doc.paths[p]![m]!.parameters ?? []).map((x) => x.name);
      for (const p of ['/calls', '/calls/csv', '/simpleleads', '/leads/csv', '/calendars/events', '/myaccount/request/counts'])
        expect(params(p)).toContain('Prefer');
      expect(params('/calendars/events', 'post')).toContain('Prefer');
      expect(params('/campaigns')).not.toContain('Prefer');
      expect(params('/rawleads')).not.toContain('Prefer');
    });
  });

  describe('the account setting', () => {
    it('when /myaccount is read, then it carries orgCode (the same as userOrgCode) and the DateTime format', async () => {
      const res = await api('/myaccount').set('Authorization', local.auth);
      expect(res.body).toMatchObject({
        username: local.username,
        userOrgCode: w.users.agent,
        orgCode: w.users.agent,
        dateTimeFormat: 'Local',
      });
      expect(bodyObject(await api('/myaccount').set('Authorization', offsetAuth())).dateTimeFormat).toBe('Offset');
    });

    it('when lcm account create is given --date-time-format Local, then the account answers in Local; a bad value exits non-zero', async () => {
      const username = uniq('cli-local-');
      const env = { ...process.env, DATABASE_URL: testDatabaseUrl(), REDIS_URL: '', LOG_LEVEL: 'silent' };
      const args = [
        'account',
        'create',
        '--username',
        username,
        '--password',
        'pw',
        '--user',
        w.users.agent,
        '--projects',
        '*',
        '--rights',
        'Calls:Get',
      ];
      await run('node', [LCM, ...args, '--date-time-format', 'Local'], { env, timeout: 60_000 });
      const res = await api('/calls')
        .query({ OrgCode: w.users.agent, ...window })
        .set('Authorization', basicAuth(username, 'pw'));
      expect(firstItem(res).startTime).toBe(AUTUMN.Local);
      const bad = (await run('node', [LCM, ...args.map((a) => (a === username ? `${username}-bad` : a)), '--date-time-format', 'Utc'], {
        env,
        timeout: 60_000,
      }).catch((e: unknown) => e)) as { code?: number; stderr: string };
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toMatch(/unknown DateTime format "Utc" \(one of Offset, Local\)/);
    }, 120_000);

    it('when a loader record names an unknown format, then the load fails naming it', async () => {
      await expect(
        t.load({
          type: 'account',
          username: uniq('bad-'),
          password: 'pw',
          user: w.users.agent,
          projects: ['*'],
          rights: {},
          entryAccess: 'None',
          dateTimeFormat: 'Utc',
        }),
      ).rejects.toThrow(/dateTimeFormat/);
    });
  });
});
