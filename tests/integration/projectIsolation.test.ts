import request from 'supertest';
import { uniq } from '../harness/testApp';
import { World } from '../harness/world';
import { useTestWorld } from '../harness/useTestWorld';
import type { Endpoint } from '../../src/http/endpoint';

/**
 * Project rights across every data endpoint (docs/decisions.md, Project patterns): the account limited to `B2B-<id>*`
 * never sees data of the world's Retail project in lists, gets 404 for it by id, and 403 when
 * writing into it. One row per request; the guard at the end fails when an endpoint of the
 * API has no row, so a new endpoint joins the table.
 *
 * Every Retail identifier and value carries `RET-<id>` (the Retail campaign code) or
 * `Retail-<id>` (the project name); B2B ones carry `B2B-<id>`. Each row also has a positive
 * control: the all-projects account does reach the Retail data with the same request, so an
 * empty or broken answer cannot pass for isolation.
 */

type Expectation = 'list-excludes' | 'not-found' | 'forbidden';

interface Data {
  w: World;
  /** Retail and B2B markers: every identifier of that side contains its marker. */
  retail: string;
  b2b: string;
  calls: { b2b: string; retail: string };
  leads: { b2b: string; retail: string };
  calendars: { b2b: string; retail: string };
  savedSearch: string;
  /** A lead definition used only by a Retail campaign (its name carries the Retail marker). */
  retailDefinition: string;
  /** Loads a new event into the side's calendar and returns its unique id (for writes). */
  newEvent(side: 'b2b' | 'retail'): Promise<string>;
  /** Lists a new number on the do-not-call list for the side's project (all-projects account) and returns it in E.164. */
  newDoNotCallNumber(side: 'b2b' | 'retail'): Promise<string>;
}

interface Row {
  name: string;
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path(w: World, d: Data): string | Promise<string>;
  expect: Expectation;
  body?(w: World, d: Data, path: string): object;
}

// Times of the world's data, away from other files' data so narrow windows select only ours.
const CALL_TIME = '2031-02-03T04:05:06.000+01:00';
const WINDOW = 'StartTime=2031-02-03T04:00:00&TimeSpan=PT1H';
const LEAD_TIME = '2031-02-03T04:05:06.000+01:00';

/** A Faroese number no other test uses (do-not-call entries must not reach other files' leads). */
const faroeseNumber = () => `+298${String(Math.floor(Math.random() * 1e6)).padStart(6, '0')}`;

const lastSegment = (path: string) => decodeURIComponent(path.split('?')[0]!.split('/').pop()!);

const eventBody = (calendarCode: string, marker: string) => ({
  calendarCode,
  leadUniqueId: `${marker}-lead`,
  title: `Event ${marker}`,
  notes: '',
  start: '2031-02-03T10:00:00+01:00',
  end: '2031-02-03T10:30:00+01:00',
  source: 'crm',
  externalId: uniq(`${marker}-x-`),
});

