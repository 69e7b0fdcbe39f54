import request from 'supertest';
import { useTestWorld } from '../harness/useTestWorld';
import { uniq } from '../harness/testApp';

interface Campaign {
  code: string;
}
interface User {
  uniqueId: string;
  orgCode: string;
  projects: string[];
  parent?: OrgUnit | null;
  campaigns: Campaign[];
}
interface OrgUnit {
  orgCode: string;
  level: number;
  parent: OrgUnit | null;
  children: OrgUnit[];
  users: User[];
  campaigns?: Campaign[];
}

/** Users, org units, campaigns and projects with Include and project scope (the API in the OpenAPI document). */

const { t, w } = useTestWorld();

beforeAll(async () => {
  await t.load({
    type: 'user',
    orgCode: `lead-${w.id}@example.com`,
    username: `lead-${w.id}`,
    name: 'Team Lead',
    parent: w.units.team,
    email: `lead-${w.id}@example.com`,
    inboundPhoneNumber: '+4511223344',
    roles: ['TeamLeader', 'Agent'],
    employeeNumber: 'E-1',
    payrollNumber: 'P-1',
    campaigns: [w.campaigns.retail],
  });
});

function get(path: string, query: Record<string, string | string[]> = {}, auth = w.accounts.full.auth) {
  return request(t.app).get(path).query(query).set('Authorization', auth);
}

const path = (prefix: string, orgCode: string) => `${prefix}/${encodeURIComponent(orgCode)}`;

describe('GET /api/users/{OrgCode}', () => {
  it('when the user exists, then it has its fields in the documented order, plain projects and roles, and no complex property', async () => {
    const res = await get(path('/api/users', `lead-${w.id}@example.com`));
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.body)).toBe(
      JSON.stringify({
        uniqueId: (res.body as User).uniqueId,
        username: `lead-${w.id}`,
        name: 'Team Lead',
        orgCode: `lead-${w.id}@example.com`,
        email: `lead-${w.id}@example.com`,
        inboundPhoneNumber: '+4511223344',
        projects: [w.projects.retail],
        roles: ['TeamLeader', 'Agent'],
        employeeNumber: 'E-1',
        payrollNumber: 'P-1',
      }),
    );
  });

  it('when parent and campaigns are included, then the unit chain runs to the root and the campaigns are full objects', async () => {
    const res = await get(path('/api/users', w.users.agent), { Include: 'parent,campaigns' });
    const user = res.body as User;
    expect(user.parent).toMatchObject({
      orgCode: w.units.team,
      level: 2,
      parent: { orgCode: w.units.sales, level: 1, parent: { orgCode: w.units.root, level: 0, parent: null } },
    });
    expect(user.campaigns.map((c) => c.code)).toEqual([w.campaigns.b2b, w.campaigns.retail]);
    expect(user.campaigns[0]).toEqual({
      uniqueId: expect.any(String) as jest.AsymmetricMatcher,
      name: 'B2B campaign',
      code: w.campaigns.b2b,
      project: w.projects.b2b,
      leadDefinitionUniqueId: expect.any(String) as jest.AsymmetricMatcher,
      active: true,
    });
  });

  it('when the account sees only B2B projects, then only B2B campaigns and projects appear on the user', async () => {
    const res = await get(path('/api/users', w.users.agent), { include: 'campaigns' }, w.accounts.b2b.auth);
    const user = res.body as User;
    expect(user.campaigns.map((c) => c.code)).toEqual([w.campaigns.b2b]);
    expect(user.projects).toEqual([w.projects.b2b]);
  });

  it('when a user works on an inactive campaign, then its campaigns and projects hold only the active ones', async () => {
    // Names of their own, and no unit: the world's lists in the other tests stay as they are.
    const id = uniq();
    const retired = `RETIRED-${id}`;
    const retiree = `retiree-${id}@example.com`;
    await t.load(
      {
        type: 'campaign',
        code: retired,
        name: 'Retired campaign',
        project: `retired-${id}`,
        leadDefinition: w.leadDefinition,
        campaignType: 'Master',
        active: false,
      },
      {
        type: 'user',
        orgCode: retiree,
        username: `retiree-${id}`,
        name: 'Retiree',
        campaigns: [w.campaigns.b2b, retired],
      },
    );
    const user = (await get(path('/api/users', retiree), { Include: 'campaigns' })).body as User;
    expect(user.campaigns.map((c) => c.code)).toEqual([w.campaigns.b2b]);
    expect(user.projects).toEqual([w.projects.b2b]);
    // The campaign itself is still listed, as inactive.
    const all = (await get('/api/campaigns', { Active: 'false' })).body as Campaign[];
    expect(all.map((c) => c.code)).toContain(retired);
  });

  it('when no user has the org code (or it names a unit), then it is a 404', async () => {
    expect((await get(path('/api/users', `nobody-${w.id}`))).status).toBe(404);
    expect((await get(path('/api/users', w.units.team))).status).toBe(404);
  });

  it('when the account lacks the Organization right, then it is a 403', async () => {
    expect((await get(path('/api/users', w.users.agent), {}, w.accounts.none.auth)).status).toBe(403);
  });

  it('when the client asks for text/html, then the user is an HTML page', async () => {
    const res = await get(path('/api/users', w.users.agent)).set('Accept', 'text/html');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('Agent Ærø');
  });
});

