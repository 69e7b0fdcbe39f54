import request from 'supertest';
import { useTestWorld } from '../harness/useTestWorld';
import { dateTimeFormatter, formatDateTime } from '../../src/domain/datetime';
import type { ProblemFieldError } from '../../src/http/problem';

/**
 * The calls family over the real stack: window, order, Limit, Include, parameters, org codes
 * in paths, org-unit descendants, recordings, agent ready periods and project scope.
 */

interface OrgUnit {
  orgCode: string;
  level: number;
  parent?: OrgUnit | null;
}
interface Campaign {
  code: string;
  project: string;
}
interface Call {
  uniqueId: string;
  startTime: string;
  organizationalUnits: OrgUnit[];
  campaign?: Campaign;
  user?: { campaigns?: Campaign[]; parent?: OrgUnit };
}
interface Recording {
  fileName: string;
}
interface ReadyPeriod {
  uniqueId: string;
}
interface Problem {
  code: string;
  errors: ProblemFieldError[];
}

const callsOf = (res: request.Response) => res.body as Call[];
const problemOf = (res: request.Response) => res.body as Problem;
const anyString = expect.any(String) as jest.AsymmetricMatcher;

const { t, w } = useTestWorld();
/** Unique ids of the calls, by their role in the tests. */
const ids: Record<string, string> = {};

function call(key: string, overrides: Record<string, unknown>): Record<string, unknown> {
  ids[key] = `${w.id}-${key}`;
  return {
    type: 'call',
    uniqueId: ids[key],
    campaign: w.campaigns.b2b,
    user: w.users.agent,
    uniqueLeadId: `lead-${w.id}-${key}`,
    leadPhoneNumber: '+4512345678',
    endCause: 'NoResponse',
    inProgress: false,
    connected: false,
    incoming: false,
    previewDuration: 'PT5S',
    ...overrides,
  };
}

beforeAll(async () => {
  await t.load(
    // The window 10:00–12:00 on 6 May 2026 (CEST).
    call('before', { startTime: '2026-05-06T09:59:59.999+02:00' }),
    call('a-start', {
      startTime: '2026-05-06T10:00:00+02:00',
      connected: true,
      connectTime: '2026-05-06T10:00:07.250+02:00',
      endTime: '2026-05-06T10:12:49.250+02:00',
      dialingDuration: 'PT7.25S',
      conversationDuration: 'PT12M42S',
      wrapUpDuration: 'PT30S',
      endCause: 'NormalDisconnect',
      leadStatus: 'UserProcessed',
      preCallLeadStatus: 'New',
      leadClosure: 'Success',
      leadExternalKey: 'CUST-1',
    }),
    // Same start time: ordered by unique id (b-… before c-…).
    call('c-tie', { startTime: '2026-05-06T10:30:00+02:00', user: w.users.other }),
    call('b-tie', { startTime: '2026-05-06T10:30:00+02:00', campaign: w.campaigns.retail }),
    call('last-in', { startTime: '2026-05-06T11:59:59.999+02:00' }),
    call('at-end', { startTime: '2026-05-06T12:00:00+02:00' }),
    // Stored with a chain of the root only: not a call of Sales or Team, whatever the user's unit now.
    call('root-chain', { startTime: '2026-05-06T10:45:00+02:00', organizationalUnits: [w.units.root] }),
    // Around the spring-forward change of 29 March 2026 (02:00 CET → 03:00 CEST).
    call('dst-before', { startTime: '2026-03-28T23:59:59+01:00' }),
    call('dst-first', { startTime: '2026-03-29T00:00:00+01:00' }),
    call('dst-03', { startTime: '2026-03-29T03:00:00+02:00' }),
    call('dst-last', { startTime: '2026-03-29T23:59:59+02:00' }),
    call('dst-after', { startTime: '2026-03-30T00:00:00+02:00' }),
    // Three days later, for the .NET TimeSpan form.
    call('day3', { startTime: '2026-05-09T09:00:00+02:00' }),
    {
      type: 'recording',
      call: `${w.id}-a-start`,
      startTime: '2026-05-06T10:00:07.250+02:00',
      endTime: '2026-05-06T10:05:00+02:00',
      recordingType: 'PartialRecording',
      fileName: 'part1.wav',
    },
    {
      type: 'recording',
      call: `${w.id}-a-start`,
      startTime: '2026-05-06T10:05:00+02:00',
      recordingType: 'PartialRecording',
      fileName: 'part2.wav',
    },
    {
      type: 'recording',
      call: `${w.id}-a-start`,
      startTime: '2026-05-06T10:00:00+02:00',
      endTime: '2026-05-06T10:12:49.250+02:00',
      recordingType: 'FullRecording',
      fileName: 'full.wav',
    },
    {
      type: 'recording',
      call: `${w.id}-b-tie`,
      startTime: '2026-05-06T10:30:05+02:00',
      recordingType: 'FullRecording',
      fileName: 'retail.wav',
    },
  );
  ids['a-start'] = `${w.id}-a-start`;
});