const rows: Row[] = [
  // ---- calls family ----
  {
    name: 'calls of the agent',
    method: 'get',
    path: (w) => `/api/calls?OrgCode=${encodeURIComponent(w.users.agent)}&${WINDOW}&Include=campaign,user`,
    expect: 'list-excludes',
  },
  {
    name: 'calls of the team unit',
    method: 'get',
    path: (w) => `/api/calls?OrgCode=${encodeURIComponent(w.units.team)}&${WINDOW}`,
    expect: 'list-excludes',
  },
  {
    name: 'calls CSV',
    method: 'get',
    path: (w) => `/api/calls/csv?OrgCode=${encodeURIComponent(w.units.root)}&${WINDOW}`,
    expect: 'list-excludes',
  },
  {
    name: 'user calls',
    method: 'get',
    path: (w) => `/api/users/${encodeURIComponent(w.users.agent)}/calls?${WINDOW}&Include=campaign`,
    expect: 'list-excludes',
  },
  {
    name: 'org unit calls',
    method: 'get',
    path: (w) => `/api/organizationalunits/${encodeURIComponent(w.units.sales)}/calls?${WINDOW}`,
    expect: 'list-excludes',
  },
  {
    name: 'agent ready periods',
    method: 'get',
    path: () => '/api/calls/agentreadyperiods?FromTime=2031-02-03T04:00:00&TimeSpan=PT1H',
    expect: 'list-excludes',
  },
  {
    name: 'recordings of a Retail call',
    method: 'get',
    path: (_w, d) => `/api/calls/${encodeURIComponent(d.calls.retail)}/recordings`,
    expect: 'not-found',
  },
  // ---- organisation ----
  { name: 'users with campaigns', method: 'get', path: () => '/api/users?Include=campaigns', expect: 'list-excludes' },
  {
    name: 'the agent with campaigns',
    method: 'get',
    path: (w) => `/api/users/${encodeURIComponent(w.users.agent)}?Include=campaigns`,
    expect: 'list-excludes',
  },
  {
    name: 'org units with users and campaigns',
    method: 'get',
    path: () => '/api/orgunits?Include=users,campaigns',
    expect: 'list-excludes',
  },
  {
    name: 'the team org unit with users and campaigns',
    method: 'get',
    path: (w) => `/api/orgunits/${encodeURIComponent(w.units.team)}?Include=users,campaigns`,
    expect: 'list-excludes',
  },
  {
    name: 'organizational units with users and campaigns',
    method: 'get',
    path: () => '/api/organizationalunits?Include=users,campaigns',
    expect: 'list-excludes',
  },
  {
    name: 'the team organizational unit with users and campaigns',
    method: 'get',
    path: (w) => `/api/organizationalunits/${encodeURIComponent(w.units.team)}?Include=users,campaigns`,
    expect: 'list-excludes',
  },
  { name: 'campaigns', method: 'get', path: () => '/api/campaigns', expect: 'list-excludes' },
  { name: 'projects', method: 'get', path: () => '/api/projects', expect: 'list-excludes' },
  // ---- leads ----
  {
    name: 'simpleleads of every project',
    method: 'get',
    path: () => `/api/simpleleads?Projects=*&ModifiedFrom=2031-02-03T04:05:00&ModifiedTo=2031-02-03T04:05:07&Include=campaign`,
    expect: 'list-excludes',
  },
  {
    name: 'simpleleads naming the Retail project',
    method: 'get',
    path: (w) => `/api/simpleleads?Projects=${encodeURIComponent(w.projects.retail)},${encodeURIComponent(w.projects.b2b)}`,
    expect: 'list-excludes',
  },
  {
    name: 'simpleleads naming the Retail campaign',
    method: 'get',
    path: (w) => `/api/simpleleads?Campaigns=${w.campaigns.retail},${w.campaigns.b2b}`,
    expect: 'list-excludes',
  },
  {
    name: 'simpleleads naming the Retail lead',
    method: 'get',
    path: (_w, d) => `/api/simpleleads?UniqueId=${d.leads.retail},${d.leads.b2b}`,
    expect: 'list-excludes',
  },
  {
    name: 'rawleads naming the Retail campaign',
    method: 'get',
    path: (w) => `/api/rawleads?Campaigns=${w.campaigns.retail},${w.campaigns.b2b}`,
    expect: 'list-excludes',
  },
  {
    name: 'rawleads as CSV naming the Retail campaign',
    method: 'get',
    path: (w) => `/api/rawleads/csv?Campaigns=${w.campaigns.retail},${w.campaigns.b2b}`,
    expect: 'list-excludes',
  },
  {
    name: 'live events of the Retail and B2B projects (the JSON catch-up)',
    method: 'get',
    path: (w) => `/api/events?After=0&Projects=${encodeURIComponent(w.projects.retail)},${encodeURIComponent(w.projects.b2b)}`,
    expect: 'list-excludes',
  },
  {
    name: 'saved search',
    method: 'get',
    path: (_w, d) => `/api/leads?searchName=${encodeURIComponent(d.savedSearch)}&modifiedFrom=2031-02-03`,
    expect: 'list-excludes',
  },
  {
    name: 'saved search with a project override',
    method: 'get',
    path: (_w, d) => `/api/leads?searchName=${encodeURIComponent(d.savedSearch)}&modifiedFrom=2031-02-03&project=*`,
    expect: 'list-excludes',
  },
  {
    name: 'saved search CSV',
    method: 'get',
    path: (_w, d) => `/api/leads/csv?searchName=${encodeURIComponent(d.savedSearch)}&modifiedFrom=2031-02-03`,
    expect: 'list-excludes',
  },
  { name: 'a Retail lead by id', method: 'get', path: (_w, d) => `/api/leads/${encodeURIComponent(d.leads.retail)}`, expect: 'not-found' },
  {
    name: 'import into the Retail campaign',
    method: 'post',
    path: () => '/api/leads',
    expect: 'forbidden',
    body: (w, d) => ({ CampaignCode: w.campaigns.retail, Data: { Name: `Imported ${d.retail}`, Telefon: '+4511223344' } }),
  },
  // ---- do-not-call list ----
  { name: 'do-not-call numbers', method: 'get', path: () => '/api/donotcallnumbers', expect: 'list-excludes' },
  {
    name: 'do-not-call numbers naming the Retail project',
    method: 'get',
    path: (w) => `/api/donotcallnumbers?Project=${encodeURIComponent(w.projects.retail)}`,
    expect: 'list-excludes',
  },
  {
    name: 'list a number for the Retail project',
    method: 'post',
    path: () => '/api/donotcallnumbers',
    expect: 'forbidden',
    body: (w) => ({ phoneNumber: faroeseNumber(), project: w.projects.retail, note: `for ${w.campaigns.retail}` }),
  },
  {
    name: 'remove a Retail-only number',
    method: 'delete',
    path: async (_w, d) => `/api/donotcallnumbers/${encodeURIComponent(await d.newDoNotCallNumber('retail'))}`,
    expect: 'not-found',
  },
  {
    name: "remove a number from the Retail project's list",
    method: 'delete',
    path: async (w, d) =>
      `/api/donotcallnumbers/${encodeURIComponent(await d.newDoNotCallNumber('retail'))}?Project=${encodeURIComponent(w.projects.retail)}`,
    expect: 'forbidden',
  },
  {
    name: 'bulk import into the Retail campaign',
    method: 'post',
    path: (w) => `/api/leads/bulk?CampaignCode=${encodeURIComponent(w.campaigns.retail)}`,
    expect: 'forbidden',
    body: (_w, d) => [{ Name: `Bulk ${d.retail}`, Telefon: '+4511223344' }],
  },
  // ---- calendar events ----
  {
    name: 'calendar events of every calendar',
    method: 'get',
    path: () => '/api/calendars/events?FromDate=2031-02-03&ToDate=2031-02-04',
    expect: 'list-excludes',
  },
  {
    name: 'calendar events naming the Retail project',
    method: 'get',
    path: (w) => `/api/calendars/events?FromDate=2031-02-03&ToDate=2031-02-04&Project=${encodeURIComponent(w.projects.retail)}`,
    expect: 'list-excludes',
  },
  {
    name: 'events of the Retail calendar',
    method: 'get',
    path: (_w, d) => `/api/calendars/${encodeURIComponent(d.calendars.retail)}/events?FromDate=2031-02-03&ToDate=2031-02-04`,
    expect: 'not-found',
  },
  {
    name: 'create an event in the Retail calendar',
    method: 'post',
    path: () => '/api/calendars/events',
    expect: 'forbidden',
    body: (_w, d) => eventBody(d.calendars.retail, d.retail),
  },
  {
    name: 'update a Retail event',
    method: 'put',
    path: async (_w, d) => `/api/calendars/events/${await d.newEvent('retail')}`,
    expect: 'not-found',
    body: (_w, d, path) => ({ ...eventBody(d.calendars.retail, d.retail), uniqueId: lastSegment(path) }),
  },
  {
    name: 'move a B2B event into the Retail calendar',
    method: 'put',
    path: async (_w, d) => `/api/calendars/events/${await d.newEvent('b2b')}`,
    expect: 'forbidden',
    body: (_w, d, path) => ({ ...eventBody(d.calendars.retail, d.retail), uniqueId: lastSegment(path) }),
  },
  {
    name: 'delete a Retail event',
    method: 'delete',
    path: async (_w, d) => `/api/calendars/events/${await d.newEvent('retail')}`,
    expect: 'not-found',
    body: (_w, _d, path) => ({ uniqueId: lastSegment(path) }),
  },
  // ---- hooks ----
  {
    name: 'a hook on the Retail campaign',
    method: 'post',
    path: () => '/api/hooks',
    expect: 'forbidden',
    body: (w, d) => ({ name: `Hook ${d.retail}`, url: 'https://crm.example.com/in', campaignCode: w.campaigns.retail }),
  },
  // ---- campaigns and lead definitions ----
  {
    name: 'the Retail campaign',
    method: 'get',
    path: (w) => `/api/campaigns/${encodeURIComponent(w.campaigns.retail)}`,
    expect: 'not-found',
  },
  { name: 'lead definitions', method: 'get', path: () => '/api/leaddefinitions', expect: 'list-excludes' },
  {
    name: 'a lead definition used only in Retail',
    method: 'get',
    path: (_w, d) => `/api/leaddefinitions/${d.retailDefinition}`,
    expect: 'not-found',
  },
  // ---- lead changes (last: the all-projects control really changes the Retail lead) ----
  {
    name: 'patch a Retail lead',
    method: 'patch',
    path: (_w, d) => `/api/leads/${encodeURIComponent(d.leads.retail)}`,
    expect: 'not-found',
    body: () => ({ priority: 3 }),
  },
  {
    name: 'anonymize a Retail lead',
    method: 'post',
    path: (_w, d) => `/api/leads/${encodeURIComponent(d.leads.retail)}/anonymize`,
    expect: 'not-found',
  },
];