describe('GET /api/users', () => {
  it('when users are listed, then they come by org code, this world’s among them', async () => {
    const res = await get('/api/users');
    expect(res.status).toBe(200);
    const codes = (res.body as User[]).map((u) => u.orgCode);
    expect(codes).toEqual(expect.arrayContaining([w.users.agent, w.users.other, `lead-${w.id}@example.com`]));
    // By org code (in the database's collation): this world's codes in their relative order.
    const mine = codes.filter((c) => c.includes(w.id));
    expect(mine).toEqual([w.users.agent, `lead-${w.id}@example.com`, w.users.other]);
  });

  it('when Limit is given, then at most that many users come', async () => {
    const res = await get('/api/users', { Limit: '2' });
    expect(res.body).toHaveLength(2);
    expect((await get('/api/users', { Limit: '-1' })).status).toBe(400);
  });

  it('when parent is included, then every user that has a unit carries it', async () => {
    const res = await get('/api/users', { Include: 'parent' });
    const agent = (res.body as User[]).find((u) => u.orgCode === w.users.agent)!;
    expect(agent.parent!.orgCode).toBe(w.units.team);
  });
});

describe('GET /api/orgunits/{orgCode} and /api/organizationalunits/{OrgCode}', () => {
  it('when the org code holds spaces, a slash and æøå, then the percent-encoded path finds the unit on both paths', async () => {
    for (const prefix of ['/api/orgunits', '/api/organizationalunits']) {
      const res = await get(path(prefix, w.units.team));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        uniqueId: expect.any(String) as jest.AsymmetricMatcher,
        name: 'Team Tryg',
        orgCode: w.units.team,
        level: 2,
      });
    }
  });

  it('when children and users are included, then the subtree comes with each user once', async () => {
    const res = await get(path('/api/orgunits', w.units.sales), { Include: 'children,users' });
    const unit = res.body as OrgUnit;
    expect(unit.users.map((u) => u.orgCode)).toEqual([w.users.other]);
    expect(unit.children).toHaveLength(1);
    expect(unit.children[0]!.orgCode).toBe(w.units.team);
    expect(unit.children[0]!.users.map((u) => u.orgCode)).toEqual([w.users.agent, `lead-${w.id}@example.com`]);
    expect(unit.children[0]!.users[0]!.campaigns).toBeUndefined();
  });

  it('when campaigns is included without users, then it has no effect; with users, the users carry their campaigns once each', async () => {
    const alone = await get(path('/api/orgunits', w.units.team), { Include: 'campaigns' });
    expect((alone.body as OrgUnit).users).toBeUndefined();
    expect((alone.body as OrgUnit).campaigns).toBeUndefined();
    const res = await get(path('/api/orgunits', w.units.team), { Include: ['users', 'campaigns'] });
    const [agent, lead] = (res.body as OrgUnit).users;
    expect(agent!.campaigns.map((c) => c.code)).toEqual([w.campaigns.b2b, w.campaigns.retail]);
    // The retail campaign already appears under the agent in this object (an object already emitted is not repeated: docs/decisions.md, Include engine).
    expect(lead!.campaigns).toEqual([]);
  });

  it('when parent is included, then the chain runs up and the root has parent null', async () => {
    const res = await get(path('/api/organizationalunits', w.units.team), { include: 'Parent' });
    const unit = res.body as OrgUnit;
    expect(unit.parent!.orgCode).toBe(w.units.sales);
    expect(unit.parent!.parent!.orgCode).toBe(w.units.root);
    expect(unit.parent!.parent!.parent).toBeNull();
  });

  it('when no unit has the org code (or it names a user), then it is a 404', async () => {
    expect((await get(path('/api/orgunits', `nothing-${w.id}`))).status).toBe(404);
    expect((await get(path('/api/organizationalunits', w.users.agent))).status).toBe(404);
  });

  it('when the client asks for text/html, then the unit is an HTML page', async () => {
    const res = await get(path('/api/orgunits', w.units.team)).set('Accept', 'text/html');
    expect(res.status).toBe(200);
    expect(res.text).toContain('Team Tryg');
  });
});