const WINDOW = { StartTime: '2026-05-06T10:00:00+02:00', TimeSpan: 'PT2H' };

function get(path: string, query: Record<string, string | string[]> = {}, auth = w.accounts.full.auth) {
  return request(t.app).get(path).query(query).set('Authorization', auth);
}

const uniqueIds = (res: request.Response) => callsOf(res).map((c) => c.uniqueId);

describe('GET /api/calls', () => {
  it('when a window is asked for an org unit, then calls from StartTime inclusive to the end exclusive come ordered by start time, then unique id', async () => {
    const res = await get('/api/calls', { OrgCode: w.units.root, ...WINDOW });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(uniqueIds(res)).toEqual([ids['a-start'], ids['b-tie'], ids['c-tie'], ids['root-chain'], ids['last-in']]);
  });

  it('when Limit is given, then the first calls of the window up to Limit come', async () => {
    const res = await get('/api/calls', { OrgCode: w.units.root, ...WINDOW, Limit: '2' });
    expect(uniqueIds(res)).toEqual([ids['a-start'], ids['b-tie']]);
  });

  it('when nothing is included, then a call has its fields in the documented order, its org units root first, and no absent optional field', async () => {
    const res = await get('/api/calls', { OrgCode: w.users.agent, ...WINDOW, Limit: '1' });
    const unit = async (code: string) =>
      (await t.db('org_units').where({ org_code: code }).first()) as { unique_id: string; name: string; level: number };
    const [root, sales, team] = [await unit(w.units.root), await unit(w.units.sales), await unit(w.units.team)];
    expect(JSON.stringify(callsOf(res)[0])).toBe(
      JSON.stringify({
        organizationalUnits: [
          { uniqueId: root.unique_id, name: 'Root', orgCode: w.units.root, level: 0 },
          { uniqueId: sales.unique_id, name: 'Sales', orgCode: w.units.sales, level: 1 },
          { uniqueId: team.unique_id, name: 'Team Tryg', orgCode: w.units.team, level: 2 },
        ],
        uniqueId: ids['a-start'],
        uniqueLeadId: `lead-${w.id}-a-start`,
        leadPhoneNumber: '+4512345678',
        leadExternalKey: 'CUST-1',
        endCause: 'NormalDisconnect',
        inProgress: false,
        connected: true,
        incoming: false,
        startTime: '2026-05-06T10:00:00.000+02:00',
        connectTime: '2026-05-06T10:00:07.250+02:00',
        endTime: '2026-05-06T10:12:49.250+02:00',
        previewDuration: 'PT5S',
        dialingDuration: 'PT7.25S',
        conversationDuration: 'PT12M42S',
        wrapUpDuration: 'PT30S',
        leadStatus: 'UserProcessed',
        preCallLeadStatus: 'New',
        leadClosure: 'Success',
        campaignType: 'PowerDialer',
      }),
    );
    const sparse = await get('/api/calls', { OrgCode: w.users.agent, StartTime: '2026-05-06T12:00:00+02:00', TimeSpan: 'PT1S' });
    expect(Object.keys(callsOf(sparse)[0]!)).toEqual([
      'organizationalUnits',
      'uniqueId',
      'uniqueLeadId',
      'leadPhoneNumber',
      'endCause',
      'inProgress',
      'connected',
      'incoming',
      'startTime',
      'previewDuration',
      'campaignType',
    ]);
  });

  it('when campaign and user are included, then both are full objects and the user carries projects and roles', async () => {
    const res = await get('/api/calls', { OrgCode: w.users.agent, ...WINDOW, Include: 'campaign,user', Limit: '1' });
    const c = callsOf(res)[0]!;
    expect(Object.keys(c).slice(0, 3)).toEqual(['campaign', 'user', 'organizationalUnits']);
    expect(c.campaign).toEqual({
      uniqueId: anyString,
      name: 'B2B campaign',
      code: w.campaigns.b2b,
      project: w.projects.b2b,
      leadDefinitionUniqueId: anyString,
      active: true,
    });
    expect(c.user).toEqual({
      uniqueId: anyString,
      username: `agent-${w.id}`,
      name: 'Agent Ærø',
      orgCode: w.users.agent,
      projects: [w.projects.b2b, w.projects.retail],
      roles: [],
    });
  });

  it('when Include is repeated and names nested properties, then user campaigns and parent come, without repeating the call campaign', async () => {
    const res = await get('/api/calls', { OrgCode: w.users.agent, ...WINDOW, Include: ['user', 'campaigns', 'campaign'], Limit: '1' });
    const c = callsOf(res)[0]!;
    expect(c.campaign!.code).toBe(w.campaigns.b2b);
    // The call's campaign is already in this object: only the other one is listed (an object already emitted is not repeated: docs/decisions.md, Include engine).
    expect(c.user!.campaigns!.map((x) => x.code)).toEqual([w.campaigns.retail]);
    expect(c.user!.parent).toBeUndefined();
  });

  it('when the include engine writes the calls instead of the direct writer, then the text is the same byte for byte', async () => {
    // organizationalUnits is always present; naming it sends the rows through the generic engine.
    const direct = await get('/api/calls', { OrgCode: w.units.root, ...WINDOW, Include: 'campaign,user' });
    const engine = await get('/api/calls', { OrgCode: w.units.root, ...WINDOW, Include: 'campaign,user,organizationalUnits' });
    expect(direct.body).toHaveLength(5);
    expect(engine.text).toBe(direct.text);
  });

  it('when a nested name comes without its parent property, then it has no effect', async () => {
    const res = await get('/api/calls', { OrgCode: w.users.agent, ...WINDOW, Include: 'campaigns', Limit: '1' });
    const [c] = callsOf(res);
    expect(c!.user).toBeUndefined();
    expect(c!.campaign).toBeUndefined();
  });

  it('when parent is included, then the root of organizationalUnits has parent null and no unit repeats', async () => {
    const res = await get('/api/calls', { OrgCode: w.users.agent, ...WINDOW, Include: 'parent', Limit: '1' });
    const units = callsOf(res)[0]!.organizationalUnits;
    expect(units.map((u) => u.orgCode)).toEqual([w.units.root, w.units.sales, w.units.team]);
    expect(units[0]!.parent).toBeNull();
    // The parents of Sales and Team are already in the array.
    expect(units[1]!.parent).toBeUndefined();
    expect(units[2]!.parent).toBeUndefined();
  });

  it('when unknown include names come, then they are ignored', async () => {
    const res = await get('/api/calls', { OrgCode: w.users.agent, ...WINDOW, Include: 'nonsense,campaign', Limit: '1' });
    expect(res.status).toBe(200);
    expect(callsOf(res)[0]!.campaign!.code).toBe(w.campaigns.b2b);
  });

  it('when parameter names come in another case, then they are the same parameters', async () => {
    const res = await get('/api/calls', {
      orgcode: w.units.root,
      STARTTIME: WINDOW.StartTime,
      timeSpan: 'PT2H',
      LIMIT: '1',
      include: 'Campaign',
    });
    expect(res.status).toBe(200);
    expect(uniqueIds(res)).toEqual([ids['a-start']]);
    expect(callsOf(res)[0]!.campaign!.code).toBe(w.campaigns.b2b);
  });

  it('when the org code is a user, then only that user’s calls come', async () => {
    const res = await get('/api/calls', { OrgCode: w.users.other, ...WINDOW });
    expect(uniqueIds(res)).toEqual([ids['c-tie']]);
  });

  it('when the org code is neither a user nor a unit, then it is a 400 naming OrgCode', async () => {
    const res = await get('/api/calls', { OrgCode: `nobody-${w.id}`, ...WINDOW });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(problemOf(res).code).toBe('invalid_parameter');
    expect(problemOf(res).errors).toEqual([{ parameter: 'OrgCode', message: anyString }]);
  });

  it.each([
    [{ StartTime: WINDOW.StartTime, TimeSpan: 'PT2H' }, 'missing_parameter', 'OrgCode'],
    [{ OrgCode: 'x', TimeSpan: 'PT2H' }, 'missing_parameter', 'StartTime'],
    [{ OrgCode: 'x', StartTime: WINDOW.StartTime }, 'missing_parameter', 'TimeSpan'],
    [{ OrgCode: 'x', StartTime: 'yesterday', TimeSpan: 'PT2H' }, 'invalid_parameter', 'StartTime'],
    [{ OrgCode: 'x', StartTime: WINDOW.StartTime, TimeSpan: 'pt2h' }, 'invalid_parameter', 'TimeSpan'],
    [{ OrgCode: 'x', StartTime: WINDOW.StartTime, TimeSpan: '-PT2H' }, 'invalid_parameter', 'TimeSpan'],
    [{ OrgCode: 'x', StartTime: WINDOW.StartTime, TimeSpan: 'PT2H', Limit: '0' }, 'invalid_parameter', 'Limit'],
  ])('when the parameters are %j, then it is a 400 %s naming %s', async (query, code, parameter) => {
    const res = await get('/api/calls', query);
    expect(res.status).toBe(400);
    expect(problemOf(res).code).toBe(code);
    expect(problemOf(res).errors.map((e) => e.parameter)).toContain(parameter);
  });

  it('when Limit is not a number, then it is a 400 naming Limit', async () => {
    const res = await get('/api/calls', { OrgCode: w.units.root, ...WINDOW, Limit: 'ten' });
    expect(res.status).toBe(400);
    expect(problemOf(res).errors).toEqual([{ parameter: 'Limit', message: anyString }]);
  });

  it('when TimeSpan has the .NET form 3.00:00:00, then the window is three days', async () => {
    const res = await get('/api/calls', { OrgCode: w.users.agent, StartTime: '2026-05-06T09:00:00+02:00', TimeSpan: '3.00:00:00' });
    expect(uniqueIds(res)).not.toContain(ids['day3']);
    const longer = await get('/api/calls', { OrgCode: w.users.agent, StartTime: '2026-05-06T09:00:00+02:00', TimeSpan: '3.00:00:01' });
    expect(uniqueIds(longer)).toContain(ids['day3']);
    expect(uniqueIds(longer)).toContain(ids['before']);
  });

  it('when StartTime is a date alone on the day clocks spring forward, then the window is that local day of 23 hours', async () => {
    const res = await get('/api/calls', { OrgCode: w.users.agent, StartTime: '2026-03-29', TimeSpan: 'P1D' });
    expect(uniqueIds(res)).toEqual([ids['dst-first'], ids['dst-03'], ids['dst-last']]);
    expect(callsOf(res)[0]!.startTime).toBe('2026-03-29T00:00:00.000+01:00');
    expect(callsOf(res)[2]!.startTime).toBe('2026-03-29T23:59:59.000+02:00');
  });

  it('when StartTime has no offset, then it is platform local time (summer time after the change)', async () => {
    const res = await get('/api/calls', { OrgCode: w.users.agent, StartTime: '2026-03-29T03:00:00', TimeSpan: 'PT1S' });
    expect(uniqueIds(res)).toEqual([ids['dst-03']]);
    // 24 hours from local midnight on that day reach into the next day by one hour.
    const exact = await get('/api/calls', { OrgCode: w.users.agent, StartTime: '2026-03-29T00:00:00', TimeSpan: 'PT24H' });
    expect(uniqueIds(exact)).toEqual([ids['dst-first'], ids['dst-03'], ids['dst-last'], ids['dst-after']]);
  });

  it('when the client accepts only text/html, then it is a 406', async () => {
    const res = await get('/api/calls', { OrgCode: w.units.root, ...WINDOW }).set('Accept', 'text/html');
    expect(res.status).toBe(406);
    expect(problemOf(res).code).toBe('not_acceptable');
  });

  it('when Accept names application/json with parameters (charset, q), then the calls come as JSON, not a 406', async () => {
    for (const accept of [
      'application/json; charset=utf-8',
      'text/html;q=0.9, application/json;charset="UTF-8";q=0.5',
      'application/json;odata=verbose',
    ]) {
      const res = await get('/api/calls', { OrgCode: w.units.root, ...WINDOW }).set('Accept', accept);
      expect([accept, res.status, res.headers['content-type']]).toEqual([accept, 200, 'application/json; charset=utf-8']);
      expect(uniqueIds(res)[0]).toBe(ids['a-start']);
    }
    // Parameters do not make an unacceptable type acceptable.
    const refused = await get('/api/calls', { OrgCode: w.units.root, ...WINDOW }).set('Accept', 'text/html; charset=utf-8');
    expect(refused.status).toBe(406);
  });

  it('when Accept names JSON by another name (text/json, as ASP.NET clients ask), then the calls come as application/json', async () => {
    for (const accept of ['text/json', 'text/x-json', 'application/x-json', 'text/json; charset=utf-8', 'text/html;q=0.5, text/json']) {
      const res = await get('/api/calls', { OrgCode: w.units.root, ...WINDOW }).set('Accept', accept);
      expect([accept, res.status, res.headers['content-type']]).toEqual([accept, 200, 'application/json; charset=utf-8']);
      expect(uniqueIds(res)[0]).toBe(ids['a-start']);
    }
    // A small service that also answers HTML keeps the client's preference among its types.
    const limits = (accept: string) =>
      request(t.app).get('/api/myaccount/request/limits').set('Authorization', w.accounts.full.auth).set('Accept', accept);
    expect((await limits('text/json')).headers['content-type']).toBe('application/json; charset=utf-8');
    expect((await limits('text/html, text/json;q=0.5')).headers['content-type']).toBe('text/html; charset=utf-8');
    expect((await limits('text/html;q=0.5, text/json')).headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it('when the account lacks the Calls right, then it is a 403', async () => {
    const res = await get('/api/calls', { OrgCode: w.units.root, ...WINDOW }, w.accounts.none.auth);
    expect(res.status).toBe(403);
  });

  it('when the account sees only B2B projects, then Retail calls are left out', async () => {
    const res = await get('/api/calls', { OrgCode: w.units.root, ...WINDOW, Include: 'campaign' }, w.accounts.b2b.auth);
    expect(uniqueIds(res)).toEqual([ids['a-start'], ids['c-tie'], ids['root-chain'], ids['last-in']]);
    expect(callsOf(res).every((c) => c.campaign!.project === w.projects.b2b)).toBe(true);
  });

  it('when the window holds no call, then the answer is an empty array', async () => {
    const res = await get('/api/calls', { OrgCode: w.units.root, StartTime: '2020-01-01', TimeSpan: 'P1D' });
    expect(res.status).toBe(200);
    expect(res.text).toBe('[]');
  });
});

describe('GET /api/users/{OrgCode}/calls', () => {
  it('when the user exists, then their calls of the window come', async () => {
    const res = await get(`/api/users/${encodeURIComponent(w.users.agent)}/calls`, WINDOW);
    expect(res.status).toBe(200);
    expect(uniqueIds(res)).toEqual([ids['a-start'], ids['b-tie'], ids['root-chain'], ids['last-in']]);
  });

  it('when no user has the org code (or it is a unit), then it is a 404', async () => {
    expect((await get(`/api/users/nobody-${w.id}/calls`, WINDOW)).status).toBe(404);
    const unit = await get(`/api/users/${encodeURIComponent(w.units.sales)}/calls`, WINDOW);
    expect(unit.status).toBe(404);
    expect(problemOf(unit).code).toBe('not_found');
  });

  it('when a parameter is missing, then it is a 400 naming it', async () => {
    const res = await get(`/api/users/${encodeURIComponent(w.users.agent)}/calls`, { StartTime: WINDOW.StartTime });
    expect(res.status).toBe(400);
    expect(problemOf(res).errors[0]!.parameter).toBe('TimeSpan');
  });

  it('when the client accepts only text/html, then it is a 406', async () => {
    const res = await get(`/api/users/${encodeURIComponent(w.users.agent)}/calls`, WINDOW).set('Accept', 'text/html');
    expect(res.status).toBe(406);
  });
});

describe('GET /api/organizationalunits/{OrgCode}/calls', () => {
  it('when the org code holds spaces, a slash and æøå, then the percent-encoded path finds the unit', async () => {
    expect(w.units.team).toMatch(/^TRYG Forsikring A\/S .* æøå$/);
    const res = await get(`/api/organizationalunits/${encodeURIComponent(w.units.team)}/calls`, WINDOW);
    expect(res.status).toBe(200);
    // The agent's calls stored under Team; not the one stored with the root-only chain.
    expect(uniqueIds(res)).toEqual([ids['a-start'], ids['b-tie'], ids['last-in']]);
  });

  it('when a unit has units below it, then their calls come too, judged by the chain stored on each call', async () => {
    const res = await get(`/api/organizationalunits/${encodeURIComponent(w.units.sales)}/calls`, WINDOW);
    expect(uniqueIds(res)).toEqual([ids['a-start'], ids['b-tie'], ids['c-tie'], ids['last-in']]);
    const root = await get(`/api/organizationalunits/${encodeURIComponent(w.units.root)}/calls`, WINDOW);
    expect(uniqueIds(root)).toContain(ids['root-chain']);
    expect(callsOf(root).find((c) => c.uniqueId === ids['root-chain'])!.organizationalUnits).toEqual([
      expect.objectContaining({ orgCode: w.units.root, level: 0 }),
    ]);
  });

  it('when no unit has the org code (or it is a user), then it is a 404', async () => {
    expect((await get(`/api/organizationalunits/nothing-${w.id}/calls`, WINDOW)).status).toBe(404);
    expect((await get(`/api/organizationalunits/${encodeURIComponent(w.users.agent)}/calls`, WINDOW)).status).toBe(404);
  });

  it('when the client accepts only text/html, then it is a 406', async () => {
    const res = await get(`/api/organizationalunits/${encodeURIComponent(w.units.root)}/calls`, WINDOW).set('Accept', 'text/html');
    expect(res.status).toBe(406);
  });
});

describe('GET /api/calls/{UniqueId}/recordings', () => {
  it('when the call has recordings, then they come by start time', async () => {
    const res = await get(`/api/calls/${ids['a-start']}/recordings`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      {
        startTime: '2026-05-06T10:00:00.000+02:00',
        endTime: '2026-05-06T10:12:49.250+02:00',
        recordingType: 'FullRecording',
        fileName: 'full.wav',
      },
      {
        startTime: '2026-05-06T10:00:07.250+02:00',
        endTime: '2026-05-06T10:05:00.000+02:00',
        recordingType: 'PartialRecording',
        fileName: 'part1.wav',
      },
      { startTime: '2026-05-06T10:05:00.000+02:00', recordingType: 'PartialRecording', fileName: 'part2.wav' },
    ]);
  });

  it('when StartTime and TimeSpan are given, then only recordings that started in that window come; Limit caps them', async () => {
    const res = await get(`/api/calls/${ids['a-start']}/recordings`, {
      StartTime: '2026-05-06T10:00:07.250+02:00',
      TimeSpan: 'PT4M52.75S',
    });
    // Ends at 10:05:00.000, exclusive: part2 starts exactly there.
    expect((res.body as Recording[]).map((r) => r.fileName)).toEqual(['part1.wav']);
    const from = await get(`/api/calls/${ids['a-start']}/recordings`, { StartTime: '2026-05-06T10:00:07.250+02:00' });
    expect((from.body as Recording[]).map((r) => r.fileName)).toEqual(['part1.wav', 'part2.wav']);
    const limited = await get(`/api/calls/${ids['a-start']}/recordings`, { Limit: '1' });
    expect((limited.body as Recording[]).map((r) => r.fileName)).toEqual(['full.wav']);
  });

  it('when the call is unknown, then it is a 404', async () => {
    expect((await get(`/api/calls/nope-${w.id}/recordings`)).status).toBe(404);
  });

  it('when the call belongs to a project outside the account, then it is a 404', async () => {
    const res = await get(`/api/calls/${ids['b-tie']}/recordings`, {}, w.accounts.b2b.auth);
    expect(res.status).toBe(404);
    expect((await get(`/api/calls/${ids['b-tie']}/recordings`)).body).toHaveLength(1);
  });

  it('when the client prefers text/html, then the recordings come as an escaped HTML page', async () => {
    const res = await get(`/api/calls/${ids['a-start']}/recordings`).set('Accept', 'text/html');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('full.wav');
    expect(res.text).toContain(`Recordings of call ${ids['a-start']}`);
  });
});

describe('GET /api/calls/agentreadyperiods', () => {
  const periods: Record<string, string> = {};
  beforeAll(async () => {
    const period = (key: string, startTime: string, seconds: number, campaign = w.campaigns.b2b) => {
      periods[key] = `${w.id}-rp-${key}`;
      return { type: 'readyPeriod', uniqueId: periods[key], orgCode: w.users.agent, campaign, startTime, seconds };
    };
    await t.load(
      // Window: [2026-07-01T10:00+02:00, 11:00)
      period('ends-before', '2026-07-01T09:50:00+02:00', 599),
      period('ends-at-start', '2026-07-01T09:50:00+02:00', 600),
      period('starts-before-ends-inside', '2026-07-01T09:30:00+02:00', 2400),
      period('retail-inside', '2026-07-01T10:10:00+02:00', 60, w.campaigns.retail),
      period('ends-at-end', '2026-07-01T10:50:00+02:00', 600),
    );
  });

  it('when a window is asked, then the periods that ended inside it come, by end time, matched on the end', async () => {
    const res = await get('/api/calls/agentreadyperiods', { FromTime: '2026-07-01T10:00:00+02:00', TimeSpan: 'PT1H' });
    expect(res.status).toBe(200);
    const mine = (res.body as ReadyPeriod[]).filter((p) => p.uniqueId.startsWith(`${w.id}-rp-`));
    expect(mine.map((p) => p.uniqueId)).toEqual([periods['ends-at-start'], periods['starts-before-ends-inside'], periods['retail-inside']]);
    expect(mine[1]).toEqual({
      uniqueId: periods['starts-before-ends-inside'],
      orgCode: w.users.agent,
      campaign: {
        uniqueId: anyString,
        name: 'B2B campaign',
        code: w.campaigns.b2b,
        project: w.projects.b2b,
        leadDefinitionUniqueId: anyString,
        active: true,
      },
      startTime: '2026-07-01T09:30:00.000+02:00',
      seconds: 2400,
      campaignType: 'PowerDialer',
    });
  });

  it('when the account sees only B2B projects, then Retail periods are left out', async () => {
    const res = await get('/api/calls/agentreadyperiods', { FromTime: '2026-07-01T10:00:00+02:00', TimeSpan: 'PT1H' }, w.accounts.b2b.auth);
    const mine = (res.body as ReadyPeriod[]).filter((p) => p.uniqueId.startsWith(`${w.id}-rp-`));
    expect(mine.map((p) => p.uniqueId)).toEqual([periods['ends-at-start'], periods['starts-before-ends-inside']]);
  });

  it('when FromTime is missing or TimeSpan is lower case, then it is a 400 naming it', async () => {
    const a = await get('/api/calls/agentreadyperiods', { TimeSpan: 'PT1H' });
    expect(a.status).toBe(400);
    expect(problemOf(a).errors[0]!.parameter).toBe('FromTime');
    const b = await get('/api/calls/agentreadyperiods', { FromTime: '2026-07-01T10:00:00+02:00', TimeSpan: 'pt1h' });
    expect(b.status).toBe(400);
    expect(problemOf(b).errors[0]!.parameter).toBe('TimeSpan');
  });

  it('when the client accepts only text/html, then it is a 406', async () => {
    const res = await get('/api/calls/agentreadyperiods', { FromTime: '2026-07-01T10:00:00+02:00', TimeSpan: 'PT1H' }).set(
      'Accept',
      'text/html',
    );
    expect(res.status).toBe(406);
  });
});

describe('dateTimeFormatter (the calls hot path)', () => {
  it('when instants run across both DST changes, in order or shuffled, then it writes what formatDateTime writes', () => {
    const zone = 'Europe/Copenhagen';
    const instants: number[] = [];
    for (const [from, to] of [
      ['2026-03-28T00:00:00Z', '2026-03-30T00:00:00Z'],
      ['2026-10-24T00:00:00Z', '2026-10-26T00:00:00Z'],
    ]) {
      for (let ms = Date.parse(from!); ms < Date.parse(to!); ms += 433_017) instants.push(ms);
    }
    instants.push(Date.parse('1969-12-31T23:59:59.999Z'), Date.parse('2026-10-25T00:59:59.999Z'), Date.parse('2026-10-25T01:00:00Z'));
    const shuffled = [...instants].sort((a, b) => ((a * 7919) % 1000) - ((b * 7919) % 1000));
    for (const list of [instants, shuffled]) {
      const format = dateTimeFormatter(zone);
      expect(list.map(format)).toEqual(list.map((ms) => formatDateTime(ms, zone)));
    }
  });
});