/** Services that are not data endpoints: operations, documentation (the index of GET /api) and the account's own. */
// Hooks other than their creation are the account's own (another account's hook is a 404, and
// their events pass the project rights when written and again when sent: tests/integration/hookEvents.test.ts).
const NOT_DATA =
  /^(index|healthz|readyz|metrics|openapi|docs|problems\.(list|get)|myaccount(\..*)?|hooks\.(list|get|meta|update|delete|example|test|deliveries|redeliver))$/;

/** The endpoint Express dispatches a request to: the first in mount order whose route matches. */
function routeOf(endpoints: readonly Endpoint[], method: string, path: string): Endpoint | undefined {
  const pathname = path.split('?')[0]!.replace(/^\/api/, '');
  return endpoints.find((e) => {
    if (e.method !== method) return false;
    const pattern = e.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+');
    return new RegExp(`^${pattern}/?$`, 'i').test(pathname);
  });
}

describe('project isolation across the data endpoints', () => {
  const { t, w } = useTestWorld();
  let d: Data;

  beforeAll(async () => {
    const retail = w.campaigns.retail; // RET-<id>
    const b2b = w.campaigns.b2b; // B2B-<id>
    const side = { b2b, retail };
    d = {
      w,
      retail,
      b2b,
      calls: { b2b: `${b2b}-call`, retail: `${retail}-call` },
      leads: { b2b: `${b2b}-lead`, retail: `${retail}-lead` },
      calendars: { b2b: `cal-${b2b}`, retail: `cal-${retail}` },
      savedSearch: `search ${w.id}`,
      retailDefinition: `ld-${retail}`,
      async newEvent(which) {
        const uniqueId = uniq(`${side[which]}-ev-`);
        await t.load({ type: 'calendarEvent', uniqueId, ...eventBody(d.calendars[which], side[which]) });
        return uniqueId;
      },
      async newDoNotCallNumber(which) {
        const res = await request(t.app)
          .post('/api/donotcallnumbers')
          .set('Authorization', w.accounts.full.auth)
          .send({ phoneNumber: faroeseNumber(), project: w.projects[which], note: `listed in ${side[which]}` });
        expect(res.status).toBe(200);
        return (res.body as { phoneNumber: string }).phoneNumber;
      },
    };
    const records: Record<string, unknown>[] = [];
    for (const s of ['b2b', 'retail'] as const) {
      const marker = side[s];
      records.push(
        {
          type: 'lead',
          campaign: w.campaigns[s],
          uniqueId: d.leads[s],
          data: {
            Name: `Customer ${marker}`,
            Telefon: '+4512345678',
            Customer: `${marker}-customer`,
            Revenue: '10',
            Secret: `${marker}-secret`,
          },
          pool: `Pool ${marker}`,
          uploadTime: LEAD_TIME,
          lastModifiedTime: LEAD_TIME,
          ownerOrgUnit: w.units.team,
          uploadedByUser: w.users.agent,
          lastModifiedByUser: w.users.agent,
        },
        {
          type: 'call',
          campaign: w.campaigns[s],
          user: w.users.agent,
          uniqueId: d.calls[s],
          uniqueLeadId: d.leads[s],
          leadPhoneNumber: '+4512345678',
          leadExternalKey: `${marker}-customer`,
          endCause: 'NormalDisconnect',
          inProgress: false,
          connected: true,
          incoming: false,
          startTime: CALL_TIME,
          connectTime: '2031-02-03T04:05:16.000+01:00',
          endTime: '2031-02-03T04:09:06.000+01:00',
          previewDuration: 'PT5S',
          dialingDuration: 'PT10S',
          conversationDuration: 'PT3M50S',
          campaignType: s === 'b2b' ? 'PowerDialer' : 'PredictiveDialer',
        },
        {
          type: 'recording',
          call: d.calls[s],
          startTime: '2031-02-03T04:05:16.000+01:00',
          endTime: '2031-02-03T04:09:06.000+01:00',
          recordingType: 'FullRecording',
          fileName: `${marker}-recording.wav`,
        },
        {
          type: 'readyPeriod',
          orgCode: w.users.agent,
          campaign: w.campaigns[s],
          startTime: '2031-02-03T04:00:30.000+01:00',
          seconds: 60,
          uniqueId: `${marker}-ready`,
        },
        { type: 'calendar', code: d.calendars[s], name: `Calendar ${marker}`, project: w.projects[s] },
        { type: 'calendarEvent', uniqueId: `${marker}-event`, ...eventBody(d.calendars[s], marker) },
      );
    }
    records.push(
      { type: 'leadDefinition', name: `Definition of ${retail}`, uniqueId: d.retailDefinition, fields: [{ name: 'Phone', type: 'phone' }] },
      {
        type: 'campaign',
        code: `${retail}-2`,
        name: 'Retail 2',
        project: w.projects.retail,
        leadDefinition: `Definition of ${retail}`,
        campaignType: 'Master',
      },
    );
    records.push({ type: 'savedSearch', user: w.users.agent, name: d.savedSearch, campaigns: [w.campaigns.b2b, w.campaigns.retail] });
    await t.load(...records);
    await d.newDoNotCallNumber('b2b');
    await d.newDoNotCallNumber('retail');
  });

  /** True when the text shows any Retail data of this world. */
  const showsRetail = (text: string) => text.includes(w.campaigns.retail) || text.includes(w.projects.retail);

  function send(row: Row, path: string, auth: string) {
    const req = request(t.app)[row.method](path).set('Authorization', auth);
    return row.body ? req.send(row.body(w, d, path)) : req;
  }

  it.each(rows.map((r) => [`${r.method.toUpperCase()} ${r.name}`, r] as const))(
    'when the B2B-limited account asks: %s, then no Retail data reaches it',
    async (_name, row) => {
      const path = await row.path(w, d);
      const limited = await send(row, path, w.accounts.b2b.auth);
      switch (row.expect) {
        case 'list-excludes': {
          expect({ path, status: limited.status }).toEqual({ path, status: 200 });
          expect(showsRetail(limited.text)).toBe(false);
          const all = await send(row, path, w.accounts.full.auth);
          expect(all.status).toBe(200);
          // Control: the same request does show Retail data to the all-projects account.
          expect(showsRetail(all.text)).toBe(true);
          break;
        }
        case 'not-found': {
          expect({ path, status: limited.status }).toEqual({ path, status: 404 });
          expect(limited.body).toMatchObject({ code: 'not_found' });
          // The answer may echo what it was asked for (the path), but must reveal nothing more.
          let echoFree = limited.text;
          for (const segment of path.split('?')[0]!.split('/')) {
            echoFree = echoFree.split(segment).join('').split(decodeURIComponent(segment)).join('');
          }
          expect(showsRetail(echoFree)).toBe(false);
          // Control: the thing exists and is reachable with every project.
          const all = await send(row, path, w.accounts.full.auth);
          expect(all.status).toBeGreaterThanOrEqual(200);
          expect(all.status).toBeLessThan(300);
          break;
        }
        case 'forbidden': {
          expect({ path, status: limited.status }).toEqual({ path, status: 403 });
          expect(limited.body).toMatchObject({ code: 'forbidden' });
          // Control: the same write is valid for the all-projects account.
          const all = await send(row, path, w.accounts.full.auth);
          expect(all.status).toBeGreaterThanOrEqual(200);
          expect(all.status).toBeLessThan(300);
          const answer = all.body as object | null | undefined;
          if (answer && 'success' in answer) expect(answer.success).toBe(true);
          break;
        }
      }
    },
  );

  it('when the B2B-limited account lists, then it does see its own B2B data (the isolation is not an empty answer)', async () => {
    for (const path of [
      `/api/calls?OrgCode=${encodeURIComponent(w.users.agent)}&${WINDOW}`,
      `/api/simpleleads?Campaigns=${w.campaigns.b2b}`,
      `/api/calendars/events?FromDate=2031-02-03&ToDate=2031-02-04`,
      `/api/calls/${encodeURIComponent(d.calls.b2b)}/recordings`,
      `/api/leads/${encodeURIComponent(d.leads.b2b)}`,
      '/api/campaigns',
    ]) {
      const res = await request(t.app).get(path).set('Authorization', w.accounts.b2b.auth);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      expect({ path, hasB2B: res.text.includes(w.campaigns.b2b) || res.text.includes(`${w.campaigns.b2b}-recording`) }).toEqual({
        path,
        hasB2B: true,
      });
    }
  });

  it('when the API lists its endpoints, then every data endpoint has a row in this table', async () => {
    const endpoints = t.composed.app.endpoints;
    const covered = new Set<Endpoint>();
    for (const row of rows) {
      const path = await row.path(w, d);
      const endpoint = routeOf(endpoints, row.method, path);
      expect({ row: row.name, routed: endpoint !== undefined }).toEqual({ row: row.name, routed: true });
      covered.add(endpoint!);
    }
    const missing = endpoints
      .filter((e) => !NOT_DATA.test(e.service) && !covered.has(e))
      .map((e) => `${e.method.toUpperCase()} ${e.path} (${e.service})`);
    expect(missing).toEqual([]);
  });
});