describe('GET /api/orgunits and /api/organizationalunits', () => {
  it('when the units are listed, then every unit comes, roots first', async () => {
    for (const p of ['/api/orgunits', '/api/organizationalunits']) {
      const res = await get(p);
      expect(res.status).toBe(200);
      const units = res.body as OrgUnit[];
      const mine = units.filter((u) => u.orgCode.includes(w.id));
      expect(mine.map((u) => u.orgCode)).toEqual([w.units.root, w.units.sales, w.units.team]);
      const levels = units.map((u) => u.level);
      expect(levels).toEqual([...levels].sort());
    }
  });

  it('when the account lacks the Organization right, then it is a 403', async () => {
    expect((await get('/api/orgunits', {}, w.accounts.none.auth)).status).toBe(403);
  });
});

describe('GET /api/campaigns', () => {
  it('when the account sees every project, then both campaigns come as Campaign objects', async () => {
    const res = await get('/api/campaigns');
    expect(res.status).toBe(200);
    const mine = (res.body as Campaign[]).filter((c) => c.code.endsWith(w.id));
    expect(mine).toEqual([
      {
        uniqueId: expect.any(String) as jest.AsymmetricMatcher,
        name: 'B2B campaign',
        code: w.campaigns.b2b,
        project: w.projects.b2b,
        leadDefinitionUniqueId: expect.any(String) as jest.AsymmetricMatcher,
        active: true,
      },
      {
        uniqueId: expect.any(String) as jest.AsymmetricMatcher,
        name: 'Retail campaign',
        code: w.campaigns.retail,
        project: w.projects.retail,
        leadDefinitionUniqueId: expect.any(String) as jest.AsymmetricMatcher,
        active: true,
      },
    ]);
  });

  it('when the account sees only B2B projects, then only B2B campaigns come', async () => {
    const res = await get('/api/campaigns', {}, w.accounts.b2b.auth);
    expect((res.body as Campaign[]).map((c) => c.code)).toEqual([w.campaigns.b2b]);
  });

  it('when the client asks for text/html, then the list is an HTML page', async () => {
    const res = await get('/api/campaigns', {}, w.accounts.b2b.auth).set('Accept', 'text/html');
    expect(res.status).toBe(200);
    expect(res.text).toContain(w.campaigns.b2b);
    expect(res.text).not.toContain(w.campaigns.retail);
  });

  it('when the account lacks the Campaigns right, then it is a 403', async () => {
    expect((await get('/api/campaigns', {}, w.accounts.none.auth)).status).toBe(403);
  });

  describe('filters clients send (Project, Active, Limit)', () => {
    // The B2B campaign's code and more: it sorts after it in any collation, whatever the world's id.
    const paused = () => `${w.campaigns.b2b}-PAUSED`;
    const codes = (res: request.Response) => (res.body as Campaign[]).map((c) => c.code);

    beforeAll(async () => {
      await t.load({
        type: 'campaign',
        code: paused(),
        name: 'Paused B2B campaign',
        project: w.projects.b2b,
        leadDefinition: w.leadDefinition,
        campaignType: 'Master',
        active: false,
      });
    });

    it('when Project is a pattern, then only campaigns of matching projects come, active or not', async () => {
      const res = await get('/api/campaigns', { Project: `b2b-${w.id}*` });
      expect(res.status).toBe(200);
      expect(codes(res)).toEqual([w.campaigns.b2b, paused()]);
    });

    it('when Project is a project unique id, then that project matches', async () => {
      const projects = (await get('/api/projects')).body as { uniqueId: string; name: string }[];
      const retail = projects.find((p) => p.name === w.projects.retail)!;
      expect(codes(await get('/api/campaigns', { Project: retail.uniqueId }))).toEqual([w.campaigns.retail]);
    });

    it('when Active is true, false or All, then active, inactive or both campaigns come', async () => {
      const mine = async (active: string) => codes(await get('/api/campaigns', { Project: `B2B-${w.id}*`, Active: active }));
      expect(await mine('true')).toEqual([w.campaigns.b2b]);
      expect(await mine('False')).toEqual([paused()]);
      expect(await mine('All')).toEqual([w.campaigns.b2b, paused()]);
    });

    it('when Active is 1 or 0, as other boolean parameters take it (PHP writes true as 1), then active or inactive campaigns come', async () => {
      const mine = async (active: string) => codes(await get('/api/campaigns', { Project: `B2B-${w.id}*`, Active: active }));
      expect(await mine('1')).toEqual([w.campaigns.b2b]);
      expect(await mine('0')).toEqual([paused()]);
    });

    it('when Limit is given, then it caps the list, by code', async () => {
      const res = await get('/api/campaigns', { Project: `B2B-${w.id}*`, Limit: '1' });
      expect(codes(res)).toEqual([w.campaigns.b2b]);
    });

    it('when the B2B account asks for the Retail project, then its project rights still apply', async () => {
      const res = await get('/api/campaigns', { Project: `Retail-${w.id}` }, w.accounts.b2b.auth);
      expect(res.status).toBe(200);
      expect(res.body).toEqual([]);
    });

    it('when Active or Limit has a bad value, then it is a 400 naming the parameter', async () => {
      const active = await get('/api/campaigns', { Active: 'maybe' });
      expect(active.status).toBe(400);
      expect((active.body as { errors: { parameter: string }[] }).errors[0]!.parameter).toBe('Active');
      const limit = await get('/api/campaigns', { Limit: '0' });
      expect(limit.status).toBe(400);
      expect((limit.body as { errors: { parameter: string }[] }).errors[0]!.parameter).toBe('Limit');
    });
  });
});

describe('GET /api/projects', () => {
  it('when projects are listed, then they are the distinct projects the account can see, as objects', async () => {
    const all = await get('/api/projects');
    const names = (all.body as { name: string }[]).map((p) => p.name);
    expect(names).toEqual(expect.arrayContaining([w.projects.b2b, w.projects.retail]));
    expect(new Set(names).size).toBe(names.length);
    const b2b = await get('/api/projects', {}, w.accounts.b2b.auth);
    expect(b2b.body).toEqual([
      { uniqueId: expect.stringMatching(/^[0-9a-f-]{36}$/) as jest.AsymmetricMatcher, name: w.projects.b2b, active: true },
    ]);
  });

  it('when the client asks for text/html, then the list is an HTML page', async () => {
    const res = await get('/api/projects', {}, w.accounts.b2b.auth).set('Accept', 'text/html');
    expect(res.status).toBe(200);
    expect(res.text).toContain(w.projects.b2b);
  });
});

describe('org codes in a path written with + for each space (Java URLEncoder, PHP urlencode)', () => {
  /** The path form those encoders write: every space a `+`, everything else percent-encoded. */
  const plusEncoded = (orgCode: string) => orgCode.split(' ').map(encodeURIComponent).join('+');
  const spaced = `Agent Space ${w.id}`;

  beforeAll(async () => {
    await t.load(
      { type: 'user', orgCode: spaced, username: `space-${w.id}`, name: 'Spaced', parent: w.units.team },
      { type: 'user', orgCode: `plus+${w.id}@example.com`, username: `plus-${w.id}`, name: 'Plus', parent: w.units.team },
      { type: 'user', orgCode: `plus ${w.id}@example.com`, username: `plus-space-${w.id}`, name: 'Plus Space', parent: w.units.team },
    );
  });

  it('when a user or an org unit is asked for with + for its spaces, then it is found', async () => {
    const user = await get(`/api/users/${plusEncoded(spaced)}`);
    expect([user.status, (user.body as User).orgCode]).toEqual([200, spaced]);
    const unit = await get(`/api/organizationalunits/${plusEncoded(w.units.team)}`);
    expect([unit.status, (unit.body as OrgUnit).orgCode]).toEqual([200, w.units.team]);
    const calls = await get(`/api/organizationalunits/${plusEncoded(w.units.team)}/calls`, {
      StartTime: '2026-05-06T10:00:00',
      TimeSpan: 'PT2H',
    });
    expect(calls.status).toBe(200);
    const userCalls = await get(`/api/users/${plusEncoded(spaced)}/calls`, { StartTime: '2026-05-06T10:00:00', TimeSpan: 'PT2H' });
    expect(userCalls.status).toBe(200);
  });

  it('when an org code holds a + itself, then the code as written wins over its spaced reading', async () => {
    const res = await get(`/api/users/plus+${w.id}%40example.com`);
    expect([res.status, (res.body as User).orgCode]).toEqual([200, `plus+${w.id}@example.com`]);
    const spacedOne = await get(`/api/users/plus%20${w.id}%40example.com`);
    expect([spacedOne.status, (spacedOne.body as User).orgCode]).toEqual([200, `plus ${w.id}@example.com`]);
    expect((await get(`/api/users/nobody+${w.id}`)).status).toBe(404);
  });
});
